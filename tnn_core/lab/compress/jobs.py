"""The Compress page's work: the plan its controls describe, and a conversion or a search
started on a background thread (``tnn_core.compress``) in a place of the server's heavy
work (``common.work_slots``), with what it is doing in words.

A job is refused before it is made when its source or its plan would be refused on the
thread (the pipeline's own checks, run here first), so a refusal is a sentence on the page
and nothing starts.
"""

from __future__ import annotations

import copy
import threading

import torch
from torch import nn

from tnn_core.compress.convert import check_convertible
from tnn_core.compress.guard import check_compression, check_source
from tnn_core.compress.pipeline import CompressionResult, compress
from tnn_core.compress.plan import METHODS, CompressionPlan, LayerPlan
from tnn_core.compress.planner import SPEED_FACTORS, PlanScore, SearchResult, grid, search
from tnn_core.lab.common.background import JOB_THREADS, BackgroundJob, start_in_place
from tnn_core.lab.compress.units import Unit
from tnn_core.models import ModelConfig
from tnn_core.training.evaluate import evaluation_size
from tnn_core.training.scores import Scores
from tnn_core.training.tasks import Task

__all__ = ["methods", "make_plan", "conversion_job", "search_points",
           "search_job", "start_in_place", "progress_text"]


def methods(causal: bool) -> tuple[str, ...]:
    """The per-layer methods a source offers: "recurrent" only when it is causal (an SSM
    runs forward in time)."""
    return METHODS if causal else tuple(m for m in METHODS if m != "recurrent")


def make_plan(rows: list[tuple], config: ModelConfig, n0: int, uniform: bool) -> CompressionPlan:
    """The plan of one row per layer, (m, r, method) or (m, r, method, s), checked against
    the model and its training length n0 (ValueError with a sentence naming the layer,
    value and range)."""
    layers = []
    for i, row in enumerate(rows):
        where = "every layer" if uniform else f"layer {i}"
        try:
            layer = LayerPlan(*row)
            layer.check_length(n0, where)
        except ValueError as err:
            message = str(err)
            raise ValueError(message if message.startswith(where) else f"{where}: {message}"
                             ) from None
        layers.append(layer)
    plan = CompressionPlan(tuple(layers))
    if all(layer.kept for layer in plan.layers):
        raise ValueError("every layer is kept: set at least one layer to a method that "
                         "converts it")
    try:
        check_convertible(config, plan, n0)
    except ValueError as err:
        raise ValueError(str(err).replace("layers[", "layer ").replace("] is", " is")
                         .replace("] cannot", " cannot")) from None
    return plan


def _private(model: nn.Module, device: str) -> nn.Module:
    """A copy for the job: the loaded model is shared by every session for inference, and
    the timing runs backward passes (gradients) through the source."""
    return copy.deepcopy(model).to(device).eval()


def _known_scores(scores: Scores | None, device: str) -> Scores | None:
    """The page's scores of the source (taken on the CPU) for a job on the CPU, so that it
    does not score the source again and reports the number the page shows; None on a GPU,
    where the source is scored beside its conversion, on the same device."""
    return scores if device == "cpu" else None


def _check_before(model: nn.Module, task: Task, plan: CompressionPlan,
                  finetune_steps: int) -> None:
    """What the pipeline refuses first (``compress``, ``search``), here before a job is made:
    ValueError (BudgetError) for a source with weights no trained model has, or passes
    beyond the budget."""
    check_source(model)
    check_compression(model.config, plan, task.seq_len, SPEED_FACTORS, finetune_steps,
                      evaluation_size(task), next(model.parameters()).element_size())


def conversion_job(model: nn.Module, task: Task, plan: CompressionPlan, finetune_steps: int,
                   finetune_lr: float, finetune_parameters: str, device: str,
                   source_scores: Scores | None = None) -> BackgroundJob:
    """``pipeline.compress`` on a copy of ``model``, on a background thread (not started);
    ``source_scores``: the model's ``evaluation``, if the caller has it. ValueError (a
    sentence) when the pipeline would refuse it."""
    _check_before(model, task, plan, finetune_steps)
    source, known = _private(model, device), _known_scores(source_scores, device)

    def run(on_progress, stop_event: threading.Event) -> CompressionResult:
        torch.set_num_threads(JOB_THREADS)  # this thread's, not the server's
        return compress(source, task, plan, finetune_steps, finetune_lr, finetune_parameters,
                        on_progress=on_progress, stop_event=stop_event, source_scores=known)
    return BackgroundJob(run)


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
               points: list[tuple[int, int]], device: str,
               source_scores: Scores | None = None) -> BackgroundJob:
    """``planner.search`` over ``points`` on a copy of ``model`` (not started; see
    ``conversion_job``)."""
    largest = CompressionPlan.uniform(model.config.layers, max(b for b, _ in points),
                                      max(r for _, r in points), method)  # as search checks
    _check_before(model, task, largest, 0)
    source, known = _private(model, device), _known_scores(source_scores, device)

    def run(on_progress, stop_event: threading.Event) -> SearchResult:
        torch.set_num_threads(JOB_THREADS)  # this thread's, not the server's
        return search(source, task, delta, method, points, on_progress=on_progress,
                      stop_event=stop_event, source_scores=known)
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
