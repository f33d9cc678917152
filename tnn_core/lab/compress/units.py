"""How the Compress page shows a task's metric: an accuracy as a percentage (a drop in
percentage points), bits per character as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from tnn_core.training.scores import format_metric

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
        """The metric as every page writes it (``format_metric``); none as a dash."""
        return "—" if value is None else format_metric(value, self.name)

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

    def drop_from_display(self, value: float) -> float:
        """A δ typed in display units (points, bpc) as the planner counts it."""
        return value / self.scale
