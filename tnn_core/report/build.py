"""The report of one loaded checkpoint: its model card and, per layer, statistics of its
channels' Toeplitz matrices at the training length n (``Report``, by ``report_for``).

Every channel of every layer, batched (``analysis.atlas.ski_statistics``): the band
energy share ||band(T)||_F² / ||T||_F² and SKI's band + rank-r error ||T - T̂||_F / ||T||_F,
sampled and fitted, the atlas's numbers under the atlas's names (``analysis.atlas``); the
paper's 6 × 1,536 channels at n = 512 in about a second. Where SKI is exact by
construction (r = n, or a band of every lag) ``LayerReport.exact`` says so in words.
The statistics that take all n singular values of a channel's n × n matrix
(``analysis.spectral_summary``: stable rank, energy rank, Roy–Vetterli's effective rank,
the Clauset–Shalizi–Newman power-law fit of the eigenvalues, the Eckart–Young optimum;
40 ms a channel at n = 512 here) keep within SPECTRA_WORK (layers × channels × n³): every
channel, else as many evenly spaced channels in each layer as fit (``channels_reported``),
and only up to n = MAX_N (dense matrices).

The metric: the task's evaluation set scored as every page scores it
(``training.evaluate``), when the budget estimates it within ``seconds_limit`` on this
machine now (``training.budget``; 7 minutes for the paper's LM here); otherwise, and for a
checkpoint of token mixers alone (no task), the card says in one sentence why there is
none. Letters: L layers, D channels, K channels with spectra, n length.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from tnn_core.analysis.atlas import (
    DEFAULT_RANK,
    MAX_LAYOUT_N,
    RANK_SHARE,
    default_rank,
    exact_by_construction,
    ski_statistics,
)
from tnn_core.analysis.spectral_summary import MAX_N, ChannelSpectrum, gof_channels, layer_spectra
from tnn_core.checks import check_int
from tnn_core.operators.config import CHANNEL_KINDS
from tnn_core.training.budget import SECONDS_LIMIT, TimeLimitError, pass_cost
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.evaluate import (
    Deadline,
    deadline_after,
    evaluate_model,
    evaluation_batch,
    evaluation_size,
)
from tnn_core.training.tasks import Task, kernels_only_reason

__all__ = ["DEFAULT_BAND", "DEFAULT_RANK", "RANK_SHARE", "default_rank", "SPECTRA_WORK", "BATCHED",
           "RUN_FIELDS", "ModelCard", "Spread", "LayerReport", "Report", "Progress",
           "channels_reported", "check_reportable", "report_for"]

DEFAULT_BAND = 9  # m for a layer that is not SKI: a compression plan's default, and the atlas's
# r for a layer that is not SKI: ``analysis.atlas.default_rank`` (min(DEFAULT_RANK, n // 4)),
# the atlas's too
SPECTRA_WORK = 1e10  # layers x channels x n^3: ~5 s here; the shipped models need <= 6.4e9
BATCHED = ("band_mass", "sample_error", "fit_error")  # every channel's (``ski_statistics``)
RUN_FIELDS = ("command", "status", "device", "dtype", "world_size", "wall_s", "started",
              "torch", "version")  # what the history says about the training run
DEADLINE_FACTOR = 2  # an evaluation estimated within the limit is stopped at twice the limit
Progress = Callable[[str, int, int], None]  # (stage, done, total): "scoring", "layers", "spectra"


@dataclass(frozen=True)
class ModelCard:
    checkpoint: str  # the path it was loaded from
    task: str
    data: str  # task.describe(): what the sequences are
    train_length: int  # n
    metric_name: str | None  # None with no metric: ``no_metric`` says why
    metric: float | None
    higher_is_better: bool | None
    ci95: tuple[float, float] | None  # the metric's 95 % interval over the evaluation sequences
    sequences: int  # sequences in the evaluation set scored (0: none)
    baselines: dict[str, float]  # "uniform" (chance), and "unigram" or "majority"
    no_metric: str  # "" with a metric; else one sentence: why there is none
    model: dict  # ModelConfig.to_dict()
    parameters: int
    training: dict  # the history's train config, its model config left out
    run: dict  # RUN_FIELDS from the history: command, device, wall time, versions
    lineage: dict  # the history's lineage (``training.history``): source, plan, commands


@dataclass(frozen=True)
class Spread:
    """A statistic over a layer's channels: median and 25th/75th percentiles where defined."""

    median: float
    low: float
    high: float
    defined: int  # channels where the statistic is not nan


@dataclass(frozen=True)
class LayerReport:
    layer: int
    operator: str  # tno, ski, fd or ssm
    band: int  # m: lags |k| <= m//2, causal 0 <= k < m
    rank: int  # r inducing points
    width: int  # D, the layer's channels
    batched: dict[str, np.ndarray]  # BATCHED -> [D]: every channel's
    exact: str  # why SKI's errors are 0 by construction at (n, m, r), in words; "" if not
    channels: tuple[ChannelSpectrum, ...]  # [K]: the channels with spectra
    channel_ids: tuple[int, ...]  # [K] their indices among the layer's D

    def values(self, statistic: str) -> np.ndarray:
        """A statistic's values: [D] for BATCHED, else [K] over the spectra."""
        if statistic in BATCHED:
            return self.batched[statistic]
        return np.array([getattr(c, statistic) for c in self.channels], dtype=np.float64)

    def spread(self, statistic: str) -> Spread:
        values = self.values(statistic)
        values = values[~np.isnan(values)]
        if len(values) == 0:
            return Spread(math.nan, math.nan, math.nan, 0)
        low, median, high = np.percentile(values, [25, 50, 75])
        return Spread(float(median), float(low), float(high), len(values))


@dataclass(frozen=True)
class Report:
    card: ModelCard
    length: int  # n of the Toeplitz matrices: the training length
    causal: bool
    layers: tuple[LayerReport, ...]  # [L]
    no_spectra: str = ""  # one sentence when no channel has spectra (n above MAX_N)


def _band_and_rank(model: nn.Module, n: int, band: int | None, rank: int | None
                   ) -> list[tuple[str, int, int]]:
    """(kind, m, r) per layer: the given m and r, else a SKI layer's own, else the defaults
    (at most 2n-2, and ``default_rank(n)``); ValueError for an operator without Toeplitz
    kernels or an m or r that does not fit n."""
    if band is not None:
        check_int("band", band, 1, 2 * n - 2, "[1, 2n-2]")
    if rank is not None:
        check_int("rank", rank, 2, n, "[2, n]")
    chosen = []
    for layer in range(model.config.layers):
        operator = model.config.layer_operator(layer)
        if operator.kind not in CHANNEL_KINDS:
            raise ValueError(f"layer {layer}'s operator is {operator.kind}; a spectral report "
                             f"needs channel-wise Toeplitz layers ({', '.join(CHANNEL_KINDS)})")
        ski = operator.kind == "ski"
        m = band if band is not None else operator.band if ski else min(DEFAULT_BAND, 2 * n - 2)
        r = rank if rank is not None else operator.rank if ski else default_rank(n)
        where = f"layer {layer}'s own"
        check_int(f"{where} band", m, 1, 2 * n - 2, f"[1, 2n-2] at n = {n}")
        check_int(f"{where} rank", r, 2, n, f"[2, n] at n = {n}")
        chosen.append((operator.kind, m, r))
    return chosen


def check_reportable(model: nn.Module, n: int, band: int | None = None,
                     rank: int | None = None) -> list[tuple[str, int, int]]:
    """(kind, m, r) per layer at training length ``n``; ValueError naming what cannot be
    reported (a length above MAX_LAYOUT_N, an operator without Toeplitz kernels, an m or r)."""
    check_int("the training length n", n, 2, MAX_LAYOUT_N, "[2, MAX_LAYOUT_N]")
    return _band_and_rank(model, n, band, rank)


def channels_reported(layers: int, channels: int, n: int) -> list[int]:
    """The channels of each layer whose spectra fit SPECTRA_WORK: all D when
    layers · D · n³ fits, else K = SPECTRA_WORK // (layers · n³) (at least 1) spaced
    evenly from the first to the last."""
    fits = int(SPECTRA_WORK // (layers * float(n) ** 3))
    if fits >= channels:
        return list(range(channels))
    return sorted({int(c) for c in np.linspace(0, channels - 1, max(1, fits)).round()})


@dataclass(frozen=True)
class _CountedDeadline(Deadline):
    """A deadline whose every check (one before each batch) reports a batch begun."""

    on_batch: Callable[[], None] = lambda: None

    def passed(self) -> bool:
        self.on_batch()
        return super().passed()


def _scored(model: nn.Module, task: Task | None, info: CheckpointInfo,
            seconds_limit: float | None, on_progress: Progress | None) -> tuple[dict | None, str]:
    """(the evaluation, "") or (None, why there is none)."""
    if task is None:
        return None, kernels_only_reason(info.task)
    n = task.seq_len
    sequences = evaluation_size(task)
    element = next(model.parameters()).element_size()
    batch = evaluation_batch(model.config, n, element)
    passes = -(-sequences // batch)
    seconds = passes * pass_cost(model.config, batch, n, element=element).seconds
    what = f"scoring the evaluation set ({sequences:,} sequences of n = {n:,})"
    if seconds_limit is not None and seconds > seconds_limit:
        return None, (f"Not scored here: {what} would take about {seconds:,.0f} s on this "
                      f"machine now, above this report's {seconds_limit:,.0f} s limit "
                      f"(--time-limit); python -m tnn_core.training.evaluate scores it.")
    done = []

    def on_batch() -> None:
        if on_progress is not None:
            on_progress("scoring", len(done), passes)
        done.append(1)

    limit = deadline_after(DEADLINE_FACTOR * seconds_limit if seconds_limit else math.inf)
    try:
        return evaluate_model(model, task, deadline=_CountedDeadline(
            limit.at, limit.clock, on_batch)), ""
    except TimeLimitError as err:
        return None, f"Not scored here: {what} passed twice its time limit and stopped ({err})."
    finally:
        if on_progress is not None:
            on_progress("scoring", passes, passes)


def _card(model: nn.Module, info: CheckpointInfo, task: Task | None, n: int,
          evaluation: dict | None, no_metric: str) -> ModelCard:
    history = info.history or {}
    scored = evaluation is not None
    return ModelCard(
        checkpoint=info.source, task=task.name if task else str(info.task.get("name")),
        data=task.describe() if task else "token mixers alone: no task, no data", train_length=n,
        metric_name=task.metric_name if task else None,
        metric=evaluation["metric"] if scored else None,
        higher_is_better=task.higher_is_better if task else None,
        ci95=(float(evaluation["ci95"][0]), float(evaluation["ci95"][1])) if scored else None,
        sequences=int(evaluation["sequences"]) if scored else 0,
        baselines=dict(task.baselines()) if task else {}, no_metric=no_metric,
        model=model.config.to_dict(), parameters=sum(p.numel() for p in model.parameters()),
        training={k: v for k, v in (history.get("train_config") or {}).items() if k != "model"},
        run={k: history[k] for k in RUN_FIELDS if k in history},
        lineage=dict(history.get("lineage") or {}))


@torch.no_grad()
def _layers(model: nn.Module, n: int, plan: list[tuple[str, int, int]], chosen: list[int],
            on_progress: Progress | None) -> tuple[list[LayerReport], list[torch.Tensor]]:
    """Each layer's batched columns, a layer at a time (its kernels [D, 2n-1] only), and
    the kernels [K, 2n-1] of its ``chosen`` channels."""
    causal = model.config.operator.causal
    layers, kept = [], []
    for layer, (operator, (kind, m, r)) in enumerate(zip(model.operators(), plan, strict=True)):
        if on_progress is not None:
            on_progress("layers", layer, len(plan))
        kernels = operator.kernel(n).detach().to("cpu", torch.float64)  # (D, 2n-1)
        layers.append(LayerReport(layer, kind, m, r, len(kernels),
                                  ski_statistics(kernels, m, r, causal),
                                  exact_by_construction(n, m, r, causal), (), ()))
        kept.append(kernels[chosen])
    if on_progress is not None:
        on_progress("layers", len(plan), len(plan))
    return layers, kept


def _with_spectra(layers: list[LayerReport], kernels: list[torch.Tensor], chosen: list[int],
                  causal: bool, on_progress: Progress | None) -> list[LayerReport]:
    """``layers`` with the spectra of their ``chosen`` channels, kernels [K, 2n-1] each."""
    total = len(layers) * len(chosen)
    tested = gof_channels(len(layers), (kernels[0].shape[-1] + 1) // 2) if kernels else 0
    out = []
    for layer, coeffs in zip(layers, kernels, strict=True):
        if on_progress is not None:
            on_progress("spectra", layer.layer * len(chosen), total)
        spectra = layer_spectra(coeffs, layer.band, layer.rank, causal, tested)
        out.append(replace(layer, channels=tuple(spectra), channel_ids=tuple(chosen)))
    if on_progress is not None:
        on_progress("spectra", total, total)
    return out


def report_for(model: nn.Module, info: CheckpointInfo, task: Task | None,
               band: int | None = None, rank: int | None = None,
               on_progress: Progress | None = None,
               seconds_limit: float | None = SECONDS_LIMIT) -> Report:
    """The ``Report`` of a loaded checkpoint (``checkpoint.load``) on its task
    (``tasks.task_from_info(info.task)``; None for token mixers alone, whose length is their
    record's seq_len). band, rank: m and r for every layer (None: a SKI layer's own, else
    DEFAULT_BAND, ``default_rank(n)``). The metric when its estimate fits ``seconds_limit``
    (None: always). Refuses a length above MAX_LAYOUT_N before any work. ``on_progress(stage,
    done, total)``: before and after each stage's steps (``Progress``)."""
    n = task.seq_len if task is not None else int(info.task["settings"]["seq_len"])
    plan = check_reportable(model, n, band, rank)
    evaluation, no_metric = _scored(model, task, info, seconds_limit, on_progress)
    causal = model.config.operator.causal
    chosen = channels_reported(len(plan), model.operators()[0].dim, n) if n <= MAX_N else []
    layers, kernels = _layers(model, n, plan, chosen, on_progress)
    no_spectra = ""
    if chosen:
        layers = _with_spectra(layers, kernels, chosen, causal, on_progress)
    else:
        no_spectra = (f"No spectra at n = {n:,}: they take all n singular values of each "
                      f"channel's n × n matrix, densely up to n = {MAX_N} (MAX_N); the "
                      f"band energy share and SKI's errors above are every channel's.")
    return Report(_card(model, info, task, n, evaluation, no_metric), n, causal, tuple(layers),
                  no_spectra)
