"""tnn_core.compress: plans, conversion to band + low rank, planning by an error budget,
fine-tuning and the CLI (rankings and search: test_compress_planner.py). The numeric tests
run in float64 on small random models trained at awkward lengths n0; the end-to-end tests
use a shipped checkpoint, the CLI's searches and error budget a small random one."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from tests.compress_fixtures import small_digits_checkpoint
from tnn_core.analysis.decompose import decompose
from tnn_core.compress import CompressionPlan, LayerPlan, convert, fit_layer
from tnn_core.compress.cli import main
from tnn_core.compress.measure import Speedup, finetune
from tnn_core.compress.planner import error_table, grid, layer_cost, plan_for_error
from tnn_core.core.toeplitz import dense
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, SKIKnots
from tnn_core.training.checkpoint import SHIPPED_DIR, CheckpointError, load, save
from tnn_core.training.evaluate import evaluate_checkpoint
from tnn_core.training.tasks import get_task

F64 = torch.float64
DIGITS_TNO = SHIPPED_DIR / "digits-tno.safetensors"


def small_model(kind: str, causal: bool, layers: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    config = ModelConfig(task="lm" if causal else "classify", vocab_size=11, num_classes=3,
                         dim=4, layers=layers, expand_ratio=1,
                         operator=OperatorConfig(kind=kind, causal=causal, decay=0.9,
                                                 rpe_dim=8))
    return build_model(config).double().eval()


def tokens(n: int, batch: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 11, (batch, n), generator=torch.Generator().manual_seed(seed))


# -- plans ------------------------------------------------------------------------------


def test_plan_round_trips_through_json():
    plan = CompressionPlan((LayerPlan(9, 32, "fit"), LayerPlan(method="keep"),
                            LayerPlan(1, 2, "sample")))
    assert CompressionPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


@pytest.mark.parametrize("data, message", [
    ({"layers": [{"band": 0}]}, r"layers\[0\]: band must be an integer in \[1,"),
    ({"layers": [{"rank": 1}]}, r"layers\[0\]: rank must be an integer in \[2,"),
    ({"layers": [{"method": "prune"}]}, r"layers\[0\]: method must be one of"),
    ({"layers": [{"bandwidth": 3}]}, r"layers\[0\]: unknown LayerPlan fields \['bandwidth'\]"),
    ({"layers": []}, "non-empty"),
    ([1, 2], "a plan must be an object"),
])
def test_plan_refuses_bad_fields(data, message):
    with pytest.raises(ValueError, match=message):
        CompressionPlan.from_dict(data)


def test_plan_is_checked_against_the_model():
    plan = CompressionPlan.uniform(2, 5, 8)
    with pytest.raises(ValueError, match=r"one plan per layer of the model \(3\); got 2"):
        plan.check_model(3, 64)
    with pytest.raises(ValueError, match=r"layers\[1\]: rank must be an integer in \[2, n\] = "
                                         r"\[2, 7\]; got 8"):
        CompressionPlan((LayerPlan(3, 4), LayerPlan(3, 8))).check_model(2, 7)
    with pytest.raises(ValueError, match=r"band must be an integer in \[1, 2n-2\] = \[1, 12\]"):
        CompressionPlan.uniform(2, 13, 4).check_model(2, 7)


# -- conversion -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tno", "fd"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_keep_everywhere_reproduces_the_source_exactly(kind, causal):
    model = small_model(kind, causal)
    converted, errors = convert(model, CompressionPlan.uniform(2, 1, 2, "keep"), 13)
    assert errors == [None, None]
    x = tokens(13)
    with torch.no_grad():
        assert torch.equal(converted(x), model(x))


@pytest.mark.parametrize("n0", [2, 3, 7, 13, 32])
@pytest.mark.parametrize("method", ["sample", "fit"])
@pytest.mark.parametrize("kind", ["tno", "fd"])
def test_converted_matrix_is_the_decomposition(kind, method, n0):
    """Bidirectional: matrix(n0) of a converted layer = band + W A Wᵀ of ``decompose``."""
    model = small_model(kind, False)
    band, rank = min(5, 2 * n0 - 2), min(4, n0)
    converted, _ = convert(model, CompressionPlan.uniform(2, band, rank, method), n0)
    for source, op in zip(model.operators(), converted.operators(), strict=True):
        assert isinstance(op, SKIKnots)
        with torch.no_grad():
            kernels, M = source.kernel(n0), op.matrix(n0)  # (D, 2n0-1), (D, n0, n0)
        for c in range(kernels.shape[0]):
            d = decompose(kernels[c], band, rank, causal=False, method=method)
            expected = d.band_matrix() + d.low_rank_matrix()
            np.testing.assert_allclose(M[c].numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n0", [2, 3, 7, 13, 32])
@pytest.mark.parametrize("method", ["sample", "fit"])
def test_causal_converted_matrix_is_band_plus_tail(method, n0):
    """Causal: lower-triangular Toeplitz, the band exact, the tail piecewise linear
    through r knots at l h0; "fit" is the least-squares tail (no knot vector does better)."""
    model = small_model("tno", True)
    band, rank = min(3, n0), min(4, n0)
    converted, errors = convert(model, CompressionPlan.uniform(2, band, rank, method), n0)
    for layer, (source, op) in enumerate(zip(model.operators(), converted.operators(),
                                             strict=True)):
        with torch.no_grad():
            t, M = source.kernel(n0).numpy(), op.matrix(n0).numpy()
        assert np.abs(np.triu(M, 1)).max() == 0
        column = M[:, :, 0]  # (D, n0): lags 0..n0-1
        np.testing.assert_allclose(column[:, :band], t[:, n0 - 1:n0 - 1 + band], rtol=0,
                                   atol=1e-12)  # the band is exact
        np.testing.assert_allclose(M, dense(torch.as_tensor(
            np.concatenate([np.zeros((t.shape[0], n0 - 1)), column], 1))).numpy(), atol=1e-12)
        knots = op.lag_knots.detach().numpy()
        h0 = (n0 - 1) / (rank - 1)
        tail = np.stack([np.interp(np.arange(band, n0), np.arange(rank) * h0, k) for k in knots])
        np.testing.assert_allclose(column[:, band:], tail, rtol=0, atol=1e-12)
        weight = n0 - np.arange(band, n0)  # entries per lag of the tail
        off = t[:, n0 - 1 + band:]  # (D, n0-band) the kernel beyond the band
        every = n0 - np.arange(n0)  # entries per lag 0..n0-1: ||T||_F² weighs each so
        expected = math.sqrt(np.sum(weight * (off - tail) ** 2)
                             / np.sum(every * t[:, n0 - 1:] ** 2))
        assert errors[layer] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        if method == "fit" and n0 > band:  # the normal equations of the weighted fit hold
            basis = np.stack([np.interp(np.arange(band, n0), np.arange(rank) * h0, e)
                              for e in np.eye(rank)], 1)  # (n0-band, r): f = basis @ knots
            gradient = basis.T @ (weight[:, None] * (basis @ knots.T - off.T))
            assert np.abs(gradient).max() <= 1e-10 * max(1.0, np.abs(t).max() * n0)


@pytest.mark.parametrize("kind", ["tno", "fd"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("n0", [2, 5, 17])
def test_exact_when_rank_is_n_and_the_band_covers_every_lag(kind, causal, n0):
    model = small_model(kind, causal)
    converted, errors = convert(model, CompressionPlan.uniform(2, 2 * n0 - 2, n0, "fit"), n0)
    assert all(e <= 1e-10 for e in errors)
    x = tokens(n0)
    with torch.no_grad():
        torch.testing.assert_close(converted(x), model(x), rtol=0, atol=1e-10)
    rank_only, _ = convert(model, CompressionPlan.uniform(2, 1, n0, "sample"), n0)
    with torch.no_grad():  # r = n0 alone is exact too: W is the identity
        torch.testing.assert_close(rank_only(x), model(x), rtol=0, atol=1e-10)


def test_layer_error_is_relative_to_norm_T():
    """error = ||T - T̂||_F / ||T||_F over the layer's channels (the lab's one relative
    error), checked with the dense matrices."""
    model = small_model("tno", False)
    n0, band, rank = 23, 5, 6
    converted, errors = convert(model, CompressionPlan.uniform(2, band, rank, "sample"), n0)
    for layer, (source, op) in enumerate(zip(model.operators(), converted.operators(),
                                             strict=True)):
        with torch.no_grad():
            T, That = source.matrix(n0).numpy(), op.matrix(n0).numpy()
        assert errors[layer] == pytest.approx(np.linalg.norm(T - That) / np.linalg.norm(T),
                                              rel=1e-9)


def test_mixed_plan_round_trips_through_a_checkpoint(tmp_path):
    model, info = load(DIGITS_TNO)
    plan = CompressionPlan((LayerPlan(method="keep"), LayerPlan(6, 8, "sample")))
    converted, _ = convert(model, plan, 64)
    config = converted.config
    assert [config.layer_operator(i).kind for i in range(2)] == ["tno", "ski"]
    assert config.layer_operator(1).band == 7  # lags |k| <= 3: an even m adds a lag
    assert config.layer_operator(1).knot_length == 64
    path = save(tmp_path / "mixed.safetensors", converted, info.task, info.history)
    loaded, loaded_info = load(path)
    assert loaded_info.model_config == config
    x = torch.randint(0, config.vocab_size, (4, 64), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded(x), converted(x))


def test_refuses_what_it_cannot_convert():
    model = small_model("tno", False)
    with pytest.raises(ValueError, match=r"one plan per layer of the model \(2\); got 3"):
        convert(model, CompressionPlan.uniform(3, 3, 4), 16)
    ski = build_model(ModelConfig(vocab_size=11, num_classes=3, dim=4, layers=1, expand_ratio=1,
                                  operator=OperatorConfig(kind="ski", rank=4, band=3)))
    with pytest.raises(ValueError, match=r"layers\[0\] is a ski operator and cannot be "
                                         r"converted: it already is band \+ low rank"):
        convert(ski, CompressionPlan.uniform(1, 3, 4), 16)
    togeipi = build_model(ModelConfig(vocab_size=11, num_classes=3, dim=8, layers=1,
                                      expand_ratio=1, operator=OperatorConfig(
                                          kind="togeipi", heads=2, max_length=16)))
    with pytest.raises(ValueError, match="togeipi operator and cannot be converted: its mixer "
                                         "is not one Toeplitz matrix per channel"):
        convert(togeipi, CompressionPlan.uniform(1, 3, 4), 16)
    with pytest.raises(ValueError, match="method 'sample', 'fit' or 'recurrent'"):
        fit_layer(np.zeros((1, 5)), LayerPlan(method="keep"), False)


# -- the planner ------------------------------------------------------------------------


def test_plan_for_error_takes_the_cheapest_point_under_the_budget():
    model = small_model("tno", False)
    n0 = 32
    points = grid(n0, bands=(1, 3, 9), ranks=(4, 8, 16))
    table = error_table(model, n0, points, "fit")
    epsilon = float(np.median([e for row in table for e in row.values()]))
    plan, errors = plan_for_error(model, n0, epsilon, points, "fit")
    for layer, row in zip(plan.layers, table, strict=True):
        under = [p for p in points if row[p] <= epsilon]
        if not under:
            assert layer.kept
            continue
        cheapest = min(layer_cost(n0, p, False) for p in under)
        assert layer_cost(n0, (layer.band, layer.rank), False) == cheapest
        assert row[(layer.band, layer.rank)] <= epsilon
    assert all(e is None or e <= epsilon for e in errors)
    assert plan_for_error(model, n0, 0.0, points)[0].layers[0].kept  # nothing is exact


# -- fine-tuning --------------------------------------------------------------------------


def test_low_rank_finetuning_changes_only_the_converted_operators():
    model, info = load(DIGITS_TNO)
    task = get_task("digits")
    converted, _ = convert(model, CompressionPlan((LayerPlan(5, 8), LayerPlan(method="keep"))),
                           task.seq_len)
    before = {k: v.clone() for k, v in converted.state_dict().items()}
    losses = finetune(converted, task, 3, lr=1e-2, parameters="low_rank", batch_size=8)
    assert len(losses) == 3 and all(math.isfinite(v) for v in losses)
    changed = {k for k, v in converted.state_dict().items() if not torch.equal(v, before[k])}
    assert changed == {"layers.0.gtu.op.band_weight", "layers.0.gtu.op.lag_knots"}
    kept, _ = convert(model, CompressionPlan.uniform(2, 5, 8, "keep"), task.seq_len)
    with pytest.raises(ValueError, match="needs a converted layer"):
        finetune(kept, task, 1, parameters="low_rank")


# -- the command line -------------------------------------------------------------------


def test_cli_output_round_trips_through_the_saved_checkpoint(tmp_path, capsys):
    out = tmp_path / "digits-m9r16.safetensors"
    assert main([str(DIGITS_TNO), "--band", "9", "--rank", "16", "--finetune", "2",
                 "--repeats", "1", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["finetune_steps"] == 2 and printed["out"] == str(out)
    assert [layer["band"] for layer in printed["layers"]] == [9, 9]
    assert all(0 < layer["error"] < 1 for layer in printed["layers"])
    assert set(printed["speedup"]) == {"1", "4"}
    model, info = load(out)
    assert isinstance(model.operators()[0], SKIKnots)
    evaluated = evaluate_checkpoint(model, info)
    assert evaluated["metric"] == printed["finetuned"]["metric"]
    assert evaluated["ci95"] == printed["finetuned"]["ci95"]
    assert info.final_metrics["metric"] == printed["finetuned"]["metric"]
    lineage = info.history["lineage"]  # its own history, and where it came from
    assert lineage["plan"] == printed["plan"] and lineage["finetune"]["steps"] == 2
    assert lineage["source"]["name"] == DIGITS_TNO.name
    assert info.history["command"].startswith("python -m tnn_core.compress ")
    assert lineage["commands"][0].startswith("python -m tnn_core.training")
    assert info.history["steps"] == 2 and len(info.history["train_loss"]) == 2


def test_cli_search_prints_what_it_measured(tmp_path, capsys):
    """Without --out a search (of a small random digits model) prints its candidates,
    whether one was named or they tied; a named plan's speed-up interval lies above every
    other plan's within δ."""
    assert main([str(small_digits_checkpoint(tmp_path)), "--search", "--delta", "0.05",
                 "--bands", "9", "--ranks", "16,32,999", "--repeats", "3"]) == 0
    found = json.loads(capsys.readouterr().out)["search"]
    assert {json.dumps(s["plan"]) for s in found["scores"]} >= {
        json.dumps(CompressionPlan.uniform(2, 9, r).to_dict()) for r in (16, 32)}
    within = [s for s in found["scores"] if s["drop_ci95"][1] <= 0.05]
    if found["best"] is not None:
        best = found["scores"][found["best"]]["speedups"]["1"]["speedup_ci95"]
        assert all(s["speedups"]["1"]["speedup_ci95"][1] < best[0] for s in within
                   if s is not found["scores"][found["best"]])
    else:
        assert len(found["tied"]) >= 2 or not within


def test_cli_search_saves_the_chosen_plan(tmp_path, capsys, monkeypatch):
    """With timings that separate (r = 16 twice as fast, r = 32 as fast as the source), the
    search (of a small random digits model) names r = 16 and --out saves it with its
    lineage."""
    from tnn_core.compress import planner

    def timed(source, converted, vocab_size, length, repeats=9, seed=0):
        ratio = 2.0 if converted.config.operator.rank == 16 else 1.0
        return Speedup(length, tuple(ratio + 0.01 * k for k in range(repeats)),
                       (1.0,) * repeats)

    monkeypatch.setattr(planner, "speedup", timed)
    out = tmp_path / "searched.safetensors"
    assert main([str(small_digits_checkpoint(tmp_path)), "--search", "--delta", "0.05",
                 "--bands", "9", "--ranks", "16,32", "--repeats", "3", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    found = printed["search"]
    assert printed["plan"] == found["scores"][found["best"]]["plan"] == \
        CompressionPlan.uniform(2, 9, 16).to_dict()
    assert found["scores"][found["best"]]["drop_ci95"][1] <= 0.05  # the whole interval
    assert load(out)[1].history["lineage"]["plan"] == printed["plan"]


def test_cli_plans_by_an_error_budget(tmp_path, capsys):
    """On a small random digits model, whose two layers get different plans."""
    path = small_digits_checkpoint(tmp_path)
    assert main([str(path), "--max-error", "0.1", "--bands", "1,9", "--ranks", "8,16",
                 "--repeats", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    model, _ = load(path)
    expected, errors = plan_for_error(model, 64, 0.1, grid(64, (1, 9), (8, 16)), "fit")
    assert printed["plan"] == expected.to_dict() and expected.layers[0] != expected.layers[1]
    assert [layer["error"] for layer in printed["layers"]] == pytest.approx(errors, rel=1e-12)
    assert all(e is None or e <= 0.1 for e in errors)


@pytest.mark.parametrize("arguments, message", [
    (["--band", "9", "--rank", "1"], "--rank must be an integer in [2, n] = [2, 64]; got 1"),
    (["--band", "9", "--rank", "65"], "--rank must be an integer in [2, n] = [2, 64]; got 65"),
    (["--band", "0", "--rank", "8"], "--band must be an integer in [1, 2n-2] = [1, 126]; got 0"),
    (["--band", "9"], "--band and --rank go together"),
    (["--plan", "PLAN"], "one plan per layer of the model (2); got 1"),
    (["--band", "3", "--rank", "4", "--search"], "give exactly one of"),
    (["--search", "--ranks", "999"], "give no valid (m, r) at the training length n = 64"),
    (["--search", "--bands", "9;17"], "--bands must be integers separated by commas"),
    (["--max-error", "-1"], "--max-error must be a number in [0, inf); got -1.0"),
    (["--max-error", "0", "--ranks", "4"], "no grid point meets --max-error 0.0 on any layer"),
])
def test_cli_refuses_bad_input_and_writes_nothing(tmp_path, capsys, arguments, message):
    (tmp_path / "plan.json").write_text(json.dumps({"layers": [{"band": 5, "rank": 8}]}))
    arguments = [str(tmp_path / "plan.json") if a == "PLAN" else a for a in arguments]
    out = tmp_path / "out.safetensors"
    assert main([str(DIGITS_TNO), *arguments, "--repeats", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not out.exists()


@pytest.mark.parametrize("name, message", [
    ("listops-ski.safetensors", "already is band + low rank"),
    ("corrupt", "CORRUPT"),
])
def test_cli_refuses_unconvertible_and_corrupt_files(tmp_path, capsys, name, message):
    path = SHIPPED_DIR / name
    if name == "corrupt":
        path = tmp_path / "corrupt.safetensors"
        path.write_bytes(DIGITS_TNO.read_bytes()[:5000])
        with pytest.raises(CheckpointError) as caught:
            load(path)
        message = str(caught.value)
    out = tmp_path / "out.safetensors"
    assert main([str(path), "--band", "3", "--rank", "8", "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


# -- per-layer operators in the model config ----------------------------------------------


def test_model_config_checks_its_layer_operators():
    ski = OperatorConfig(kind="ski", low_rank="knots", rank=4, band=3, knot_length=8)
    with pytest.raises(ValueError, match=r"one OperatorConfig per layer \(2\) or none; got 1"):
        ModelConfig(layers=2, layer_operators=(ski,))
    with pytest.raises(ValueError, match=r"layer_operators\[1\].causal must be operator.causal"):
        ModelConfig(layers=2, layer_operators=(ski, OperatorConfig(causal=True)))
    with pytest.raises(ValueError, match=r"layer_operators\[0\] must be an OperatorConfig"):
        ModelConfig(layers=1, layer_operators=({"kind": "tno"},))


def test_a_checkpoint_with_bad_layer_operators_is_refused():
    from safetensors import safe_open
    from safetensors.torch import save as save_tensors

    from tnn_core.training.checkpoint import load_bytes

    with safe_open(str(DIGITS_TNO), "pt") as f:
        metadata = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open's API
    config = json.loads(metadata["model_config"])
    for bad, message in ((config["operator"], "layer_operators must hold one OperatorConfig "
                          "per layer (2) or none; got 3"),
                         ({"kind": "ski", "low_rank": "knots", "rank": 9, "knot_length": 4},
                          "rank must be in [2, knot_length = 4]")):
        hostile = {**metadata, "model_config": json.dumps(
            {**config, "layer_operators": [bad] * (3 if bad is config["operator"] else 2)})}
        with pytest.raises(CheckpointError) as caught:
            load_bytes(save_tensors(tensors, metadata=hostile))
        assert message in str(caught.value)
