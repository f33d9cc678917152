"""The interface every task implements, and the helpers tasks share.

A task is a seeded, offline source of batches plus the meaning of its metric:

    batch(split, batch_size, generator, length=None) -> (tokens [B, n] long, targets)
        targets [B, n] long for kind "lm" (the next token, IGNORE where there is
        nothing to predict) or [B] long for kind "classify".
    validation(batch_size, batches, length=None) -> the same fixed batches on every call
        (the training loop's periodic evaluation)
    evaluation_set(length=None) -> the fixed sequences every reported metric is measured
        on (``training.evaluate``): tokens [N, n] and targets like a batch's
    metric(loss, accuracy) -> the task's metric from the mean cross-entropy (nats)
        and the accuracy over the counted targets
    info() -> a JSON-able dict that ``tasks.task_from_info`` turns back into the task

Letters: B batch, n length.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from tnn_core.checks import check_choice, check_int

__all__ = ["IGNORE", "MAX_SEED", "MAX_SEQ_LEN", "SPLITS", "EVALUATION_SEQUENCES",
           "MAX_EVALUATION_SEQUENCES", "Task", "check_split", "seed_from"]

IGNORE = -100  # target id that the loss and the accuracy skip (F.cross_entropy's default)
MAX_SEQ_LEN = 65_536  # the longest training length n any task config accepts
MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed's range
SPLITS = ("train", "val")
EVALUATION_SEQUENCES = 2048  # a generated task's evaluation set: ±2.2 points of accuracy at 50 %
MAX_EVALUATION_SEQUENCES = 4096  # no task's evaluation set is larger


class Task:
    """Base class: subclasses set the attributes in ``__init__`` and implement ``batch``."""

    name: str
    kind: Literal["lm", "classify"]
    vocab_size: int
    num_classes: int | None = None  # classify only
    seq_len: int  # the training length n
    metric_name: str
    higher_is_better: bool = True
    extrapolates: bool = True  # False: the task exists at seq_len only (``length=`` raises)
    validation_seed: int = 1234  # seeds ``validation``; training batches use the caller's
    tiles_text: bool = False  # the evaluation set at every length tiles the same text

    # -- data ---------------------------------------------------------------------------
    def batch(self, split: str, batch_size: int, generator: torch.Generator,
              length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def validation(self, batch_size: int, batches: int, length: int | None = None
                   ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``batches`` fixed validation batches: the same tensors on every call."""
        check_int("batch_size", batch_size, 1)
        check_int("batches", batches, 1)
        g = torch.Generator().manual_seed(self.validation_seed)
        return [self.batch("val", batch_size, g, length) for _ in range(batches)]

    def evaluation_set(self, length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """EVALUATION_SEQUENCES fixed validation sequences: tokens [N, n], targets."""
        tokens, targets = self.validation(EVALUATION_SEQUENCES, 1, length)[0]
        return tokens, targets

    def check_length(self, length: int | None) -> int:
        """The length to generate: ``seq_len`` when None; else a length the task allows."""
        if length is None:
            return self.seq_len
        check_int("length", length, 1)
        if not self.extrapolates and length != self.seq_len:
            raise ValueError(f"length must be {self.seq_len} for task {self.name} (its "
                             f"sequences have a fixed length); got {length}")
        return length

    # -- the metric ---------------------------------------------------------------------
    @property
    def chance(self) -> float:
        """The metric of a uniform guess."""
        raise NotImplementedError

    def baselines(self) -> dict[str, float]:
        """Named reference values of the metric (always includes ``uniform``)."""
        return {"uniform": self.chance}

    def metric(self, loss: float, accuracy: float) -> float:
        """The task's metric from the mean cross-entropy (nats) and the accuracy."""
        return accuracy

    def metrics(self, loss: float, accuracy: float) -> dict[str, float]:
        out = {"loss": loss, "accuracy": accuracy, self.metric_name: self.metric(loss, accuracy)}
        if self.kind == "lm":
            out["perplexity"] = math.exp(min(loss, 700.0))
        return out

    def info(self) -> dict:
        raise NotImplementedError

    def describe_evaluation(self) -> str:
        """The evaluation set in words, for a metric's help."""
        return f"{EVALUATION_SEQUENCES:,} fixed validation sequences"

    def describe(self) -> str:
        """One line for people: what the sequences are."""
        return self.name


def check_split(split: str) -> str:
    return check_choice("split", split, SPLITS)


def seed_from(generator: torch.Generator) -> int:
    """A Python-level seed drawn from a torch generator (for ``random.Random``)."""
    return int(torch.randint(0, 2**62, (1,), generator=generator).item())
