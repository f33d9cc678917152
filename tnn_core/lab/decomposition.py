"""The Decomposition page: T ≈ band + W A Wᵀ for one kernel, everything it draws.

``decomposition_view`` (the numbers a settled move of r, m or λ sends to the figure),
``rank_curve``, ``smooth_spectrum`` and ``theorem1_panel`` (the sections behind
expanders, computed only while one is open) take plain values (the kernel's lags and the
sliders) and return frozen dataclasses of numpy arrays and numbers, so the page only
lays them out; ``fit_to_length`` clamps the sliders to what n allows. The pictures are
drawn in the browser (pages/figures/decomposition.js).

Log axes: values below a stated floor are round-off (or exact zeros) and carry no
information, so they are not drawn: ROUNDOFF_FLOOR × the largest value of a chart, and
CURVE_FLOOR for the error-against-r curve (``common.rank_curve``).

Letters: n length, r rank (inducing points), s rows and columns drawn, k singular values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.decompose import (
    DENSE_MAX_N,
    check_decomposition,
    decompose,
    sample_inducing_coeffs,
    smooth_continuation,
)
from tnn_core.analysis.dense import display_line
from tnn_core.analysis.errors import (
    SINGULAR_RTOL,
    THEOREM1_DENSE_MAX_N,
    Theorem1Terms,
    theorem1_terms,
)
from tnn_core.analysis.gram import band_lags
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import (
    kernel_rfft,
    leading_singular_count,
    toeplitz_singular_values,
)
from tnn_core.analysis.presets import (
    MAX_TYPED_CHARS,
    MAX_TYPED_LENGTH,
    OPERATOR_CHANNELS,
    SYNTHETIC,
)
from tnn_core.bench.harness import order
from tnn_core.bench.timing import format_flops
from tnn_core.core.toeplitz import fft_size
from tnn_core.lab.common.browser_data import js_number, json_floats, kernel_id, packed
from tnn_core.lab.common.conversion import convertible
from tnn_core.lab.common.decomposition_figures import (
    Settings,
    drawn,
    figure_data,
    fit_to_length,
    synthetic_parts,
)
from tnn_core.lab.common.figure_controls import BAND, DECAY, DECOMPOSITION, MODES, RANK
from tnn_core.lab.common.kernel_sources import TOGEIPI_PART
from tnn_core.lab.common.linked_cell import low_rank_entry
from tnn_core.lab.common.live import live_speed
from tnn_core.lab.common.rank_curve import CURVE_FLOOR, RankCurve, rank_curve
from tnn_core.lab.common.recurrent_fit import DECAYS as RECURRENT_DECAYS
from tnn_core.lab.common.recurrent_fit import LADDER as RECURRENT_LADDER
from tnn_core.lab.common.recurrent_fit import (
    RECURRENT_MAX_N,
    RecurrentFit,
    fitted_kernel,
    is_causal,
    modes_by_decay,
    modes_for_error,
    recurrent_fit,
)
from tnn_core.lab.common.recurrent_fit import TARGETS as RECURRENT_TARGETS
from tnn_core.training.tasks import is_kernels_only

__all__ = ["RANK", "BAND", "DECAY", "DECOMPOSITION", "MODES",  # the figures' sliders
           "live_speed", "ROUNDOFF_FLOOR", "CURVE_FLOOR", "ratio_text", "speed_text", "Settings",
           "fit_to_length", "SmoothSpectrum", "smooth_spectrum", "Theorem1Panel",
           "theorem1_panel", "DecompositionView", "decomposition_view", "RankCurve",
           "rank_curve", "RECURRENT_LADDER", "RECURRENT_MAX_N", "RecurrentFit", "recurrent_fit",
           "is_causal", "modes_for_error", "fitted_kernel", "RECURRENT_DECAYS",
           "RECURRENT_TARGETS", "modes_by_decay",
           # what the page and its figures show beside them
           "MAX_TYPED_CHARS", "MAX_TYPED_LENGTH", "OPERATOR_CHANNELS", "SYNTHETIC",
           "display_line", "format_flops", "drawn", "figure_data", "js_number", "json_floats",
           "kernel_id", "packed", "synthetic_parts", "convertible", "is_kernels_only",
           "low_rank_entry", "TOGEIPI_PART"]

ROUNDOFF_FLOOR = 1e-13  # relative to a chart's largest value: below it is float64 round-off


def ratio_text(ratio: float) -> str:
    """"2.3× faster" or "1.7× slower" (SKI against another product), two significant
    figures, so a ratio never reads "0.0×"."""
    if not np.isfinite(ratio) or ratio <= 0:
        return "—"
    factor = ratio if ratio >= 1 else 1 / ratio
    decimals = max(0, 1 - math.floor(math.log10(factor)))
    return f"{factor:.{decimals}f}× {'faster' if ratio >= 1 else 'slower'}"


def speed_text(ski: tuple[float, float, float], other: tuple[float, float, float]) -> str:
    """SKI against another product, each timed as (p25, median, p75) ms: "2.3× faster", or
    "≈ same (within noise)" where the quartile ranges overlap (``harness.order``)."""
    if order(ski, other) == 0:
        return "≈ same (within noise)"
    return ratio_text(other[1] / ski[1])


@dataclass(frozen=True)
class SmoothSpectrum:
    """Singular values of the smooth part T_s = Toeplitz(k̃): the kernel with its band lags
    bridged by a straight line (what sampled A interpolates). It does not depend on r."""

    index: np.ndarray  # [k] i = 1..k
    values: np.ndarray  # [k] σ_i(T_s), descending, those >= ROUNDOFF_FLOOR σ_1
    dropped: int  # of the values computed, how many were below the floor
    next_value: float  # σ_{r+1}(T_s): the best rank-r spectral error of T_s (nan: not drawn)


@dataclass(frozen=True)
class Theorem1Panel:
    """Theorem 1's terms (``errors.Theorem1Terms``) and where its hypotheses fail here."""

    terms: Theorem1Terms
    kink_lag: int | None  # max|k̃''| sits where the band's straight line meets the kernel
    a_singular: bool  # σ_r(A) ≈ 0: the bound is infinite
    sides_dense_max_n: int | None  # n past it: the two sides (dense SVDs) are not computed


@dataclass(frozen=True)
class DecompositionView:
    """Everything the Decomposition page draws for one setting."""

    n: int
    rank: int
    # errors (Eckart–Young with the method's band); nan where undefined
    relative_spectral: float  # ||T - approx||_2 / ||T||_2
    relative_frobenius: float  # ||T - approx||_F / ||T||_F
    optimal_spectral: float  # σ_{r+1}(T - band)
    optimal_frobenius: float  # (Σ_{i>r} σ_i²)^½
    relative_optimal_spectral: float  # the optima over ||T||
    relative_optimal_frobenius: float
    gap: float  # ||T - approx||_2 / σ_{r+1}(T - band), >= 1 (nan when the optimum is 0)
    spacing: float  # h = (n-1)/(r-1), the inducing-point spacing
    dominant_period: float  # lags per cycle of the smooth part's largest |k̂̃(ω)| (inf: ω = 0)
    aliasing_rank: int | None  # h > period/2: the smallest r with h < period/2 (may be > n)
    spectral_method: str  # "dense" or "lanczos"
    note: str  # why relative errors are undefined, or ""
    # the kernel against lag
    lags: np.ndarray  # [2n-1] k = -(n-1)..n-1
    coeffs: np.ndarray  # [2n-1] t_k
    band_span: tuple[float, float]  # lag interval the band covers, ±0.5 around its lags
    inducing_lags: np.ndarray  # [2r-1] p_i - p_j: the lags A samples
    inducing_values: np.ndarray  # [2r-1] A's values there, a_{i-j}


def smooth_spectrum(coeffs: np.ndarray, band: int, rank: int, causal: bool) -> SmoothSpectrum:
    """Singular values of T_s = Toeplitz(k̃) for kernel coeffs [2n-1] at band m: all of
    them up to n = DENSE_MAX_N, else the leading ``leading_singular_count(n, r)`` (σ_{r+1}
    and what follows it, for the chart)."""
    t = np.asarray(coeffs, dtype=np.float64)
    n = (len(t) + 1) // 2
    check_decomposition(n, band, rank, causal)
    continued = smooth_continuation(t, band_lags(n, int(band), causal))  # (2n-1,) k̃
    k = leading_singular_count(n, rank)
    with single_threaded_blas():
        sigma, _ = toeplitz_singular_values(continued, k, dense_max_n=DENSE_MAX_N)
    keep = sigma >= ROUNDOFF_FLOOR * sigma[0] if sigma[0] > 0 else np.zeros(len(sigma), bool)
    values = sigma[keep]
    return SmoothSpectrum(index=np.arange(1, len(values) + 1), values=values,
                          dropped=int((~keep).sum()),
                          next_value=float(values[rank]) if len(values) > rank else math.nan)


def _dominant_period(continued: np.ndarray) -> float:
    """Lags per cycle at the largest |DTFT| of k̃ (inf when that is at ω = 0)."""
    n = (len(continued) + 1) // 2
    N = fft_size(n)
    j = int(np.argmax(np.abs(kernel_rfft(continued, N))))  # ω_j = 2πj/N
    return N / j if j > 0 else math.inf


def theorem1_panel(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str
                   ) -> Theorem1Panel:
    """Theorem 1's terms for kernel coeffs [2n-1] at (band, rank), with A sampled as the
    theorem has it whatever ``method`` the page shows (a caveat says so for "fit")."""
    dec = decompose(coeffs, band, rank, causal=causal)
    continued = smooth_continuation(dec.coeffs, dec.band_lags)  # (2n-1,) k̃
    a = sample_inducing_coeffs(continued, dec.rank)  # (2r-1,) the theorem's A
    with single_threaded_blas():
        terms = theorem1_terms(continued, dec.band_lags, dec.interp, a)
    lo, hi = int(dec.band_lags[0]), int(dec.band_lags[-1])
    edge = min(abs(terms.curvature_lag - (lo - 1)), abs(terms.curvature_lag - (hi + 1)))
    return Theorem1Panel(
        terms=terms,
        kink_lag=terms.curvature_lag if terms.curvature > 0 and edge <= 1 else None,
        a_singular=bool(terms.a_extreme[1] <= SINGULAR_RTOL * terms.a_extreme[0]),
        sides_dense_max_n=THEOREM1_DENSE_MAX_N if dec.n > THEOREM1_DENSE_MAX_N else None)


def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str
                       ) -> DecompositionView:
    """The numbers of the Decomposition page for kernel coeffs [2n-1] at (band, rank,
    causal, method): what a settled move sends to the figure, and the kernel plot's lags."""
    dec = decompose(coeffs, band, rank, causal=causal, method=method)
    n, errors = dec.n, dec.errors
    lo, hi = int(dec.band_lags[0]), int(dec.band_lags[-1])
    p = dec.inducing_points  # (r,) p_0 = 0 .. p_{r-1} = n - 1
    period = _dominant_period(smooth_continuation(dec.coeffs, dec.band_lags))
    return DecompositionView(
        n=n, rank=dec.rank,
        relative_spectral=errors.relative_spectral,
        relative_frobenius=errors.relative_frobenius,
        optimal_spectral=errors.optimal_spectral,
        optimal_frobenius=errors.optimal_frobenius,
        relative_optimal_spectral=errors.relative_optimal_spectral,
        relative_optimal_frobenius=errors.relative_optimal_frobenius,
        gap=errors.spectral / errors.optimal_spectral if errors.optimal_spectral > 0 else math.nan,
        spacing=dec.spacing, dominant_period=period,
        aliasing_rank=(math.floor(2 * (n - 1) / period) + 2 if dec.spacing > period / 2
                       else None),
        spectral_method=errors.spectral_method, note=errors.note,
        lags=np.arange(-(n - 1), n), coeffs=dec.coeffs, band_span=(lo - 0.5, hi + 0.5),
        inducing_lags=np.concatenate([-p[:0:-1], p]),  # lag l: p_l - p_0 = l h
        inducing_values=dec.A_coeffs)
