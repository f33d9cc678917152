"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel.

Checkpoint keys, shared with the Decomposition and Train pages: "NAME" (shipped, in
``checkpoint.SHIPPED_DIR``), "user/NAME" (saved from the Train page into a user folder),
"upload:SHA" (uploaded in one browser session; the pages keep those).

Letters: L layers, D channels, R measured channels (rows), n length, F length factors.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
from torch import nn

from tnn_core.analysis import channel_kernel
from tnn_core.analysis.atlas import kernel_atlas
from tnn_core.lab.basics import KernelView, kernel_view
from tnn_core.training import checkpoint, evaluate
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.tasks import Task

__all__ = ["NAME_PATTERN", "saved_checkpoints", "checkpoint_path", "save_run", "Summary",
           "summary", "STATISTICS", "Channels", "LayerMedians", "AtlasView", "atlas_view",
           "FACTORS", "LengthSweep", "length_sweep", "Extrapolation", "extrapolation"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # a file name, never a path


# -- checkpoints on disk ---------------------------------------------------------------------
def saved_checkpoints(user_dir: Path) -> dict[str, str]:
    """Checkpoints on disk, key -> label: the shipped ones, then those saved in ``user_dir``."""
    out = {p.stem: f"{p.stem} (shipped)"
           for p in sorted(checkpoint.SHIPPED_DIR.glob("*.safetensors"))}
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


def save_run(result, name: str, user_dir: Path) -> str:
    """Save a finished training run as ``user_dir``/NAME.safetensors; returns its key."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError("name must be 1 to 64 letters, digits, _ or -, starting with a letter "
                         f"or digit (no paths); got {name!r}")
    user_dir.mkdir(parents=True, exist_ok=True)
    checkpoint.save(user_dir / f"{name}.safetensors", result.model, result.task.info(),
                    result.history, result.model_config)
    return f"user/{name}"


# -- what the checkpoint says about itself ---------------------------------------------------
@dataclass(frozen=True)
class Summary:
    """A checkpoint's task, model and training history, as the page's header shows them."""

    task: str
    operator: str  # kind, "(causal)" when causal
    size: str  # width × layers
    metric_name: str
    final_metric: float  # the last validation metric; NaN without a history
    steps: str  # trained steps ("?" when unknown)
    wall_s: float
    device: str
    command: str | None  # the command that trained it
    train_n: int  # the training length
    config: dict  # model and task settings, for a JSON view
    eval_steps: np.ndarray  # [E] steps of the validation evaluations
    eval_loss: np.ndarray  # [E]
    eval_metric: np.ndarray  # [E]


def summary(info: CheckpointInfo) -> Summary:
    config, history = info.model_config, info.history or {}
    evals = history.get("evals") or []
    return Summary(
        task=info.task.get("name", "?"),
        operator=config.operator.kind + (" (causal)" if config.operator.causal else ""),
        size=f"{config.dim} × {config.layers}",
        metric_name=history.get("metric_name", "metric"),
        final_metric=float(evals[-1]["metric"]) if evals else math.nan,
        steps=str(history.get("steps", "?")), wall_s=float(history.get("wall_s", 0)),
        device=str(history.get("device", "?")), command=history.get("command"),
        train_n=int(info.task.get("settings", {}).get("seq_len") or 64),
        config={"model": config.to_dict(),
                "task": {k: v for k, v in info.task.items() if k != "vocab"}},
        eval_steps=np.array([e["step"] for e in evals]),
        eval_loss=np.array([e["loss"] for e in evals], dtype=float),
        eval_metric=np.array([e["metric"] for e in evals], dtype=float))


# -- the kernel atlas ------------------------------------------------------------------------
STATISTICS = ("decay", "spikiness", "low_rank", "optimal")  # see analysis.atlas
SORT_DESCENDING = ("spikiness",)  # the spikiest first; the other statistics lowest first


@dataclass(frozen=True)
class Channels:
    """One entry per measured channel, [R] each; NaN where a statistic is undefined."""

    layer: np.ndarray
    channel: np.ndarray
    decay: np.ndarray  # fitted λ of |t_k|
    spikiness: np.ndarray  # share of the matrix's energy inside the band
    low_rank: np.ndarray  # SKI's relative Frobenius error at rank r
    optimal: np.ndarray  # the Eckart–Young optimum at rank r

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def sorted_by(self, statistic: str) -> Channels:
        """Lowest first (highest first for spikiness); NaN last; ties keep their order."""
        values = getattr(self, statistic)
        order = np.argsort(-values if statistic in SORT_DESCENDING else values, kind="stable")
        return Channels(**{name: column[order] for name, column in self.columns().items()})


@dataclass(frozen=True)
class LayerMedians:
    """Per layer, [L] each: the median of each statistic over its measured channels."""

    layer: np.ndarray
    decay: np.ndarray
    spikiness: np.ndarray
    low_rank: np.ndarray
    optimal: np.ndarray

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "layer"}


@dataclass(frozen=True)
class AtlasView:
    channels: Channels  # in (layer, channel) order
    layers: LayerMedians
    kernels: np.ndarray  # [L, C, 2n-1] the measured channels' kernels (float64)

    def channel_view(self, layer: int, channel: int, max_cells: int | None = None
                     ) -> KernelView:
        """One measured channel's kernel and matrix (at most ``max_cells`` rows drawn)."""
        coeffs = self.kernels[layer, channel]
        return kernel_view(coeffs) if max_cells is None else kernel_view(coeffs, max_cells)


def _median(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(np.median(finite)) if finite.size else math.nan


def atlas_view(model: nn.Module, n: int, band: int, rank: int, channels: int) -> AtlasView:
    """Statistics of the first ``channels`` channels of every layer at length n, band m and
    rank min(r, n), with the per-layer medians (``analysis.atlas`` defines them)."""
    kernels = evaluate.layer_kernels(model, n).double()[:, :channels]  # (L, C, 2n-1)
    rows = kernel_atlas(kernels, band, min(rank, n), model.config.operator.causal)
    table = Channels(layer=np.array([r["layer"] for r in rows]),
                     channel=np.array([r["channel"] for r in rows]),
                     **{s: np.array([r[s] for r in rows], dtype=float) for s in STATISTICS})
    layers = np.unique(table.layer)
    medians = {s: np.array([_median(getattr(table, s)[table.layer == layer])
                            for layer in layers]) for s in STATISTICS}
    return AtlasView(channels=table, layers=LayerMedians(layer=layers, **medians),
                     kernels=kernels.numpy())


# -- beyond the training length --------------------------------------------------------------
FACTORS = (1, 2, 4)  # lengths shown, as multiples of the training length (TNN's Table 10)


@dataclass(frozen=True)
class LengthSweep:
    """The task's metric at each factor × the training length, [F] each."""

    factor: np.ndarray
    length: np.ndarray
    metric: np.ndarray  # NaN where the task exists at its training length only
    loss: np.ndarray
    note: tuple[str, ...]  # why a length has no metric ("" when it has one)

    def columns(self) -> dict[str, np.ndarray | tuple]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def length_sweep(model: nn.Module, task: Task) -> LengthSweep:
    rows = evaluate.length_sweep(model, task, FACTORS, batches=4, batch_size=16)
    return LengthSweep(
        factor=np.array([r["factor"] for r in rows]), length=np.array([r["length"] for r in rows]),
        metric=np.array([math.nan if r["metric"] is None else r["metric"] for r in rows]),
        loss=np.array([math.nan if r["loss"] is None else r["loss"] for r in rows]),
        note=tuple(r["note"] for r in rows))


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
