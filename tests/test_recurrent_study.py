"""The recurrent study (``compress.recurrent_study``) and the generation latency bench
(``bench.generation``) at a tiny size: the records they keep and how they are read.
Timings are not checked for their values; the decoder's correctness is test_generate.py."""

from __future__ import annotations

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
    evaluation_text,
    generation_latency,
    state_sweep,
    sweep_markdown,
)
from tnn_core.generate import Decoder
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.tasks.charlm import CharLMConfig, CharLMTask

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


@pytest.mark.slow  # two conversions and three scorings: about 5 s on the shared machine
def test_the_sweep_scores_every_state_paired_and_names_the_smallest_within(task):
    sweep = state_sweep(causal_lm(task.vocab_size), task, states=(1, 4))
    assert [row["state"] for row in sweep["rows"]] == [1, 4]
    for row in sweep["rows"]:
        assert row["sequences"] == sweep["source"]["sequences"]
        low, high = row["worse_by_ci95"]
        assert low <= row["worse_by"] <= high and len(row["errors"]) == 2
        assert row["within"] == (row["worse_by"] <= 0.02 and row["ci95"][0] <=
                                 sweep["source"]["ci95"][1] and sweep["source"]["ci95"][0]
                                 <= row["ci95"][1])
    first = next((row["state"] for row in sweep["rows"] if row["within"]), None)
    assert sweep["smallest_state"] == first
    assert "| 4 |" in sweep_markdown("tiny", sweep)


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
