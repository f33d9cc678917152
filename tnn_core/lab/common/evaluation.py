"""The number every page reports for a trained model: its score on its task's evaluation
set at the training length (Inspect's header, the source of a Compress conversion), and
how a metric and its interval are written (``format_metric``, ``format_interval``: accuracy
in %, bpc as it is). An evaluation stopped at its time limit raises ``TimeLimitError``,
which says that moment was too busy, not that the model cannot be evaluated.
"""

from __future__ import annotations

from torch import nn

from tnn_core.training import evaluate
from tnn_core.training.budget import TimeLimitError
from tnn_core.training.scores import Scores, format_interval, format_metric
from tnn_core.training.tasks import Task

__all__ = ["evaluation", "format_interval", "format_metric", "TimeLimitError"]


def evaluation(model: nn.Module, task: Task) -> Scores:
    """The model on its task's evaluation set at the training length (``evaluate.score``):
    the number every page reports for it."""
    return evaluate.score(model, task)
