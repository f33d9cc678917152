"""How the Compress page shows a task's metric: an accuracy as a percentage (a drop in
percentage points), bits per character as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tnn_core.training.scores import Scores

__all__ = ["Unit"]


@dataclass(frozen=True)
class Unit:
    """How a task's metric is shown: an accuracy in %, other metrics as they are."""

    name: str  # the task's metric_name: "accuracy" or "bpc"
    higher_is_better: bool

    @property
    def scale(self) -> float:
        return 100.0 if self.name == "accuracy" else 1.0

    @property
    def suffix(self) -> str:
        return "%" if self.name == "accuracy" else self.name

    @property
    def drop_unit(self) -> str:
        """What a drop is counted in (the search's δ)."""
        return "points" if self.name == "accuracy" else "bits per character"

    def show(self, value: float | None) -> str:
        if value is None or not math.isfinite(value):
            return "—"
        return f"{self.scale * value:.1f} %" if self.name == "accuracy" else \
            f"{value:.3f} {self.name}"

    def interval_text(self, scores: Scores) -> str:
        """"60.9 % (95 % interval 58.8–63.0 %, 2,048 sequences)"."""
        low, high = scores.ci95
        return (f"{self.show(scores.metric)} (95 % interval {self.show(low)}–"
                f"{self.show(high)}, {scores.sequences:,} sequences)")

    def drop_text(self, drop: float) -> str:
        """A drop (positive: worse than the source) with its unit and direction."""
        if drop == 0:
            return "no change"
        word = "worse" if drop > 0 else "better"
        return f"{abs(self.scale * drop):.{1 if self.name == 'accuracy' else 3}f} " \
               f"{self.drop_unit} {word}"

    def drop_range(self, low: float, high: float) -> str:
        """An interval of drops in display units: "-0.4 to 2.1"."""
        digits = 1 if self.name == "accuracy" else 3
        return f"{self.scale * low:.{digits}f} to {self.scale * high:.{digits}f}"

    def change(self, value: float, reference: float) -> str:
        """value - reference in display units, signed (for st.metric's delta)."""
        digits = 1 if self.name == "accuracy" else 3
        return f"{self.scale * (value - reference):+.{digits}f} {self.drop_unit} vs the source"

    @property
    def delta_color(self) -> str:
        """st.metric's colouring: green when the change is an improvement."""
        return "normal" if self.higher_is_better else "inverse"

    def amount(self, drop: float) -> str:
        """A drop (as the planner counts it) in display units: "1 point", "0.05 bpc"."""
        value = self.scale * drop
        if self.name == "accuracy":
            return f"{value:g} point{'' if value == 1 else 's'}"
        return f"{value:g} {self.name}"

    def drop_from_display(self, value: float) -> float:
        """A δ typed in display units (points, bpc) as the planner counts it."""
        return value / self.scale
