"""One channel's Toeplitz matrix in a few numbers: ranks, spectral tail, band, SKI error.

For a kernel coeffs [2n-1] (coeffs[n-1+k] = t_k) and T[i, j] = t_{i-j}, with singular
values σ_1 >= ... >= σ_n of T (all of them, densely: ``persymmetric``):

    stable rank      ||T||_F² / ||T||_2² = Σ σ_i² / σ_1², in [1, n] (nan for T = 0)
    energy rank      the smallest k with Σ_{i<=k} σ_i² >= 0.99 Σ σ_i² (0 for T = 0)
    Roy–Vetterli     exp(H(p)), p_i = σ_i / Σ σ_j: the effective rank of Roy & Vetterli
                     (2007) (nan for T = 0)
    CSN power law    α, xmin, tail size and KS distance of the Clauset–Shalizi–Newman fit
                     to the largest eigenvalues λ = σ² of TᵀT (``power_law``), and its
                     goodness-of-fit p-value (their semi-parametric bootstrap, GOF_DRAWS
                     sets) for up to GOF_CHANNELS evenly spaced channels of a layer, as
                     many as GOF_WORK allows the model (nan for the others)
    band mass        the share of ||T||_F² on the band lags, Σ_{k in band} (n-|k|) t_k² /
                     Σ_k (n-|k|) t_k²; the band is |k| <= m//2, causal 0 <= k < m
                     (``gram.band_lags``, as ``decompose`` and the band ablation read m)
    SKI errors       ||T - band - W A Wᵀ||_F / ||T||_F at (m, r), A sampled (SKI-TNN's) and
                     fitted, and the Eckart–Young optimum (``curves.error_curve``)

For a bidirectional SKI layer T is the Toeplitz kernel that band + W A Wᵀ approximates
(``operators.ski``), not the matrix the layer applies.

Letters: n length, D channels, k tail size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.atlas import band_mask
from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.decompose import DENSE_MAX_N, as_kernel
from tnn_core.analysis.dense import dense_toeplitz, diagonal_lengths, frobenius_sq
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import persymmetric_singular_values
from tnn_core.analysis.power_law import csn_p_value, csn_power_law_fit
from tnn_core.checks import check_int

__all__ = ["ENERGY", "MAX_N", "GOF_CHANNELS", "GOF_WORK", "gof_channels", "STATISTICS",
           "stable_rank", "energy_rank", "roy_vetterli_rank", "band_mass", "ChannelSpectrum",
           "channel_spectrum", "layer_spectra"]

ENERGY = 0.99  # the energy rank keeps this share of Σ σ_i²
MAX_N = DENSE_MAX_N  # all n singular values densely: an n × n float64 matrix per channel
GOF_CHANNELS = 8  # channels of a layer given the power law's p-value at most, and ...
GOF_WORK = 8 * 256**2  # ... as many as keep layers × channels × n² within this: its
# bootstrap costs 0.05 s a channel at n = 128, 0.22 s at 256, 1.2 s at 512 (N² per set,
# memory-bound), so a model's p-values take about two seconds: a shipped model (2 layers)
# 8 a layer at n <= 128, 4 at 256; 12 layers at n = 512 none
STATISTICS = ("stable_rank", "energy_rank", "roy_vetterli_rank", "csn_alpha", "csn_xmin",
              "csn_tail", "csn_ks", "csn_p", "band_mass", "sample_error", "fit_error",
              "optimal_error")


def stable_rank(sigma: np.ndarray) -> float:
    """||T||_F² / ||T||_2² from the singular values sigma [n], descending (nan if all 0)."""
    top = float(sigma[0]) if len(sigma) else 0.0
    return float(np.sum(sigma**2)) / top**2 if top > 0 else math.nan


def energy_rank(sigma: np.ndarray, energy: float = ENERGY) -> int:
    """The smallest k with Σ_{i<=k} σ_i² >= energy · Σ σ_i²; sigma [n] descending (0 if all 0).
    An energy count, not Roy–Vetterli's effective rank (``roy_vetterli_rank``)."""
    cumulative = np.cumsum(np.asarray(sigma, dtype=np.float64) ** 2)  # (n,)
    if len(cumulative) == 0 or cumulative[-1] == 0:
        return 0
    return int(np.searchsorted(cumulative, energy * cumulative[-1])) + 1


def roy_vetterli_rank(sigma: np.ndarray) -> float:
    """exp(H(p)) = exp(-Σ p_i ln p_i), p_i = σ_i / Σ σ_j, of singular values sigma [n]
    (0 ln 0 = 0; nan if all 0): Roy & Vetterli (2007), "The effective rank: a measure of
    effective dimensionality", EUSIPCO, eq. (1)-(2). In [1, n]; n for a flat spectrum."""
    s = np.asarray(sigma, dtype=np.float64)  # (n,)
    total = float(np.sum(s))
    if total <= 0:
        return math.nan
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def band_mass(coeffs, band: int, causal: bool) -> float:
    """Share of ||T||_F² on the band's lags for a kernel coeffs [2n-1] (nan for T = 0)."""
    t = as_kernel(coeffs)
    n = (len(t) + 1) // 2
    inside = band_mask(n, check_int("band", band, 1), causal)  # (2n-1,)
    total = frobenius_sq(t)
    return float(np.sum((diagonal_lengths(n) * t**2)[inside])) / total if total > 0 else math.nan


@dataclass(frozen=True)
class ChannelSpectrum:
    """One channel's statistics (module docstring); nan where undefined."""

    stable_rank: float
    energy_rank: int  # fewest σ_i holding ENERGY of Σ σ_i²
    roy_vetterli_rank: float  # exp(H(σ / Σ σ))
    csn_alpha: float  # ρ(λ) ∝ λ^-α over the largest λ = σ² (``csn_power_law_fit``)
    csn_xmin: float  # its threshold
    csn_tail: int  # eigenvalues strictly above it
    csn_ks: float  # its KS distance
    csn_p: float  # its goodness-of-fit p-value (nan: not computed for this channel)
    band_mass: float
    sample_error: float  # ||T - band - W A Wᵀ||_F / ||T||_F, A sampled as SKI-TNN does
    fit_error: float  # the same with A fitted (least squares)
    optimal_error: float  # Eckart–Young: no rank-r part beside the fitted band does better


def channel_spectrum(coeffs, band: int, rank: int, causal: bool, gof: bool = True
                     ) -> ChannelSpectrum:
    """``ChannelSpectrum`` of a kernel coeffs [2n-1], 2 <= n <= MAX_N, at band m, rank r;
    the power law's p-value when ``gof``, else nan."""
    t = as_kernel(coeffs)
    n = (len(t) + 1) // 2
    check_int("n", n, 2, MAX_N, "[2, MAX_N]")
    with single_threaded_blas():
        sigma = persymmetric_singular_values(dense_toeplitz(t))  # (n,) descending
    floor = n * np.finfo(np.float64).eps * sigma[0]  # below: round-off, not spectrum
    eigenvalues = sigma[sigma > floor] ** 2  # (N,) of TᵀT
    fit = csn_power_law_fit(eigenvalues)
    curve = error_curve(t, band, [rank], causal=causal)
    if len(curve.ranks) != 1:
        raise ValueError(f"rank must be an integer in [2, n] = [2, {n}]; got {rank!r}")
    return ChannelSpectrum(
        stable_rank=stable_rank(sigma), energy_rank=energy_rank(sigma),
        roy_vetterli_rank=roy_vetterli_rank(sigma), csn_alpha=fit.alpha, csn_xmin=fit.xmin,
        csn_tail=fit.tail, csn_ks=fit.ks,
        csn_p=csn_p_value(eigenvalues, fit) if gof else math.nan,
        band_mass=band_mass(t, band, causal), sample_error=float(curve.sample[0]),
        fit_error=float(curve.fit[0]), optimal_error=float(curve.optimal[0]))


def gof_channels(layers: int, n: int) -> int:
    """Channels of each of ``layers`` layers at length n given the p-value: GOF_CHANNELS,
    fewer where the model's would pass GOF_WORK (0: none)."""
    return min(GOF_CHANNELS, GOF_WORK // (max(layers, 1) * n * n))


def layer_spectra(kernels: torch.Tensor, band: int, rank: int, causal: bool,
                  gof_channels: int = GOF_CHANNELS) -> list[ChannelSpectrum]:
    """``channel_spectrum`` of each channel of one layer's kernels [D, 2n-1], the p-value
    for ``gof_channels`` of them, evenly spaced, the first and the last included."""
    if kernels.dim() != 2:
        raise ValueError(f"kernels must have shape [D, 2n-1]; got {tuple(kernels.shape)}")
    n = (kernels.shape[-1] + 1) // 2
    check_int("n", n, 2, MAX_N, "[2, MAX_N]")  # before any n × n matrix
    D = kernels.shape[0]
    tested = set(np.linspace(0, D - 1, min(D, gof_channels)).round().astype(int).tolist())
    return [channel_spectrum(row.double(), band, rank, causal, gof=c in tested)
            for c, row in enumerate(kernels)]
