"""Per-token generation latency against the context: token-at-a-time forms of a causal LM
timed side by side, and the memory each holds.

A *form* here is anything with ``generate.Decoder``'s interface: ``prefill(tokens [1, t])``,
``step(token [1])``, ``state_bytes()`` and ``forms`` (each layer's incremental form).
This module builds none (the bench sits below ``generate``): ``step_latency`` is given
``make(name, length)``; ``compress.recurrent_study`` gives it the Toeplitz form of a
model and the recurrent form of its conversion.

Measurement. At each context c, every form's decoder is built for c + warmup + steps + 2
positions and prefilled with the first c tokens of ``prompt``; then ``steps`` interleaved
rounds (``harness.interleaved_times``, after ``warmup`` steps each): each round one
``step`` of every form, in an order that rotates round by round, each fed the token that
follows in the text, so the context grows from c to c + warmup + steps during the run.
Then one more step of each under torch's profiler: the peak of its CPU tensor allocations
above the start (``memory.profiler_peak_mb``; an op's transients count by their net).

A record: op (the form's name), causal True, mode "step", n = c, median_ms, p25_ms,
p75_ms, repeats, state_bytes (``state_bytes()`` after the prefill: the inputs or modes
held for one sequence), held_bytes (every tensor the layers' forms hold, ``held_bytes``)
and step_peak_bytes: the shape ``harness.slopes`` reads.

Letters: c context (tokens so far), D channels, s modes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

import torch

from tnn_core.bench.harness import interleaved_times, order, quartiles, slopes
from tnn_core.bench.memory import profiler_peak_mb
from tnn_core.checks import check_int

__all__ = ["CONTEXTS", "SIDE_BY_SIDE", "CONTEXTS_INTERLEAVED", "held_bytes", "step_latency",
           "context_sweep", "faster_from", "latency_summary", "latency_markdown"]

CONTEXTS = (1, 256, 1024, 4096, 16384)  # tokens before the timed steps
SIDE_BY_SIDE = "step"  # record mode: the forms interleaved at one context
CONTEXTS_INTERLEAVED = "step, contexts interleaved"  # one form, its contexts interleaved
_MB = 2**20


def held_bytes(decoder) -> int:
    """Bytes of every tensor the decoder's layer forms hold: the Toeplitz form's inputs
    (allocated for the decoder's whole length) and kernel lags, or the recurrent form's
    state, poles, residues and direct term."""
    return sum(t.numel() * t.element_size() for form in decoder.forms
               for t in vars(form).values() if isinstance(t, torch.Tensor))


def _stepper(decoder, prompt: torch.Tensor, start: int) -> Callable[[], None]:
    """One ``decoder.step`` per call, fed prompt's tokens from ``start`` on."""
    position = [start]

    def run() -> None:
        decoder.step(prompt[:, position[0]])  # (1,)
        position[0] += 1
    return run


def _timed(decoders: dict, starts: dict[str, int], prompt: torch.Tensor, steps: int,
           warmup: int) -> dict[str, dict]:
    """Interleaved steps of every decoder (each fed prompt's tokens from its start), then one
    profiled step each: per key, the record's timing and memory fields."""
    state = {key: d.state_bytes() for key, d in decoders.items()}
    steppers = {key: _stepper(d, prompt, starts[key]) for key, d in decoders.items()}
    times = interleaved_times(steppers, steps, warmup, no_grad=True)
    out = {}
    for key, decoder in decoders.items():
        p25, p75 = quartiles(times[key])
        out[key] = dict(median_ms=statistics.median(times[key]), p25_ms=p25, p75_ms=p75,
                        repeats=len(times[key]), state_bytes=state[key],
                        held_bytes=held_bytes(decoder),
                        step_peak_bytes=round(profiler_peak_mb(steppers[key]) * _MB),
                        threads=torch.get_num_threads())
    return out


def _checked(prompt: torch.Tensor, contexts: Iterable[int], steps: int, warmup: int
             ) -> tuple[list[int], int]:
    """The contexts, and the positions a decoder needs beyond its context."""
    contexts = [check_int("context", c, 1) for c in contexts]
    check_int("steps", steps, 1)
    check_int("warmup", warmup, 0)
    extra = warmup + steps + 2  # the timed steps, the warm-up and the profiled step
    if prompt.dim() != 2 or prompt.shape[0] != 1 or prompt.shape[1] < max(contexts) + extra:
        raise ValueError(f"prompt must be [1, T >= {max(contexts) + extra}] (the largest "
                         f"context + warmup + steps + 2); got {tuple(prompt.shape)}")
    return contexts, extra


def step_latency(make: Callable[[str, int], object], names: Iterable[str],
                 prompt: torch.Tensor, contexts: Iterable[int] = CONTEXTS, steps: int = 101,
                 warmup: int = 5, on_progress: Callable[[dict], None] | None = None
                 ) -> list[dict]:
    """Time one ``step`` of each named form at every context, the forms interleaved
    (module docstring).

    make(name, length): a fresh decoder of that form for ``length`` positions.
    prompt: token ids [1, T], T >= max(contexts) + warmup + steps + 2."""
    names = list(names)
    contexts, extra = _checked(prompt, contexts, steps, warmup)
    records = []
    for c in contexts:
        decoders = {name: make(name, c + extra) for name in names}
        for decoder in decoders.values():
            decoder.prefill(prompt[:, :c])  # (1, c)
        timed = _timed(decoders, dict.fromkeys(names, c), prompt, steps, warmup)
        for name in names:
            records.append(dict(op=name, causal=True, mode=SIDE_BY_SIDE, n=c, **timed[name]))
            if on_progress is not None:
                on_progress(records[-1])
    return records


def context_sweep(make: Callable[[str, int], object], name: str, prompt: torch.Tensor,
                  contexts: Iterable[int] = CONTEXTS, steps: int = 101, warmup: int = 5
                  ) -> list[dict]:
    """One form at every context at once, the contexts interleaved: a decoder per context,
    each round one step of each. Its slope is free of another form's steps between its
    own (and of the machine's drift between contexts). Records as ``step_latency``'s,
    mode "step, contexts interleaved"."""
    contexts, extra = _checked(prompt, contexts, steps, warmup)
    decoders = {str(c): make(name, c + extra) for c in contexts}
    for c in contexts:
        decoders[str(c)].prefill(prompt[:, :c])  # (1, c)
    timed = _timed(decoders, {str(c): c for c in contexts}, prompt, steps, warmup)
    return [dict(op=name, causal=True, mode=CONTEXTS_INTERLEAVED, n=c,
                 **timed[str(c)]) for c in contexts]


def faster_from(records: Iterable[dict], fast: str, slow: str) -> int | None:
    """The smallest context from which ``fast``'s step is faster than ``slow``'s at every
    measured context beyond the spread (its p75 below the other's p25: ``harness.order``),
    in the side-by-side records; None if it is not so at the largest."""
    by = {(r["op"], r["n"]): (r["p25_ms"], r["median_ms"], r["p75_ms"]) for r in records
          if r["mode"] == SIDE_BY_SIDE}
    found = None
    for c in sorted({n for op, n in by if op == fast and (slow, n) in by}, reverse=True):
        if order(by[(fast, c)], by[(slow, c)]) != -1:
            break
        found = c
    return found


def latency_summary(records: list[dict], toeplitz: str, recurrent: str,
                    n_min: int = 256) -> dict:
    """The slope of log(step time) against log(context) over contexts >= ``n_min`` per
    form and mode (``harness.slopes``: slope, slope_se, points; keys "form, mode") and
    where the recurrent form is faster beyond the spreads from."""
    fitted = {f"{s['op']}, {s['mode']}": {k: s[k] for k in ("slope", "slope_se", "n_min",
                                                            "n_max", "points")}
              for s in slopes(records, n_min=n_min)}
    return {"slopes": fitted, "recurrent_faster_from": faster_from(records, recurrent, toeplitz),
            "toeplitz_faster_from": faster_from(records, toeplitz, recurrent)}


def _ms(r: dict) -> str:
    return f"{r['median_ms']:.3g} ({r['p25_ms']:.3g}–{r['p75_ms']:.3g})"


def _kib(count: int) -> str:
    return f"{count / 1024:,.1f}"


def _row(c: int, t: dict, r: dict) -> str:
    side = order((t["p25_ms"], t["median_ms"], t["p75_ms"]),
                 (r["p25_ms"], r["median_ms"], r["p75_ms"]))
    verdict = {-1: "Toeplitz", 1: "recurrent", 0: "cannot tell"}[side]
    return (f"| {c} | {_ms(t)} | {_ms(r)} | {t['median_ms'] / r['median_ms']:.2f} | {verdict} "
            f"| {_kib(t['state_bytes'])} / {_kib(r['state_bytes'])} | "
            f"{_kib(t['held_bytes'])} / {_kib(r['held_bytes'])} | "
            f"{_kib(t['step_peak_bytes'])} / {_kib(r['step_peak_bytes'])} |")


def latency_markdown(records: list[dict], toeplitz: str, recurrent: str) -> str:
    """Step time and memory per context, the two forms side by side; then each form's
    contexts interleaved, where measured (two runs: no ratio between them)."""
    by = {(r["op"], r["mode"], r["n"]): r for r in records}
    contexts = sorted({n for op, mode, n in by if mode == SIDE_BY_SIDE})
    lines = ["| context | Toeplitz ms (p25–p75) | recurrent ms (p25–p75) | "
             "Toeplitz / recurrent | faster (spreads) | state KiB T / R | "
             "held KiB T / R | step peak alloc KiB T / R |", "|---|---|---|---|---|---|---|---|"]
    lines += [_row(c, by[(toeplitz, SIDE_BY_SIDE, c)], by[(recurrent, SIDE_BY_SIDE, c)])
              for c in contexts]
    alone = sorted({n for op, mode, n in by if mode == CONTEXTS_INTERLEAVED})
    if alone:
        lines += [f"\n{CONTEXTS_INTERLEAVED} (each form in its own run)\n",
                  "| context | Toeplitz ms (p25–p75) | recurrent ms (p25–p75) |", "|---|---|---|"]
        lines += [f"| {c} | " + " | ".join(_ms(by[(op, CONTEXTS_INTERLEAVED, c)])
                                          if (op, CONTEXTS_INTERLEAVED, c) in by else "–"
                                          for op in (toeplitz, recurrent)) + " |"
                  for c in alone]
    summary = latency_summary(records, toeplitz, recurrent)
    for key, s in summary["slopes"].items():
        se = "" if s["slope_se"] is None else f" ± {s['slope_se']:.2f}"
        lines.append(f"\n{key}: slope of log(time) against log(context) "
                     f"{s['slope']:.2f}{se} over {s['n_min']}..{s['n_max']}")
    lines.append(f"\nrecurrent faster (spreads separate) from context "
                 f"{summary['recurrent_faster_from']}")
    return "\n".join(lines)
