"""The band alone: a trained model scored with its layers kept to the band (Inspect's band
ablation, and a lesson's question whose answer it is), all on the evaluation set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import nn

from tnn_core.analysis.ablation import band_restricted
from tnn_core.lab.common.atlas import band_description
from tnn_core.training import evaluate
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import quality_sentence

__all__ = ["BandAblation", "band_ablation"]


@dataclass(frozen=True)
class BandAblation:
    """The task metric with the full operators and with layers restricted to the band, all on
    the evaluation set (paired: every variant scores the same sequences)."""

    band: str  # the band's lags in words
    length: int  # evaluated at the training length
    chance: float  # the metric of a uniform guess
    full: Scores  # every layer as trained
    restricted: Scores  # every layer restricted to its band
    per_layer: tuple[Scores, ...]  # [L] only layer l restricted

    def change(self, variant: Scores) -> Difference:
        """How much worse ``variant`` is than the full model, with its interval."""
        return difference(self.full, variant, paired=True)

    @property
    def margin_lost(self) -> float:
        """Share of the model's margin over chance lost when every layer keeps only its band
        (0: nothing lost; 1: down to chance). NaN without a margin."""
        sign = 1.0 if self.full.higher_is_better else -1.0
        margin = sign * (self.full.metric - self.chance)
        return sign * (self.full.metric - self.restricted.metric) / margin if margin > 0 \
            else math.nan

    def sentence(self) -> str:
        """The verdict on the band alone (``training.verdicts``), with its numbers."""
        return quality_sentence(self.change(self.restricted), "the model",
                                f"With every layer kept to its band ({self.band}),")


def band_ablation(model: nn.Module, task: Task, band: int) -> BandAblation:
    """Score ``model`` on the evaluation set at its training length with every layer, and
    each layer alone, restricted to the band (``analysis.ablation``)."""
    n, layers = task.seq_len, range(len(model.operators()))
    return BandAblation(
        band=band_description(band, model.config.operator.causal), length=n,
        chance=float(task.chance), full=evaluate.score(model, task, n),
        restricted=evaluate.score(band_restricted(model, n, band, layers), task, n),
        per_layer=tuple(evaluate.score(band_restricted(model, n, band, [layer]), task, n)
                        for layer in layers))
