"""Converting a trained model to band + low rank, as more than one page asks for it: which
models can be converted (Decomposition, Inspect and Compress offer it only then), and a
quick conversion scored and nothing else (a lesson's step; Compress does the full one).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from tnn_core.compress.convert import CONVERTIBLE_KINDS, convert
from tnn_core.compress.measure import task_scores
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.models import ModelConfig
from tnn_core.training.scores import Scores
from tnn_core.training.tasks import Task

__all__ = ["convertible", "QuickConversion", "quick_conversion"]


def convertible(config: ModelConfig) -> bool:
    """Whether any layer holds one learned Toeplitz kernel per channel (tno, fd)."""
    return any(config.layer_operator(i).kind in CONVERTIBLE_KINDS for i in range(config.layers))


@dataclass(frozen=True)
class QuickConversion:
    """Every layer converted with one (m, r, method), and each layer alone, scored on the
    task's evaluation set at its training length and nothing else (no timing, no
    fine-tuning): a lesson step's numbers."""

    metric_name: str
    chance: float
    source: Scores  # the same sequences for every variant
    converted: Scores
    alone: tuple[Scores, ...]  # per layer: only that layer converted
    errors: tuple[float, ...]  # per layer, ‖T − T̂‖_F / ‖T‖_F (convert.fit_layer)


def quick_conversion(model: nn.Module, task: Task, band: int, rank: int,
                     method: str) -> QuickConversion:
    """``model`` with every layer, then each layer alone, as band m + rank r (``method``),
    scored like its source; ValueError naming the field when the plan does not fit."""
    layers = len(model.operators())
    plan = CompressionPlan.uniform(layers, band, rank, method)
    converted, errors = convert(model, plan, task.seq_len)
    kept = LayerPlan(band, rank, "keep")
    alone = tuple(task_scores(convert(model, CompressionPlan(tuple(
        plan.layers[i] if i == j else kept for i in range(layers))), task.seq_len)[0], task)
        for j in range(layers))
    return QuickConversion(task.metric_name, float(task.chance), task_scores(model, task),
                           task_scores(converted, task), alone, tuple(errors))
