"""Converting a causal model to its recurrent form (``compress.recurrent``, a plan's
"recurrent" method): the converted layers are SSMs whose kernels fit the source's at the
training length, their stated error is the one measured, and the file loads and generates.

Letters: D channels, n0 training length, s modes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from tnn_core.compress import CompressionPlan, LayerPlan, convert
from tnn_core.compress.cli import main
from tnn_core.generate import Decoder
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import SSM, OperatorConfig
from tnn_core.training.checkpoint import CheckpointError, load, save

N0 = 32


def causal_lm(kind: str, seed: int = 0, vocab_size: int = 11):
    torch.manual_seed(seed)
    operator = OperatorConfig(kind=kind, causal=True, rpe_dim=8, decay=0.9)
    return build_model(ModelConfig(task="lm", vocab_size=vocab_size, dim=4, layers=2,
                                   expand_ratio=1, operator=operator)).double().eval()


def relative_error(source, converted, n: int) -> float:
    """||T - T̂||_F / ||T||_F over the channels (the lab's one relative error, the diagonal
    counted), by dense matrices."""
    T, That = source.matrix(n), converted.matrix(n)  # (D, n, n)
    return float(torch.linalg.norm(T - That) / torch.linalg.norm(T))


@pytest.mark.parametrize("kind", ["tno", "fd"])
def test_converted_layers_are_ssms_with_the_error_they_state(kind):
    model = causal_lm(kind)
    converted, errors = convert(model, CompressionPlan.recurrent(2, state=6), N0)
    assert converted.config.operator == OperatorConfig(kind="ssm", causal=True, state=6)
    for source, op, error in zip(model.operators(), converted.operators(), errors,
                                 strict=True):
        assert isinstance(op, SSM)
        with torch.no_grad():
            measured = relative_error(source, op, N0)
            assert torch.equal(torch.diagonal(op.matrix(N0), dim1=-2, dim2=-1),
                               torch.diagonal(source.matrix(N0), dim1=-2, dim2=-1))
        assert error == pytest.approx(measured, rel=1e-9) and error < 0.2


def test_more_modes_never_fit_worse():
    model = causal_lm("tno", seed=3)
    errors = [max(convert(model, CompressionPlan.recurrent(2, state=s), N0)[1])
              for s in (1, 2, 4, 8)]
    assert all(b <= a + 1e-12 for a, b in zip(errors, errors[1:], strict=False)), errors
    assert errors[-1] < 0.1 * errors[0]


def test_the_plan_reads_and_writes_a_recurrent_layer():
    plan = CompressionPlan.from_dict({"layers": [{"method": "recurrent", "state": 5},
                                                 {"method": "keep"}]})
    assert plan.layers[0] == LayerPlan(method="recurrent", state=5)
    assert plan.to_dict()["layers"][0] == {"method": "recurrent", "state": 5}
    assert CompressionPlan.from_dict(plan.to_dict()) == plan
    assert plan.describe() == "layer 0: recurrent, s = 5; layer 1: kept"
    with pytest.raises(ValueError, match=r"layers\[0\]: state must be an integer in"):
        CompressionPlan.from_dict({"layers": [{"method": "recurrent", "state": 0}]})


def test_only_a_causal_model_becomes_a_recurrence():
    torch.manual_seed(0)
    bidirectional = build_model(ModelConfig(vocab_size=11, num_classes=3, dim=4, layers=1,
                                            expand_ratio=1))
    with pytest.raises(ValueError, match=r"layers\[0\] cannot become a recurrence: the model "
                                         r"is bidirectional"):
        convert(bidirectional, CompressionPlan.recurrent(1, 4), N0)
    recurrent, _ = convert(causal_lm("tno"), CompressionPlan.recurrent(2, 4), N0)
    with pytest.raises(ValueError, match="ssm operator and cannot be converted: it already "
                                         "is a recurrence"):
        convert(recurrent, CompressionPlan.recurrent(2, 4), N0)


def test_a_converted_file_loads_validated_and_generates(tmp_path):
    model = causal_lm("fd").float()
    converted, _ = convert(model, CompressionPlan.recurrent(2, state=4), N0)
    task = {"name": "charlm", "settings": {"seq_len": N0}, "vocab": "abcdefghij"}
    path = save(tmp_path / "recurrent.safetensors", converted, task)
    loaded, info = load(path)
    assert info.model_config.operator.kind == "ssm"
    for name, tensor in converted.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    decoder = Decoder(loaded.eval(), 5)
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    got = torch.stack([decoder.prefill(tokens[:, :2])] + [decoder.step(tokens[:, t])
                                                          for t in (2, 3, 4)], dim=1)
    with torch.no_grad():
        assert torch.allclose(got, loaded(tokens)[:, 1:], atol=1e-5)


def test_a_file_with_a_growing_pole_is_refused(tmp_path):
    converted, _ = convert(causal_lm("tno").float(), CompressionPlan.recurrent(2, 3), N0)
    task = {"name": "charlm", "settings": {"seq_len": N0}, "vocab": "abcdefghij"}
    with torch.no_grad():
        converted.layers[1].gtu.op.poles[2, 1] = torch.tensor([0.0, 1.5])  # |z| = 1.5
    path = save(tmp_path / "growing.safetensors", converted, task)
    with pytest.raises(CheckpointError, match=r"layers.1.gtu.op.poles: every SSM pole must "
                                              r"have \|z\| <= 1 .*got a pole with \|z\| = 1.5"):
        load(path)


@pytest.mark.parametrize(("argv", "message"), [
    (["--state", "4", "--band", "3", "--rank", "4"], "--recurrent and --state S go together"),
    (["--recurrent", "--state", "0"], "--state must be an integer in"),
    (["--recurrent", "--state", "4", "--band", "3", "--rank", "4"], "give exactly one of"),
])
def test_the_command_line_names_a_bad_recurrent_request(capsys, argv, message):
    assert main(["checkpoints/charlm-tno.safetensors", *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_command_line_refuses_a_bidirectional_model(capsys):
    assert main(["checkpoints/digits-tno.safetensors", "--recurrent", "--state", "4"]) == 2
    assert "cannot become a recurrence" in capsys.readouterr().err


def test_the_command_line_converts_a_saved_model(capsys, tmp_path):
    """A small random causal TNN saved with charlm-tno's task (the conversion does not
    depend on the model's size; charlm-tno itself: test_compress_recurrent_page.py)."""
    shipped, info = load("checkpoints/charlm-tno.safetensors")
    source = save(tmp_path / "small-charlm.safetensors",
                  causal_lm("tno", vocab_size=shipped.config.vocab_size).float(), info.task)
    out = tmp_path / "small-charlm-s8.safetensors"
    assert main([str(source), "--recurrent", "--state", "8",
                 "--repeats", "1", "--threads", "1", "--out", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [layer["method"] for layer in result["layers"]] == ["recurrent", "recurrent"]
    assert all(math.isfinite(layer["error"]) for layer in result["layers"])
    low, high = result["converted"]["worse_by_ci95"]
    assert low <= result["converted"]["worse_by"] <= high
    assert load(out)[1].history["lineage"]["plan"]["layers"][0] == {"method": "recurrent",
                                                                    "state": 8}
    assert np.isfinite(result["converted"]["metric"])
