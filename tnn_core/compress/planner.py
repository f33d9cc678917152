"""Choose (m, r) per layer: by an error budget, or by a budget on the task metric.

* ``plan_for_error(model, n0, epsilon)``: per layer, the cheapest grid point whose
  relative error (``convert``: ||T - T̂||_F / ||T||_F over the layer's channels) is at most
  epsilon; a layer no grid point meets is kept. Cheapest: fewest flops of the converted
  mixer at n0 (``bench.flops.ski_flops``) for a bidirectional model; for a causal one,
  whose band + tail runs as one FFT product whatever (m, r), fewest parameters.
* ``search(model, task, delta)``: the fastest plan whose metric is within delta of the
  source's. It measures each layer's sensitivity (that layer alone converted at each
  grid point, the metric drop on the evaluation set), builds candidate plans (every grid
  point on all layers, and per layer the cheapest point whose drop alone is within a
  share of delta) and orders them most promising first, converts and scores each (the
  metric paired with the source's, the measured forward+backward speed-up at n0 and 4 n0
  with its interval, parameters), re-times the plans tied for the fastest, and returns
  them with the winner (or the tie) and their Pareto front.

A plan is within delta only when the whole paired 95 % interval of its drop is (its upper
bound at most delta: ``training.verdicts.quality``); delta defaults to the lab's verdict
tolerance (``default_delta``). The fastest is named only when its speed-up's interval
lies above every other's (``ranking``), else the plans are reported as tied.

A drop is oriented so that positive is worse: source - converted for accuracy,
converted - source for bits per character.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from torch import nn

from tnn_core.bench.flops import ski_flops
from tnn_core.checks import check_number
from tnn_core.compress.convert import check_convertible, convert, fit_layer
from tnn_core.compress.guard import check_compression, check_source
from tnn_core.compress.measure import Speedup, parameter_count, speedup, task_scores
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.training.evaluate import evaluation_size
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import TOLERANCE, quality

__all__ = ["GRID_BANDS", "GRID_RANKS", "SPEED_FACTORS", "SPEED_ROUNDS", "grid", "layer_cost",
           "metric_drop", "error_table", "plan_for_error", "PlanScore", "default_delta",
           "SearchResult", "Ranking", "ranking", "score_plan", "sensitivity", "search",
           "promising_first", "pareto_front"]

GRID_BANDS = (1, 5, 9, 17)
GRID_RANKS = (8, 16, 32, 64)
SPEED_FACTORS = (1, 4)  # speed-ups are measured at these multiples of n0
_SHARES = (0.5, 1.0, 2.0, 4.0)  # a layer's share of delta when candidates are built
SPEED_ROUNDS = 3  # re-timings of the plans tied for the fastest before they are called tied

Point = tuple[int, int]  # (m, r)
Progress = Callable[[float, object], None]


def grid(n0: int, bands=GRID_BANDS, ranks=GRID_RANKS) -> list[Point]:
    """The (m, r) pairs valid at training length n0 (r <= n0, m <= 2 n0 - 2)."""
    return [(m, r) for m in bands for r in ranks if 2 <= r <= n0 and 1 <= m <= 2 * n0 - 2]


def layer_cost(n0: int, point: Point, causal: bool) -> float:
    """What ranks the grid points of a layer from cheap to dear (see the module docstring)."""
    m, r = point
    if causal:
        return float(m + r)
    return ski_flops(n0, r, m)


def metric_drop(source: float, converted: float, higher_is_better: bool) -> float:
    """How much worse ``converted`` is than ``source`` (positive: worse)."""
    return source - converted if higher_is_better else converted - source


def error_table(model: nn.Module, n0: int, points: list[Point], method: str = "fit"
                ) -> list[dict[Point, float]]:
    """Per layer, each grid point's relative error (``convert.fit_layer``)."""
    config = model.config
    table = []
    for i, op in enumerate(model.operators()):
        kernels = op.kernel(n0).detach()
        source = config.layer_operator(i)
        table.append({p: fit_layer(kernels, LayerPlan(*p, method), source.causal, source).error
                      for p in points})
    return table


def plan_for_error(model: nn.Module, n0: int, epsilon: float, points: list[Point] | None = None,
                   method: str = "fit") -> tuple[CompressionPlan, list[float | None]]:
    """The cheapest point per layer with error <= epsilon (else "keep"), and its errors."""
    check_number("epsilon", epsilon, 0)
    check_source(model)
    points = grid(n0) if points is None else points
    causal = model.config.operator.causal
    layers, errors = [], []
    for table in error_table(model, n0, points, method):
        fits = sorted((p for p in points if table[p] <= epsilon),
                      key=lambda p: layer_cost(n0, p, causal))
        layers.append(LayerPlan(*fits[0], method) if fits else LayerPlan(method="keep"))
        errors.append(table[fits[0]] if fits else None)
    return CompressionPlan(tuple(layers)), errors


@dataclass(frozen=True)
class PlanScore:
    """One converted plan, measured: its scores on the evaluation set (paired with the
    source's), its speed-ups and its size."""

    plan: CompressionPlan
    scores: Scores
    change: Difference  # against the source; positive worse
    errors: list[float | None]
    speedups: dict[int, Speedup]  # factor of n0 -> forward+backward timing
    parameters: int

    @property
    def metric(self) -> float:
        return self.scores.metric

    @property
    def drop(self) -> float:
        return self.change.worse_by

    def within(self, delta: float) -> bool:
        """Whether the whole paired 95 % interval of the drop is within ``delta`` (its upper
        bound at most ``delta``)."""
        return quality(self.change, delta) == "keeps"

    def to_dict(self) -> dict:
        return {"plan": self.plan.to_dict(), **self.scores.to_dict(), "drop": self.drop,
                "drop_ci95": [self.change.low, self.change.high], "errors": self.errors,
                "parameters": self.parameters,
                "speedups": {str(f): s.to_dict() for f, s in self.speedups.items()}}


def default_delta(metric_name: str) -> float:
    """The search's default δ: the lab's quality tolerance (``training.verdicts.TOLERANCE``,
    2 points of accuracy or 0.05 bpc), applied as every verdict applies it: to the paired
    95 % interval of the drop (``PlanScore.within``: its upper bound at most δ). Not the
    source's own half-width, which measures the evaluation set's spread, not the paired
    drop's (issue 37: 4.4 points on digits-tno, twice the tolerance)."""
    return TOLERANCE[metric_name]


def score_plan(model: nn.Module, task: Task, plan: CompressionPlan, source: Scores,
               factors=SPEED_FACTORS, repeats: int = 9) -> PlanScore:
    """Convert with ``plan`` and measure the metric, the speed-ups and the size."""
    converted, errors = convert(model, plan, task.seq_len)
    scores = task_scores(converted, task)
    timings = {f: speedup(model, converted, model.config.vocab_size, f * task.seq_len,
                          repeats=repeats) for f in factors}
    return PlanScore(plan, scores, difference(source, scores, paired=True), errors, timings,
                     parameter_count(converted))


def sensitivity(model: nn.Module, task: Task, points: list[Point], method: str,
                source: Scores, on_progress: Progress | None = None,
                stop_event: threading.Event | None = None) -> list[dict[Point, float]]:
    """Per layer, the metric drop with that layer alone converted at each point."""
    layers = model.config.layers
    keep = LayerPlan(method="keep")
    table: list[dict[Point, float]] = [{} for _ in range(layers)]
    total = layers * len(points)
    for i in range(layers):
        for p in points:
            if stop_event is not None and stop_event.is_set():
                return table
            plan = CompressionPlan(tuple(LayerPlan(*p, method) if j == i else keep
                                         for j in range(layers)))
            converted, _ = convert(model, plan, task.seq_len)
            table[i][p] = metric_drop(source.metric, task_scores(converted, task).metric,
                                      task.higher_is_better)
            if on_progress is not None:
                done = i * len(points) + len(table[i])
                on_progress(done / total, ("sensitivity", i, p, table[i][p]))
    return table


def _candidates(table: list[dict[Point, float]], points: list[Point], n0: int, causal: bool,
                delta: float, method: str) -> list[CompressionPlan]:
    """Every grid point on all layers, and per share of δ the cheapest point of each layer
    whose drop alone is within it; most promising first (``promising_first``)."""
    layers = len(table)
    plans = [CompressionPlan.uniform(layers, m, r, method) for m, r in points]
    for share in _SHARES:
        budget = share * delta / layers
        chosen = []
        for row in table:
            ok = sorted((p for p in points if row.get(p, np.inf) <= budget),
                        key=lambda p: layer_cost(n0, p, causal))
            chosen.append(LayerPlan(*ok[0], method) if ok else LayerPlan(method="keep"))
        plan = CompressionPlan(tuple(chosen))
        if plan not in plans and not all(layer.kept for layer in chosen):
            plans.append(plan)
    return promising_first(plans, table, n0, causal, delta)


def promising_first(plans: list[CompressionPlan], table: list[dict[Point, float]], n0: int,
                    causal: bool, delta: float) -> list[CompressionPlan]:
    """Plans whose predicted drop (the sum of their layers' drops alone) is within δ first,
    the cheapest of them first; then the others, the smallest predicted drop first. A
    stopped search has then scored the plans most likely to win."""
    def predicted(plan: CompressionPlan) -> tuple[float, float]:
        drop = sum(row.get((layer.band, layer.rank), np.inf) for row, layer
                   in zip(table, plan.layers, strict=True) if not layer.kept)
        cost = sum(layer_cost(n0, (layer.band, layer.rank), causal) for layer in plan.layers
                   if not layer.kept)
        return drop, cost

    def order(plan: CompressionPlan) -> tuple:
        drop, cost = predicted(plan)
        return (0, cost, drop) if drop <= delta else (1, drop, cost)

    return sorted(plans, key=order)


def pareto_front(scores: list[PlanScore]) -> list[int]:
    """Indices of the scores no other beats on all of: drop (lower), speed-up at each
    factor (higher), parameters (lower), while strictly better on one."""
    def objectives(s: PlanScore) -> tuple:
        return (-s.drop, *(s.speedups[f].ratio for f in sorted(s.speedups)), -s.parameters)

    return _front([objectives(s) for s in scores])


def _front(values: list[tuple]) -> list[int]:
    """Indices of the tuples no other is at least as large as in every entry (and differs)."""
    front = []
    for i, a in enumerate(values):
        dominated = any(all(x >= y for x, y in zip(b, a, strict=True)) and b != a
                        for j, b in enumerate(values) if j != i)
        if not dominated:
            front.append(i)
    return front


@dataclass(frozen=True)
class Ranking:
    """The fastest plan at n0 within δ, or the plans tied for it."""

    best: int | None  # its index; None when no plan is within δ, or several are tied
    tied: list[int]  # plans within δ whose speed-up intervals overlap the leader's, fastest first


def ranking(scores: list[PlanScore], delta: float) -> Ranking:
    """Among the plans within δ (``PlanScore.within``), the one with the highest median
    speed-up at n0, if its 95 % interval lies above every other's; else the tie."""
    within = [i for i, s in enumerate(scores) if s.within(delta)]
    if not within:
        return Ranking(None, [])
    by_speed = sorted(within, key=lambda i: (-scores[i].speedups[1].ratio,
                                             scores[i].parameters))
    floor = scores[by_speed[0]].speedups[1].ratio_ci[0]
    tied = [i for i in by_speed if scores[i].speedups[1].ratio_ci[1] >= floor]
    return Ranking(by_speed[0], []) if len(tied) == 1 else Ranking(None, tied)


@dataclass
class SearchResult:
    source: Scores
    delta: float
    sensitivity: list[dict[Point, float]]
    planned: int = 0  # candidate plans built; a stop scores fewer
    scores: list[PlanScore] = field(default_factory=list)
    pareto: list[int] = field(default_factory=list)
    best: int | None = None  # the fastest (at n0) within delta; None if no plan is, or a tie
    tied: list[int] = field(default_factory=list)
    stopped: bool = False

    @property
    def source_metric(self) -> float:
        return self.source.metric

    def to_dict(self) -> dict:
        return {"source": self.source.to_dict(), "delta": self.delta,
                "sensitivity": [{f"{m},{r}": drop for (m, r), drop in row.items()}
                                for row in self.sensitivity],
                "planned": self.planned, "scores": [s.to_dict() for s in self.scores],
                "pareto": self.pareto, "best": self.best, "tied": self.tied,
                "stopped": self.stopped}


def search(model: nn.Module, task: Task, delta: float | None = None, method: str = "fit",
           points: list[Point] | None = None, repeats: int = 9,
           on_progress: Progress | None = None,
           stop_event: threading.Event | None = None,
           source_scores: Scores | None = None) -> SearchResult:
    """Sensitivity, candidate plans, their scores, ranking and Pareto front (module
    docstring). ``source_scores``: the source's ``task_scores``, if the caller has them.

    delta: the allowed drop of the metric (accuracy as a fraction, or bits per
    character), against the upper bound of the drop's paired 95 % interval; None:
    ``default_delta``, the verdict tolerance. Progress goes 0..0.5 over the sensitivity and
    0.5..1 over the plans."""
    if delta is not None:
        check_number("delta", delta, 0)
    n0 = task.seq_len
    points = grid(n0) if points is None else points
    layers = model.config.layers
    check_convertible(model.config, CompressionPlan.uniform(layers, *points[0], method), n0)
    check_source(model)
    largest = CompressionPlan.uniform(layers, max(b for b, _ in points), max(r for _, r in points),
                                      method)  # the costliest candidate to run
    check_compression(model.config, largest, n0, SPEED_FACTORS, 0, evaluation_size(task),
                      next(model.parameters()).element_size())
    source = task_scores(model, task) if source_scores is None else source_scores
    delta = default_delta(source.metric_name) if delta is None else delta

    def half(offset: float) -> Progress | None:
        if on_progress is None:
            return None
        return lambda fraction, item: on_progress(offset + fraction / 2, item)

    def stopping() -> bool:
        return stop_event is not None and stop_event.is_set()

    table = sensitivity(model, task, points, method, source, half(0.0), stop_event)
    result = SearchResult(source, delta, table)
    if stopping():
        result.stopped = True
        return result
    plans = _candidates(table, points, n0, model.config.operator.causal, delta, method)
    result.planned = len(plans)
    report = half(0.5)
    for k, plan in enumerate(plans):
        if stopping():
            break
        result.scores.append(score_plan(model, task, plan, source, repeats=repeats))
        if report is not None:
            report((k + 1) / len(plans), ("plan", result.scores[-1]))
    if not stopping():
        _settle(model, task, result.scores, delta, repeats, stop_event, report)
    result.stopped = stopping()
    result.pareto = pareto_front(result.scores)
    ranked = ranking(result.scores, delta)
    result.best, result.tied = ranked.best, ranked.tied
    return result


def _settle(model: nn.Module, task: Task, scores: list[PlanScore], delta: float, repeats: int,
            stop_event: threading.Event | None = None, report: Progress | None = None) -> None:
    """Re-time the two fastest plans within δ once, in a fresh batch of ``repeats`` rounds
    (a batch that ran lucky then widens its plan's interval), then the plans tied for the
    fastest (``ranking``), up to SPEED_ROUNDS times, until one's interval lies above the
    others'."""
    within = sorted((i for i, s in enumerate(scores) if s.within(delta)),
                    key=lambda i: -scores[i].speedups[1].ratio)
    rounds = [within[:2]] if len(within) > 1 else []
    converted: dict[int, nn.Module] = {}  # each re-timed plan converted once, kept for later rounds
    for retimed in rounds:
        if stop_event is not None and stop_event.is_set():
            return
        if report is not None:
            report(1.0, ("retime", len(retimed), len(rounds)))
        for i in retimed:
            if i not in converted:
                converted[i] = convert(model, scores[i].plan, task.seq_len)[0]
            scores[i] = _retimed(model, converted[i], task, scores[i], repeats)
        tied = ranking(scores, delta).tied
        if tied and len(rounds) <= SPEED_ROUNDS:
            rounds.append(tied)


def _retimed(model: nn.Module, converted: nn.Module, task: Task, score: PlanScore,
             repeats: int) -> PlanScore:
    """``score`` with ``repeats`` more rounds of its speed-up at n0 (``converted``: its plan
    applied to ``model``)."""
    timing = score.speedups[1]
    more = speedup(model, converted, model.config.vocab_size, task.seq_len, repeats=repeats,
                   seed=timing.repeats)
    return replace(score, speedups={**score.speedups, 1: timing.extended(more)})
