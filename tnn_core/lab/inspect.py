"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel.

Checkpoint keys, shared with the Decomposition and Train pages: "NAME" (shipped, in
``checkpoint.SHIPPED_DIR``), "user/NAME" (saved from the Train page into a user folder),
"upload:SHA" (uploaded in one browser session; the pages keep those).

What a channel "is": the matrix its operator applies (``analysis.applied``). For tno, fd
and causal SKI that is the Toeplitz matrix of ``kernel(n)``; bidirectional SKI applies
band + W A Wᵀ, which is not Toeplitz, so the atlas measures its nearest Toeplitz kernel
(the diagonal means, ``analysis.channel_kernel``) and ``kernel(n)`` is only its target.

Letters: L layers, D channels, R measured channels (rows), n length, F length factors.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tnn_core import report
from tnn_core.analysis import channel_kernel
from tnn_core.analysis.ablation import band_restricted
from tnn_core.analysis.applied import BASIS_CHUNK, applied_matrix
from tnn_core.analysis.atlas import STATISTICS, band_mask, kernel_atlas
from tnn_core.lab.basics import KernelView, kernel_view
from tnn_core.lab.train import SnapshotView, snapshot_view
from tnn_core.models import ModelConfig
from tnn_core.training import checkpoint, evaluate
from tnn_core.training.budget import MEMORY_LIMIT, check_cost, pass_cost
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task
from tnn_core.training.verdicts import quality, quality_sentence

__all__ = ["NAME_PATTERN", "SHIPPED_ORDER", "applied_chunk", "saved_checkpoints", "checkpoint_path",
           "save_run",
           "Opened", "open_file", "open_bytes", "COMMAND_SHOWN", "Summary", "summary", "STATISTICS",
           "ATLAS_BAND", "ATLAS_RANK", "ATLAS_CHANNELS", "ATLAS_MAX_N", "opening_atlas",
           "Channels", "LayerMedians", "AtlasView", "atlas_view", "band_description",
           "ChannelMatrix", "channel_matrix", "lineage_text", "model_report", "report_refusal",
           "report_text", "evaluation",
           "BandAblation", "band_ablation", "FACTORS",
           "LengthSweep", "length_sweep", "extrapolation_sentence", "Extrapolation",
           "extrapolation", "DECAY_PAIR",
           "DecayPair", "decay_pair", "training_kernels"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # a file name, never a path

# The shipped checkpoints in the order a first visit learns most from, each with what it shows
# (medians of the atlas at the training length, band m = 9).
SHIPPED_ORDER = (
    ("digits-tno", "spike plus smooth: ~90 % of the mass in smooth, low-rank tails"),
    ("listops-tno", "long range: ~90 % of the mass beyond the band"),
    ("digits-ski", "SKI-TNN: learned band + W A Wᵀ"),
    ("listops-ski", "SKI-TNN on ListOps"),
    ("digits-fd", "FD-TNN: kernels from a frequency response, more local"),
    ("listops-fd", "FD-TNN on ListOps"),
    ("charlm-tno", "causal language model: most mass on the last few characters"),
    ("charlm-tno-decay099", "TNN Table 10 pair: decay λ = 0.99"),
    ("charlm-tno-nodecay", "TNN Table 10 pair: no decay, λ = 1"),
    ("charlm-fd", "causal FD-TNN: short local filters"),
)


# -- checkpoints on disk ---------------------------------------------------------------------
def saved_checkpoints(user_dir: Path) -> dict[str, str]:
    """Checkpoints on disk, key -> label: the shipped ones (in ``SHIPPED_ORDER``, any other
    after them by name), then those saved in ``user_dir``."""
    on_disk = {p.stem for p in checkpoint.SHIPPED_DIR.glob("*.safetensors")}
    hints = dict(SHIPPED_ORDER)
    order = [name for name, _ in SHIPPED_ORDER if name in on_disk] + sorted(on_disk - set(hints))
    out = {name: f"{name} · {hints[name]}" if name in hints else f"{name} (shipped)"
           for name in order}
    if user_dir.is_dir():
        out |= {f"user/{p.stem}": f"{p.stem} (saved by you)"
                for p in sorted(user_dir.glob("*.safetensors"))}
    return out


def checkpoint_path(key: str, user_dir: Path) -> Path:
    """The file of a "NAME" or "user/NAME" key; anything but a plain name raises ValueError."""
    name, folder = ((key.removeprefix("user/"), user_dir) if key.startswith("user/")
                    else (key, checkpoint.SHIPPED_DIR))
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"checkpoint must be a plain name (letters, digits, _ and -); "
                         f"got {key!r}")
    return folder / f"{name}.safetensors"


_SAVING = threading.Lock()  # one save at a time: the name check and the write are one step


def save_new(name: str, user_dir: Path, write: Callable[[Path], object]) -> str:
    """``write(user_dir/NAME.safetensors)`` for a name not yet taken; returns its key.

    The folder is shared by every session of the server, so a name already taken is
    refused (ValueError), never overwritten; the check and the write are one step."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError("name must be 1 to 64 letters, digits, _ or -, starting with a letter "
                         f"or digit (no paths); got {name!r}")
    path = user_dir / f"{name}.safetensors"
    with _SAVING:
        if path.exists():
            raise ValueError(f"name {name!r} is already taken by a saved model (perhaps "
                             "someone else's); choose another name")
        user_dir.mkdir(parents=True, exist_ok=True)
        write(path)
    return f"user/{name}"


def save_run(result, name: str, user_dir: Path) -> str:
    """Save a finished training run as ``user_dir``/NAME.safetensors (``save_new``)."""
    return save_new(name, user_dir, lambda path: checkpoint.save(
        path, result.model, result.task.info(), result.history, result.model_config))


@dataclass(frozen=True)
class Opened:
    """A loaded checkpoint and the keys its views are cached under."""

    digest: str  # SHA-256 of the file's bytes: the same content, the same views
    model: nn.Module  # evaluation mode; shared between sessions, so used for inference only
    info: CheckpointInfo

    @property
    def task_key(self) -> str:
        """Its task record as canonical JSON: checkpoints trained on one task share it."""
        return json.dumps(self.info.task, sort_keys=True)


def open_bytes(data: bytes, source: str) -> Opened:
    """Validate and load checkpoint bytes (``checkpoint.load_bytes``: CheckpointError)."""
    model, info = checkpoint.load_bytes(data, source)
    return Opened(digest=hashlib.sha256(data).hexdigest(), model=model, info=info)


def open_file(path: Path) -> Opened:
    """``open_bytes`` of a checkpoint file (``checkpoint.load`` reads it within its limits)."""
    model, info = checkpoint.load(path)
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    return Opened(digest=digest, model=model, info=info)


# -- what the checkpoint says about itself ---------------------------------------------------
COMMAND_SHOWN = 1_000  # characters of the training command the header shows


@dataclass(frozen=True)
class Summary:
    """A checkpoint's task, model and training history, as the page's header shows them.

    Read from the schema fields of the history only (``training.history``); what the
    history does not record is None (NaN for the metric), never a made-up number."""

    task: str
    size: str  # width × layers
    metric_name: str
    higher_is_better: bool
    chance: float  # the metric of a uniform guess; NaN when the task cannot be rebuilt
    final_metric: float  # the last recorded validation metric; NaN when none is recorded
    final_step: int | None  # the step of that evaluation
    steps: int | None  # trained steps; None when not recorded
    wall_s: float | None  # seconds of training; None when not recorded
    device: str | None
    command: str | None  # the command that trained it, at most COMMAND_SHOWN characters
    train_n: int  # the training length
    config: dict  # the model (the fields it reads), task and training settings, for a JSON view
    eval_steps: np.ndarray  # [E] steps of the evaluations that recorded the metric
    eval_metric: np.ndarray  # [E] their metric, finite
    eval_intervals: np.ndarray  # [E, 2] its 95 % interval where recorded, else NaN

    def metric_axis(self) -> tuple[float, float]:
        """A y-range that shows chance and the final value: [0, 1] for an accuracy; from 0
        to a little above chance (and every value after the first evaluation) for a loss-like
        metric, so an untrained model's first value cannot squash the rest."""
        if self.higher_is_better:
            return 0.0, 1.0
        later = self.eval_metric[1:][np.isfinite(self.eval_metric[1:])]
        top = max([v for v in (self.chance, *later.tolist()) if np.isfinite(v)] or [1.0])
        return 0.0, 1.1 * top

    def off_axis(self) -> list[tuple[int, float]]:
        """(step, value) of the evaluations above ``metric_axis``, for a note beside it."""
        top = self.metric_axis()[1]
        return [(int(s), float(v)) for s, v in zip(self.eval_steps, self.eval_metric,
                                                    strict=True) if v > top]

    def training_note(self) -> str:
        """How long it trained, where, and the command, in words; "not recorded" where the
        history does not say."""
        if self.wall_s is not None:
            where = f"{self.wall_s:.0f} s on {self.device or 'a device it does not record'}."
        elif self.device is not None:
            where = f"Trained on {self.device}; the training time is not recorded."
        else:
            where = "The training time and device are not recorded."
        return f"{where} Command: {self.command or 'not recorded'}"


def _finite_metric(entry: dict) -> float | None:
    value = entry.get("metric")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def summary(info: CheckpointInfo, task: Task | None = None) -> Summary:
    """``info``'s record; ``task`` (rebuilt from ``info.task``) gives chance (else NaN).

    ``info.history`` is the loader's (``training.history.validated_history``): an
    evaluation may lack the metric or hold null, and any field may be absent."""
    config, history = info.model_config, info.history or {}
    measured = [(e["step"], m, e.get("ci95") or (math.nan, math.nan))
                for e in history.get("evals", [])
                if (m := _finite_metric(e)) is not None]  # [E] (step, metric, interval)
    command = history.get("command")
    if command is not None and len(command) > COMMAND_SHOWN:
        command = f"{command[:COMMAND_SHOWN - 1]}…"
    return Summary(
        task=info.task.get("name", "?"),
        size=f"{config.dim} × {config.layers}",
        metric_name=history.get("metric_name") or "metric",
        higher_is_better=True if task is None else task.higher_is_better,
        chance=math.nan if task is None else float(task.chance),
        final_metric=measured[-1][1] if measured else math.nan,
        final_step=measured[-1][0] if measured else None,
        steps=history.get("steps"), wall_s=history.get("wall_s"),
        device=history.get("device"), command=command,
        train_n=int(info.task.get("settings", {}).get("seq_len") or 64),
        config={"model": config.to_dict(),
                "task": {k: v for k, v in info.task.items() if k != "vocab"},
                "training": {k: v for k, v in (history.get("train_config") or {}).items()
                             if k != "model"}},
        eval_steps=np.array([step for step, *_ in measured], dtype=np.int64),
        eval_metric=np.array([metric for _, metric, _ in measured], dtype=float),
        eval_intervals=np.array([interval for *_, interval in measured],
                                dtype=float).reshape(-1, 2))


def training_kernels(info: CheckpointInfo) -> SnapshotView | None:
    """The kernel snapshots its training kept (``training.snapshots``); None if it has none
    (the shipped checkpoints were trained before they were kept)."""
    record = (info.history or {}).get("kernel_snapshots")
    return None if record is None or not record["steps"] else snapshot_view(record)


# -- the kernel atlas ------------------------------------------------------------------------
SORT_DESCENDING = ("locality",)  # the most local first; the other statistics lowest first
ATLAS_BAND = 9  # the band m for operators without one of their own (|k| <= 4)
ATLAS_RANK = 32  # SKI's inducing points r for the low-rank error
ATLAS_CHANNELS = 16  # channels measured per layer (the first ones)
ATLAS_MAX_N = 1024  # the longest length the atlas measures (the end of its n slider)


def opening_atlas(config: ModelConfig, train_n: int) -> tuple[int, int]:
    """(n, band m) a checkpoint's atlas opens at: its training length (at most ATLAS_MAX_N)
    and SKI's own band m, ATLAS_BAND for the other operators."""
    operator = config.operator
    return min(train_n, ATLAS_MAX_N), operator.band if operator.kind == "ski" else ATLAS_BAND


def band_description(band: int, causal: bool) -> str:
    """The band's lags in words: "|k| ≤ 4" or "lags 0..8"."""
    return f"lags 0..{band - 1}" if causal else f"|k| ≤ {band // 2}"


@dataclass(frozen=True)
class Channels:
    """One entry per measured channel, [R] each; NaN where a statistic is undefined."""

    layer: np.ndarray
    channel: np.ndarray
    locality: np.ndarray  # share of the mass Σ|t_k| on the band lags
    decay: np.ndarray  # fitted λ of |t_k|; NaN for a band-only channel
    low_rank: np.ndarray  # SKI's Frobenius error at rank r over ||T - band||_F
    optimal: np.ndarray  # the Eckart–Young optimum at rank r over ||T - band||_F

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def sorted_by(self, statistic: str) -> Channels:
        """Lowest first (highest first for locality); NaN last; ties keep their order."""
        values = getattr(self, statistic)
        order = np.argsort(-values if statistic in SORT_DESCENDING else values, kind="stable")
        return Channels(**{name: column[order] for name, column in self.columns().items()})


@dataclass(frozen=True)
class LayerMedians:
    """Per layer, [L] each: the median of each statistic over its measured channels."""

    layer: np.ndarray
    locality: np.ndarray
    decay: np.ndarray
    low_rank: np.ndarray
    optimal: np.ndarray

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "layer"}


@dataclass(frozen=True)
class AtlasView:
    channels: Channels  # in (layer, channel) order
    layers: LayerMedians
    kernels: np.ndarray  # [L, C, 2n-1] the measured channels' kernels (float64)
    band: int
    causal: bool

    def channel_view(self, layer: int, channel: int, max_cells: int | None = None,
                     off_band: bool = False) -> KernelView:
        """One measured channel's kernel and matrix (at most ``max_cells`` rows drawn);
        ``off_band``: T - band, the band lags set to zero."""
        coeffs = self.kernels[layer, channel]
        if off_band:
            n = (len(coeffs) + 1) // 2
            coeffs = np.where(band_mask(n, self.band, self.causal), 0.0, coeffs)
        return kernel_view(coeffs) if max_cells is None else kernel_view(coeffs, max_cells)

    def shared_limit(self, pairs: list[tuple[int, int]], off_band: bool = False) -> float:
        """max |t_k| over the channels ``pairs`` [(layer, channel)] (of T - band when
        ``off_band``): one symmetric colour scale for all their tiles (1 when all zero)."""
        limits = [float(np.abs(self.channel_view(layer, channel, 1, off_band).coeffs).max())
                  for layer, channel in pairs]
        return max(limits, default=0.0) or 1.0


def _median(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(np.median(finite)) if finite.size else math.nan


def atlas_view(model: nn.Module, n: int, band: int, rank: int, channels: int) -> AtlasView:
    """Statistics of the first ``channels`` channels of every layer at length n, band m and
    rank min(r, n), with the per-layer medians (``analysis.atlas`` defines them). Each
    channel's kernel is the Toeplitz part of what it applies (``analysis.channel_kernel``)."""
    operators = model.operators()
    kernels = torch.stack([torch.stack([channel_kernel(op, n, c)
                                        for c in range(min(channels, op.dim))])
                           for op in operators])  # (L, C, 2n-1) float64
    causal = model.config.operator.causal
    rows = kernel_atlas(kernels, band, min(rank, n), causal)
    table = Channels(layer=np.array([r["layer"] for r in rows]),
                     channel=np.array([r["channel"] for r in rows]),
                     **{s: np.array([r[s] for r in rows], dtype=float) for s in STATISTICS})
    layers = np.unique(table.layer)
    medians = {s: np.array([_median(getattr(table, s)[table.layer == layer])
                            for layer in layers]) for s in STATISTICS}
    return AtlasView(channels=table, layers=LayerMedians(layer=layers, **medians),
                     kernels=kernels.numpy(), band=band, causal=causal)


# -- one channel: the matrix it applies ------------------------------------------------------
@dataclass(frozen=True)
class ChannelMatrix:
    """One channel at length n: the matrix the model applies, its Toeplitz part, the target."""

    view: KernelView  # matrix: the applied matrix at the drawn rows; coeffs: its diagonal means
    target: np.ndarray | None  # [2n-1] kernel(n), the Toeplitz target (bidirectional SKI only)
    target_gap: float  # ||M - dense(kernel(n))||_F / ||dense(kernel(n))||_F (NaN: no target)


def applied_chunk(config: ModelConfig, n: int) -> int:
    """Basis vectors per forward pass of ``applied_matrix`` at length n: BASIS_CHUNK, or
    fewer when a pass of that many would not fit the memory budget (an SKI of large r
    pays for its FFT of size 2r on every vector); BudgetError if one alone does not."""
    chunk = BASIS_CHUNK
    while chunk > 1 and pass_cost(config, chunk, n).bytes > MEMORY_LIMIT:
        chunk //= 2
    check_cost(f"drawing the matrix a channel applies at n = {n:,}", pass_cost(config, chunk, n),
               seconds_limit=None)
    return chunk


def channel_matrix(model: nn.Module, n: int, layer: int, channel: int) -> ChannelMatrix:
    """The matrix layer ``layer``, channel ``channel`` applies at length n (``applied``)."""
    operator = model.operators()[layer]
    chunk = applied_chunk(model.config, n)
    applied = applied_matrix(operator, n, [channel], chunk)[0].double().cpu().numpy()  # (n, n)
    coeffs = channel_kernel(operator, n, channel).numpy()  # (2n-1,) diagonal means
    base = kernel_view(coeffs)
    idx = base.indices
    view = KernelView(n=base.n, lags=base.lags, coeffs=coeffs, indices=idx, step=base.step,
                      matrix=applied[np.ix_(idx, idx)],
                      limit=float(np.abs(applied).max()) or 1.0)
    if operator.config.kind != "ski" or operator.config.causal:
        return ChannelMatrix(view=view, target=None, target_gap=math.nan)
    with torch.no_grad():
        target = operator.kernel(n)[channel].double().cpu().numpy()  # (2n-1,)
    lag = np.subtract.outer(np.arange(n), np.arange(n))  # (n, n) i - j
    dense_target = target[(n - 1) + lag]
    norm = float(np.linalg.norm(dense_target))
    gap = float(np.linalg.norm(applied - dense_target)) / norm if norm > 0 else math.nan
    return ChannelMatrix(view=view, target=target, target_gap=gap)


def lineage_text(info: CheckpointInfo) -> str | None:
    """Where a converted or fine-tuned checkpoint came from, in markdown; None for one
    trained from scratch (``training.history``'s lineage)."""
    lineage = (info.history or {}).get("lineage")
    return report.lineage_markdown(lineage, info.history.get("metric_name")) if lineage \
        else None


def model_report(model: nn.Module, info: CheckpointInfo, task: Task) -> report.Report:
    """The model card and per-layer spectral report (``tnn_core.report``)."""
    return report.report_for(model, info, task)


def report_refusal(model: nn.Module, n: int) -> str | None:
    """Why the report cannot be made for ``model`` at training length n; None if it can."""
    try:
        report.check_reportable(model, n)
    except ValueError as err:
        return str(err)
    return None


def report_text(made: report.Report, form: str) -> str:
    """The report as a file: form "markdown", "csv" or "json"."""
    return report.RENDERERS[form](made)


def evaluation(model: nn.Module, task: Task) -> Scores:
    """The model on its task's evaluation set at the training length (``evaluate.score``):
    the number every page reports for it."""
    return evaluate.score(model, task)


# -- band ablation ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BandAblation:
    """The task metric with the full operators and with layers restricted to the band, all on
    the evaluation set (paired: every variant scores the same sequences)."""

    band: str  # the band's lags in words
    length: int  # evaluated at the training length
    chance: float  # the metric of a uniform guess
    full: Scores  # every layer as trained
    restricted: Scores  # every layer restricted to its band
    per_layer: tuple[Scores, ...]  # [L] only layer l restricted

    def change(self, variant: Scores) -> Difference:
        """How much worse ``variant`` is than the full model, with its interval."""
        return difference(self.full, variant, paired=True)

    @property
    def margin_lost(self) -> float:
        """Share of the model's margin over chance lost when every layer keeps only its band
        (0: nothing lost; 1: down to chance). NaN without a margin."""
        sign = 1.0 if self.full.higher_is_better else -1.0
        margin = sign * (self.full.metric - self.chance)
        return sign * (self.full.metric - self.restricted.metric) / margin if margin > 0 \
            else math.nan

    def sentence(self) -> str:
        """The verdict on the band alone (``training.verdicts``), with its numbers."""
        return quality_sentence(self.change(self.restricted), "the model",
                                f"With every layer kept to its band ({self.band}),")


def band_ablation(model: nn.Module, task: Task, band: int) -> BandAblation:
    """Score ``model`` on the evaluation set at its training length with every layer, and
    each layer alone, restricted to the band (``analysis.ablation``)."""
    n, layers = task.seq_len, range(len(model.operators()))
    return BandAblation(
        band=band_description(band, model.config.operator.causal), length=n,
        chance=float(task.chance), full=evaluate.score(model, task, n),
        restricted=evaluate.score(band_restricted(model, n, band, layers), task, n),
        per_layer=tuple(evaluate.score(band_restricted(model, n, band, [layer]), task, n)
                        for layer in layers))


# -- beyond the training length --------------------------------------------------------------
FACTORS = (1, 2, 4)  # lengths shown, as multiples of the training length (TNN's Table 10)


@dataclass(frozen=True)
class LengthSweep:
    """The evaluation set at each factor × the training length."""

    factor: np.ndarray  # [F]
    length: np.ndarray  # [F]
    scores: tuple[Scores | None, ...]  # [F]; None where the task has one length only
    tiles_text: bool  # every length scores the same characters (Task.tiles_text)

    @property
    def metric(self) -> np.ndarray:
        """[F], NaN where not measured."""
        return np.array([math.nan if s is None else s.metric for s in self.scores])

    def change(self, index: int) -> Difference:
        """Factor ``index`` against 1×: paired on the same text when the windows tile it
        (1×'s windows merged into the longer ones), else two independent sets."""
        reference, other = self.scores[0], self.scores[index]
        if self.tiles_text:
            group = int(self.factor[index] // self.factor[0])
            return difference(reference.merged(group, other.sequences), other, paired=True)
        return difference(reference, other, paired=False)

    def sentences(self, subject: str) -> list[str]:
        """One verdict per longer length (``training.verdicts``), in the same words as
        everywhere the lab speaks of extrapolation."""
        return [extrapolation_sentence(self.change(i), subject, int(self.factor[i]),
                                       int(self.length[i]))
                for i in range(1, len(self.factor)) if self.scores[i] is not None]


def extrapolation_sentence(change: Difference, subject: str, factor: int, length: int,
                           detail: str = "") -> str:
    """The one sentence for a model at ``factor`` × its training length against 1×."""
    return quality_sentence(change, subject, f"At {factor}× the training length (n = "
                                             f"{length:,}){detail},")


def length_sweep(model: nn.Module, task: Task) -> LengthSweep:
    rows = evaluate.length_sweep(model, task, FACTORS)
    return LengthSweep(factor=np.array([r["factor"] for r in rows]),
                       length=np.array([r["length"] for r in rows]),
                       scores=tuple(r["scores"] for r in rows), tiles_text=task.tiles_text)


@dataclass(frozen=True)
class Extrapolation:
    """One channel's kernel at each factor × the training length."""

    lengths: tuple[int, ...]  # [F]
    lags: tuple[np.ndarray, ...]  # F arrays [2n-1]: k = -(n-1) .. n-1
    kernels: tuple[np.ndarray, ...]  # F arrays [2n-1]: t_k


def extrapolation(model: nn.Module, train_n: int, layer: int, channel: int) -> Extrapolation:
    operator = model.operators()[layer]
    lengths = tuple(factor * train_n for factor in FACTORS)
    return Extrapolation(
        lengths=lengths, lags=tuple(np.arange(-(n - 1), n) for n in lengths),
        kernels=tuple(channel_kernel(operator, n, channel).numpy() for n in lengths))


# -- TNN's Table 10: the same model with and without decay -----------------------------------
DECAY_PAIR = ("charlm-tno-decay099", "charlm-tno-nodecay")  # identical but for λ
PAIR_FACTORS = (1, 2, 4, 8, 16)  # × the training length, on the same windows


@dataclass(frozen=True)
class DecayPair:
    """Two language models that differ only in λ, scored on the same windows at each factor."""

    names: tuple[str, str]
    decays: tuple[float, float]  # λ of each
    train_n: int
    metric_name: str
    chance: float
    factor: np.ndarray  # [F]
    length: np.ndarray  # [F]
    last: tuple[tuple[Scores, ...], tuple[Scores, ...]]  # [2][F] the last train_n positions
    every: tuple[tuple[Scores, ...], tuple[Scores, ...]]  # [2][F] every position

    @property
    def metric_last(self) -> np.ndarray:
        return np.array([[s.metric for s in row] for row in self.last])  # (2, F)

    @property
    def metric_all(self) -> np.ndarray:
        return np.array([[s.metric for s in row] for row in self.every])  # (2, F)

    def change(self, model: int) -> Difference:
        """``model`` at the longest factor against 1×, on the last train_n positions of the
        same windows: the same targets, paired."""
        return difference(self.last[model][0], self.last[model][-1], paired=True)

    def sentence(self) -> str:
        """Each model's verdict at the longest factor, then what they say about Table 10."""
        windows = self.last[0][0].sequences
        (first, second) = (f"{name} (λ = {lam:g})" for name, lam in zip(self.names, self.decays,
                                                                       strict=True))
        said = [extrapolation_sentence(self.change(0), first, int(self.factor[-1]),
                                       int(self.length[-1]),
                                       f", on the last {self.train_n} positions of the same "
                                       f"{windows} windows"),
                quality_sentence(self.change(1), second, "There,")]
        verdicts = [quality(self.change(i)) for i in range(2)]
        (with_decay, without) = self.names
        if verdicts == ["keeps", "loses"]:
            ending = (f"As in TNN's Table 10, the decay is what lets {with_decay} extrapolate.")
        elif verdicts == ["keeps", "keeps"]:
            ending = "Here both extrapolate: the decay is not what makes the difference."
        elif "cannot tell" in verdicts:
            ending = "So this measurement cannot confirm or refute Table 10."
        elif verdicts[0] == "loses" and verdicts[1] == "loses":
            ending = "Here both lose quality, so this pair does not reproduce Table 10."
        else:
            ending = f"Here only {without} extrapolates, against Table 10."
        return " ".join(said + [ending])


def decay_pair(models: tuple[nn.Module, nn.Module], names: tuple[str, str], task: Task,
               factors: tuple[int, ...] = PAIR_FACTORS) -> DecayPair:
    """Both models through ``evaluate.same_window_sweep`` on ``task`` (their shared task)."""
    rows = [evaluate.same_window_sweep(model, task, factors) for model in models]
    return DecayPair(
        names=names, decays=tuple(float(m.config.operator.decay) for m in models),
        train_n=task.seq_len, metric_name=task.metric_name, chance=float(task.chance),
        factor=np.array([r["factor"] for r in rows[0]]),
        length=np.array([r["length"] for r in rows[0]]),
        last=tuple(tuple(r["last"] for r in model_rows) for model_rows in rows),
        every=tuple(tuple(r["all"] for r in model_rows) for model_rows in rows))
