"""The recurrent form of the shipped causal models: what making every layer s damped
exponentials per channel (``compress.recurrent``) costs the task, and what it gains when
generating (``bench.generation``: time and memory per token against the context).

    python -m tnn_core.compress.recurrent_study                 # charlm-tno and charlm-fd
    python -m tnn_core.compress.recurrent_study --checkpoints charlm-tno-decay099 \\
        --no-generation --json sweep.json

For each s of ``STATES`` the model is converted at its training length n0 (every layer an
SSM of s modes per channel) and scored on the task's evaluation set, the source's
sequences, so the change is paired (``training.scores.difference``). A row holds the
converted metric with its 95 % interval, the paired difference with its interval, the
sequences and each layer's fit error ||T - T̂||_F / ||T - band(T)||_F.

``smallest_state``: the issue's target, the smallest s whose metric is within
``TOLERANCE`` of the source's (the point difference) with the two 95 % intervals
overlapping; ``smallest_state_paired`` the stricter one, the smallest s whose whole paired
interval is within ``TOLERANCE``. The generation latency compares the source (Toeplitz
form) with its conversion at ``smallest_state`` (or --generation-state), its prompt the
task's evaluation text. Prints markdown (docs/benchmarks.md, "Recurrent form and
generation").
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from torch import nn

from tnn_core.allocator import keep_freed_memory
from tnn_core.bench.generation import (
    CONTEXTS,
    context_sweep,
    latency_markdown,
    latency_summary,
    step_latency,
)
from tnn_core.checks import check_int
from tnn_core.compress.convert import convert
from tnn_core.compress.measure import task_scores
from tnn_core.compress.plan import CompressionPlan
from tnn_core.generate import Decoder
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.scores import Scores, difference
from tnn_core.training.tasks import Task, task_from_info

__all__ = ["STATES", "TOLERANCE", "STUDIED", "state_sweep", "sweep_markdown",
           "evaluation_text", "generation_latency", "main"]

STATES = (1, 2, 4, 8, 16, 32)  # s, the modes per channel
TOLERANCE = 0.02  # bpc: "within 0.02 bpc of the source" (the target)
STUDIED = ("charlm-tno", "charlm-fd")  # also: charlm-tno-decay099, charlm-tno-nodecay


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _row(state: int, source: Scores, scores: Scores, errors: list[float],
         seconds: float) -> dict:
    change = difference(source, scores, paired=True)
    summary = scores.to_dict()
    metric, ci95 = float(summary["metric"]), [float(x) for x in summary["ci95"]]
    source_ci = [float(x) for x in source.to_dict()["ci95"]]
    worse_by = float(change.worse_by)
    return {"state": state, "metric": metric, "ci95": ci95,
            "sequences": int(summary["sequences"]), "worse_by": worse_by,
            "worse_by_ci95": [float(change.low), float(change.high)],
            "errors": [float(e) for e in errors], "fit_seconds": seconds,
            "within": worse_by <= TOLERANCE and _overlap(ci95, source_ci),
            "within_paired": float(change.high) <= TOLERANCE}


def state_sweep(model: nn.Module, task: Task, states: tuple[int, ...] = STATES) -> dict:
    """Convert ``model`` (a causal tno or fd LM) with every s of ``states`` and score each.

    Returns source (metric, ci95, sequences), train_length, rows (one per s: ``_row``),
    smallest_state and smallest_state_paired (None where no s qualifies)."""
    n0, layers = task.seq_len, model.config.layers
    model.eval()
    source = task_scores(model, task)
    rows = []
    for s in states:
        start = time.perf_counter()
        converted, errors = convert(model, CompressionPlan.recurrent(layers, s), n0)
        seconds = time.perf_counter() - start
        rows.append(_row(s, source, task_scores(converted.eval(), task), errors, seconds))
    summary = source.to_dict()
    return {"source": {"metric": float(summary["metric"]),
                       "ci95": [float(x) for x in summary["ci95"]],
                       "sequences": int(summary["sequences"])},
            "train_length": n0, "metric_name": task.metric_name, "rows": rows,
            "smallest_state": next((r["state"] for r in rows if r["within"]), None),
            "smallest_state_paired": next((r["state"] for r in rows if r["within_paired"]),
                                          None)}


def _signed(x: float) -> str:
    """+0.0017, or +8.1e-06 where four decimals would read 0."""
    return f"{x:+.4f}" if x == 0 or abs(x) >= 1e-3 else f"{x:+.1e}"


def sweep_markdown(name: str, sweep: dict) -> str:
    """One model's sweep as a markdown table, its source first."""
    src = sweep["source"]
    lines = [f"{name} (n0 = {sweep['train_length']}): source {src['metric']:.4f} "
             f"({src['ci95'][0]:.4f}–{src['ci95'][1]:.4f}), {src['sequences']} sequences\n",
             "| s | bpc (95 % interval) | worse by (paired 95 %) | sequences | "
             "fit error per layer | within 0.02 |", "|---|---|---|---|---|---|"]
    for r in sweep["rows"]:
        errors = ", ".join(f"{e:.2g}" for e in r["errors"])
        low, high = r["worse_by_ci95"]
        lines.append(f"| {r['state']} | {r['metric']:.4f} ({r['ci95'][0]:.4f}–"
                     f"{r['ci95'][1]:.4f}) | {_signed(r['worse_by'])} ({_signed(low)} to "
                     f"{_signed(high)}) | "
                     f"{r['sequences']} | {errors} | {'yes' if r['within'] else 'no'} |")
    lines.append(f"\nsmallest s within {TOLERANCE} with overlapping intervals: "
                 f"{sweep['smallest_state']}; with the whole paired interval within "
                 f"{TOLERANCE}: {sweep['smallest_state_paired']}")
    return "\n".join(lines)


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
    p.add_argument("--states", nargs="+", type=int, default=list(STATES), help="s to try")
    p.add_argument("--contexts", nargs="+", type=int, default=list(CONTEXTS),
                   help="contexts of the generation latency")
    p.add_argument("--steps", type=int, default=101, help="timed steps per context")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per form first")
    p.add_argument("--generation-state", type=int, default=None, metavar="S",
                   help="s of the recurrent form timed (default: the smallest s within 0.02)")
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
