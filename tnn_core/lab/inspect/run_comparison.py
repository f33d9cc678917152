"""Two runs side by side (Inspect's "Compare with another run"), read from their checkpoints'
records only: the differences of their configurations, and their training curves.

    rows = config_diff(info_a, info_b)   # every field of either run, differences first
    a, b = curves(info_a), curves(info_b)

A run's configuration is three sections, flattened to dotted field names:

    model.*      the model config (``ModelConfig.to_dict()``), e.g. ``model.operator.decay``
    task.*       the task's record without its vocabulary, e.g. ``task.settings.seq_len``
    training.*   the training config (``history.train_config``) without its ``model``, a copy
                 of the model section, e.g. ``training.lr``

A field that one run does not record (an old file without a training config, a setting
only one task has) is in one run only, never given a made-up value.

Letters: E evaluations of one run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.scores import Scores, difference
from tnn_core.training.verdicts import change_text

__all__ = ["ConfigRow", "config_diff", "settings", "RunCurves", "curves", "FinalMetric",
           "final_metric", "evaluation_change"]


# -- the configurations ----------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigRow:
    """One field of the two configurations; a value is None where its run lacks the field
    (``only_in`` says which run has it)."""

    field: str  # dotted, e.g. "model.operator.decay"
    value_a: object
    value_b: object
    differs: bool
    only_in: Literal["a", "b"] | None = None  # None: both runs record the field


def _flattened(value, prefix: str) -> dict[str, object]:
    """{dotted name: leaf} of nested dicts and lists (list items by index); an empty dict
    or list is a leaf of its own."""
    if isinstance(value, dict) and value:
        items = value.items()
    elif isinstance(value, list) and value:
        items = enumerate(value)
    else:
        return {prefix: value}
    out: dict[str, object] = {}
    for key, item in items:
        out |= _flattened(item, f"{prefix}.{key}")
    return out


def settings(info: CheckpointInfo) -> dict[str, object]:
    """A run's configuration as {dotted field: value}: model, task, then training."""
    task = {key: value for key, value in info.task.items() if key != "vocab"}
    training = {key: value for key, value in (info.history or {}).get("train_config", {}).items()
                if key != "model"}
    return (_flattened(info.model_config.to_dict(), "model") | _flattened(task, "task")
            | _flattened(training, "training"))


def config_diff(info_a: CheckpointInfo, info_b: CheckpointInfo) -> list[ConfigRow]:
    """Every field of either run's ``settings``: those that differ (or that one run lacks)
    first, then the equal ones; within each, model, task, then training fields, each
    section in the runs' own order (a's fields, then b's own)."""
    a, b = settings(info_a), settings(info_b)
    rows = []
    for field in a | b:  # a's order, then b's own fields
        only_in = None if field in a and field in b else "a" if field in a else "b"
        rows.append(ConfigRow(field, a.get(field), b.get(field),
                              differs=only_in is not None or a[field] != b[field],
                              only_in=only_in))
    sections = {"model": 0, "task": 1, "training": 2}
    return sorted(rows, key=lambda row: (not row.differs, sections[row.field.split(".")[0]]))


# -- the curves ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunCurves:
    """A run's periodic evaluations during training, one index per evaluation; NaN where an
    evaluation does not record the value (never an estimate)."""

    metric_name: str  # "accuracy", "bpc", ...; "metric" when the history does not say
    step: np.ndarray  # [E] optimizer steps
    tokens: np.ndarray  # [E] training tokens: step × batch_size × world_size × length
    wall_s: np.ndarray  # [E] seconds since the run started (evaluations included)
    metric: np.ndarray  # [E] the validation metric (an accuracy as a fraction)
    loss: np.ndarray  # [E] validation cross-entropy (nats)
    train_loss: np.ndarray  # [E] mean training loss over the steps since the last evaluation

    def recorded(self, axis: str) -> bool:
        """Whether every evaluation records ``axis`` ("step", "tokens" or "wall_s")."""
        return len(self.step) > 0 and bool(np.isfinite(getattr(self, axis)).all())


def _finite(value) -> float:
    """``value`` as a float if it is a finite number, else NaN (not recorded)."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else math.nan


def _number(entry: dict, key: str) -> float:
    return _finite(entry.get(key))


def _tokens_per_step(info: CheckpointInfo, entry: dict) -> float:
    """Training tokens per optimizer step, from the recorded batch size, world size and the
    evaluation's length; NaN when one of them is not recorded."""
    history = info.history or {}
    batch_size = history.get("train_config", {}).get("batch_size")
    world_size = history.get("world_size")
    if not (isinstance(batch_size, int) and isinstance(world_size, int)):
        return math.nan
    return batch_size * world_size * _number(entry, "length")


def curves(info: CheckpointInfo) -> RunCurves:
    """``info``'s evaluations during training as aligned arrays [E], in step order."""
    history = info.history or {}
    evals = sorted(history.get("evals", []), key=lambda entry: entry["step"])
    step = np.array([entry["step"] for entry in evals], dtype=np.int64)

    def column(key: str) -> np.ndarray:
        return np.array([_number(entry, key) for entry in evals], dtype=float)

    return RunCurves(
        metric_name=history.get("metric_name") or "metric", step=step,
        tokens=step * np.array([_tokens_per_step(info, entry) for entry in evals], dtype=float),
        wall_s=column("wall_s"), metric=column("metric"), loss=column("loss"),
        train_loss=column("train_loss"))


# -- the final metric ------------------------------------------------------------------------
@dataclass(frozen=True)
class FinalMetric:
    """A run's last validation metric during training, with its 95 % interval and the number
    of sequences behind it where the evaluation recorded them (None where not)."""

    name: str
    value: float  # NaN when no evaluation recorded the metric
    step: int | None
    ci95: tuple[float, float] | None
    sequences: int | None


def _interval(entry: dict) -> tuple[tuple[float, float] | None, int | None]:
    """(ci95, sequences) of an evaluation when it records both, else (None, None)."""
    ci95, sequences = entry.get("ci95"), entry.get("sequences")
    if not (isinstance(ci95, list | tuple) and len(ci95) == 2 and isinstance(sequences, int)
            and sequences > 0):
        return None, None
    low, high = map(_finite, ci95)
    if math.isnan(low) or math.isnan(high):
        return None, None
    return (low, high), sequences


def final_metric(info: CheckpointInfo) -> FinalMetric:
    """The last evaluation (by step) that recorded the metric; NaN and None if none did."""
    history = info.history or {}
    name = history.get("metric_name") or "metric"
    measured = [entry for entry in history.get("evals", [])
                if math.isfinite(_number(entry, "metric"))]
    if not measured:
        return FinalMetric(name, math.nan, None, None, None)
    last = max(measured, key=lambda entry: entry["step"])
    ci95, sequences = _interval(last)
    return FinalMetric(name, _number(last, "metric"), int(last["step"]), ci95, sequences)


# -- the evaluation set ----------------------------------------------------------------------
def evaluation_change(first: Scores, second: Scores, same_task: bool) -> str | None:
    """How the second run compares with the first on their task's evaluation set, with the
    95 % interval of the difference (paired: one task, one set of sequences); None when
    their tasks differ, so the sequences do."""
    if not same_task or first.metric_name != second.metric_name:
        return None
    change = difference(first, second, paired=True)
    return (f"On the same {first.sequences:,} sequences the second run is "
            f"{change_text(change)} than the first.")
