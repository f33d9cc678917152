"""The band alone: a trained model scored with its layers kept to the band (Inspect's band
ablation, and a lesson's question whose answer it is), all on the evaluation set.

It scores 2 + L variants (every layer as trained, every layer kept to the band, each layer
alone kept to it), each on the same batches; ``band_ablation`` reports every batch scored
to ``on_progress`` and ends at the next batch once ``stop_event`` is set. The app runs it
as a ``BackgroundJob`` started in a place for heavy work (``background.start_in_place``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from tnn_core.analysis.ablation import band_restricted
from tnn_core.lab.common.atlas import band_description
from tnn_core.training import evaluate
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import quality_sentence

__all__ = ["BandAblation", "AblationStopped", "cannot_ablate", "band_ablation"]


class AblationStopped(RuntimeError):
    """The ablation was stopped before its last batch (its stop event was set)."""


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


def cannot_ablate(kind: str) -> str | None:
    """Why a model of operator ``kind`` cannot be kept to its band, in one sentence; None if
    it can."""
    if kind == "togeipi":
        return ("A togeipi layer's learned sparse matrix is not Toeplitz and its projections "
                "mix channels, so there is no per-channel band to keep it to.")
    return None


def band_ablation(model: nn.Module, task: Task, band: int,
                  on_progress: Callable[[float, tuple[int, int]], None] | None = None,
                  stop_event: threading.Event | None = None) -> BandAblation:
    """Score ``model`` on the evaluation set at its training length with every layer, and
    each layer alone, restricted to the band (``analysis.ablation``); ValueError
    (``cannot_ablate``) for a model that has no band. ``on_progress(fraction, (scored,
    total))`` after every batch, counted over all the variants; AblationStopped at the next
    batch once ``stop_event`` is set."""
    refusal = cannot_ablate(model.config.operator.kind)
    if refusal is not None:
        raise ValueError(refusal)
    n, layers = task.seq_len, range(len(model.operators()))
    variants = [list(layers)] + [[layer] for layer in layers]  # the restricted layers
    tokens, targets = task.evaluation_set(n)  # (N, n), (N, n) or (N,)
    counter = _BatchCounter(len(variants) + 1, on_progress, stop_event)
    full = counter.score(model, task, tokens, targets)
    restricted = [counter.score(band_restricted(model, n, band, chosen), task, tokens, targets)
                  for chosen in variants]
    return BandAblation(
        band=band_description(band, model.config.operator.causal), length=n,
        chance=float(task.chance), full=full, restricted=restricted[0],
        per_layer=tuple(restricted[1:]))


class _BatchCounter:
    """Scores variants as ``evaluate.score`` does, batch by batch, counting the batches."""

    def __init__(self, variants: int, on_progress, stop_event):
        self.variants, self.on_progress, self.stop_event = variants, on_progress, stop_event
        self.done = 0

    def score(self, model: nn.Module, task: Task, tokens, targets) -> Scores:
        size = evaluate.evaluation_batch(model.config, tokens.shape[1],
                                         next(model.parameters()).element_size())
        batches = [(tokens[i : i + size], targets[i : i + size])
                   for i in range(0, len(tokens), size)]
        total = self.variants * len(batches)
        return evaluate.score_batches(model, task, self._counted(batches, total))

    def _counted(self, batches: list, total: int):
        for batch in batches:
            if self.stop_event is not None and self.stop_event.is_set():
                raise AblationStopped("the band ablation was stopped")
            yield batch
            self.done += 1
            if self.on_progress is not None:
                self.on_progress(self.done / total, (self.done, total))

