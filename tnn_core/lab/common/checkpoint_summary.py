"""What a checkpoint says about itself: its task, model and training history, as a page's
header shows them (Inspect, and a lesson's step that draws a learned channel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.tasks import Task

__all__ = ["COMMAND_SHOWN", "Summary", "summary"]

COMMAND_SHOWN = 1_000  # characters of the training command the header shows


@dataclass(frozen=True)
class Summary:
    """A checkpoint's task, model and training history, as the page's header shows them.

    Read from the schema fields of the history only (``training.history``); what the
    history does not record is None (NaN for the metric), never a made-up number."""

    task: str
    size: str  # width × layers
    metric_name: str
    higher_is_better: bool
    chance: float  # the metric of a uniform guess; NaN when the task cannot be rebuilt
    final_metric: float  # the last recorded validation metric; NaN when none is recorded
    final_step: int | None  # the step of that evaluation
    steps: int | None  # trained steps; None when not recorded
    wall_s: float | None  # seconds of training; None when not recorded
    device: str | None
    command: str | None  # the command that trained it, at most COMMAND_SHOWN characters
    train_n: int  # the training length
    config: dict  # the model (the fields it reads), task and training settings, for a JSON view
    eval_steps: np.ndarray  # [E] steps of the evaluations that recorded the metric
    eval_metric: np.ndarray  # [E] their metric, finite
    eval_intervals: np.ndarray  # [E, 2] its 95 % interval where recorded, else NaN

    def metric_axis(self) -> tuple[float, float]:
        """A y-range that shows chance and the final value: [0, 1] for an accuracy; from 0
        to a little above chance (and every value after the first evaluation) for a loss-like
        metric, so an untrained model's first value cannot squash the rest."""
        if self.higher_is_better:
            return 0.0, 1.0
        later = self.eval_metric[1:][np.isfinite(self.eval_metric[1:])]
        top = max([v for v in (self.chance, *later.tolist()) if np.isfinite(v)] or [1.0])
        return 0.0, 1.1 * top

    def off_axis(self) -> list[tuple[int, float]]:
        """(step, value) of the evaluations above ``metric_axis``, for a note beside it."""
        top = self.metric_axis()[1]
        return [(int(s), float(v)) for s, v in zip(self.eval_steps, self.eval_metric,
                                                    strict=True) if v > top]

    def training_note(self) -> str:
        """How long it trained, where, and the command, in words; "not recorded" where the
        history does not say."""
        if self.wall_s is not None:
            where = f"{self.wall_s:.0f} s on {self.device or 'a device it does not record'}."
        elif self.device is not None:
            where = f"Trained on {self.device}; the training time is not recorded."
        else:
            where = "The training time and device are not recorded."
        return f"{where} Command: {self.command or 'not recorded'}"


def _finite_metric(entry: dict) -> float | None:
    value = entry.get("metric")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def summary(info: CheckpointInfo, task: Task | None = None) -> Summary:
    """``info``'s record; ``task`` (rebuilt from ``info.task``) gives chance (else NaN).

    ``info.history`` is the loader's (``training.history.validated_history``): an
    evaluation may lack the metric or hold null, and any field may be absent."""
    config, history = info.model_config, info.history or {}
    measured = [(e["step"], m, e.get("ci95") or (math.nan, math.nan))
                for e in history.get("evals", [])
                if (m := _finite_metric(e)) is not None]  # [E] (step, metric, interval)
    command = history.get("command")
    if command is not None and len(command) > COMMAND_SHOWN:
        command = f"{command[:COMMAND_SHOWN - 1]}…"
    return Summary(
        task=info.task.get("name", "?"),
        size=f"{config.dim} × {config.layers}",
        metric_name=history.get("metric_name") or "metric",
        higher_is_better=True if task is None else task.higher_is_better,
        chance=math.nan if task is None else float(task.chance),
        final_metric=measured[-1][1] if measured else math.nan,
        final_step=measured[-1][0] if measured else None,
        steps=history.get("steps"), wall_s=history.get("wall_s"),
        device=history.get("device"), command=command,
        train_n=int(info.task.get("settings", {}).get("seq_len") or 64),
        config={"model": config.to_dict(),
                "task": {k: v for k, v in info.task.items() if k != "vocab"},
                "training": {k: v for k, v in (history.get("train_config") or {}).items()
                             if k != "model"}},
        eval_steps=np.array([step for step, *_ in measured], dtype=np.int64),
        eval_metric=np.array([metric for _, metric, _ in measured], dtype=float),
        eval_intervals=np.array([interval for *_, interval in measured],
                                dtype=float).reshape(-1, 2))
