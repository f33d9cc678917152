"""tnn_core.report's command line, its kernels out (``--kernels N --out FILE.npz``), a report
of token mixers alone (no task, no metric) and a card whose metric would pass the time
limit."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.kernels_only import write_kernels_only
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, seeded_weights
from tnn_core.report import BATCHED, main, report_for, to_json, to_markdown
from tnn_core.training import budget
from tnn_core.training.checkpoint import load, save
from tnn_core.training.tasks import task_from_info

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "checkpoints" / "digits-fd.safetensors"


# -- the command line -------------------------------------------------------------------------
def test_cli_prints_the_report(capsys):
    assert main([str(DIGITS), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("layer,channel,operator,n,band,rank,band_mass,sample_error,fit_error,"
                          "stable_rank")


@pytest.mark.parametrize(("argv", "message"), [
    (["--format", "xml"], "--format must be one of"),
    (["--band", "0"], r"band must be an integer in \[1, 2n-2\]"),
    (["--time-limit", "-1"], r"--time-limit must be a number in \[0"),
    (["--kernels", "4"], "--kernels needs --out FILE.npz"),
    (["--out", "x.npz"], "--out is the file of --kernels N"),
    (["--kernels", "0", "--out", "x.npz"], r"n must be an integer in \[1, "),
])
def test_cli_bad_options_are_one_error_line(capsys, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([str(DIGITS), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert re.search(message, err)
    assert not (tmp_path / "x.npz").exists()


def test_cli_bad_checkpoint_is_one_error_line(tmp_path, capsys):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    assert main([str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ")
    assert captured.err.count("\n") == 1


# -- kernels out ------------------------------------------------------------------------------
LAYERS = (OperatorConfig(causal=True, rpe_layers=2), OperatorConfig(kind="fd", causal=True),
          OperatorConfig(kind="ski", causal=True, rank=3, band=2),
          OperatorConfig(kind="ssm", causal=True, state=3))


@pytest.fixture(scope="module")
def float64_lm(tmp_path_factory) -> Path:
    """A float64 language model with a tno, an fd, a causal SKI and an ssm layer."""
    config = ModelConfig(task="lm", vocab_size=9, dim=4, layers=4, operator=LAYERS[0],
                         layer_operators=LAYERS)
    with seeded_weights(1):
        model = build_model(config).double()
    info = {"name": "recall", "settings": {"seq_len": 8, "num_pairs": 2, "num_queries": 2,
                                           "num_keys": 4, "num_values": 4}}
    return save(tmp_path_factory.mktemp("lm") / "lm.safetensors", model, info)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_kernels_out_are_each_operators_kernel_exactly(float64_lm, tmp_path, capsys, n):
    out = tmp_path / "k.npz"
    assert main([str(float64_lm), "--kernels", str(n), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: layer0 [12, {2 * n - 1}]")
    model, _ = load(float64_lm)
    with np.load(out) as arrays:
        assert sorted(arrays.files) == ["layer0", "layer1", "layer2", "layer3"]
        for i, operator in enumerate(model.operators()):
            array = arrays[f"layer{i}"]
            assert array.dtype == np.float64 and array.shape == (12, 2 * n - 1)
            np.testing.assert_array_equal(array, operator.kernel(n).detach().numpy())
            assert not array[:, : n - 1].any()  # causal: zeros at the negative lags
    assert not out.with_name("k.npz.lock").exists()


def test_kernels_out_refuse_a_togeipi_layer_and_the_checkpoint_as_output(tmp_path, capsys):
    config = ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=8, layers=1,
                         operator=OperatorConfig(kind="togeipi", heads=2, max_length=16))
    path = save(tmp_path / "t.safetensors", build_model(config),
                {"name": "digits", "settings": {"size": 8}})
    assert main([str(path), "--kernels", "4", "--out", str(tmp_path / "t.npz")]) == 2
    assert "layer 0 is a togeipi mixer" in capsys.readouterr().err
    assert not (tmp_path / "t.npz").exists()
    assert main([str(DIGITS), "--kernels", "4", "--out", str(DIGITS)]) == 2
    assert "is the input" in capsys.readouterr().err


# -- token mixers alone -----------------------------------------------------------------------
def test_a_kernels_only_checkpoint_is_reported_without_a_metric(tmp_path, capsys):
    path = write_kernels_only(tmp_path / "mixers.safetensors", layers=2, dim=24, n=64)
    assert main([str(path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["card"]["metric"] is None and data["card"]["task"] == "kernels"
    assert data["card"]["no_metric"].startswith("This checkpoint holds token mixers only")
    assert data["length"] == 64 and [layer["width"] for layer in data["layers"]] == [24, 24]
    assert all(len(layer["every_channel"]["band_mass"]) == 24 for layer in data["layers"])
    assert "holds token mixers alone, no task" in captured.err
    model, info = load(path)
    text = to_markdown(report_for(model, info, None))
    assert "**Metric.** This checkpoint holds token mixers only" in text
    assert "expand ratio" not in text and "| 1 | tno | 9 | 16 |" in text  # r = n // 4


# -- the metric within the time limit -----------------------------------------------------------
def test_a_metric_estimated_past_the_limit_is_not_scored_and_the_card_says_why(monkeypatch):
    monkeypatch.setattr(budget, "calibrated_rate", lambda: 2e10)
    monkeypatch.setattr(budget, "load_slowdown", lambda: 1.0)
    model, info = load(DIGITS)
    task = task_from_info(info.task)
    stages = []
    report = report_for(model, info, task, seconds_limit=1e-6,
                        on_progress=lambda stage, done, total: stages.append(stage))
    card = report.card
    assert card.metric is None and card.ci95 is None and card.sequences == 0
    assert re.fullmatch(r"Not scored here: scoring the evaluation set \(360 sequences of n = 64\) "
                        r"would take about [\d,]+ s on this machine now, above this report's 0 s "
                        r"limit \(--time-limit\); python -m tnn_core\.training\.evaluate scores "
                        r"it\.", card.no_metric), card.no_metric
    assert f"**Metric.** {card.no_metric}" in to_markdown(report)
    assert json.loads(to_json(report))["card"]["ci95"] is None
    assert stages[0] == "layers" and stages[-1] == "spectra"  # no scoring stage
    scored = report_for(model, info, task, seconds_limit=None)
    assert scored.card.sequences == 360 and scored.card.no_metric == ""
    for mine, theirs in zip(report.layers, scored.layers, strict=True):
        for statistic in BATCHED:
            np.testing.assert_array_equal(mine.batched[statistic], theirs.batched[statistic])
    assert torch.get_default_dtype() == torch.float32
