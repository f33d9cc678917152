"""Evaluate a checkpoint on its task's evaluation set, at its training length or longer.

    python -m tnn_core.training.evaluate checkpoints/charlm-tno.safetensors --length 1024
    python -m tnn_core.training.evaluate checkpoints/charlm-tno-decay099.safetensors \
        --same-windows 1,2,4,8,16

prints one JSON object: checkpoint, task, metric, its 95 % interval ``ci95`` and the
number of ``sequences``, chance, baselines, the length used and the training length,
loss and targets counted.

Every metric the lab reports comes from one fixed evaluation set per task
(``Task.evaluation_set``) scored per sequence (``training.scores``): the CLI, Inspect's
header, ablation, length sweep and Table 10, and Compress all report the same number
with the same interval.

Library use (the app): ``score`` for the Scores at one length, ``evaluate_model`` for
them as a flat dict, ``length_sweep`` for 1×, 2×, 4× the training length,
``same_window_sweep`` for a language model on the same windows up to 16×,
``layer_kernels`` for every layer's kernels at a length. ``evaluate`` is the training
loop's cheaper periodic evaluation on a few validation batches.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from tnn_core.allocator import keep_freed_memory
from tnn_core.checks import check_int, check_number
from tnn_core.files import read_bounded
from tnn_core.models import ModelConfig
from tnn_core.training.answer import answer
from tnn_core.training.budget import (
    MEMORY_LIMIT,
    SECONDS_LIMIT,
    SWEEP_FACTORS,
    TimeLimitError,
    check_cost,
    pass_cost,
)
from tnn_core.training.checkpoint import CheckpointInfo, load
from tnn_core.training.progress import progress_bar
from tnn_core.training.scores import Scores
from tnn_core.training.tasks import IGNORE, Task, task_from_info
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["score", "score_batches", "evaluation_batch", "evaluate", "evaluate_model",
           "evaluate_checkpoint", "evaluation_size", "length_sweep", "same_window_sweep",
           "layer_kernels",
           "Deadline", "deadline_after", "work_deadline_after", "autocast", "main"]

CLI_SECONDS_LIMIT = 600.0  # the command line's default time limit: the user's own machine
EVALUATION_TOKENS = 8192  # tokens per pass over the evaluation set


def autocast(device: torch.device, dtype: str):
    """bfloat16: autocast (weights stay float32); other dtypes: a no-op context."""
    enabled = dtype == "bfloat16"
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


@dataclass(frozen=True)
class Deadline:
    """A time limit on ``clock``: passed once ``clock()`` exceeds ``at``."""

    at: float
    clock: Callable[[], float]

    def passed(self) -> bool:
        return self.clock() > self.at


def deadline_after(seconds: float = SECONDS_LIMIT) -> Deadline:
    """A wall-clock ``deadline`` for ``evaluate``: ``seconds`` from now (the command line's
    ``--time-limit``, on the user's own machine)."""
    return Deadline(time.monotonic() + seconds, time.monotonic)


@dataclass(frozen=True)
class ShownDeadline(Deadline):
    """The command line's deadline: each check (one before every batch) also moves a bar of
    batches begun on stderr (``training.progress``), so a long evaluation is never silent."""

    bar: tqdm | None = None

    def passed(self) -> bool:
        if self.bar is not None:
            self.bar.update(1)
        return super().passed()


def work_deadline_after(seconds: float = SECONDS_LIMIT) -> Deadline:
    """A limit on the work itself: ``seconds`` of CPU time of the calling thread, which must
    be the one that evaluates (the app's are: ``length_sweep``, ``same_window_sweep``).
    Other processes' load does not use it up, so a shared server's busy moment never fails
    an evaluation that fits; torch's extra intra-op threads are not counted, so with k of
    them it allows up to about k times the work."""
    return Deadline(time.thread_time() + seconds, time.thread_time)


@torch.no_grad()
def _per_position(model: nn.Module, batches, dtype: str, deadline: Deadline | None):
    """For each batch: loss (nats), right and counted, [B, n] each ([B, 1] for a class).

    Past ``deadline`` it stops between two batches with a TimeLimitError: an estimate
    that erred never means "never ends"."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        for done, (tokens, targets) in enumerate(batches):
            if deadline is not None and deadline.passed():
                raise TimeLimitError(f"the evaluation at n = {tokens.shape[1]:,} passed its time "
                                  f"limit after {done} of {len(batches)} batches")
            tokens, targets = tokens.to(device), targets.to(device)
            with autocast(device, dtype):
                logits = model(tokens)  # (B, n, V) or (B, C)
            if logits.dtype not in (torch.float32, torch.float64):  # bfloat16 autocast
                logits = logits.float()
            targets = targets.reshape(len(tokens), -1)  # (B, n) or (B, 1)
            logits = logits.reshape(*targets.shape, logits.shape[-1])  # (B, n or 1, V)
            keep = targets != IGNORE
            loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # (B, n)
            yield loss * keep, (logits.argmax(-1) == targets) & keep, keep
    finally:
        model.train(was_training)


def _scores(task: Task, sums: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
            in_order: bool) -> Scores:
    """Scores from per-batch sums [B] of loss, right and counted. The windows of a task
    whose evaluation set tiles one text (``Task.tiles_text``: charlm's consecutive windows),
    scored ``in_order``, give contiguous Scores, whose intervals resample blocks of
    neighbouring windows; another language model's sequences (recall) and random
    validation windows are drawn independently and keep the plain bootstrap."""
    loss, right, counted = (torch.cat(part).cpu().numpy() for part in zip(*sums, strict=True))
    if counted.sum() == 0:
        raise ValueError(f"task {task.name} gave no targets to evaluate")
    return Scores(task.metric_name, task.higher_is_better, loss.astype(np.float64), right,
                  counted, contiguous=in_order and task.tiles_text)


def _summed(loss: torch.Tensor, right: torch.Tensor, keep: torch.Tensor, start: int = 0):
    """Per-sequence sums [B] over positions ``start`` onwards."""
    return (loss[:, start:].double().sum(1), right[:, start:].sum(1), keep[:, start:].sum(1))


def score_batches(model: nn.Module, task: Task, batches, dtype: str = "float32",
                  deadline: Deadline | None = None, in_order: bool = True) -> Scores:
    """``model``'s per-sequence loss, correct predictions and targets over ``batches``;
    ``in_order``: the batches are the evaluation set's windows in their order."""
    return _scores(task, [_summed(*out) for out in _per_position(model, batches, dtype,
                                                                  deadline)], in_order)


def evaluation_batch(config: ModelConfig, n: int, element: int = 4) -> int:
    """Sequences per pass over the evaluation set at length ``n``: EVALUATION_TOKENS
    tokens, fewer if that pass would exceed MEMORY_LIMIT; fixed per model and length."""
    batch = max(1, EVALUATION_TOKENS // n)
    while batch > 1 and pass_cost(config, batch, n, element=element).bytes > MEMORY_LIMIT:
        batch //= 2
    return batch


def _batch_for(model: nn.Module, n: int) -> int:
    return evaluation_batch(model.config, n, next(model.parameters()).element_size())


def evaluation_size(task: Task, length: int | None = None) -> int:
    """Sequences in ``task``'s evaluation set at ``length``."""
    return len(task.evaluation_set(length)[0])


def score(model: nn.Module, task: Task, length: int | None = None, dtype: str = "float32",
          deadline: Deadline | None = None) -> Scores:
    """``model`` on its task's evaluation set (``Task.evaluation_set``) at ``length``
    (default the training length): the one measurement every reported metric comes from."""
    tokens, targets = task.evaluation_set(length)  # (N, n), (N, n) or (N,)
    batch = _batch_for(model, tokens.shape[1])
    batches = [(tokens[i : i + batch], targets[i : i + batch])
               for i in range(0, len(tokens), batch)]
    return score_batches(model, task, batches, dtype, deadline)


def evaluate(model: nn.Module, task: Task, batches: int = 8, batch_size: int = 32,
             length: int | None = None, dtype: str = "float32",
             deadline: Deadline | None = None) -> dict:
    """The task's metrics on its fixed validation batches at ``length`` (default seq_len):
    the training loop's periodic evaluation, cheaper than the evaluation set.

    Returns loss (nats), accuracy, the task's metric with its ci95 and the number of
    sequences, perplexity (lm), length and the number of targets counted."""
    n = task.check_length(length)
    scores = score_batches(model, task, task.validation(batch_size, batches, n), dtype, deadline,
                           in_order=False)  # random windows, drawn independently
    return _metrics(task, scores, n)


def _metrics(task: Task, scores: Scores, n: int) -> dict:
    out = task.metrics(scores.loss_mean, scores.accuracy)
    return {**out, **scores.to_dict(), "length": n, "targets": int(scores.targets.sum())}


def evaluate_model(model: nn.Module, task: Task, length: int | None = None,
                   deadline: Deadline | None = None) -> dict:
    """The task's metric for ``model`` on the evaluation set at ``length`` (default the
    task's), with its 95 % interval and number of sequences, as one flat dict."""
    n = task.check_length(length)
    metrics = _metrics(task, score(model, task, n, deadline=deadline), n)
    return {"task": task.name, "metric_name": task.metric_name, "metric": metrics["metric"],
            "ci95": metrics["ci95"], "sequences": metrics["sequences"],
            "higher_is_better": task.higher_is_better, "chance": task.chance,
            "baselines": task.baselines(), "length": n, "train_length": task.seq_len,
            "loss": metrics["loss"], "accuracy": metrics["accuracy"],
            "targets": metrics["targets"]}


def evaluate_checkpoint(model: nn.Module, info: CheckpointInfo, length: int | None = None,
                        text: bytes | None = None) -> dict:
    """``evaluate_model`` on the task stored in ``info``; ``text``: the charlm upload, if any."""
    task = task_from_info(info.task, data=text)
    return {"checkpoint": info.source, **evaluate_model(model, task, length)}


def length_sweep(model: nn.Module, task: Task, factors=SWEEP_FACTORS) -> list[dict]:
    """The evaluation set at factor × the training length, one row per factor (factor,
    length, scores, note), all within SECONDS_LIMIT of this thread's CPU time
    (``work_deadline_after``).

    A task with a fixed length (digits) gets a row with ``scores`` None and a ``note``
    for every factor but 1."""
    rows, deadline = [], work_deadline_after()
    for factor in factors:
        length = int(factor * task.seq_len)
        if not task.extrapolates and length != task.seq_len:
            rows.append({"factor": factor, "length": length, "scores": None,
                         "note": f"{task.name} has a fixed length n = {task.seq_len}"})
            continue
        rows.append({"factor": factor, "length": length,
                     "scores": score(model, task, length, deadline=deadline), "note": ""})
    return rows


def same_window_sweep(model: nn.Module, task: Task, factors=(1, 2, 4, 8, 16),
                      deadline: Deadline | None = None) -> list[dict]:
    """A language model's scores at factor × the training length n0, on the same windows.

    TNN's Table 10 asks whether a model trained at n0 still works on longer sequences. To
    compare lengths fairly, every factor scores windows that end at the same positions of
    the evaluation text: the windows of max factor × n0 are the evaluation set at that
    length, and each factor keeps their last factor × n0 tokens. ``last`` scores only the
    last n0 positions (the same targets at every factor, now with more context); ``all``
    scores every position, as a model used at that length would be scored.

    Returns one row per factor: factor, length, and the Scores ``all`` and ``last`` [W]
    over the W windows (paired across factors)."""
    _check_language_model(task)
    for factor in factors:
        check_int("factor", factor, 1, 64)
    n0 = task.seq_len
    tokens, targets = task.evaluation_set(max(factors) * n0)  # (W, longest) each
    rows, deadline = [], deadline or work_deadline_after()
    for factor in factors:
        length = factor * n0
        batch = _batch_for(model, length)
        batches = [(tokens[i : i + batch, -length:], targets[i : i + batch, -length:])
                   for i in range(0, len(tokens), batch)]
        every, last = [], []
        for out in _per_position(model, batches, "float32", deadline):
            every.append(_summed(*out))
            last.append(_summed(*out, start=length - n0))
        rows.append({"factor": factor, "length": length, "all": _scores(task, every, in_order=True),
                     "last": _scores(task, last, in_order=True)})
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
    if args.same_windows is not None:
        factors = _factors(args.same_windows)
        _check_language_model(task)
        lengths = [factor * task.seq_len for factor in factors]
        sequences = len(task.evaluation_set(max(lengths))[0])
    else:
        lengths = [task.check_length(args.length)]
        sequences = len(task.evaluation_set(lengths[0])[0])
    element = next(model.parameters()).element_size()
    for n in lengths:
        batch = _batch_for(model, n)
        check_cost(f"evaluating {sequences:,} sequences of n = {n:,}, {batch} at a time",
                   pass_cost(model.config, batch, n, element=element),
                   passes=-(-sequences // batch) * len(lengths), seconds_limit=args.time_limit)


def _check_language_model(task: Task) -> None:
    if task.kind != "lm":
        raise ValueError(f"same_window_sweep needs a language-model task (kind 'lm'); task "
                         f"{task.name} has kind {task.kind!r}")


def _window_row(row: dict) -> dict:
    """A same-window row as JSON: each part's metric, ci95 and the windows scored."""
    out = {"factor": row["factor"], "length": row["length"]}
    for part in ("all", "last"):
        summary = row[part].to_dict()
        out.update({f"metric_{part}": summary["metric"], f"ci95_{part}": summary["ci95"],
                    f"loss_{part}": row[part].loss_mean})
    return {**out, "windows": row["all"].sequences}


def _checked_numbers(result: dict) -> dict:
    """``result`` if its loss and metric are finite; else ValueError: JSON has no inf or
    NaN, and an overflowing model's metric means nothing."""
    rows = result.get("same_windows", [result])
    for row in rows:
        bad = [key for key, value in row.items()
               if any(isinstance(v, float) and not math.isfinite(v)
                      for v in (value if isinstance(value, list) else [value]))]
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
    p.add_argument("--text", default=None,
                   help="charlm trained on a user's text: that text file (its SHA-256 must "
                        "match the one the checkpoint records)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--time-limit", type=float, default=CLI_SECONDS_LIMIT, metavar="SECONDS",
                   help="refuse an evaluation estimated to take longer, and stop one that "
                        "does (default %(default)s)")
    p.add_argument("--same-windows", default=None, metavar="FACTORS",
                   help="language models: the metric at these multiples of the training "
                        "length on the same windows, e.g. 1,2,4,8,16 (TNN's Table 10): the "
                        "evaluation set's windows at the longest")
    args = p.parse_args(argv)
    keep_freed_memory()
    return answer(lambda: _evaluate_command(args), "the evaluation", "--length")


def _evaluate_command(args: argparse.Namespace) -> dict:
    """What ``main`` prints: the evaluation the options ask for, checked first."""
    if args.threads is not None:
        torch.set_num_threads(check_int("--threads", args.threads, 1, 1024))
    check_number("--time-limit", args.time_limit, 1, 86_400)
    model, info = load(args.checkpoint)
    text = None if args.text is None else read_bounded(args.text, MAX_TEXT_BYTES, "--text")
    task = task_from_info(info.task, data=text)
    _budget(model, task, args)
    with progress_bar(None, "evaluating", "batch") as bar:
        deadline = ShownDeadline(time.monotonic() + args.time_limit, time.monotonic, bar)
        if args.same_windows is not None:
            rows = same_window_sweep(model, task, _factors(args.same_windows), deadline)
            result = {"checkpoint": info.source,
                      "same_windows": [_window_row(row) for row in rows]}
        else:
            result = {"checkpoint": info.source,
                      **evaluate_model(model, task, args.length, deadline)}
    return _checked_numbers(result)


if __name__ == "__main__":
    sys.exit(main())
