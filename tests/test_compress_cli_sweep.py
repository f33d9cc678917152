"""``python -m tnn_core.compress CKPT --recurrent`` without --state (issue 37): every s of
``recurrent_study.STATE_SWEEP`` fitted to every layer, each layer's relative error printed
(no scoring), and the s to try named; what needs a conversion is refused with the reason.
A small random causal TNN saved with charlm's task: the sweep does not depend on the model's
size (charlm-tno's own numbers: docs/compression.md)."""

from __future__ import annotations

import json

import pytest

from tests.compress_fixtures import small_charlm_checkpoint
from tnn_core.compress import CompressionPlan, convert
from tnn_core.compress.cli import main
from tnn_core.compress.recurrent_study import ERROR_HINT, STATE_SWEEP
from tnn_core.training.checkpoint import load

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def small_charlm(tmp_path_factory):
    """(path, model, info) of ``compress_fixtures.small_charlm_checkpoint``: a 2-layer causal
    TNN of 8 channels with charlm's task at n0 = 64."""
    path = small_charlm_checkpoint(tmp_path_factory.mktemp("sweep"))
    return (path, *load(path))


def test_recurrent_without_state_prints_every_s_of_the_sweep(small_charlm, capsys):
    path, model, info = small_charlm
    assert main([str(path), "--recurrent", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert set(result) == {"checkpoint", "training_length", "sweep", "error_hint",
                           "suggested_state", "advice"}
    n0 = result["training_length"]
    assert n0 == info.task["settings"]["seq_len"]
    assert [row["state"] for row in result["sweep"]] == list(STATE_SWEEP)
    for row in result["sweep"]:
        assert set(row) == {"state", "errors", "undamped"} and len(row["undamped"]) == 2
        _, errors = convert(model, CompressionPlan.recurrent(2, row["state"]), n0)
        assert row["errors"] == pytest.approx(errors, rel=1e-9)
        assert f"s = {row['state']}: " in captured.err
    first = next((row["state"] for row in result["sweep"]
                  if max(row["errors"]) <= ERROR_HINT), None)
    assert result["suggested_state"] == first and result["error_hint"] == ERROR_HINT
    assert f"--recurrent --state {first}" in result["advice"]
    assert result["advice"] in captured.err


@pytest.mark.parametrize(("extra", "message"), [
    (["--out", "x.safetensors"], "--out needs a conversion"),
    (["--finetune", "5"], "--finetune needs a conversion"),
    (["--band", "3", "--rank", "4"], "give exactly one of"),
])
def test_what_needs_a_conversion_is_refused_by_the_sweep(small_charlm, capsys, tmp_path,
                                                         extra, message):
    path, _, _ = small_charlm
    extra = [str(tmp_path / e) if e.endswith(".safetensors") else e for e in extra]
    assert main([str(path), "--recurrent", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_state_without_recurrent_is_still_refused(small_charlm, capsys):
    path, _, _ = small_charlm
    assert main([str(path), "--state", "4", "--band", "3", "--rank", "4"]) == 2
    assert "--recurrent and --state S go together" in capsys.readouterr().err
