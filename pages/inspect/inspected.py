"""The checkpoint the Inspect page shows, as each of its sections reads it (``Inspected``):
its key, its summary, its task (or why the task cannot be rebuilt here), its operator, and
for token mixers alone (a model imported from the authors' code) the one line a section
that needs a task shows instead."""

from __future__ import annotations

from dataclasses import dataclass

from pages._ui import numbers
from tnn_core.lab import inspect as inspect_lab

__all__ = ["Inspected"]


@dataclass(frozen=True)
class Inspected:
    """The open checkpoint, passed whole to Inspect's sections (``pages/figures``)."""

    key: str  # the checkpoint's key: shipped "NAME", saved "user/NAME" or "upload:SHA"
    about: inspect_lab.Summary  # its task, model and training history
    task: object | None  # its task with the evaluation set; None when it cannot be rebuilt
    task_error: ValueError | None  # why it cannot be rebuilt; None when it can
    kind: str  # the operator: "tno", "ski", "fd", "togeipi" or "ssm"
    causal: bool  # whether the operator is causal
    layers: int  # how many Toeplitz layers the model has
    channels: int  # channels per layer
    # token mixers alone (task "kernels"): why a view that needs a task is not shown; None
    # for a model with a task (rebuilt here or not)
    kernels_only_reason: str | None

    @classmethod
    def of(cls, key: str, model, info, task, task_error: ValueError | None) -> Inspected:
        """The checkpoint ``key`` opened as ``model`` and ``info``, with its task."""
        operators = model.operators()
        reason = (inspect_lab.kernels_only_reason(info.task)
                  if inspect_lab.is_kernels_only(info.task) else None)
        return cls(key, inspect_lab.summary(info, task), task, task_error,
                   model.config.operator.kind, model.config.operator.causal, len(operators),
                   operators[0].dim, reason)

    @property
    def chance_text(self) -> str:
        """The metric of a uniform guess, as the captions say it: "chance …"."""
        return f"chance {numbers.format_metric(self.about.chance, self.about.metric_name)}"
