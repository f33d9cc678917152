"""The recurrent study (``compress.recurrent_study``) and the generation latency bench
(``bench.generation``) at a tiny size: the records they keep and how they are read.
Timings are not checked for their values; the decoder's correctness is test_generate.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tnn_core.bench.generation import (
    CONTEXTS_INTERLEAVED,
    SIDE_BY_SIDE,
    context_sweep,
    faster_from,
    held_bytes,
    latency_markdown,
    latency_summary,
    step_latency,
)
from tnn_core.compress import CompressionPlan, convert
from tnn_core.compress.recurrent_study import (
    STATE_SWEEP,
    TARGET,
    error_sweep,
    evaluation_text,
    generation_latency,
    smallest_state,
    state_row,
    state_sweep,
    suggested_state,
    sweep_markdown,
)
from tnn_core.generate import Decoder
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.scores import Scores
from tnn_core.training.tasks.charlm import CharLMConfig, CharLMTask
from tnn_core.training.verdicts import TOLERANCE

TEXT = b"the quick brown fox jumps over the lazy dog; " * 60

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def task():
    return CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=16))


def causal_lm(vocab: int):
    torch.manual_seed(0)
    operator = OperatorConfig(kind="tno", causal=True, rpe_dim=8, decay=0.9)
    return build_model(ModelConfig(task="lm", vocab_size=vocab, dim=4, layers=2,
                                   expand_ratio=1, operator=operator)).eval()


def bpc(per_sequence: np.ndarray) -> Scores:
    """Sequences of 100 characters scoring these bits per character."""
    targets = np.full(len(per_sequence), 100.0)
    return Scores("bpc", False, per_sequence * math.log(2) * targets,
                  np.zeros(len(per_sequence)), targets)


SOURCE = np.random.default_rng(0).normal(2.0, 0.3, 200)  # (N,) bpc per sequence


def test_the_sweep_is_every_s_to_8_then_powers_of_two():
    assert STATE_SWEEP == (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)
    assert TOLERANCE["bpc"] == 0.05 and TARGET == 0.02


def test_a_point_within_the_tolerance_is_not_enough_the_paired_interval_must_be():
    """Issue 37: the old rule (point difference within, marginal intervals overlapping) took
    s = 1 here; the paired rule takes s = 2, whose whole paired interval is within 0.05."""
    noise = np.random.default_rng(1).normal(0, 1, 200)
    noise = (noise - noise.mean()) / noise.std()  # (N,) mean 0, spread 1 exactly
    loose = state_row(1, bpc(SOURCE), bpc(SOURCE + 0.03 + 0.3 * noise), [0.1], 0.0)
    tight = state_row(2, bpc(SOURCE), bpc(SOURCE + 0.03 + 0.01 * noise), [0.05], 0.0)
    assert loose["worse_by"] == pytest.approx(0.03, abs=1e-12)
    assert loose["worse_by_ci95"][1] > 0.05 and not loose["within"]
    assert tight["worse_by_ci95"][1] < 0.05 and tight["within"]
    assert not tight["within_target"]  # its interval reaches 0.03 > 0.02
    close = state_row(3, bpc(SOURCE), bpc(SOURCE + 0.005 + 0.001 * noise), [0.01], 0.0)
    assert close["within"] and close["within_target"]
    rows = [loose, tight, close]
    assert smallest_state(rows) == 2 and smallest_state(rows, "within_target") == 3
    assert smallest_state(rows[:1]) is None
    table = sweep_markdown("planted", {"source": {"metric": 2.0, "ci95": [1.9, 2.1],
                                                  "sequences": 200}, "train_length": 16,
                                       "rows": rows, "smallest_state": 2,
                                       "smallest_state_target": 3})
    assert "| within 0.05 (paired) | within 0.02 (paired) |" in table
    assert "| 2 |" in table and table.count("| yes |") == 2


@pytest.mark.slow  # two conversions and three scorings: about 5 s on the shared machine
def test_the_sweep_scores_every_state_paired_and_names_the_smallest_within(task):
    sweep = state_sweep(causal_lm(task.vocab_size), task, states=(1, 4))
    assert [row["state"] for row in sweep["rows"]] == [1, 4]
    for row in sweep["rows"]:
        assert row["sequences"] == sweep["source"]["sequences"]
        low, high = row["worse_by_ci95"]
        assert low <= row["worse_by"] <= high and len(row["errors"]) == 2
        assert row["within"] == (high <= TOLERANCE["bpc"])
        assert row["within_target"] == (high <= TARGET)
    assert sweep["smallest_state"] == smallest_state(sweep["rows"])
    assert "| 4 |" in sweep_markdown("tiny", sweep)


def test_the_error_sweep_fits_every_s_and_suggests_the_first_small_enough(task):
    """Errors alone (no scoring): one row per s, each layer's error as a conversion states
    it, never growing with s; the suggestion is the first s whose every error is small."""
    model = causal_lm(task.vocab_size).double()
    rows = error_sweep(model, task.seq_len, (1, 2, 3))
    assert [row["state"] for row in rows] == [1, 2, 3]
    for row in rows:
        _, errors = convert(model, CompressionPlan.recurrent(2, row["state"]), task.seq_len)
        assert row["errors"] == pytest.approx(errors, rel=1e-12)
        assert len(row["undamped"]) == 2
    assert all(max(b["errors"]) <= max(a["errors"]) + 1e-12
               for a, b in zip(rows, rows[1:], strict=False))
    planted = [{"state": 1, "errors": [0.2, 0.01]}, {"state": 2, "errors": [0.04, 0.05]},
               {"state": 3, "errors": [0.01, 0.01]}]
    assert suggested_state(planted, 0.05) == 2 and suggested_state(planted, 0.001) is None


def test_the_study_s_command_line_sweeps_state_sweep_by_default():
    from tnn_core.compress.recurrent_study import _parser
    assert tuple(_parser().parse_args([]).states) == STATE_SWEEP


def test_each_form_is_timed_at_every_context_with_the_state_it_holds(task):
    model = causal_lm(task.vocab_size)
    converted, _ = convert(model, CompressionPlan.recurrent(2, 3), task.seq_len)
    models = {"toeplitz": model, "recurrent": converted.eval()}
    prompt = evaluation_text(task, 40)
    records = step_latency(lambda name, length: Decoder(models[name], length), models,
                           prompt, contexts=(1, 8, 16), steps=3, warmup=1)
    assert [(r["op"], r["n"]) for r in records] == [
        (op, n) for n in (1, 8, 16) for op in ("toeplitz", "recurrent")]
    assert all(r["repeats"] == 3 and r["p25_ms"] <= r["median_ms"] <= r["p75_ms"]
               for r in records)
    state = {(r["op"], r["n"]): r["state_bytes"] for r in records}
    D, bytes_per = 4, 4  # channels, float32; two layers
    assert [state[("toeplitz", n)] for n in (1, 8, 16)] == [2 * n * D * bytes_per
                                                              for n in (1, 8, 16)]
    assert len({state[("recurrent", n)] for n in (1, 8, 16)}) == 1
    decoder = Decoder(models["recurrent"], 8)
    assert held_bytes(decoder) >= decoder.state_bytes() > 0
    records += context_sweep(lambda name, length: Decoder(models[name], length), "recurrent",
                             prompt, contexts=(1, 8, 16), steps=3, warmup=1)
    assert [r["n"] for r in records if r["mode"] == CONTEXTS_INTERLEAVED] == [1, 8, 16]
    summary = latency_summary(records, "toeplitz", "recurrent", n_min=8)
    assert set(summary["slopes"]) == {"toeplitz, step", "recurrent, step",
                                      f"recurrent, {CONTEXTS_INTERLEAVED}"}
    assert "| 16 |" in latency_markdown(records, "toeplitz", "recurrent")


def test_the_prompt_must_cover_the_contexts_and_steps(task):
    with pytest.raises(ValueError, match=r"prompt must be \[1, T >= 22\]"):
        step_latency(lambda name, length: None, ["a"], torch.zeros(1, 10, dtype=torch.long),
                     contexts=(16,), steps=3, warmup=1)


@pytest.mark.slow  # a conversion and two decoders per context: about 3 s
def test_generation_latency_wires_the_source_and_its_conversion(task):
    records = generation_latency(causal_lm(task.vocab_size), task, state=2, contexts=(1, 4),
                                 steps=2, warmup=0)
    assert {r["op"] for r in records} == {"toeplitz", "recurrent"}


def _record(op: str, n: int, median: float, spread: float = 0.1) -> dict:
    return dict(op=op, causal=True, mode=SIDE_BY_SIDE, n=n, median_ms=median,
                p25_ms=median - spread, p75_ms=median + spread, repeats=5)


def test_faster_from_is_the_start_of_the_separated_run_at_the_largest_contexts():
    toeplitz = [_record("t", n, ms) for n, ms in ((1, 1.0), (256, 1.0), (1024, 2.0),
                                                  (4096, 4.0))]
    recurrent = [_record("r", n, 1.0) for n in (1, 256, 1024, 4096)]
    assert faster_from(toeplitz + recurrent, "r", "t") == 1024
    assert faster_from(toeplitz + recurrent, "t", "r") is None
    recurrent[-1] = _record("r", 4096, 4.0)  # overlapping at the largest: never
    assert faster_from(toeplitz + recurrent, "r", "t") is None
