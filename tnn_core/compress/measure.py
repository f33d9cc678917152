"""What a conversion costs and gains: the task metric, the measured speed-up, the size,
and a short fine-tuning to win back what was lost.

* ``task_scores``: the task's evaluation set at the training length
  (``training.evaluate.score``), the same sequences for the source and every converted
  model, so their metrics compare pair by pair.
* ``speedup``: forward + backward of the whole model on one batch of random tokens,
  source and converted timed in interleaved rounds (``bench.harness.interleaved_times``):
  the median of the rounds' ratios with its distribution-free 95 % interval, and each
  side's median and quartiles. A measurement can be extended by more rounds.
* ``finetune``: AdamW on the training split, all parameters or only the converted
  layers' band taps and knots.

Letters: B batch, n length.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from tnn_core.bench.harness import interleaved_times, quartiles
from tnn_core.checks import check_choice, check_int, check_number
from tnn_core.operators import SKIKnots
from tnn_core.training.evaluate import score
from tnn_core.training.objective import task_loss
from tnn_core.training.scores import Scores, median_ci
from tnn_core.training.tasks import Task

__all__ = ["SPEED_BATCH", "FINETUNE_BATCH", "FINETUNE_PARAMETERS", "Speedup", "task_scores",
           "speedup", "parameter_count", "finetune"]

SPEED_BATCH = 8  # sequences per timed forward + backward
FINETUNE_BATCH = 32  # sequences per fine-tuning step
FINETUNE_PARAMETERS = ("all", "low_rank")  # low_rank: the band taps and knots of SKIKnots


def task_scores(model: nn.Module, task: Task) -> Scores:
    """The task's evaluation set at the training length, scored per sequence."""
    return score(model, task)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass(frozen=True)
class Speedup:
    """Forward + backward of a model against its source at one length, in interleaved rounds."""

    length: int
    source_times: tuple[float, ...]  # [R] ms per round
    converted_times: tuple[float, ...]  # [R] ms, the same rounds

    @property
    def repeats(self) -> int:
        return len(self.source_times)

    @property
    def source_ms(self) -> float:
        return statistics.median(self.source_times)

    @property
    def converted_ms(self) -> float:
        return statistics.median(self.converted_times)

    @property
    def source_quartiles(self) -> tuple[float, float]:
        return quartiles(list(self.source_times))

    @property
    def converted_quartiles(self) -> tuple[float, float]:
        return quartiles(list(self.converted_times))

    @property
    def ratios(self) -> list[float]:
        """source / converted in each round: above 1 the converted model was faster."""
        return [s / c for s, c in zip(self.source_times, self.converted_times, strict=True)]

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios."""
        return statistics.median(self.ratios)

    @property
    def ratio_ci(self) -> tuple[float, float]:
        """The median ratio's distribution-free 95 % interval (``scores.median_ci``)."""
        return median_ci(self.ratios)

    @property
    def verdict(self) -> str:
        """"faster" or "slower" only when the interval excludes 1."""
        low, high = self.ratio_ci
        return "faster" if low > 1 else "slower" if high < 1 else "within noise"

    def extended(self, more: Speedup) -> Speedup:
        """This measurement with ``more`` rounds at the same length."""
        if more.length != self.length:
            raise ValueError(f"cannot extend a timing at n = {self.length} with one at "
                             f"n = {more.length}")
        return Speedup(self.length, self.source_times + more.source_times,
                       self.converted_times + more.converted_times)

    def to_dict(self) -> dict:
        return {"length": self.length, "source_ms": self.source_ms,
                "converted_ms": self.converted_ms, "speedup": self.ratio,
                "speedup_ci95": list(self.ratio_ci),
                "source_quartiles": list(self.source_quartiles),
                "converted_quartiles": list(self.converted_quartiles), "repeats": self.repeats}


def _forward_backward(model: nn.Module, tokens: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        model.zero_grad(set_to_none=True)
        model(tokens).float().square().mean().backward()
    return run


def speedup(source: nn.Module, converted: nn.Module, vocab_size: int, length: int,
            batch: int = SPEED_BATCH, repeats: int = 15, seed: int = 0) -> Speedup:
    """Time forward + backward of both models on the same [batch, length] tokens.

    Only gradients are computed (and cleared after): the weights do not change."""
    check_int("length", length, 1)
    check_int("repeats", repeats, 1)
    g = torch.Generator().manual_seed(seed)
    device = next(source.parameters()).device
    tokens = torch.randint(0, vocab_size, (batch, length), generator=g).to(device)  # (B, n)
    fns = {"source": _forward_backward(source, tokens),
           "converted": _forward_backward(converted, tokens)}
    was = source.training, converted.training
    try:
        times = interleaved_times(fns, repeats, warmup=2, device=device)
    finally:
        for model, mode in zip((source, converted), was, strict=True):
            model.zero_grad(set_to_none=True)
            model.train(mode)
    return Speedup(length, tuple(times["source"]), tuple(times["converted"]))


def finetune(model: nn.Module, task: Task, steps: int, lr: float = 3e-4,
             parameters: str = "all", batch_size: int = FINETUNE_BATCH, seed: int = 0,
             on_step: Callable[[int, float], None] | None = None,
             stop_event: threading.Event | None = None) -> list[float]:
    """Train ``model`` in place for ``steps`` AdamW steps; returns the training losses.

    A non-finite loss restores the weights it started from and raises ValueError.
    parameters: "all", or "low_rank" (only the converted layers' band taps and knots).
    on_step(step, loss) after each step; a set ``stop_event`` ends it after the current one."""
    check_int("steps", steps, 0, 100_000)
    check_number("lr", lr, 0, 1, closed_low=False)
    check_choice("parameters", parameters, FINETUNE_PARAMETERS)
    if parameters == "all":
        chosen = list(model.parameters())
    else:
        chosen = [p for op in model.operators() if isinstance(op, SKIKnots)
                  for p in op.parameters()]
        if not chosen:
            raise ValueError("parameters='low_rank' needs a converted layer; every layer of "
                             "this model was kept")
    optimizer = torch.optim.AdamW(chosen, lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    losses: list[float] = []
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    for step in range(steps):
        if stop_event is not None and stop_event.is_set():
            break
        tokens, targets = task.batch("train", batch_size, generator)
        loss = task_loss(model(tokens.to(device)), targets.to(device))
        if not torch.isfinite(loss):
            model.load_state_dict(before)
            model.eval()
            raise ValueError(f"fine-tuning diverged at step {step + 1} (loss {loss.item()}); "
                             f"the model is as it was before: try a smaller lr than {lr:g}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1, losses[-1])
    model.eval()
    return losses
