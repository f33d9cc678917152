"""The kernel atlas: statistics of every channel of every layer of a trained model (Inspect's
atlas, and a lesson's step that shows the medians per layer).

What a channel "is": the matrix its operator applies (``analysis.applied``). For tno, fd,
ssm and causal SKI that is the Toeplitz matrix of ``kernel(n)``; bidirectional SKI applies
band + W A Wᵀ, which is not Toeplitz, so the atlas measures its nearest Toeplitz kernel
(the diagonal means, ``analysis.channel_kernel``) and ``kernel(n)`` is only its target.
A togeipi layer has one Toeplitz part per head (``kernel_sources.toeplitz_part``), so its
atlas measures the first channel of each head, one row per point spread function.

Every channel, batched (``analysis.atlas.channel_statistics``: the band energy share
||band(T)||_F² / ||T||_F², the fitted λ and SKI's error ||T - T̂||_F / ||T||_F, the report's
numbers under the report's names): the paper's 6 × 1,536 channels at n = 512 in about
0.5 s on one thread here (1.3 s at n = 1,024), a layer at a time with ``on_progress``
after each. Beside the statistics each channel gets its outlier
score: the largest robust z-score |x - median| / (1.4826 MAD) of its statistics within its
layer, so the table can put the atypical channels first. The view keeps the statistics of
all channels and the kernels of those each order puts first (``ATLAS_TILES``: Inspect's
grid), never the [L, D, 2n-1] kernels nor an n × n matrix: 75 MB of kernels a view at the
paper's size would add up in the server's cache. The Eckart–Young optimum, an SVD per
channel, is not in the atlas (``OPTIMAL_ELSEWHERE`` says where it is).

Letters: L layers, D channels a layer, R measured channels (rows), K kept kernels, n length.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import nn

from tnn_core.analysis.atlas import (
    BAND_ONLY_MASS,
    BAND_SHARE,
    BAND_SHARE_NAME,
    SKI_ERROR_NAME,
    STATISTICS,
    band_mask,
    channel_statistics,
    default_rank,
    exact_by_construction,
)
from tnn_core.analysis.errors import RELATIVE_ERROR
from tnn_core.lab.common.kernel_sources import toeplitz_part
from tnn_core.lab.common.kernel_view import KernelView, kernel_view
from tnn_core.models import ModelConfig

__all__ = ["BAND_ONLY_MASS", "BAND_SHARE", "BAND_SHARE_NAME", "SKI_ERROR_NAME", "RELATIVE_ERROR",
           "exact_by_construction", "STATISTICS", "ORDERS", "ATLAS_BAND",
           "ATLAS_TILES", "ATLAS_MAX_N", "ATLAS_MAX_BAND", "OPTIMAL_ELSEWHERE", "opening_atlas",
           "layer_kernels", "band_description", "Channels", "LayerMedians", "AtlasView",
           "atlas_view"]

ORDERS = (*STATISTICS, "outlier")  # what the table and the grid can be sorted by
SORT_DESCENDING = ("locality", "outlier")  # the most local, the most atypical first; the
# other statistics lowest first
MAD_TO_SIGMA = 1.4826  # the median absolute deviation of a normal sample, in its σ
ATLAS_BAND = 9  # the band m for operators without one of their own (|k| <= 4)
ATLAS_TILES = 12  # channels each order leads with whose kernels a view keeps (Inspect's grid)
ATLAS_MAX_N = 1024  # the longest length the atlas measures (the end of its n slider)
# the widest band the atlas offers: every lag at ATLAS_MAX_N (|k| <= n-1, or lags 0..n-1);
# a checkpoint's own band m (OperatorConfig: 1 to MAX_SIZE) opens clamped to it
ATLAS_MAX_BAND = 2 * ATLAS_MAX_N - 1
OPTIMAL_ELSEWHERE = ("The Eckart–Young optimum at rank r takes an SVD of each channel's n × n "
                     "matrix (two minutes for 9,216 channels at n = 512), so the atlas leaves "
                     "it out: open a channel in Decomposition (the channel view's button) for "
                     "its optimum beside SKI's error at every rank.")


def opening_atlas(config: ModelConfig, train_n: int) -> tuple[int, int, int]:
    """(n, band m, rank r) a checkpoint's atlas opens at, the report's: its training length
    (at most ATLAS_MAX_N), SKI's own band m (at most ATLAS_MAX_BAND) and r (at most n),
    else ATLAS_BAND and ``default_rank(n)``, below n so that SKI's error measures
    something."""
    operator = config.operator
    n = min(train_n, ATLAS_MAX_N)
    if operator.kind == "ski":
        return n, min(operator.band, ATLAS_MAX_BAND), min(operator.rank, n)
    return n, ATLAS_BAND, default_rank(n)


@torch.no_grad()
def layer_kernels(operator: nn.Module, n: int) -> tuple[np.ndarray, torch.Tensor]:
    """(channel ids [C], their Toeplitz kernels [C, 2n-1] float64) of one layer at length n,
    each what ``toeplitz_part`` gives for that channel: every channel's ``kernel(n)`` at
    once; bidirectional SKI's diagonal means channel by channel; togeipi's first channel of
    each head, whose point spread function its head's channels share."""
    config = operator.config
    if config.kind == "togeipi":
        width = operator.dim // operator.heads
        return np.arange(operator.heads) * width, \
            operator.psf_kernel(n).to("cpu", torch.float64)  # (H, 2n-1)
    ids = np.arange(operator.dim)
    if config.kind == "ski" and not config.causal:
        return ids, torch.stack([toeplitz_part(operator, n, int(c)) for c in ids])
    return ids, operator.kernel(n).detach().to("cpu", torch.float64)  # (D, 2n-1)


def band_description(band: int, causal: bool) -> str:
    """The band's lags in words: "|k| ≤ 4" or "lags 0..8"."""
    return f"lags 0..{band - 1}" if causal else f"|k| ≤ {band // 2}"


@dataclass(frozen=True)
class Channels:
    """One entry per measured channel, [R] each; NaN where a statistic is undefined."""

    layer: np.ndarray
    channel: np.ndarray
    locality: np.ndarray  # band energy share ||band(T)||_F² / ||T||_F² (the report's band_mass)
    decay: np.ndarray  # fitted λ of |t_k|; NaN for a band-only channel
    low_rank: np.ndarray  # SKI's error (sample) ||T - T̂||_F / ||T||_F (the report's sample_error)
    outlier: np.ndarray  # the largest robust distance of a statistic from its layer's median

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def sorted_by(self, statistic: str) -> Channels:
        """Lowest first (highest first for locality); NaN last; ties keep their order."""
        order = _order(getattr(self, statistic), statistic)
        return Channels(**{name: column[order] for name, column in self.columns().items()})


@dataclass(frozen=True)
class LayerMedians:
    """Per layer, [L] each: the median of each statistic over its measured channels, and
    ``quartiles[statistic]`` [L, 2], their 25th and 75th percentiles (NaN left out)."""

    layer: np.ndarray
    locality: np.ndarray
    decay: np.ndarray
    low_rank: np.ndarray
    quartiles: dict[str, np.ndarray]

    def columns(self) -> dict[str, np.ndarray]:
        """The medians by statistic."""
        return {name: getattr(self, name) for name in STATISTICS}


@dataclass(frozen=True)
class AtlasView:
    channels: Channels  # every measured channel, in (layer, channel) order
    layers: LayerMedians
    kept: np.ndarray  # [K, 2] (layer, channel) of the kernels kept: each order's first tiles
    kernels: np.ndarray  # [K, 2n-1] their kernels (float64)
    band: int
    causal: bool

    def tiles(self, statistic: str) -> list[tuple[int, int]]:
        """(layer, channel) of the first ATLAS_TILES channels in ``statistic``'s order."""
        table = self.channels.sorted_by(statistic)
        return [(int(layer), int(channel)) for layer, channel in
                zip(table.layer[:ATLAS_TILES], table.channel[:ATLAS_TILES], strict=True)]

    def channel_view(self, layer: int, channel: int, max_cells: int | None = None,
                     off_band: bool = False) -> KernelView:
        """A kept channel's kernel and matrix (at most ``max_cells`` rows drawn);
        ``off_band``: T - band, the band lags set to zero. ValueError for a channel whose
        kernel is not kept (the channel view reads any channel from the model)."""
        found = np.flatnonzero((self.kept[:, 0] == layer) & (self.kept[:, 1] == channel))
        if not len(found):
            raise ValueError(f"layer {layer}, channel {channel} leads no order of the atlas, "
                             f"so its kernel is not kept; the channel view draws any channel")
        coeffs = self.kernels[found[0]]
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


def _order(values: np.ndarray, statistic: str) -> np.ndarray:
    """Positions [R] of ``values`` [R] in ``statistic``'s order (``Channels.sorted_by``)."""
    return np.argsort(-values if statistic in SORT_DESCENDING else values, kind="stable")


def _percentiles(values: np.ndarray) -> np.ndarray:
    """The 25th, 50th and 75th percentiles [3] of the defined values [R] (NaN if none)."""
    finite = values[~np.isnan(values)]
    return np.percentile(finite, [25, 50, 75]) if finite.size else np.full(3, math.nan)


def _medians(table: Channels) -> LayerMedians:
    layers = np.unique(table.layer)
    spread = {s: np.stack([_percentiles(getattr(table, s)[table.layer == layer])
                           for layer in layers]) for s in STATISTICS}  # (L, 3) each
    return LayerMedians(layer=layers, **{s: spread[s][:, 1] for s in STATISTICS},
                        quartiles={s: spread[s][:, [0, 2]] for s in STATISTICS})


def _outliers(statistics: dict[str, np.ndarray]) -> np.ndarray:
    """[D] each channel's largest |x - median| / (MAD_TO_SIGMA · MAD) over the statistics of
    one layer, its robust z-score (inf off a spread of 0; NaN where none is defined)."""
    scores = []
    for values in statistics.values():
        low, median, high = _percentiles(values)
        spread = MAD_TO_SIGMA * _percentiles(np.abs(values - median))[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            scores.append(np.where(values == median, 0.0, np.abs(values - median) / spread))
    return np.fmax.reduce(scores)


def atlas_view(model: nn.Module, n: int, band: int, rank: int,
               on_progress: Callable[[int, int], None] | None = None) -> AtlasView:
    """Statistics of every channel of every layer at length n, band m and rank min(r, n),
    with the per-layer medians (``analysis.atlas`` defines them). ``on_progress(done,
    total)``: layers measured, before the first and after each.

    One layer's kernels are held at a time; of each, those that lead the layer in some
    order are kept until the view's leaders are known (a channel that leads the model
    leads its layer: the orders are stable)."""
    operators = model.operators()
    causal = model.config.operator.causal
    parts: dict[str, list[np.ndarray]] = {name: [] for name in ("layer", "channel", *ORDERS)}
    leaders: dict[tuple[int, int], np.ndarray] = {}  # (layer, channel) -> kernel [2n-1]
    for layer, operator in enumerate(operators):
        if on_progress is not None:
            on_progress(layer, len(operators))
        ids, kernels = layer_kernels(operator, n)  # (D,), (D, 2n-1)
        statistics = channel_statistics(kernels, band, min(rank, n), causal)
        statistics["outlier"] = _outliers(statistics)
        parts["layer"].append(np.full(len(ids), layer))
        parts["channel"].append(ids)
        for name in ORDERS:
            parts[name].append(statistics[name])
        for row in {int(row) for name in ORDERS
                    for row in _order(statistics[name], name)[:ATLAS_TILES]}:
            leaders[layer, int(ids[row])] = kernels[row].numpy()
    if on_progress is not None:
        on_progress(len(operators), len(operators))
    table = Channels(**{name: np.concatenate(columns) for name, columns in parts.items()})
    rows = np.unique(np.concatenate([_order(getattr(table, s), s)[:ATLAS_TILES]
                                     for s in ORDERS]))
    kept = np.stack([table.layer[rows], table.channel[rows]], axis=-1)  # (K, 2)
    return AtlasView(channels=table, layers=_medians(table), kept=kept,
                     kernels=np.stack([leaders[layer, channel] for layer, channel in kept]),
                     band=band, causal=causal)
