"""The Decomposition page: T ≈ band + W A Wᵀ for one kernel, everything it draws.

``decomposition_view`` and ``rank_curve`` take plain values (the kernel's lags and the
sliders) and return frozen dataclasses of numpy arrays and numbers, so the page only
lays them out. Heatmaps are evaluated at ``dense.display_indices`` only: never n × n
for large n. Values drawn on a log axis are clipped at LOG_FLOOR (log 0 is -inf).

Letters: n length, r rank (inducing points), s rows and columns drawn, k singular values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.curves import CURVE_RANKS, error_curve
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import dense_toeplitz, display_indices
from tnn_core.analysis.profiles import (
    FrequencyResponse,
    causality_leakage,
    decay_profile,
    frequency_response,
)

__all__ = ["LOG_FLOOR", "Heatmaps", "DecayPanel", "DecompositionView", "decomposition_view",
           "RankCurve", "rank_curve"]

LOG_FLOOR = 1e-300  # smallest value drawn on a log axis


@dataclass(frozen=True)
class Heatmaps:
    """The four matrices at the rows and columns ``idx``: T = band + low rank + residual."""

    idx: np.ndarray  # [s] rows and columns drawn
    step: int  # one row and column in ``step`` drawn (1: all of them)
    T: np.ndarray  # [s, s] T[i, j] = t_{i-j}
    band: np.ndarray  # [s, s]
    low_rank: np.ndarray  # [s, s] W A Wᵀ
    residual: np.ndarray  # [s, s] T - band - W A Wᵀ
    limit: float  # colour range ±limit of T, band and low rank: max|T| drawn (1 when 0)
    residual_limit: float  # the residual's own range, max|residual| drawn (1 when 0)


@dataclass(frozen=True)
class DecayPanel:
    """|t_k| against |k| with the slider's λ^|k| envelope and the fitted line."""

    lags: np.ndarray  # [n] |k| = 0..n-1
    magnitude: np.ndarray  # [n] max(|t_k|, |t_-k|) (|t_k| when causal), clipped at LOG_FLOOR
    envelope: np.ndarray  # [n] max|t| λ^|k| for the slider's λ, clipped at LOG_FLOOR
    fitted_decay: float  # λ_eff of the least-squares fit of log|t_k| (nan: undefined)
    fit_line: np.ndarray | None  # [n] e^c λ_eff^|k|; None when the fit is undefined
    receptive_field: int  # smallest L holding 99% of Σ|t_k| within |k| <= L


@dataclass(frozen=True)
class DecompositionView:
    """Everything the Decomposition page draws for one setting."""

    n: int
    rank: int
    # errors ("SKI to go Faster", Theorem 1 and Eckart–Young); nan where undefined
    relative_spectral: float  # ||T - approx||_2 / ||T||_2
    relative_frobenius: float  # ||T - approx||_F / ||T||_F
    optimal_spectral: float  # σ_{r+1}(T - band)
    optimal_frobenius: float  # (Σ_{i>r} σ_i²)^½
    relative_optimal_spectral: float  # the optima over ||T||
    relative_optimal_frobenius: float
    gap: float  # ||T - approx||_2 / σ_{r+1}(T - band), >= 1 (nan when the optimum is 0)
    spacing: float  # h = (n-1)/(r-1), the inducing-point spacing
    theorem1_factor: float  # h²/8, Theorem 1's linear-interpolation factor
    leakage: float  # Σ_{k<0}|t_k| / Σ|t_k|
    spectral_method: str  # "dense" or "lanczos"
    note: str  # why relative errors are undefined, or ""
    heatmaps: Heatmaps
    # the kernel against lag
    lags: np.ndarray  # [2n-1] k = -(n-1)..n-1
    coeffs: np.ndarray  # [2n-1] t_k
    band_span: tuple[float, float]  # lag interval the band covers, ±0.5 around its lags
    inducing_lags: np.ndarray  # [2r-1] p_i - p_j: the lags A samples
    inducing_values: np.ndarray  # [2r-1] A's values there, a_{i-j}
    # singular values of T - band
    singular_index: np.ndarray  # [k] i = 1..k
    singular_values: np.ndarray  # [k] σ_i(T - band), descending, clipped at LOG_FLOOR
    rank_marker: float  # r + 1/2: between σ_r, the last one kept, and σ_{r+1}
    decay: DecayPanel
    frequency: FrequencyResponse


def _limit(matrix: np.ndarray) -> float:
    return float(np.abs(matrix).max(initial=0.0)) or 1.0


def _heatmaps(dec, idx: np.ndarray) -> Heatmaps:
    T = dense_toeplitz(dec.coeffs, idx)  # (s, s)
    band = dec.band_matrix(idx)  # (s, s)
    low_rank = dec.low_rank_matrix(idx)  # (s, s)
    residual = T - band - low_rank
    step = int(idx[1] - idx[0]) if len(idx) > 1 else 1
    return Heatmaps(idx=idx, step=step, T=T, band=band, low_rank=low_rank, residual=residual,
                    limit=_limit(T), residual_limit=_limit(residual))


def _decay_panel(coeffs: np.ndarray, causal: bool, decay: float) -> DecayPanel:
    profile = decay_profile(coeffs, causal=causal)
    lags, magnitude = profile.lags, profile.magnitude
    envelope = magnitude.max(initial=0.0) * decay ** lags.astype(np.float64)
    fit = profile.fit
    return DecayPanel(lags=lags, magnitude=np.maximum(magnitude, LOG_FLOOR),
                      envelope=np.maximum(envelope, LOG_FLOOR), fitted_decay=fit.rate,
                      fit_line=fit.exponential(lags) if np.isfinite(fit.rate) else None,
                      receptive_field=profile.receptive_field)


def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                       decay: float) -> DecompositionView:
    """The Decomposition page for kernel coeffs [2n-1] at (band, rank, causal, method);
    ``decay`` is the slider's λ, drawn as the envelope λ^|k| beside the kernel's decay."""
    dec = decompose(coeffs, band, rank, causal=causal, method=method)
    n, errors = dec.n, dec.errors
    idx = display_indices(n)
    lo, hi = (0, dec.band - 1) if causal else (-(dec.band // 2), dec.band // 2)
    p = dec.inducing_points  # (r,) p_0 = 0 .. p_{r-1} = n - 1
    sigma = dec.singular_values  # (k,)
    return DecompositionView(
        n=n, rank=dec.rank,
        relative_spectral=errors.relative_spectral,
        relative_frobenius=errors.relative_frobenius,
        optimal_spectral=errors.optimal_spectral,
        optimal_frobenius=errors.optimal_frobenius,
        relative_optimal_spectral=errors.relative_optimal_spectral,
        relative_optimal_frobenius=errors.relative_optimal_frobenius,
        gap=errors.spectral / errors.optimal_spectral if errors.optimal_spectral > 0 else math.nan,
        spacing=dec.spacing, theorem1_factor=dec.theorem1_factor,
        leakage=causality_leakage(coeffs), spectral_method=errors.spectral_method,
        note=errors.note, heatmaps=_heatmaps(dec, idx),
        lags=np.arange(-(n - 1), n), coeffs=dec.coeffs, band_span=(lo - 0.5, hi + 0.5),
        inducing_lags=np.concatenate([-p[:0:-1], p]),  # lag l: p_l - p_0 = l h
        inducing_values=dec.A_coeffs,
        singular_index=np.arange(1, len(sigma) + 1),
        singular_values=np.maximum(sigma, LOG_FLOOR), rank_marker=dec.rank + 0.5,
        decay=_decay_panel(dec.coeffs, causal, decay), frequency=frequency_response(coeffs))


@dataclass(frozen=True)
class RankCurve:
    """Relative Frobenius error against r at one band, clipped at LOG_FLOOR."""

    ranks: np.ndarray  # [q] the ranks of CURVE_RANKS up to n
    sample: np.ndarray  # [q] SKI with A sampled from the kernel
    fit: np.ndarray  # [q] SKI with A fitted by least squares
    optimal: np.ndarray  # [q] the Eckart–Young optimum (SVD) with the fitted band


def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> RankCurve:
    """The error-against-r curve of kernel coeffs [2n-1] at the ranks of CURVE_RANKS <= n."""
    n = (len(coeffs) + 1) // 2
    curve = error_curve(coeffs, band, [r for r in CURVE_RANKS if r <= n], causal=causal)
    return RankCurve(ranks=curve.ranks, sample=np.maximum(curve.sample, LOG_FLOOR),
                     fit=np.maximum(curve.fit, LOG_FLOOR),
                     optimal=np.maximum(curve.optimal, LOG_FLOOR))
