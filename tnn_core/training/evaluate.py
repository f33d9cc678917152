"""Evaluate a checkpoint on its task's validation data, at its training length or longer.

    python -m tnn_core.training.evaluate checkpoints/charlm-tno.safetensors --length 1024
    python -m tnn_core.training.evaluate checkpoints/charlm-tno-decay099.safetensors \
        --same-windows 1,2,4,8,16

prints one JSON object: checkpoint, task, metric and value, chance, baselines, the
length used and the training length, loss, batches and targets counted.

Library use (the app): ``evaluate_checkpoint`` for one length, ``length_sweep`` for
1×, 2×, 4× the training length, ``same_window_sweep`` for a language model on the same
windows up to 16×, ``layer_kernels`` for every layer's kernels at a length.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.allocator import keep_freed_memory
from tnn_core.checks import check_int, check_number
from tnn_core.files import read_bounded
from tnn_core.training.answer import answer
from tnn_core.training.budget import (
    SECONDS_LIMIT,
    SWEEP_BATCH_SIZE,
    SWEEP_BATCHES,
    SWEEP_FACTORS,
    BudgetError,
    check_cost,
    pass_cost,
)
from tnn_core.training.checkpoint import CheckpointInfo, load
from tnn_core.training.tasks import IGNORE, Task, task_from_info
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["evaluate", "evaluate_model", "evaluate_checkpoint", "length_sweep",
           "same_window_sweep", "layer_kernels", "deadline_after", "autocast", "main"]

CLI_SECONDS_LIMIT = 600.0  # the command line's default time limit: the user's own machine


def autocast(device: torch.device, dtype: str):
    """bfloat16: autocast (weights stay float32); other dtypes: a no-op context."""
    enabled = dtype == "bfloat16"
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


def deadline_after(seconds: float = SECONDS_LIMIT) -> float:
    """A ``deadline`` for ``evaluate``: ``seconds`` from now on the monotonic clock."""
    return time.monotonic() + seconds


@torch.no_grad()
def evaluate(model: nn.Module, task: Task, batches: int = 8, batch_size: int = 32,
             length: int | None = None, dtype: str = "float32",
             deadline: float | None = None) -> dict:
    """The task's metrics on its fixed validation batches at ``length`` (default seq_len).

    Returns loss (nats), accuracy, the task's metric, perplexity (lm), length and the
    number of targets counted. Past ``deadline`` (``deadline_after``) it stops between
    two batches with a BudgetError: an estimate that erred never means "never ends"."""
    device = next(model.parameters()).device
    n = task.check_length(length)
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for done, (tokens, targets) in enumerate(task.validation(batch_size, batches, n)):
        if deadline is not None and time.monotonic() > deadline:
            raise BudgetError(f"the evaluation at n = {n:,} passed its time limit after "
                              f"{done} of {batches} batches; use fewer or smaller batches")
        tokens, targets = tokens.to(device), targets.to(device)
        with autocast(device, dtype):
            logits = model(tokens)  # (B, n, V) or (B, C)
        logits = logits.reshape(-1, logits.shape[-1]).float()
        targets = targets.reshape(-1)
        keep = targets != IGNORE
        total_loss += F.cross_entropy(logits[keep], targets[keep], reduction="sum").item()
        correct += (logits[keep].argmax(-1) == targets[keep]).sum().item()
        count += int(keep.sum())
    model.train(was_training)
    if count == 0:
        raise ValueError(f"task {task.name} gave no validation targets at length {n}")
    out = task.metrics(total_loss / count, correct / count)
    return {**out, "metric": out[task.metric_name], "length": n, "targets": count}


def evaluate_model(model: nn.Module, task: Task, length: int | None = None, batches: int = 16,
                   batch_size: int = 32, deadline: float | None = None) -> dict:
    """The task's metric for ``model`` at ``length`` (default the task's), as one flat dict."""
    metrics = evaluate(model, task, batches=batches, batch_size=batch_size, length=length,
                       deadline=deadline)
    return {"task": task.name, "metric_name": task.metric_name, "metric": metrics["metric"],
            "higher_is_better": task.higher_is_better, "chance": task.chance,
            "baselines": task.baselines(), "length": metrics["length"],
            "train_length": task.seq_len, "loss": metrics["loss"],
            "accuracy": metrics["accuracy"], "batches": batches, "batch_size": batch_size,
            "targets": metrics["targets"]}


def evaluate_checkpoint(model: nn.Module, info: CheckpointInfo, length: int | None = None,
                        batches: int = 16, batch_size: int = 32, text: bytes | None = None
                        ) -> dict:
    """``evaluate_model`` on the task stored in ``info``; ``text``: the charlm upload, if any."""
    task = task_from_info(info.task, data=text)
    return {"checkpoint": info.source, **evaluate_model(model, task, length, batches,
                                                        batch_size)}


def length_sweep(model: nn.Module, task: Task, factors=SWEEP_FACTORS,
                 batches: int = SWEEP_BATCHES, batch_size: int = SWEEP_BATCH_SIZE) -> list[dict]:
    """The metric at factor × the training length, one row per factor, all within one
    SECONDS_LIMIT (the checkpoint loader checked the estimate of the default sweep).

    A task with a fixed length (digits) gets a row with ``metric`` None and a ``note``
    for every factor but 1."""
    rows, deadline = [], deadline_after()
    for factor in factors:
        length = int(factor * task.seq_len)
        if not task.extrapolates and length != task.seq_len:
            rows.append({"factor": factor, "length": length, "metric": None, "loss": None,
                         "note": f"{task.name} has a fixed length n = {task.seq_len}"})
            continue
        row = evaluate_model(model, task, length, batches, batch_size, deadline)
        rows.append({"factor": factor, "length": length, "metric": row["metric"],
                     "loss": row["loss"], "note": ""})
    return rows


@torch.no_grad()
def same_window_sweep(model: nn.Module, task: Task, factors=(1, 2, 4, 8, 16), windows: int = 8,
                      batch_size: int = 4, deadline: float | None = None) -> list[dict]:
    """A language model's metric at factor × the training length n0, on the same windows.

    TNN's Table 10 asks whether a model trained at n0 still works on longer sequences. To
    compare lengths fairly, every factor scores windows that end at the same positions of
    the validation text: the longest windows (max factor × n0) are drawn once and each
    factor keeps their last factor × n0 tokens. ``metric_last`` scores only the last n0
    positions (the same targets at every factor, now with more context); ``metric_all``
    scores every position, as a model used at that length would be scored.

    Returns one row per factor: factor, length, metric_all, metric_last, loss_all, loss_last.
    """
    if task.kind != "lm":
        raise ValueError(f"same_window_sweep needs a language-model task (kind 'lm'); task "
                         f"{task.name} has kind {task.kind!r}")
    for factor in factors:
        check_int("factor", factor, 1, 64)
    n0, device = task.seq_len, next(model.parameters()).device
    longest = max(factors) * n0
    batches = task.validation(batch_size, -(-windows // batch_size), task.check_length(longest))
    was_training = model.training
    model.eval()
    rows, deadline = [], deadline or deadline_after()
    for factor in factors:
        length = factor * n0
        sums = {"all": [0.0, 0, 0], "last": [0.0, 0, 0]}  # loss sum, correct, count
        for tokens, targets in batches:
            if time.monotonic() > deadline:
                raise BudgetError(f"the same-window sweep passed its time limit at {factor}x "
                                  f"the training length")
            tokens, targets = tokens[:, -length:].to(device), targets[:, -length:].to(device)
            logits = model(tokens).float()  # (B, length, V)
            for part, start in (("all", 0), ("last", length - n0)):
                part_logits = logits[:, start:].reshape(-1, logits.shape[-1])
                part_targets = targets[:, start:].reshape(-1)
                keep = part_targets != IGNORE
                sums[part][0] += F.cross_entropy(part_logits[keep], part_targets[keep],
                                                 reduction="sum").item()
                sums[part][1] += (part_logits[keep].argmax(-1) == part_targets[keep]).sum().item()
                sums[part][2] += int(keep.sum())
        row = {"factor": factor, "length": length}
        for part, (loss, correct, count) in sums.items():
            row[f"loss_{part}"] = loss / count
            row[f"metric_{part}"] = task.metrics(loss / count, correct / count)[task.metric_name]
        rows.append(row)
    model.train(was_training)
    return rows


@torch.no_grad()
def layer_kernels(model: nn.Module, length: int) -> torch.Tensor:
    """Every layer's Toeplitz kernels at ``length``: [L, D, 2n-1] float32 on the CPU.

    ``out[l, c, n-1+k]`` is t_k of channel c in layer l (causal models: zero for k < 0)."""
    return torch.stack([op.kernel(length).float().cpu() for op in model.operators()])


def _factors(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--same-windows must be comma-separated integers such as 1,2,4; "
                         f"got {text!r}") from None


def _budget(model: nn.Module, task: Task, args: argparse.Namespace) -> None:
    """BudgetError unless the asked evaluation fits the memory and time budget."""
    element = next(model.parameters()).element_size()
    check_int("--batches", args.batches, 1)
    check_int("--batch-size", args.batch_size, 1)
    if args.same_windows is not None:
        factors = _factors(args.same_windows)
        n = max(factors) * task.seq_len
        passes = args.batches * len(factors)
    else:
        n, passes = task.check_length(args.length), args.batches
    check_cost(f"evaluating {args.batch_size} sequences of n = {n:,} at a time",
               pass_cost(model.config, args.batch_size, n, element=element), passes=passes,
               seconds_limit=args.time_limit)


def _checked_numbers(result: dict) -> dict:
    """``result`` if its loss and metric are finite; else ValueError: JSON has no inf or
    NaN, and an overflowing model's metric means nothing."""
    rows = result.get("same_windows", [result])
    for row in rows:
        bad = [key for key, value in row.items()
               if isinstance(value, float) and not math.isfinite(value)]
        if bad:
            raise ValueError(f"the model's {bad[0]} is {row[bad[0]]} at length "
                             f"{row.get('length')}: its outputs overflow, so no metric is "
                             f"reported")
    return result


def main(argv: list[str] | None = None) -> int:
    """The command line; prints one JSON line, or one ``error:`` line on stderr and exits 2."""
    p = argparse.ArgumentParser(prog="python -m tnn_core.training.evaluate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a .safetensors checkpoint written by tnn_core.training")
    p.add_argument("--length", type=int, default=None,
                   help="sequence length (default: the training length); longer extrapolates")
    p.add_argument("--batches", type=int, default=16, help="fixed validation batches")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per batch")
    p.add_argument("--text", default=None,
                   help="charlm trained on a user's text: that text file (its SHA-256 must "
                        "match the one the checkpoint records)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--time-limit", type=float, default=CLI_SECONDS_LIMIT, metavar="SECONDS",
                   help="refuse an evaluation estimated to take longer, and stop one that "
                        "does (default %(default)s)")
    p.add_argument("--same-windows", default=None, metavar="FACTORS",
                   help="language models: the metric at these multiples of the training "
                        "length on the same windows, e.g. 1,2,4,8,16 (TNN's Table 10); "
                        "--batches × --batch-size windows")
    args = p.parse_args(argv)
    keep_freed_memory()
    return answer(lambda: _evaluate_command(args), "the evaluation", "--batch-size or --length")


def _evaluate_command(args: argparse.Namespace) -> dict:
    """What ``main`` prints: the evaluation the options ask for, checked first."""
    if args.threads is not None:
        torch.set_num_threads(check_int("--threads", args.threads, 1, 1024))
    check_number("--time-limit", args.time_limit, 1, 86_400)
    model, info = load(args.checkpoint)
    text = None if args.text is None else read_bounded(args.text, MAX_TEXT_BYTES, "--text")
    task = task_from_info(info.task, data=text)
    _budget(model, task, args)
    if args.same_windows is not None:
        rows = same_window_sweep(model, task, _factors(args.same_windows),
                                 args.batches * args.batch_size, args.batch_size,
                                 deadline_after(args.time_limit))
        result = {"checkpoint": info.source, "same_windows": rows}
    else:
        result = {"checkpoint": info.source,
                  **evaluate_model(model, task, args.length, args.batches, args.batch_size,
                                   deadline_after(args.time_limit))}
    return _checked_numbers(result)


if __name__ == "__main__":
    sys.exit(main())
