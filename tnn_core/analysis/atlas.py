"""Kernel atlas: one row of statistics per (layer, channel) of a trained model.

A researcher asks "which layers are low-rank?". For every channel's learned
Toeplitz kernel at length n the atlas gives

    decay        the fitted effective λ of |t_k| (``profiles.decay_profile``)
    spikiness    the share of the matrix's energy inside the band |k| <= m//2
                 (causal: 0 <= k < m): Σ_band (n-|k|) t_k² / Σ (n-|k|) t_k²
    low_rank     the relative Frobenius error of SKI's band + W A Wᵀ at rank r
                 ("sample", as SKI-TNN computes A), from ``curves.error_curve``
    optimal      the Eckart–Young optimum at the same rank, for comparison

Letters: L layers, D channels, n length.
"""

from __future__ import annotations

import math

import torch

from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.profiles import decay_profile

__all__ = ["channel_stats", "kernel_atlas"]


def channel_stats(coeffs: torch.Tensor, band: int, rank: int, causal: bool) -> dict:
    """Statistics of one kernel coeffs [2n-1] (float64)."""
    n = (coeffs.shape[-1] + 1) // 2
    k = torch.arange(-(n - 1), n)
    energy = (n - k.abs()).to(coeffs.dtype) * coeffs**2  # (2n-1,) energy per diagonal
    inside = (k >= 0) & (k < band) if causal else k.abs() <= band // 2
    total = float(energy.sum())
    spikiness = float(energy[inside].sum()) / total if total > 0 else math.nan
    decay = decay_profile(coeffs, causal=causal).fit.rate
    low_rank = optimal = math.nan
    if 2 <= rank <= n and band <= 2 * n - 2 and total > 0:
        curve = error_curve(coeffs, band, [rank], causal=causal)
        if len(curve.ranks):
            low_rank, optimal = curve.sample[0], curve.optimal[0]
    return {"decay": float(decay), "spikiness": spikiness, "low_rank": float(low_rank),
            "optimal": float(optimal)}


def kernel_atlas(kernels: torch.Tensor, band: int = 9, rank: int = 32, causal: bool = False,
                 channels: int | None = None) -> list[dict]:
    """Rows (layer, channel, decay, spikiness, low_rank, optimal) for kernels [L, D, 2n-1].

    ``channels`` limits each layer to its first channels (None: all)."""
    if kernels.dim() != 3:
        raise ValueError(f"kernels must have shape [L, D, 2n-1]; got {tuple(kernels.shape)}")
    L, D, _ = kernels.shape
    rows = []
    for layer in range(L):
        for channel in range(D if channels is None else min(channels, D)):
            coeffs = kernels[layer, channel].to(torch.float64)
            rows.append({"layer": layer, "channel": channel,
                         **channel_stats(coeffs, band, rank, causal)})
    return rows
