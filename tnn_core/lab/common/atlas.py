"""The kernel atlas: statistics of every layer's first channels of a trained model (Inspect's
atlas, and a lesson's step that shows the medians per layer).

What a channel "is": the matrix its operator applies (``analysis.applied``). For tno, fd
and causal SKI that is the Toeplitz matrix of ``kernel(n)``; bidirectional SKI applies
band + W A Wᵀ, which is not Toeplitz, so the atlas measures its nearest Toeplitz kernel
(the diagonal means, ``analysis.channel_kernel``) and ``kernel(n)`` is only its target.
A togeipi layer has one Toeplitz part per head (``kernel_sources.toeplitz_part``), so its
atlas measures the first channel of each head, one row per point spread function.

Letters: L layers, C channels measured per layer, R measured channels (rows), n length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import nn

from tnn_core.analysis.atlas import BAND_ONLY_MASS, STATISTICS, band_mask, kernel_atlas
from tnn_core.lab.common.kernel_sources import toeplitz_part
from tnn_core.lab.common.kernel_view import KernelView, kernel_view
from tnn_core.models import ModelConfig

__all__ = ["BAND_ONLY_MASS", "STATISTICS", "ATLAS_BAND", "ATLAS_RANK", "ATLAS_CHANNELS",
           "ATLAS_MAX_N", "ATLAS_MAX_BAND", "opening_atlas",
           "measured_channels", "band_description", "Channels", "LayerMedians",
           "AtlasView", "atlas_view"]

SORT_DESCENDING = ("locality",)  # the most local first; the other statistics lowest first
ATLAS_BAND = 9  # the band m for operators without one of their own (|k| <= 4)
ATLAS_RANK = 32  # SKI's inducing points r for the low-rank error
ATLAS_CHANNELS = 16  # channels measured per layer (the first ones)
ATLAS_MAX_N = 1024  # the longest length the atlas measures (the end of its n slider)
# the widest band the atlas offers: every lag at ATLAS_MAX_N (|k| <= n-1, or lags 0..n-1);
# a checkpoint's own band m (OperatorConfig: 1 to MAX_SIZE) opens clamped to it
ATLAS_MAX_BAND = 2 * ATLAS_MAX_N - 1


def opening_atlas(config: ModelConfig, train_n: int) -> tuple[int, int]:
    """(n, band m) a checkpoint's atlas opens at: its training length (at most ATLAS_MAX_N)
    and SKI's own band m (at most ATLAS_MAX_BAND), ATLAS_BAND for the other operators."""
    operator = config.operator
    band = min(operator.band, ATLAS_MAX_BAND) if operator.kind == "ski" else ATLAS_BAND
    return min(train_n, ATLAS_MAX_N), band


def measured_channels(operator: nn.Module, count: int) -> list[int]:
    """The channels the atlas measures in a layer: its first ``count``; for togeipi the first
    channel of each of its first ``count`` heads (a head's channels share one kernel)."""
    if operator.config.kind == "togeipi":
        width = operator.dim // operator.heads
        return [head * width for head in range(min(count, operator.heads))]
    return list(range(min(count, operator.dim)))


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
    measured: np.ndarray  # [L, C] the channel each kernel belongs to (``measured_channels``)
    band: int
    causal: bool

    def channel_view(self, layer: int, channel: int, max_cells: int | None = None,
                     off_band: bool = False) -> KernelView:
        """One measured channel's kernel and matrix (at most ``max_cells`` rows drawn);
        ``off_band``: T - band, the band lags set to zero."""
        (position,) = np.flatnonzero(self.measured[layer] == channel)
        coeffs = self.kernels[layer, position]
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
    channel's kernel is the Toeplitz part of what it applies (``toeplitz_part``)."""
    operators = model.operators()
    measured = [measured_channels(op, channels) for op in operators]
    kernels = torch.stack([torch.stack([toeplitz_part(op, n, c) for c in cs])
                           for op, cs in zip(operators, measured, strict=True)])  # (L, C, 2n-1)
    causal = model.config.operator.causal
    rows = kernel_atlas(kernels, band, min(rank, n), causal)
    table = Channels(layer=np.array([r["layer"] for r in rows]),
                     channel=np.array([measured[r["layer"]][r["channel"]] for r in rows]),
                     **{s: np.array([r[s] for r in rows], dtype=float) for s in STATISTICS})
    layers = np.unique(table.layer)
    medians = {s: np.array([_median(getattr(table, s)[table.layer == layer])
                            for layer in layers]) for s in STATISTICS}
    return AtlasView(channels=table, layers=LayerMedians(layer=layers, **medians),
                     kernels=kernels.numpy(), measured=np.array(measured), band=band,
                     causal=causal)
