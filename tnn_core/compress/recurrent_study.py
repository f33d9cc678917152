"""The recurrent form of the shipped causal models: what making every layer s damped
exponentials per channel (``compress.recurrent``) costs the task, and what it gains when
generating (``bench.generation``: time and memory per token against the context).

    python -m tnn_core.compress.recurrent_study                 # charlm-tno and charlm-fd
    python -m tnn_core.compress.recurrent_study --checkpoints charlm-tno-decay099 \\
        --no-generation --json sweep.json

``STATE_SWEEP``, every s from 1 to 8 and then powers of two (issue 37), is the one list of
s that this study, ``python -m tnn_core.compress --recurrent`` without --state and the
Compress page try. For each s the model is converted at its training length n0 (every
layer an SSM of s modes per channel) and scored on the task's evaluation set, the
source's sequences, so the change is paired (``training.scores.difference``). A row holds
the converted metric with its 95 % interval, the paired difference with its interval, the
sequences and each layer's relative error ||T - T̂||_F / ||T||_F (``convert.fit_layer``).

The rule is the lab's one (``training.verdicts.quality``): an s keeps the quality when the
whole paired 95 % interval of its change is within the lab-wide tolerance
(``verdicts.TOLERANCE``, 0.05 bpc); ``smallest_state`` is the first such s. The issue's
named target, within ``TARGET`` = 0.02 bpc, is the same paired rule with 0.02, a column of
its own. The generation latency compares the source (Toeplitz form) with its conversion at
the smallest s (or --generation-state), its prompt the task's evaluation text. Prints
markdown (docs/benchmarks.md, "Recurrent form and generation").

``error_sweep`` is the cheap half: each layer's error at every s, fitted (all s at once)
and not scored,
with the modes whose pole sits on |z| = 1 (they never decay); ``suggested_state`` the
first s whose every layer's error is at most ``ERROR_HINT``, a place to start scoring.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn

from tnn_core.allocator import keep_freed_memory
from tnn_core.analysis.exponential_fit import fit_exponentials_ladder, undamped_modes
from tnn_core.bench.generation import (
    CONTEXTS,
    context_sweep,
    latency_markdown,
    latency_summary,
    step_latency,
)
from tnn_core.checks import check_int
from tnn_core.compress.convert import check_convertible, convert
from tnn_core.compress.guard import check_source, conversion_cost
from tnn_core.compress.kernel_errors import every_kernel_layer
from tnn_core.compress.measure import task_scores
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.compress.recurrent import fit_error
from tnn_core.generate import Decoder
from tnn_core.training.budget import check_cost
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.scores import Scores, difference
from tnn_core.training.tasks import Task, task_from_info
from tnn_core.training.verdicts import TOLERANCE, quality

__all__ = ["STATE_SWEEP", "TARGET", "ERROR_HINT", "STUDIED", "state_row", "smallest_state",
           "state_sweep", "sweep_markdown", "error_sweep", "suggested_state",
           "evaluation_text", "generation_latency", "main"]

STATE_SWEEP = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)  # s, the modes per channel: 1..8, then 2^k
TARGET = 0.02  # bpc: the named target, "within 0.02 bpc", by the paired rule
ERROR_HINT = 0.05  # the s suggested: the first whose every layer's relative error is <= this
STUDIED = ("charlm-tno", "charlm-fd")  # also: charlm-tno-decay099, charlm-tno-nodecay


def state_row(state: int, source: Scores, scores: Scores, errors: list[float],
              seconds: float) -> dict:
    """One s of the sweep: ``scores`` against ``source`` on the same sequences, paired;
    "within": the whole paired 95 % interval within the lab-wide tolerance
    (``verdicts.quality``), "within_target": within ``TARGET`` by the same rule."""
    change = difference(source, scores, paired=True)
    summary = scores.to_dict()
    return {"state": state, "metric": float(summary["metric"]),
            "ci95": [float(x) for x in summary["ci95"]],
            "sequences": int(summary["sequences"]), "worse_by": float(change.worse_by),
            "worse_by_ci95": [float(change.low), float(change.high)],
            "errors": [float(e) for e in errors], "fit_seconds": seconds,
            "within": quality(change) == "keeps",
            "within_target": quality(change, TARGET) == "keeps"}


def smallest_state(rows: list[dict], column: str = "within") -> int | None:
    """The first s of ``rows`` (in the sweep's order) whose ``column`` holds; None if none."""
    return next((row["state"] for row in rows if row[column]), None)


def state_sweep(model: nn.Module, task: Task, states: tuple[int, ...] = STATE_SWEEP) -> dict:
    """Convert ``model`` (a causal tno or fd LM) with every s of ``states`` and score each.

    Returns source (metric, ci95, sequences), train_length, rows (one per s:
    ``state_row``), smallest_state and smallest_state_target (``smallest_state``; None
    where no s qualifies)."""
    n0, layers = task.seq_len, model.config.layers
    model.eval()
    source = task_scores(model, task)
    rows = []
    for s in states:
        start = time.perf_counter()
        converted, errors = convert(model, CompressionPlan.recurrent(layers, s), n0)
        seconds = time.perf_counter() - start
        rows.append(state_row(s, source, task_scores(converted.eval(), task), errors, seconds))
    summary = source.to_dict()
    return {"source": {"metric": float(summary["metric"]),
                       "ci95": [float(x) for x in summary["ci95"]],
                       "sequences": int(summary["sequences"])},
            "train_length": n0, "metric_name": task.metric_name, "rows": rows,
            "smallest_state": smallest_state(rows),
            "smallest_state_target": smallest_state(rows, "within_target")}


def _signed(x: float) -> str:
    """+0.0017, or +8.1e-06 where four decimals would read 0."""
    return f"{x:+.4f}" if x == 0 or abs(x) >= 1e-3 else f"{x:+.1e}"


def sweep_markdown(name: str, sweep: dict) -> str:
    """One model's sweep as a markdown table, its source first."""
    src = sweep["source"]
    lines = [f"{name} (n0 = {sweep['train_length']}): source {src['metric']:.4f} "
             f"({src['ci95'][0]:.4f}–{src['ci95'][1]:.4f}), {src['sequences']} sequences\n",
             "| s | bpc (95 % interval) | worse by (paired 95 %) | sequences | "
             f"fit error per layer | within {TOLERANCE['bpc']} (paired) | within {TARGET} "
             "(paired) |", "|---|---|---|---|---|---|---|"]
    for r in sweep["rows"]:
        errors = ", ".join(f"{e:.2g}" for e in r["errors"])
        low, high = r["worse_by_ci95"]
        lines.append(f"| {r['state']} | {r['metric']:.4f} ({r['ci95'][0]:.4f}–"
                     f"{r['ci95'][1]:.4f}) | {_signed(r['worse_by'])} ({_signed(low)} to "
                     f"{_signed(high)}) | "
                     f"{r['sequences']} | {errors} | {'yes' if r['within'] else 'no'} | "
                     f"{'yes' if r['within_target'] else 'no'} |")
    lines.append(f"\nsmallest s whose whole paired 95 % interval is within "
                 f"{TOLERANCE['bpc']} bpc: {sweep['smallest_state']}; within {TARGET} bpc: "
                 f"{sweep['smallest_state_target']}")
    return "\n".join(lines)


def _layer_sweep(kernels: torch.Tensor, states: tuple[int, ...]) -> list[tuple[float, int | None]]:
    """One causal layer's kernels [D, 2 n0 - 1] fitted with every s of ``states`` at once
    (``exponential_fit.fit_exponentials_ladder``: bit for bit the fits ``convert`` makes one
    s at a time, the chain of refined fits shared): per s, the relative error
    ||T - T̂||_F / ||T||_F over the channels, as ``compress.recurrent`` states it, and the
    modes on |z| = 1 over the channels (``undamped_modes``)."""
    n = (kernels.shape[1] + 1) // 2
    column = kernels[:, n - 1:].detach().cpu().double().numpy()  # (D, n) lags 0..n-1
    return [(fit_error(column, fit), int(np.sum(undamped_modes(fit))))
            for fit in fit_exponentials_ladder(column, states)]


@torch.no_grad()
def error_sweep(model: nn.Module, n0: int, states: tuple[int, ...] = STATE_SWEEP) -> list[dict]:
    """Each layer's relative error (what ``convert`` states for a recurrent layer) and count
    of modes on |z| = 1 (they never decay) with s modes per channel, for every s of
    ``states``: one row {"state", "errors", "undamped"} per s, None for a layer that is not
    one kernel per channel. Fitted, not scored. ValueError naming what stops a recurrent
    plan (a bidirectional model, s beyond n0) or the budget, before any kernel is fitted."""
    config = model.config
    plans = [every_kernel_layer(config, LayerPlan(method="recurrent", state=s))
             for s in states]
    for plan in plans:
        check_convertible(config, plan, n0)
    check_source(model)
    check_cost(f"fitting s = {', '.join(map(str, states))} modes to every layer's kernels "
               f"at n = {n0}", conversion_cost(config, plans[-1], n0), passes=len(plans))
    layers = [None if layer.kept else _layer_sweep(op.kernel(n0), tuple(states))
              for layer, op in zip(plans[0].layers, model.operators(), strict=True)]
    return [{"state": s, "errors": [None if fits is None else fits[k][0] for fits in layers],
             "undamped": [None if fits is None else fits[k][1] for fits in layers]}
            for k, s in enumerate(states)]


def suggested_state(rows: list[dict], hint: float = ERROR_HINT) -> int | None:
    """The first s of an ``error_sweep`` whose every layer's error is at most ``hint``: where
    to start scoring (the error does not say what the metric does); None if none is."""
    return next((row["state"] for row in rows
                 if all(e is None or e <= hint for e in row["errors"])), None)


def evaluation_text(task: Task, length: int) -> torch.Tensor:
    """The first ``length`` tokens of the task's evaluation text (tiled if shorter), [1, length]."""
    tokens, _ = task.evaluation_set()  # (N, n0) consecutive windows of the text
    text = tokens.reshape(-1).long()  # (N n0,)
    return text.repeat(-(-length // text.numel()))[:length][None]  # (1, length)


def generation_latency(model: nn.Module, task: Task, state: int,
                       contexts: tuple[int, ...] = CONTEXTS, steps: int = 101,
                       warmup: int = 5) -> list[dict]:
    """Step time and memory of ``model`` (its Toeplitz form, "toeplitz") and of its
    conversion to ``state`` modes ("recurrent") at every context, the two interleaved
    (``bench.generation.step_latency``), then each form's contexts interleaved
    (``context_sweep``)."""
    model.eval()
    converted, _ = convert(model, CompressionPlan.recurrent(model.config.layers, state),
                           task.seq_len)
    models = {"toeplitz": model, "recurrent": converted.eval()}
    prompt = evaluation_text(task, max(contexts) + warmup + steps + 2)

    def progress(rec: dict) -> None:
        print(f"{rec['op']:>9} context {rec['n']:<6} {rec['median_ms']:8.3f} ms",
              file=sys.stderr, flush=True)

    def make(name: str, length: int) -> Decoder:
        return Decoder(models[name], length)

    records = step_latency(make, models, prompt, contexts, steps, warmup, on_progress=progress)
    for name in models:  # each form's contexts interleaved: its slope alone
        records += context_sweep(make, name, prompt, contexts, steps, warmup)
    return records


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tnn_core.compress.recurrent_study",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", nargs="+", default=list(STUDIED),
                   help="shipped causal charlm checkpoints (names in checkpoints/)")
    p.add_argument("--states", nargs="+", type=int, default=list(STATE_SWEEP),
                   help="s to try (default: 1 to 8, then 16 and 32)")
    p.add_argument("--contexts", nargs="+", type=int, default=list(CONTEXTS),
                   help="contexts of the generation latency")
    p.add_argument("--steps", type=int, default=101, help="timed steps per context")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per form first")
    p.add_argument("--generation-state", type=int, default=None, metavar="S",
                   help="s of the recurrent form timed (default: the smallest s whose paired "
                        "interval is within the 0.05 bpc tolerance)")
    p.add_argument("--no-generation", action="store_true", help="the sweep alone")
    p.add_argument("--no-sweep", action="store_true",
                   help="the generation latency alone (needs --generation-state)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--json", metavar="PATH", help="write every result here")
    return p


def _study(name: str, args: argparse.Namespace) -> dict:
    model, info = load(SHIPPED_DIR / f"{name}.safetensors")
    task = task_from_info(info.task)
    out: dict = {}
    state = args.generation_state
    if not args.no_sweep:
        out["sweep"] = sweep = state_sweep(model, task, tuple(args.states))
        print(sweep_markdown(name, sweep) + "\n", flush=True)
        state = state or sweep["smallest_state"] or max(args.states)
    if not args.no_generation:
        records = generation_latency(model, task, state, tuple(args.contexts), args.steps,
                                     args.warmup)
        print(f"{name}: one step, Toeplitz form against recurrent s = {state}, "
              f"{torch.get_num_threads()} thread(s), median (p25–p75) of {args.steps} "
              f"interleaved steps\n\n{latency_markdown(records, 'toeplitz', 'recurrent')}\n",
              flush=True)
        out.update(generation_state=state, generation=records,
                   generation_summary=latency_summary(records, "toeplitz", "recurrent"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.no_sweep and (args.generation_state is None or args.no_generation):
        parser.error("--no-sweep needs --generation-state S (and no --no-generation)")
    keep_freed_memory()
    torch.set_num_threads(check_int("--threads", args.threads, 1, 1024))
    results = {name: _study(name, args) for name in args.checkpoints}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
