"""What the shipped models say: the cheapest uniform (m, r) that keeps each model's
metric within a tolerance, with and without fine-tuning, and its measured speed-up.

    python -m tnn_core.compress.study            # every shipped tno and fd checkpoint
    python -m tnn_core.compress.study --finetune 200 --json study.json

For each checkpoint it converts with every (m, r) of the grid on all layers (method
"fit"), evaluates on the source's validation windows and takes, in order of cost
(``planner.layer_cost``), the first plan within the tolerance: 0.01 accuracy (one
point) or 0.01 bits per character. Then it fine-tunes the FINETUNE_TRIES plans cheaper
than that one with the smallest drops (all parameters, --finetune steps) and keeps the
cheapest that comes back within the tolerance; the source is fine-tuned for the same
steps as the control. Prints a markdown table (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from tnn_core.compress.convert import convert
from tnn_core.compress.measure import finetune, parameter_count, speedup, task_scores
from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import grid, layer_cost, metric_drop
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.tasks import task_from_info

__all__ = ["STUDIED", "study_checkpoint", "main"]

STUDIED = ("digits-tno", "digits-fd", "listops-tno", "listops-fd", "charlm-tno", "charlm-fd")
BANDS, RANKS = (1, 3, 9, 17), (4, 8, 16, 32, 64)
TOLERANCE = 0.01
FINETUNE_TRIES = 4  # the cheapest plans fine-tuned, at most


def study_checkpoint(name: str, finetune_steps: int, repeats: int) -> dict:
    model, info = load(SHIPPED_DIR / f"{name}.safetensors")
    task = task_from_info(info.task)
    n0, layers, causal = task.seq_len, model.config.layers, model.config.operator.causal
    source = task_scores(model, task).metric
    rows = []
    for m, r in sorted(grid(n0, BANDS, RANKS), key=lambda p: layer_cost(n0, p, causal)):
        plan = CompressionPlan.uniform(layers, m, r, "fit")
        converted, errors = convert(model, plan, n0)
        metric = task_scores(converted, task).metric
        rows.append({"band": m, "rank": r, "metric": metric, "errors": errors,
                     "drop": metric_drop(source, metric, task.higher_is_better)})
        print(f"{name} m={m} r={r}: {metric:.4f} (source {source:.4f})", file=sys.stderr)
    kept = next((row for row in rows if row["drop"] <= TOLERANCE), None)
    tuned = None
    control = None
    if finetune_steps:
        control_model, _ = load(SHIPPED_DIR / f"{name}.safetensors")
        finetune(control_model, task, finetune_steps)
        control = task_scores(control_model, task).metric
        cheaper = [row for row in rows if kept is None or
                   layer_cost(n0, (row["band"], row["rank"]), causal)
                   < layer_cost(n0, (kept["band"], kept["rank"]), causal)]
        for row in sorted(cheaper, key=lambda row: row["drop"])[:FINETUNE_TRIES]:
            plan = CompressionPlan.uniform(layers, row["band"], row["rank"], "fit")
            tuned_model, _ = convert(model, plan, n0)
            finetune(tuned_model, task, finetune_steps)
            row["finetuned"] = task_scores(tuned_model, task).metric
            print(f"{name} m={row['band']} r={row['rank']} fine-tuned: {row['finetuned']:.4f}",
                  file=sys.stderr)
        recovered = [row for row in cheaper if "finetuned" in row and
                     metric_drop(source, row["finetuned"], task.higher_is_better) <= TOLERANCE]
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
            "train_length": n0, "causal": causal, "source": source,
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


def _cell(result: dict, label: str) -> str:
    row = result[label]
    if row is None:
        return "none on the grid"
    metric = row["metric"] if label == "kept" else row["finetuned"]
    t = result["timed"][label]
    return (f"m = {row['band']}, r = {row['rank']}: {metric:.3f}; "
            f"{t['1']['speedup']:.2f}× / {t['4']['speedup']:.2f}×")


def markdown(results: list[dict]) -> str:
    lines = ["| checkpoint (n0) | source | cheapest within 0.01, no fine-tuning: metric; "
             "speed-up 1× / 4× | after fine-tuning | source fine-tuned alike |",
             "|---|---:|---|---|---:|"]
    for r in results:
        control = "—" if r["source_finetuned"] is None else f"{r['source_finetuned']:.3f}"
        lines.append(f"| {r['checkpoint']} ({r['train_length']}) | {r['source']:.3f} "
                     f"{r['metric_name']} | {_cell(r, 'kept')} | {_cell(r, 'tuned')} | "
                     f"{control} |")
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
