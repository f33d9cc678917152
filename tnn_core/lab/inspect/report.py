"""What a checkpoint records beyond its summary: where it came from (its lineage), the
model card and per-layer report (``tnn_core.report``), and the kernels its training kept.
"""

from __future__ import annotations

from torch import nn

from tnn_core import report
from tnn_core.lab.common.snapshot_view import SnapshotView, snapshot_view
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.tasks import Task

__all__ = ["lineage_text", "model_report", "report_refusal", "report_text", "training_kernels"]


def lineage_text(info: CheckpointInfo) -> str | None:
    """Where a converted or fine-tuned checkpoint came from, in markdown; None for one
    trained from scratch (``training.history``'s lineage)."""
    lineage = (info.history or {}).get("lineage")
    return report.lineage_markdown(lineage, info.history.get("metric_name")) if lineage \
        else None


def model_report(model: nn.Module, info: CheckpointInfo, task: Task) -> report.Report:
    """The model card and per-layer spectral report (``tnn_core.report``)."""
    return report.report_for(model, info, task)


def report_refusal(model: nn.Module, n: int) -> str | None:
    """Why the report cannot be made for ``model`` at training length n; None if it can."""
    try:
        report.check_reportable(model, n)
    except ValueError as err:
        return str(err)
    return None


def report_text(made: report.Report, form: str) -> str:
    """The report as a file: form "markdown", "csv" or "json"."""
    return report.RENDERERS[form](made)


def training_kernels(info: CheckpointInfo) -> SnapshotView | None:
    """The kernel snapshots its training kept (``training.snapshots``); None if it has none
    (the shipped checkpoints were trained before they were kept)."""
    record = (info.history or {}).get("kernel_snapshots")
    return None if record is None or not record["steps"] else snapshot_view(record)
