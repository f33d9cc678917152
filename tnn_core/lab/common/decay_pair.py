"""TNN's Table 10: two language models identical but for the decay λ, scored on the same
windows at growing multiples of the training length (Inspect, and a lesson's step), and the
one sentence the lab says about a model beyond its training length.

Letters: F length factors.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from torch import nn

from tnn_core.training import evaluate
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import quality, quality_sentence

__all__ = ["extrapolation_sentence", "DECAY_PAIR", "PAIR_FACTORS", "DecayPair", "decay_pair"]


def extrapolation_sentence(change: Difference, subject: str, factor: int, length: int,
                           detail: str = "") -> str:
    """The one sentence for a model at ``factor`` × its training length against 1×."""
    return quality_sentence(change, subject, f"At {factor}× the training length (n = "
                                             f"{length:,}){detail},")


DECAY_PAIR = ("charlm-tno-decay099", "charlm-tno-nodecay")  # identical but for λ
PAIR_FACTORS = (1, 2, 4, 8, 16)  # × the training length, on the same windows


@dataclass(frozen=True)
class DecayPair:
    """Two language models that differ only in λ, scored on the same windows at each factor."""

    names: tuple[str, str]
    decays: tuple[float, float]  # λ of each
    train_n: int
    metric_name: str
    chance: float
    factor: np.ndarray  # [F]
    length: np.ndarray  # [F]
    last: tuple[tuple[Scores, ...], tuple[Scores, ...]]  # [2][F] the last train_n positions
    every: tuple[tuple[Scores, ...], tuple[Scores, ...]]  # [2][F] every position

    @property
    def metric_last(self) -> np.ndarray:
        return np.array([[s.metric for s in row] for row in self.last])  # (2, F)

    @property
    def metric_all(self) -> np.ndarray:
        return np.array([[s.metric for s in row] for row in self.every])  # (2, F)

    @functools.cached_property
    def _changes(self) -> tuple[Difference, Difference]:
        """Both models' ``change``, computed once: each is a paired block bootstrap (about
        0.2 s for charlm's windows) and a lesson's step states them on every run."""
        return tuple(difference(row[0], row[-1], paired=True) for row in self.last)

    def change(self, model: int) -> Difference:
        """``model`` at the longest factor against 1×, on the last train_n positions of the
        same windows: the same targets, paired."""
        return self._changes[model]

    def sentence(self) -> str:
        """Each model's verdict at the longest factor, then what they say about Table 10."""
        windows = self.last[0][0].sequences
        (first, second) = (f"{name} (λ = {lam:g})" for name, lam in zip(self.names, self.decays,
                                                                       strict=True))
        said = [extrapolation_sentence(self.change(0), first, int(self.factor[-1]),
                                       int(self.length[-1]),
                                       f", on the last {self.train_n} positions of the same "
                                       f"{windows} windows"),
                quality_sentence(self.change(1), second, "There,")]
        verdicts = [quality(self.change(i)) for i in range(2)]
        (with_decay, without) = self.names
        if verdicts == ["keeps", "loses"]:
            ending = (f"As in TNN's Table 10, the decay is what lets {with_decay} extrapolate.")
        elif verdicts == ["keeps", "keeps"]:
            ending = "Here both extrapolate: the decay is not what makes the difference."
        elif "cannot tell" in verdicts:
            ending = "So this measurement cannot confirm or refute Table 10."
        elif verdicts[0] == "loses" and verdicts[1] == "loses":
            ending = "Here both lose quality, so this pair does not reproduce Table 10."
        else:
            ending = f"Here only {without} extrapolates, against Table 10."
        return " ".join(said + [ending])


def decay_pair(models: tuple[nn.Module, nn.Module], names: tuple[str, str], task: Task,
               factors: tuple[int, ...] = PAIR_FACTORS) -> DecayPair:
    """Both models through ``evaluate.same_window_sweep`` on ``task`` (their shared task)."""
    rows = [evaluate.same_window_sweep(model, task, factors) for model in models]
    return DecayPair(
        names=names, decays=tuple(float(m.config.operator.decay) for m in models),
        train_n=task.seq_len, metric_name=task.metric_name, chance=float(task.chance),
        factor=np.array([r["factor"] for r in rows[0]]),
        length=np.array([r["length"] for r in rows[0]]),
        last=tuple(tuple(r["last"] for r in model_rows) for model_rows in rows),
        every=tuple(tuple(r["all"] for r in model_rows) for model_rows in rows))
