"""Page "Compress": a trained TNN or FD-TNN made band + low rank, and what it costs the task.

The work is ``tnn_core.compress`` (convert, measure, search); this module builds the plan
from the page's controls, starts the work on a background thread, and turns its results
into what the page draws. Metric values are shown in display units: an accuracy as a
percentage (a drop in percentage points), bits per character as they are.
"""

from __future__ import annotations

import copy
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tnn_core.compress.convert import CONVERTIBLE_KINDS, check_convertible, convert
from tnn_core.compress.measure import EVAL_BATCH_SIZE, EVAL_BATCHES, Speedup, task_metric
from tnn_core.compress.pipeline import CompressionResult, compress, save_converted
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.compress.planner import SPEED_FACTORS, PlanScore, SearchResult, grid, search
from tnn_core.lab.inspect import save_new
from tnn_core.lab.train import TRAINING_THREADS
from tnn_core.models import ModelConfig
from tnn_core.training.background import BackgroundJob
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.tasks import Task

__all__ = ["JOB_THREADS", "WINDOWS", "Unit", "convertible", "make_plan", "conversion_job",
           "QuickConversion", "quick_conversion", "search_points", "search_job",
           "progress_text", "SpeedRow", "speed_row", "ResultView", "result_view", "Candidate",
           "SearchView", "search_view", "save"]

# torch threads of a job started from the page: as many as a training run gets, so one core
# stays with the pages and the timings are not disturbed by them
JOB_THREADS = TRAINING_THREADS
WINDOWS = (f"{EVAL_BATCHES} fixed validation batches of {EVAL_BATCH_SIZE} sequences at the "
           "training length, the same for the source and every converted model")


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

    def drop_text(self, drop: float) -> str:
        """A drop (positive: worse than the source) with its unit and direction."""
        if drop == 0:
            return "no change"
        word = "worse" if drop > 0 else "better"
        return f"{abs(self.scale * drop):.{1 if self.name == 'accuracy' else 3}f} " \
               f"{self.drop_unit} {word}"

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


def convertible(config: ModelConfig) -> bool:
    """Whether any layer holds one learned Toeplitz kernel per channel (tno, fd)."""
    return any(config.layer_operator(i).kind in CONVERTIBLE_KINDS for i in range(config.layers))


def make_plan(rows: list[tuple[int, int, str]], config: ModelConfig, n0: int,
              uniform: bool) -> CompressionPlan:
    """The plan of one (m, r, method) row per layer, checked against the model and its
    training length n0 (ValueError with a sentence naming the layer, value and range)."""
    layers = []
    for i, (band, rank, method) in enumerate(rows):
        where = "every layer" if uniform else f"layer {i}"
        try:
            layer = LayerPlan(band, rank, method)
            layer.check_length(n0, where)
        except ValueError as err:
            message = str(err)
            raise ValueError(message if message.startswith(where) else f"{where}: {message}"
                             ) from None
        layers.append(layer)
    plan = CompressionPlan(tuple(layers))
    if all(layer.kept for layer in plan.layers):
        raise ValueError("every layer is kept: set at least one layer to 'sample' or 'fit'")
    try:
        check_convertible(config, plan, n0)
    except ValueError as err:
        raise ValueError(str(err).replace("layers[", "layer ").replace("] is", " is")) from None
    return plan


def _private(model: nn.Module, device: str) -> nn.Module:
    """A copy for the job: the loaded model is shared by every session for inference, and
    the timing runs backward passes (gradients) through the source."""
    return copy.deepcopy(model).to(device).eval()


def conversion_job(model: nn.Module, task: Task, plan: CompressionPlan, finetune_steps: int,
                   finetune_lr: float, finetune_parameters: str, device: str) -> BackgroundJob:
    """``pipeline.compress`` on a copy of ``model``, on a background thread (not started)."""
    source = _private(model, device)

    def run(on_progress, stop_event: threading.Event) -> CompressionResult:
        torch.set_num_threads(JOB_THREADS)  # this thread's, not the server's
        return compress(source, task, plan, finetune_steps, finetune_lr, finetune_parameters,
                        on_progress=on_progress, stop_event=stop_event)
    return BackgroundJob(run)


@dataclass(frozen=True)
class QuickConversion:
    """Every layer converted with one (m, r, method), and each layer alone, scored on the
    task at its training length and nothing else (no timing, no fine-tuning): a lesson
    step's numbers."""

    metric_name: str
    chance: float
    source: float  # the task metric, source and converted, on the same validation windows
    converted: float
    alone: tuple[float, ...]  # per layer: the metric with only that layer converted
    errors: tuple[float, ...]  # per layer, ‖error‖_F / ‖off-band part‖_F (convert.fit_layer)


def quick_conversion(model: nn.Module, task: Task, band: int, rank: int,
                     method: str) -> QuickConversion:
    """``model`` with every layer, then each layer alone, as band m + rank r (``method``),
    scored like its source; ValueError naming the field when the plan does not fit."""
    layers = len(model.operators())
    plan = CompressionPlan.uniform(layers, band, rank, method)
    converted, errors = convert(model, plan, task.seq_len)
    kept = LayerPlan(band, rank, "keep")
    alone = tuple(task_metric(convert(model, CompressionPlan(tuple(
        plan.layers[i] if i == j else kept for i in range(layers))), task.seq_len)[0], task)
        for j in range(layers))
    return QuickConversion(task.metric_name, float(task.chance), task_metric(model, task),
                           task_metric(converted, task), alone, tuple(errors))


def search_points(n0: int, bands: list[int], ranks: list[int]) -> list[tuple[int, int]]:
    """The (m, r) pairs of ``bands`` × ``ranks`` valid at training length n0; ValueError if
    none is."""
    points = grid(n0, tuple(sorted(bands)), tuple(sorted(ranks)))
    if not points:
        raise ValueError(f"no (m, r) pair of the chosen bands {sorted(bands)} and ranks "
                         f"{sorted(ranks)} is valid at the training length n0 = {n0} "
                         "(2 <= r <= n0, m <= 2 n0 - 2); choose at least one of each")
    return points


def search_job(model: nn.Module, task: Task, delta: float, method: str,
               points: list[tuple[int, int]], device: str) -> BackgroundJob:
    """``planner.search`` over ``points`` on a copy of ``model`` (not started)."""
    source = _private(model, device)

    def run(on_progress, stop_event: threading.Event) -> SearchResult:
        torch.set_num_threads(JOB_THREADS)  # this thread's, not the server's
        return search(source, task, delta, method, points, on_progress=on_progress,
                      stop_event=stop_event)
    return BackgroundJob(run)


def progress_text(items: list, unit: Unit, finetune_steps: int = 0) -> str:
    """What a running conversion or search is doing, from its last progress item."""
    if not items:
        return "Converting the layers…"
    kind, *rest = items[-1]
    if kind == "converted":
        return "Converted; scoring the source and the converted model on the validation " \
               "windows…"
    if kind == "metric":
        return f"Source {unit.show(rest[0])}, converted {unit.show(rest[1])}; timing " \
               "forward+backward…"
    if kind == "speedup":
        return f"Timed n = {rest[0].length}: {rest[0].ratio:.2f}× the source's speed…"
    if kind == "finetune":
        return f"Fine-tuning: step {rest[0]} of {finetune_steps}, training loss {rest[1]:.3f}"
    if kind == "finetuned":
        return f"Fine-tuned: {unit.show(rest[0])}"
    if kind == "sensitivity":
        layer, (m, r), drop = rest
        return f"Sensitivity: layer {layer} alone at m = {m}, r = {r}: " \
               f"{unit.drop_text(drop)}"
    if kind == "plan":
        score: PlanScore = rest[0]
        return f"Scored a candidate plan: {unit.show(score.metric)}, " \
               f"{score.speedups[1].ratio:.2f}× at the training length"
    raise ValueError(f"unknown progress item {kind!r}")


@dataclass(frozen=True)
class SpeedRow:
    """One length's timing, as the page shows it."""

    factor: int  # × the training length
    length: int
    source_ms: float  # medians
    converted_ms: float
    source_quartiles: tuple[float, float]
    converted_quartiles: tuple[float, float]
    ratio: float  # source / converted: above 1 the converted model is faster
    ratio_range: tuple[float, float]  # the ratio the quartiles allow (low, high)
    repeats: int

    @property
    def verdict(self) -> str:
        low, high = self.ratio_range
        return "faster" if low > 1 else "slower" if high < 1 else "within noise"


def speed_row(factor: int, s: Speedup) -> SpeedRow:
    low = s.source_quartiles[0] / s.converted_quartiles[1]
    high = s.source_quartiles[1] / s.converted_quartiles[0]
    return SpeedRow(factor, s.length, s.source_ms, s.converted_ms, s.source_quartiles,
                    s.converted_quartiles, s.ratio, (low, high), s.repeats)


@dataclass(frozen=True)
class ResultView:
    """One finished (or stopped) conversion."""

    unit: Unit
    plan: str  # the plan in words
    source: float
    converted: float  # before fine-tuning
    finetuned: float | None  # after it; None when not fine-tuned
    finetune_steps: int
    chance: float
    speeds: list[SpeedRow]  # per measured length (a stop can leave it short)
    parameters: tuple[int, int]  # source, converted
    layers: list[tuple[int, str, float | None]]  # (layer, plan in words, relative error)
    stopped: bool
    requested_steps: int  # the fine-tuning steps asked for

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
        """One sentence: what the conversion cost the metric, before and after fine-tuning."""
        drop = self._drop(self.converted)
        text = f"Converted, the model is {self.unit.drop_text(drop)} than the source"
        if self.finetuned is not None:
            text += (f"; after {self.finetune_steps} fine-tuning steps "
                     f"{self.unit.drop_text(self._drop(self.finetuned))}")
        return text + "."

    def _drop(self, value: float) -> float:
        return self.source - value if self.unit.higher_is_better else value - self.source


def result_view(result: CompressionResult, requested_steps: int) -> ResultView:
    unit = Unit(result.metric_name, result.higher_is_better)
    return ResultView(
        unit=unit, plan=result.plan.describe(), source=result.source_metric,
        converted=result.converted_metric, finetuned=result.finetuned_metric,
        finetune_steps=result.finetune_steps, chance=result.chance,
        speeds=[speed_row(f, s) for f, s in sorted(result.speedups.items())],
        parameters=result.parameters,
        layers=[(i, layer.describe(), error) for i, (layer, error)
                in enumerate(zip(result.plan.layers, result.errors, strict=True))],
        stopped=result.stopped, requested_steps=requested_steps)


@dataclass(frozen=True)
class Candidate:
    """One scored plan of a search."""

    index: int  # in SearchResult.scores
    plan: CompressionPlan
    label: str  # the plan in words
    metric: float
    drop: float  # positive: worse than the source
    speed: SpeedRow  # at the training length
    speed_long: SpeedRow | None  # at 4× the training length
    parameters: int
    pareto: bool
    best: bool


@dataclass(frozen=True)
class SearchView:
    unit: Unit
    source: float
    chance: float
    delta: float  # the allowed drop, as the planner counts it
    points: list[tuple[int, int]]  # the (m, r) grid, in the sensitivity's order
    sensitivity: list[list[float]]  # [layer][point] drop with that layer alone converted
    candidates: list[Candidate]
    best: Candidate | None
    stopped: bool

    @property
    def threshold(self) -> float:
        """The worst metric a plan may have: the source's, δ worse."""
        return self.source - self.delta if self.unit.higher_is_better else \
            self.source + self.delta

    def metric_range(self) -> tuple[float, float]:
        """A metric axis that shows every candidate, the source and the threshold, with a
        margin; chance is drawn only when it falls inside (it is usually far away)."""
        values = [c.metric for c in self.candidates] + [self.source, self.threshold]
        low, high = min(values), max(values)
        margin = 0.15 * (high - low) or 0.01 * max(abs(high), 1e-3)
        return low - margin, high + margin

    @property
    def verdict(self) -> str:
        delta = f"δ = {self.unit.amount(self.delta)}"
        if self.best is not None:
            b = self.best
            return (f"The fastest plan within {delta} of the source: {b.label}. It runs at "
                    f"{b.speed.ratio:.2f}× the source's speed at the training length"
                    + (f" and {b.speed_long.ratio:.2f}× at 4×" if b.speed_long else "")
                    + f", {self.unit.show(b.metric)} against the source's "
                    f"{self.unit.show(self.source)}.")
        if not self.candidates:
            return "The search was stopped before any plan was scored."
        return (f"No candidate keeps the metric within {delta} of the source "
                f"({self.unit.show(self.source)}): raise δ, try a denser grid, or convert "
                "one and fine-tune it.")


def search_view(result: SearchResult, task: Task) -> SearchView:
    unit = Unit(task.metric_name, task.higher_is_better)
    points = list(result.sensitivity[0]) if result.sensitivity else []
    candidates = []
    for i, score in enumerate(result.scores):
        long = max(score.speedups)
        candidates.append(Candidate(
            i, score.plan, score.plan.describe(), score.metric, score.drop,
            speed_row(1, score.speedups[1]),
            speed_row(long, score.speedups[long]) if long != 1 else None, score.parameters,
            i in result.pareto, i == result.best))
    return SearchView(
        unit=unit, source=result.source_metric, chance=task.chance, delta=result.delta,
        points=points,
        sensitivity=[[row.get(p, math.nan) for p in points] for row in result.sensitivity],
        candidates=candidates,
        best=candidates[result.best] if result.best is not None else None,
        stopped=result.stopped)


def save(result: CompressionResult, info: CheckpointInfo, name: str, user_dir: Path) -> str:
    """Write the converted model as ``user_dir``/NAME.safetensors; returns its key. A name
    already taken is refused, never overwritten (``inspect.save_new``)."""
    return save_new(name, user_dir, lambda path: save_converted(
        path, result, info, f"app: Compress {os.path.basename(info.source)}, "
                            f"{result.plan.describe()}"))
