"""Choose (m, r) per layer: by an error budget, or by a budget on the task metric.

* ``plan_for_error(model, n0, epsilon)``: per layer, the cheapest grid point whose
  relative error (``convert``: the off-band part the low-rank part misses) is at most
  epsilon; a layer no grid point meets is kept. Cheapest: fewest flops of the converted
  mixer at n0 (``bench.flops.ski_flops``) for a bidirectional model; for a causal one,
  whose band + tail runs as one FFT product whatever (m, r), fewest parameters.
* ``search(model, task, n0, delta)``: the fastest plan whose metric is within delta of
  the source's. It measures each layer's sensitivity (that layer alone converted at each
  grid point, the metric drop on the validation windows), builds candidate plans (every
  grid point on all layers, and per layer the cheapest point whose drop alone is within
  a share of delta), converts and scores each (metric, measured forward+backward speed-up
  at n0 and 4 n0, parameters), and returns them with their Pareto front.

A drop is oriented so that positive is worse: source - converted for accuracy,
converted - source for bits per character.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from torch import nn

from tnn_core.bench.flops import ski_flops
from tnn_core.checks import check_number
from tnn_core.compress.convert import check_convertible, convert, fit_layer
from tnn_core.compress.guard import check_compression, check_source
from tnn_core.compress.measure import Speedup, parameter_count, speedup, task_metric
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.training.tasks import Task

__all__ = ["GRID_BANDS", "GRID_RANKS", "SPEED_FACTORS", "grid", "layer_cost", "metric_drop",
           "error_table", "plan_for_error", "PlanScore", "SearchResult", "score_plan",
           "sensitivity", "search", "pareto_front"]

GRID_BANDS = (1, 5, 9, 17)
GRID_RANKS = (8, 16, 32, 64)
SPEED_FACTORS = (1, 4)  # speed-ups are measured at these multiples of n0
_SHARES = (0.5, 1.0, 2.0, 4.0)  # a layer's share of delta when candidates are built

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
    """One converted plan, measured."""

    plan: CompressionPlan
    metric: float
    drop: float  # positive: worse than the source
    errors: list[float | None]
    speedups: dict[int, Speedup]  # factor of n0 -> forward+backward timing
    parameters: int

    def to_dict(self) -> dict:
        return {"plan": self.plan.to_dict(), "metric": self.metric, "drop": self.drop,
                "errors": self.errors, "parameters": self.parameters,
                "speedups": {str(f): s.to_dict() for f, s in self.speedups.items()}}


def score_plan(model: nn.Module, task: Task, plan: CompressionPlan, source_metric: float,
               factors=SPEED_FACTORS, repeats: int = 9) -> PlanScore:
    """Convert with ``plan`` and measure the metric, the speed-ups and the size."""
    converted, errors = convert(model, plan, task.seq_len)
    metric = task_metric(converted, task)
    timings = {f: speedup(model, converted, model.config.vocab_size, f * task.seq_len,
                          repeats=repeats) for f in factors}
    drop = metric_drop(source_metric, metric, task.higher_is_better)
    return PlanScore(plan, metric, drop, errors, timings, parameter_count(converted))


def sensitivity(model: nn.Module, task: Task, points: list[Point], method: str,
                source_metric: float, on_progress: Progress | None = None,
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
            table[i][p] = metric_drop(source_metric, task_metric(converted, task),
                                        task.higher_is_better)
            if on_progress is not None:
                done = i * len(points) + len(table[i])
                on_progress(done / total, ("sensitivity", i, p, table[i][p]))
    return table


def _candidates(table: list[dict[Point, float]], points: list[Point], n0: int, causal: bool,
                delta: float, method: str) -> list[CompressionPlan]:
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
    return plans


def pareto_front(scores: list[PlanScore]) -> list[int]:
    """Indices of the scores no other beats on all of: drop (lower), speed-up at each
    factor (higher), parameters (lower), while strictly better on one."""
    def objectives(s: PlanScore) -> tuple:
        return (-s.drop, *(s.speedups[f].ratio for f in sorted(s.speedups)), -s.parameters)

    values = [objectives(s) for s in scores]
    front = []
    for i, a in enumerate(values):
        dominated = any(all(x >= y for x, y in zip(b, a, strict=True)) and b != a
                        for j, b in enumerate(values) if j != i)
        if not dominated:
            front.append(i)
    return front


@dataclass
class SearchResult:
    source_metric: float
    delta: float
    sensitivity: list[dict[Point, float]]
    scores: list[PlanScore] = field(default_factory=list)
    pareto: list[int] = field(default_factory=list)
    best: int | None = None  # the fastest (at n0) within delta; None if no plan is
    stopped: bool = False

    def to_dict(self) -> dict:
        return {"source_metric": self.source_metric, "delta": self.delta,
                "sensitivity": [{f"{m},{r}": drop for (m, r), drop in row.items()}
                                for row in self.sensitivity],
                "scores": [s.to_dict() for s in self.scores], "pareto": self.pareto,
                "best": self.best, "stopped": self.stopped}


def search(model: nn.Module, task: Task, delta: float, method: str = "fit",
           points: list[Point] | None = None, repeats: int = 9,
           on_progress: Progress | None = None,
           stop_event: threading.Event | None = None) -> SearchResult:
    """Sensitivity, candidate plans, their scores and Pareto front (module docstring).

    delta: the allowed drop of the metric (accuracy as a fraction, or bits per
    character). Progress goes 0..0.5 over the sensitivity and 0.5..1 over the plans."""
    check_number("delta", delta, 0)
    n0 = task.seq_len
    points = grid(n0) if points is None else points
    layers = model.config.layers
    check_convertible(model.config, CompressionPlan.uniform(layers, *points[0], method), n0)
    check_source(model)
    largest = CompressionPlan.uniform(layers, max(b for b, _ in points), max(r for _, r in points),
                                      method)  # the costliest candidate to run
    check_compression(model.config, largest, n0, SPEED_FACTORS, 0,
                      next(model.parameters()).element_size())
    source_metric = task_metric(model, task)

    def half(offset: float) -> Progress | None:
        if on_progress is None:
            return None
        return lambda fraction, item: on_progress(offset + fraction / 2, item)

    table = sensitivity(model, task, points, method, source_metric, half(0.0), stop_event)
    result = SearchResult(source_metric, delta, table)
    if stop_event is not None and stop_event.is_set():
        result.stopped = True
        return result
    plans = _candidates(table, points, n0, model.config.operator.causal, delta, method)
    report = half(0.5)
    for k, plan in enumerate(plans):
        if stop_event is not None and stop_event.is_set():
            result.stopped = True
            break
        result.scores.append(score_plan(model, task, plan, source_metric, repeats=repeats))
        if report is not None:
            report((k + 1) / len(plans), ("plan", result.scores[-1]))
    result.pareto = pareto_front(result.scores)
    within = [i for i, s in enumerate(result.scores) if s.drop <= delta]
    if within:
        result.best = max(within, key=lambda i: (result.scores[i].speedups[1].ratio,
                                                 -result.scores[i].parameters))
    return result
