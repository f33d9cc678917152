"""What the shipped models say: the cheapest uniform (m, r) that keeps each model's
quality, with and without fine-tuning, and its measured speed-up.

    python -m tnn_core.compress.study            # every shipped tno and fd checkpoint
    python -m tnn_core.compress.study --finetune 200 --json study.json

For each checkpoint it converts with every (m, r) of the grid on all layers (method
"fit"), scores the task's evaluation set (the source's sequences, paired) and takes, in
order of cost (``planner.layer_cost``), the first plan that keeps the source's quality
by ``training.verdicts``: the whole paired 95 % interval of its drop (the source's
sequences) within 2 points of accuracy or 0.05 bits per character. Then it fine-tunes the
FINETUNE_TRIES plans cheaper than that one with the smallest drops (all parameters,
--finetune steps) and keeps the cheapest that then keeps the quality; the source is
fine-tuned for the same steps as the control. Prints a markdown table (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from tnn_core.compress.convert import convert
from tnn_core.compress.measure import finetune, parameter_count, speedup, task_scores
from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import grid, layer_cost
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.scores import Scores, difference, format_metric
from tnn_core.training.tasks import task_from_info
from tnn_core.training.verdicts import amount, quality

__all__ = ["STUDIED", "study_checkpoint", "main"]

STUDIED = ("digits-tno", "digits-fd", "listops-tno", "listops-fd", "charlm-tno", "charlm-fd")
BANDS, RANKS = (1, 3, 9, 17), (4, 8, 16, 32, 64)
FINETUNE_TRIES = 4  # the cheapest plans fine-tuned, at most


def _scored(source: Scores, scores: Scores) -> dict:
    """A plan's scores as the study records them: metric, interval and paired drop."""
    change = difference(source, scores, paired=True)
    return {**scores.to_dict(), "drop": change.worse_by, "drop_ci95": [change.low, change.high],
            "keeps": quality(change) == "keeps"}


def study_checkpoint(name: str, finetune_steps: int, repeats: int) -> dict:
    model, info = load(SHIPPED_DIR / f"{name}.safetensors")
    task = task_from_info(info.task)
    n0, layers, causal = task.seq_len, model.config.layers, model.config.operator.causal
    source = task_scores(model, task)
    rows = []
    for m, r in sorted(grid(n0, BANDS, RANKS), key=lambda p: layer_cost(n0, p, causal)):
        plan = CompressionPlan.uniform(layers, m, r, "fit")
        converted, errors = convert(model, plan, n0)
        rows.append({"band": m, "rank": r, "errors": errors,
                     **_scored(source, task_scores(converted, task))})
        print(f"{name} m={m} r={r}: {rows[-1]['metric']:.4f} (source {source.metric:.4f})",
              file=sys.stderr)
    kept = next((row for row in rows if row["keeps"]), None)
    tuned = None
    control = None
    if finetune_steps:
        control_model, _ = load(SHIPPED_DIR / f"{name}.safetensors")
        finetune(control_model, task, finetune_steps)
        control = task_scores(control_model, task).to_dict()
        cheaper = [row for row in rows if kept is None or
                   layer_cost(n0, (row["band"], row["rank"]), causal)
                   < layer_cost(n0, (kept["band"], kept["rank"]), causal)]
        for row in sorted(cheaper, key=lambda row: row["drop"])[:FINETUNE_TRIES]:
            plan = CompressionPlan.uniform(layers, row["band"], row["rank"], "fit")
            tuned_model, _ = convert(model, plan, n0)
            finetune(tuned_model, task, finetune_steps)
            row["finetuned"] = _scored(source, task_scores(tuned_model, task))
            print(f"{name} m={row['band']} r={row['rank']} fine-tuned: "
                  f"{row['finetuned']['metric']:.4f}", file=sys.stderr)
        recovered = [row for row in cheaper if row.get("finetuned", {}).get("keeps")]
        tuned = recovered[0] if recovered else None  # rows are in order of cost
    timed = {}
    for label, row in (("kept", kept), ("tuned", tuned)):
        if row is None:
            continue
        converted, _ = convert(model, CompressionPlan.uniform(layers, row["band"], row["rank"],
                                                              "fit"), n0)
        timed[label] = {str(f): speedup(model, converted, model.config.vocab_size, f * n0,
                                        repeats=repeats).to_dict() for f in (1, 4)}
        timed[label]["parameters"] = parameter_count(converted)
    return {"checkpoint": name, "task": task.name, "metric_name": task.metric_name,
            "train_length": n0, "causal": causal, "source": source.to_dict(),
            "source_parameters": parameter_count(model), "source_finetuned": control,
            "finetune_steps": finetune_steps, "rows": rows, "kept": kept, "tuned": tuned,
            "timed": timed}


def speed_over_length(name: str, band: int, rank: int, lengths, repeats: int) -> list[dict]:
    """Forward+backward of the source and its uniform (band, rank) conversion at each
    length, batch 1: where the operator's share of the model grows."""
    model, info = load(SHIPPED_DIR / f"{name}.safetensors")
    n0 = task_from_info(info.task).seq_len
    converted, _ = convert(model, CompressionPlan.uniform(model.config.layers, band, rank,
                                                          "fit"), n0)
    return [{"checkpoint": name, "band": band, "rank": rank,
             **speedup(model, converted, model.config.vocab_size, n, batch=1,
                       repeats=repeats).to_dict()} for n in lengths]


def _metric(scored: dict, name: str) -> str:
    """"1.990 bpc (1.955–2.026)"."""
    low, high = scored["ci95"]
    return (f"{format_metric(scored['metric'], name)} ({format_metric(low, name, unit=False)}–"
            f"{format_metric(high, name, unit=False)})")


def _cell(result: dict, label: str) -> str:
    row = result[label]
    if row is None:
        return "none on the grid"
    scored = row if label == "kept" else row["finetuned"]
    name = result["metric_name"]
    low, high = scored["drop_ci95"]
    t = result["timed"][label]
    speeds = " / ".join(f"{t[f]['speedup']:.2f}× ({t[f]['speedup_ci95'][0]:.2f}–"
                        f"{t[f]['speedup_ci95'][1]:.2f})" for f in ("1", "4"))
    return (f"m = {row['band']}, r = {row['rank']}: {_metric(scored, name)}, drop "
            f"{amount(low, name).split()[0]} to {amount(high, name)}; {speeds}")


def markdown(results: list[dict]) -> str:
    lines = ["| checkpoint (n0) | source | cheapest that keeps the quality, no fine-tuning: "
             "metric, drop; speed-up 1× / 4× | after fine-tuning | source fine-tuned alike |",
             "|---|---:|---|---|---:|"]
    for r in results:
        name = r["metric_name"]
        control = "—" if r["source_finetuned"] is None else _metric(r["source_finetuned"], name)
        lines.append(f"| {r['checkpoint']} ({r['train_length']}) | {_metric(r['source'], name)} "
                     f"| {_cell(r, 'kept')} | {_cell(r, 'tuned')} | {control} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tnn_core.compress.study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", default=",".join(STUDIED),
                   help="comma-separated shipped checkpoint names")
    p.add_argument("--finetune", type=int, default=200, help="fine-tuning steps (0: none)")
    p.add_argument("--repeats", type=int, default=15, help="timed rounds per length")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", default=None, help="also write every row here")
    p.add_argument("--lengths", default=None, metavar="CHECKPOINT:M:R:N1,N2,...",
                   help="instead: time one uniform conversion against its source at these "
                        "lengths, batch 1, e.g. listops-fd:9:32:1024,4096,16384")
    args = p.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.lengths is not None:
        name, band, rank, lengths = args.lengths.split(":")
        rows = speed_over_length(name, int(band), int(rank),
                                 [int(n) for n in lengths.split(",")], args.repeats)
        print("| n | source ms (IQR) | converted ms (IQR) | speed-up |\n|---:|---:|---:|---:|")
        for row in rows:
            (a, b), (c, d) = row["source_quartiles"], row["converted_quartiles"]
            print(f"| {row['length']} | {row['source_ms']:.1f} ({a:.1f}–{b:.1f}) | "
                  f"{row['converted_ms']:.1f} ({c:.1f}–{d:.1f}) | {row['speedup']:.2f}× |")
        return 0
    results = [study_checkpoint(name, args.finetune, args.repeats)
               for name in args.checkpoints.split(",")]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
