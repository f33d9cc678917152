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
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tnn_core.compress.convert import CONVERTIBLE_KINDS, check_convertible, convert
from tnn_core.compress.guard import converted_config
from tnn_core.compress.measure import Speedup, task_scores
from tnn_core.compress.pipeline import CompressionResult, compress, save_converted
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.compress.planner import (
    SPEED_FACTORS,
    SPEED_ROUNDS,
    PlanScore,
    SearchResult,
    default_delta,
    grid,
    search,
)
from tnn_core.lab.inspect import save_new
from tnn_core.lab.train import TRAINING_THREADS
from tnn_core.models import ModelConfig
from tnn_core.training.background import BackgroundJob
from tnn_core.training.budget import parameter_count
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.scores import Difference, Scores
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import change_text, quality

__all__ = ["JOB_THREADS", "Unit", "convertible", "make_plan", "added_parameters",
           "default_delta", "conversion_job",
           "QuickConversion", "quick_conversion", "search_points", "search_job",
           "progress_text", "SpeedRow", "speed_row", "ResultView", "result_view", "Candidate",
           "SearchView", "search_view", "save_name", "save"]

# torch threads of a job started from the page: as many as a training run gets, so one core
# stays with the pages and the timings are not disturbed by them
JOB_THREADS = TRAINING_THREADS


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


def added_parameters(config: ModelConfig, plan: CompressionPlan, n0: int) -> int:
    """Parameters the converted model has beyond its source (negative: fewer), known before
    converting: r knots per channel can outnumber a small kernel generator."""
    return parameter_count(converted_config(config, plan, n0)) - parameter_count(config)


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
    task's evaluation set at its training length and nothing else (no timing, no
    fine-tuning): a lesson step's numbers."""

    metric_name: str
    chance: float
    source: Scores  # the same sequences for every variant
    converted: Scores
    alone: tuple[Scores, ...]  # per layer: only that layer converted
    errors: tuple[float, ...]  # per layer, ‖error‖_F / ‖off-band part‖_F (convert.fit_layer)


def quick_conversion(model: nn.Module, task: Task, band: int, rank: int,
                     method: str) -> QuickConversion:
    """``model`` with every layer, then each layer alone, as band m + rank r (``method``),
    scored like its source; ValueError naming the field when the plan does not fit."""
    layers = len(model.operators())
    plan = CompressionPlan.uniform(layers, band, rank, method)
    converted, errors = convert(model, plan, task.seq_len)
    kept = LayerPlan(band, rank, "keep")
    alone = tuple(task_scores(convert(model, CompressionPlan(tuple(
        plan.layers[i] if i == j else kept for i in range(layers))), task.seq_len)[0], task)
        for j in range(layers))
    return QuickConversion(task.metric_name, float(task.chance), task_scores(model, task),
                           task_scores(converted, task), alone, tuple(errors))


def search_points(n0: int, bands: list[int], ranks: list[int]) -> list[tuple[int, int]]:
    """The (m, r) pairs of ``bands`` × ``ranks`` valid at training length n0; ValueError if
    none is."""
    points = grid(n0, tuple(sorted(bands)), tuple(sorted(ranks)))
    if not points:
        raise ValueError(f"no (m, r) pair of the chosen bands {sorted(bands)} and ranks "
                         f"{sorted(ranks)} is valid at the training length n0 = {n0} "
                         "(2 <= r <= n0, m <= 2 n0 - 2); choose at least one of each")
    return points


def search_job(model: nn.Module, task: Task, delta: float | None, method: str,
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
        return "Converted; scoring the source and the converted model on the evaluation set…"
    if kind == "metric":
        return f"Source {unit.show(rest[0].metric)}, converted {unit.show(rest[1].metric)}; " \
               "timing forward+backward…"
    if kind == "speedup":
        return f"Timed n = {rest[0].length}: {rest[0].ratio:.2f}× the source's speed…"
    if kind == "finetune":
        return f"Fine-tuning: step {rest[0]} of {finetune_steps}, training loss {rest[1]:.3f}"
    if kind == "finetuned":
        return f"Fine-tuned: {unit.show(rest[0].metric)}"
    if kind == "sensitivity":
        layer, (m, r), drop = rest
        return f"Sensitivity: layer {layer} alone at m = {m}, r = {r}: " \
               f"{unit.drop_text(drop)}"
    if kind == "plan":
        score: PlanScore = rest[0]
        return f"Scored a candidate plan: {unit.show(score.metric)}, " \
               f"{score.speedups[1].ratio:.2f}× at the training length"
    if kind == "retime":
        plans, round_number = rest
        return (f"Re-timing the {plans} fastest plans within δ (round {round_number}), so that "
                "one is named only if its speed-up's interval lies above the others'…")
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
    ratio: float  # median of the rounds' source / converted: above 1 the converted is faster
    ratio_ci: tuple[float, float]  # its 95 % interval (``Speedup.ratio_ci``)
    repeats: int
    verdict: str  # "faster", "slower" or "within noise" (the interval against 1)


def speed_row(factor: int, s: Speedup) -> SpeedRow:
    return SpeedRow(factor, s.length, s.source_ms, s.converted_ms, s.source_quartiles,
                    s.converted_quartiles, s.ratio, s.ratio_ci, s.repeats, s.verdict)


def change_sentence(unit: Unit, change: Difference, what: str) -> str:
    """"Converted, the model is 0.8 points worse (95 % interval …): …" with the verdict."""
    verdict = {"keeps": "it keeps its quality", "loses": "it loses quality",
               "cannot tell": f"cannot tell with {change.reference.sequences:,} sequences "
                              f"whether it keeps its quality"}[quality(change)]
    return f"{what} is {change_text(change)} than the source: {verdict}."


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
        text = change_sentence(self.unit, self.changes[0], "Converted, the model")
        if self.changes[1] is not None:
            text += " " + change_sentence(self.unit, self.changes[1],
                                          f"After {self.finetune_steps} fine-tuning steps it")
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
        stopped=result.stopped, requested_steps=requested_steps)


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
        delta = f"δ = {self.unit.amount(self.delta)}"
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


def save_name(key: str, stamp: str) -> str:
    """The name the Save field starts with: the source's key made a valid name (an upload's
    "upload:SHA" has a colon), then "-compressed-" and ``stamp``; the user sees it before
    saving, and a name they type is saved as typed or refused."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", key.removeprefix("user/")).strip("-_") or "model"
    return f"{base[:40]}-compressed-{stamp}"


def save(result: CompressionResult, info: CheckpointInfo, name: str, user_dir: Path) -> str:
    """Write the converted model as ``user_dir``/NAME.safetensors; returns its key. A name
    already taken is refused, never overwritten (``inspect.save_new``)."""
    return save_new(name, user_dir, lambda path: save_converted(
        path, result, info, f"app: Compress {os.path.basename(info.source)}, "
                            f"{result.plan.describe()}"))
