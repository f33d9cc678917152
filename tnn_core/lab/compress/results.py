"""A finished (or stopped) conversion as the Compress page shows it, and saving it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tnn_core.compress.measure import Speedup
from tnn_core.compress.pipeline import CompressionResult, save_converted
from tnn_core.compress.planner import SPEED_FACTORS
from tnn_core.lab.common.saving import save_new
from tnn_core.lab.compress.units import Unit
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.scores import Difference, Scores
from tnn_core.training.verdicts import quality_sentence

__all__ = ["SpeedRow", "speed_row", "ResultView", "result_view",
           "save_name", "save"]


@dataclass(frozen=True)
class SpeedRow:
    """One length's timing, as the page shows it."""

    factor: int  # × the training length
    length: int
    source_ms: float  # medians
    converted_ms: float
    source_quartiles: tuple[float, float]
    converted_quartiles: tuple[float, float]
    ratio: float  # median of the rounds' source / converted: above 1 the converted is faster
    ratio_ci: tuple[float, float]  # its 95 % interval (``Speedup.ratio_ci``)
    repeats: int
    verdict: str  # "faster", "slower" or "within noise" (the interval against 1)


def speed_row(factor: int, s: Speedup) -> SpeedRow:
    return SpeedRow(factor, s.length, s.source_ms, s.converted_ms, s.source_quartiles,
                    s.converted_quartiles, s.ratio, s.ratio_ci, s.repeats, s.verdict)


@dataclass(frozen=True)
class ResultView:
    """One finished (or stopped) conversion."""

    unit: Unit
    plan: str  # the plan in words
    source: Scores
    converted: Scores  # before fine-tuning
    finetuned: Scores | None  # after it; None when not fine-tuned
    changes: tuple[Difference, Difference | None]  # converted, fine-tuned against the source
    finetune_steps: int
    chance: float
    speeds: list[SpeedRow]  # per measured length (a stop can leave it short)
    parameters: tuple[int, int]  # source, converted
    layers: list[tuple[int, str, float | None]]  # (layer, plan in words, relative error)
    stopped: bool
    requested_steps: int  # the fine-tuning steps asked for
    recurrent: bool = False  # whether any layer became a recurrence (its error reads so)

    @property
    def stop_note(self) -> str | None:
        """What a stop left out, or None if the conversion ran to its end."""
        if not self.stopped:
            return None
        if len(self.speeds) < len(SPEED_FACTORS):
            return ("Stopped before the timing ended: the speed-ups not measured are missing "
                    "below" + (", and the model was not fine-tuned." if self.requested_steps
                               else "."))
        if self.finetune_steps < self.requested_steps:
            return (f"Stopped after {self.finetune_steps} of {self.requested_steps} "
                    "fine-tuning steps: the metric after fine-tuning is the model's as it "
                    "stood then.")
        return "Stopped at the end: everything was measured."

    @property
    def added_parameters(self) -> int:
        return self.parameters[1] - self.parameters[0]

    @property
    def verdict(self) -> str:
        """What the conversion cost the metric, before and after fine-tuning, each change
        with its interval and verdict (``training.verdicts``)."""
        text = quality_sentence(self.changes[0], "the model", "Converted,")
        if self.changes[1] is not None:
            text += " " + quality_sentence(self.changes[1], "it", f"After "
                                           f"{self.finetune_steps} fine-tuning steps")
        return text


def result_view(result: CompressionResult, requested_steps: int) -> ResultView:
    unit = Unit(result.metric_name, result.higher_is_better)
    return ResultView(
        unit=unit, plan=result.plan.describe(), source=result.source,
        converted=result.converted, finetuned=result.finetuned,
        changes=(result.change(result.converted),
                 None if result.finetuned is None else result.change(result.finetuned)),
        finetune_steps=result.finetune_steps, chance=result.chance,
        speeds=[speed_row(f, s) for f, s in sorted(result.speedups.items())],
        parameters=result.parameters,
        layers=[(i, layer.describe(), error) for i, (layer, error)
                in enumerate(zip(result.plan.layers, result.errors, strict=True))],
        stopped=result.stopped, requested_steps=requested_steps,
        recurrent=any(layer.recurrent for layer in result.plan.layers))


def save_name(key: str, stamp: str) -> str:
    """The name the Save field starts with: the source's key made a valid name (an upload's
    "upload:SHA" has a colon), then "-compressed-" and ``stamp``; the user sees it before
    saving, and a name they type is saved as typed or refused."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", key.removeprefix("user/")).strip("-_") or "model"
    return f"{base[:40]}-compressed-{stamp}"


def save(result: CompressionResult, info: CheckpointInfo, name: str, user_dir: Path) -> str:
    """Write the converted model as ``user_dir``/NAME.safetensors; returns its key. A name
    already taken is refused, never overwritten (``common.saving.save_new``)."""
    return save_new(name, user_dir, lambda path: save_converted(
        path, result, info, f"app: Compress {os.path.basename(info.source)}, "
                            f"{result.plan.describe()}"))
