"""Beyond the training length: the model scored on its evaluation set at 1×, 2× and 4× the
length it was trained at, and one channel's kernel at each (TNN's Table 10 asks this;
``common.decay_pair`` holds its pair of models).

Letters: F length factors, n length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from torch import nn

from tnn_core.analysis import channel_kernel
from tnn_core.lab.common.decay_pair import extrapolation_sentence
from tnn_core.training import evaluate
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task

__all__ = ["FACTORS", "LengthSweep", "length_sweep", "Extrapolation", "extrapolation"]

FACTORS = (1, 2, 4)  # lengths shown, as multiples of the training length (TNN's Table 10)


@dataclass(frozen=True)
class LengthSweep:
    """The evaluation set at each factor × the training length."""

    factor: np.ndarray  # [F]
    length: np.ndarray  # [F]
    scores: tuple[Scores | None, ...]  # [F]; None where the task has one length only
    tiles_text: bool  # every length scores the same characters (Task.tiles_text)

    @property
    def metric(self) -> np.ndarray:
        """[F], NaN where not measured."""
        return np.array([math.nan if s is None else s.metric for s in self.scores])

    def change(self, index: int) -> Difference:
        """Factor ``index`` against 1×: paired on the same text when the windows tile it
        (1×'s windows merged into the longer ones), else two independent sets."""
        reference, other = self.scores[0], self.scores[index]
        if self.tiles_text:
            group = int(self.factor[index] // self.factor[0])
            return difference(reference.merged(group, other.sequences), other, paired=True)
        return difference(reference, other, paired=False)

    def sentences(self, subject: str) -> list[str]:
        """One verdict per longer length (``training.verdicts``), in the same words as
        everywhere the lab speaks of extrapolation."""
        return [extrapolation_sentence(self.change(i), subject, int(self.factor[i]),
                                       int(self.length[i]))
                for i in range(1, len(self.factor)) if self.scores[i] is not None]


def length_sweep(model: nn.Module, task: Task) -> LengthSweep:
    rows = evaluate.length_sweep(model, task, FACTORS)
    return LengthSweep(factor=np.array([r["factor"] for r in rows]),
                       length=np.array([r["length"] for r in rows]),
                       scores=tuple(r["scores"] for r in rows), tiles_text=task.tiles_text)


@dataclass(frozen=True)
class Extrapolation:
    """One channel's kernel at each factor × the training length."""

    lengths: tuple[int, ...]  # [F]
    lags: tuple[np.ndarray, ...]  # F arrays [2n-1]: k = -(n-1) .. n-1
    kernels: tuple[np.ndarray, ...]  # F arrays [2n-1]: t_k


def extrapolation(model: nn.Module, train_n: int, layer: int, channel: int) -> Extrapolation:
    operator = model.operators()[layer]
    lengths = tuple(factor * train_n for factor in FACTORS)
    return Extrapolation(
        lengths=lengths, lags=tuple(np.arange(-(n - 1), n) for n in lengths),
        kernels=tuple(channel_kernel(operator, n, channel).numpy() for n in lengths))
