"""Kernel atlas: one row of statistics per (layer, channel) of a trained model.

A researcher asks "which channels are local, which carry long smooth tails, and how well
would SKI's band + W A Wᵀ hold those tails?". For every channel's Toeplitz kernel at
length n, with the band |k| <= m//2 (causal: 0 <= k < m), the atlas gives

    locality     the share of the kernel's mass Σ|t_k| on the band lags (mass, not energy:
                 an energy share weighted by the n - |k| copies of each lag reads 99 % for
                 kernels with a third of their mass in the tails)
    decay        the fitted effective λ of |t_k| (``profiles.decay_profile``)
    low_rank     the Frobenius error of SKI's band + W A Wᵀ at rank r ("sample", as SKI-TNN
                 computes A, from ``curves.error_curve``) relative to ||T - band||_F, the
                 off-band part that W A Wᵀ is there to approximate: 1 is no better than the
                 band alone, 0 is exact
    optimal      the Eckart–Young optimum at the same rank, relative to the same ||T - band||_F

A channel with less than ``BAND_ONLY_MASS`` of its mass off the band is band-only: its λ
would be fitted to the band's shape and round-off, and there is no off-band part to
approximate, so decay, low_rank and optimal are NaN there.

Letters: L layers, D channels, n length.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.dense import diagonal_lengths
from tnn_core.analysis.gram import band_lags
from tnn_core.analysis.profiles import decay_profile

__all__ = ["BAND_ONLY_MASS", "STATISTICS", "band_mask", "channel_stats", "kernel_atlas"]

BAND_ONLY_MASS = 0.01  # off-band share of Σ|t_k| below which a channel counts as band-only
STATISTICS = ("locality", "decay", "low_rank", "optimal")


def band_mask(n: int, band: int, causal: bool) -> np.ndarray:
    """Which of the lags k = -(n-1) .. n-1 the band holds, bool [2n-1]."""
    mask = np.zeros(2 * n - 1, dtype=bool)
    mask[(n - 1) + band_lags(n, band, causal)] = True
    return mask


def channel_stats(coeffs: torch.Tensor, band: int, rank: int, causal: bool) -> dict:
    """Statistics of one kernel coeffs [2n-1] (float64); NaN where undefined."""
    n = (coeffs.shape[-1] + 1) // 2
    t = coeffs.detach().cpu().numpy().astype(np.float64)  # (2n-1,)
    inside = band_mask(n, band, causal)
    mass = np.abs(t)
    total_mass = float(mass.sum())
    nan = {s: math.nan for s in STATISTICS}
    if total_mass == 0:
        return nan
    locality = float(mass[inside].sum()) / total_mass
    if 1 - locality < BAND_ONLY_MASS:
        return {**nan, "locality": locality}
    off_band_norm = math.sqrt(float((diagonal_lengths(n) * t**2)[~inside].sum()))  # ||T - band||_F
    decay = decay_profile(coeffs, causal=causal).fit.rate
    low_rank = optimal = math.nan
    if 2 <= rank <= n and band <= 2 * n - 2:
        curve = error_curve(t, band, [rank], causal=causal)
        low_rank = curve.sample[0] * curve.norm_frobenius / off_band_norm
        optimal = curve.optimal[0] * curve.norm_frobenius / off_band_norm
    return {"locality": locality, "decay": float(decay), "low_rank": float(low_rank),
            "optimal": float(optimal)}


def kernel_atlas(kernels: torch.Tensor, band: int = 9, rank: int = 32, causal: bool = False,
                 channels: int | None = None) -> list[dict]:
    """Rows (layer, channel, locality, decay, low_rank, optimal) for kernels [L, D, 2n-1].

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
