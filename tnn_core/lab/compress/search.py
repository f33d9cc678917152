"""A finished (or stopped) search for the fastest plan within δ, as the Compress page shows
it: every scored candidate, the sensitivity of each layer, and the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import SPEED_ROUNDS, PlanScore, SearchResult
from tnn_core.lab.compress.results import SpeedRow, speed_row
from tnn_core.lab.compress.units import Unit
from tnn_core.training.scores import Scores
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import amount

__all__ = ["SEARCH_EXPLAINED", "Candidate", "SearchView", "search_view"]

SEARCH_EXPLAINED = (
    "The search first converts **each layer alone** at every (m, r) of the grid and measures "
    "the drop of the metric (its sensitivity), then builds candidate plans (every grid point "
    "on all layers, and per layer the cheapest point whose drop stays within a share of δ), "
    "scores them **most promising first**, and keeps the **fastest at the training length "
    "within δ** of the source: a plan is within δ only when the whole paired 95 % interval "
    "of its drop is (the same sequences for the source and the plan), and it is the fastest "
    "only when its speed-up's interval lies above every other plan's (the plans tied for it "
    f"are re-timed up to {SPEED_ROUNDS} times, then reported as tied). A minute or so for a "
    "small model.")


@dataclass(frozen=True)
class Candidate:
    """One scored plan of a search."""

    index: int  # in SearchResult.scores
    plan: CompressionPlan
    label: str  # the plan in words
    metric: float
    drop: float  # positive: worse than the source
    drop_ci: tuple[float, float]  # its 95 % interval
    within: bool  # the whole interval within δ
    speed: SpeedRow  # at the training length
    speed_long: SpeedRow | None  # at 4× the training length
    parameters: int
    front: bool  # on the 2-D front of the chart: no plan is both faster and smaller in drop
    best: bool
    tied: bool  # among the plans tied for the fastest within δ


@dataclass(frozen=True)
class SearchView:
    unit: Unit
    source: Scores
    chance: float
    delta: float  # the allowed drop, as the planner counts it
    points: list[tuple[int, int]]  # the (m, r) grid, in the sensitivity's order
    sensitivity: list[list[float]]  # [layer][point] drop with that layer alone converted
    candidates: list[Candidate]  # in the order scored: most promising first
    planned: int  # candidates the search built (a stop scores fewer)
    best: Candidate | None
    tied: list[Candidate]
    stopped: bool

    @property
    def threshold(self) -> float:
        """The worst metric a plan may have: the source's, δ worse."""
        return self.source.metric - self.delta if self.unit.higher_is_better else \
            self.source.metric + self.delta

    def metric_range(self) -> tuple[float, float]:
        """A metric axis that shows every candidate, the source and the threshold, with a
        margin; chance is drawn only when it falls inside (it is usually far away)."""
        values = [c.metric for c in self.candidates] + [self.source.metric, self.threshold]
        low, high = min(values), max(values)
        margin = 0.15 * (high - low) or 0.01 * max(abs(high), 1e-3)
        return low - margin, high + margin

    @property
    def verdict(self) -> str:
        delta = f"δ = {amount(self.delta, self.unit.name)}"
        scored = len(self.candidates)
        measured = (f"Stopped after scoring {scored} of {self.planned} candidate plans "
                    f"(the most promising first); what follows is about those {scored} only. "
                    if self.stopped and scored < self.planned else "")
        if not self.candidates:
            return "The search was stopped before any plan was scored."
        if self.best is not None:
            b = self.best
            low, high = b.speed.ratio_ci
            return measured + (
                f"The fastest plan within {delta} of the source: {b.label}. It runs at "
                f"{b.speed.ratio:.2f}× the source's speed at the training length (95 % "
                f"interval {low:.2f}–{high:.2f}×, above every other plan's)"
                + (f" and {b.speed_long.ratio:.2f}× at 4×" if b.speed_long else "")
                + f", {self.unit.show(b.metric)} against the source's "
                f"{self.unit.show(self.source.metric)}.")
        if self.tied:
            plans = "; ".join(f"{c.label} ({c.speed.ratio:.2f}×, {c.speed.ratio_ci[0]:.2f}–"
                              f"{c.speed.ratio_ci[1]:.2f}×)" for c in self.tied)
            return measured + (
                f"{len(self.tied)} plans within {delta} are tied for the fastest: their "
                f"speed-up intervals overlap after {SPEED_ROUNDS} re-timings, so none is "
                f"named. {plans}. Convert one to measure it longer.")
        return measured + (
            f"No scored plan keeps the whole 95 % interval of its drop within {delta} of the "
            f"source ({self.unit.show(self.source.metric)}): raise δ, try a denser grid, or "
            "convert one and fine-tune it.")


def search_view(result: SearchResult, task: Task) -> SearchView:
    unit = Unit(task.metric_name, task.higher_is_better)
    points = list(result.sensitivity[0]) if result.sensitivity else []
    front = _front_2d(result.scores)
    candidates = []
    for i, score in enumerate(result.scores):
        long = max(score.speedups)
        candidates.append(Candidate(
            i, score.plan, score.plan.describe(), score.metric, score.drop,
            (score.change.low, score.change.high), score.within(result.delta),
            speed_row(1, score.speedups[1]),
            speed_row(long, score.speedups[long]) if long != 1 else None, score.parameters,
            i in front, i == result.best, i in result.tied))
    return SearchView(
        unit=unit, source=result.source, chance=task.chance, delta=result.delta,
        points=points,
        sensitivity=[[row.get(p, math.nan) for p in points] for row in result.sensitivity],
        candidates=candidates, planned=result.planned,
        best=candidates[result.best] if result.best is not None else None,
        tied=[candidates[i] for i in result.tied], stopped=result.stopped)


def _front_2d(scores: list[PlanScore]) -> set[int]:
    """The plans no other beats on both axes of the chart: smaller drop and higher speed-up
    at the training length."""
    return {i for i, a in enumerate(scores)
            if not any(b.drop <= a.drop and b.speedups[1].ratio >= a.speedups[1].ratio
                       and (b.drop, b.speedups[1].ratio) != (a.drop, a.speedups[1].ratio)
                       for b in scores)}
