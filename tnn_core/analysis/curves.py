"""Error against rank: how fast SKI's band + W A Wᵀ closes in on T.

``error_curve`` gives, for each rank r, the relative Frobenius error
||T - band - W A Wᵀ||_F / ||T||_F of the "sample" and "fit" decompositions
(``decompose``) and the Eckart–Young optimum. It is drawn live for many ranks
at n up to 4096, so it never forms an n × n matrix nor a spectral norm: the
Frobenius errors come from the small Gram matrices of ``gram`` (O(n m + r²)
plus r FFT products per rank), and the optimum from the top r singular values
of T - band by Lanczos on the symmetric Hankel matrix (T - band) J (``norms``).

The optimum is ``decompose(..., method="fit").errors.optimal_frobenius``:
the Eckart–Young error (Σ_{i>r} σ_i²)^½ of T - band with the fitted band taps
(Theorem 1 of "SKI to go Faster" measures W A Wᵀ against this T_{r,opt}), so it
never exceeds the fit error. A band fixed for every rank (the kernel continued
across the band) would need one SVD only, but at small r the fitted band takes
up more of the kernel and that reference rose above the fit curve
(0.87 vs 0.84 at r = 2, n = 4096 for spike_smooth with λ = 0.99).

Accuracy: the Gram-formula errors are a difference of squares, good to about
1e-8 ||T||_F absolute (an exact fit shows as ~1e-8, not 0); the optimum stops
Lanczos once the top-r energy has settled (``norms.symmetric_lanczos``) and
matched dense SVDs to <= 1e-7 relative for random, oscillating, FD, exponential
and spike_smooth kernels at n = 1024.

Letters: n length, r rank, m band lags.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.decompose import (
    as_kernel,
    check_decomposition,
    sample_inducing_coeffs,
    smooth_continuation,
)
from tnn_core.analysis.dense import frobenius_sq
from tnn_core.analysis.errors import ZERO_KERNEL_NOTE, optimal_errors
from tnn_core.analysis.gram import (
    band_lags,
    inducing_projection,
    layout_gram,
    layout_solver,
    residual_frobenius_sq,
)
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import toeplitz_singular_values
from tnn_core.checks import check_int

__all__ = ["CURVE_RANKS", "ErrorCurve", "error_curve"]

CURVE_RANKS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # the pages' error-against-r curve
OPTIMAL_TOL = 1e-9  # Lanczos residual for the optimum's singular values (or the energy test)
OPTIMAL_ENERGY_RTOL = 1e-6  # the energy test's default: the optimum to ~1e-7 relative


@dataclass(frozen=True)
class ErrorCurve:
    """Relative Frobenius errors ||T - approx||_F / ||T||_F, one per rank (nan for an
    all-zero kernel, and ``note`` says why)."""

    ranks: np.ndarray  # [q] the ranks asked for that lie in [2, n], in the order given
    sample: np.ndarray  # [q] SKI with sampled A
    fit: np.ndarray  # [q] SKI with fitted A
    optimal: np.ndarray  # [q] Eckart–Young optimum for the fitted band
    norm_frobenius: float  # ||T||_F
    note: str = ""


def error_curve(coeffs, band: int, ranks: Iterable[int], causal: bool = False,
                energy_rtol: float = OPTIMAL_ENERGY_RTOL) -> ErrorCurve:
    """Relative Frobenius errors against rank for one kernel coeffs [2n-1] (``ErrorCurve``).

    ranks: integers >= 1; those above n or below 2 are left out. energy_rtol: when the
    optimum's Lanczos may stop (``norms.symmetric_lanczos``'s energy test); the optimum
    is then good to about that, relative (1e-6: ~1e-7 against dense SVDs)."""
    with single_threaded_blas():
        return _error_curve(coeffs, band, ranks, causal, energy_rtol)


def _error_curve(coeffs, band: int, ranks: Iterable[int], causal: bool,
                 energy_rtol: float) -> ErrorCurve:
    t = as_kernel(coeffs)
    n = (t.shape[0] + 1) // 2
    check_decomposition(n, band, 2, causal)
    valid = [r for r in (check_int("ranks", r, 1) for r in ranks) if 2 <= r <= n]
    lags = band_lags(n, int(band), causal)
    t_band = t[n - 1 + lags]  # (m,)
    smooth = smooth_continuation(t, lags)  # (2n-1,) k̃
    norm_sq = frobenius_sq(t)
    norm = math.sqrt(norm_sq)
    if norm == 0:
        nan = np.full(len(valid), np.nan)
        return ErrorCurve(np.array(valid, dtype=np.int64), nan, nan.copy(), nan.copy(), norm,
                          ZERO_KERNEL_NOTE)

    sample, fit, optimal = [], [], []
    for r in valid:
        gram = layout_gram(n, r, int(band), causal)  # kept across kernels: a move of λ
        projection = inducing_projection(t, gram)  # (2r-1,)
        fitted = layout_solver(n, r, int(band), causal)(projection, t_band)
        for errors, a in ((sample, sample_inducing_coeffs(smooth, r)), (fit, fitted)):
            error_sq = residual_frobenius_sq(gram, a, projection, t_band, norm_sq)
            errors.append(math.sqrt(error_sq) / norm)
        remainder = t.copy()  # T - band with the fitted taps: t_k - β_k = μ_k in the band
        remainder[n - 1 + lags] = gram.diagonal @ fitted / gram.counts
        best = 0.0
        if r < n:
            sigma, how = toeplitz_singular_values(remainder, r + 1, tol=OPTIMAL_TOL,
                                                  energy_rank=r, energy_rtol=energy_rtol)
            best = optimal_errors(sigma, how == "dense", r, n, frobenius_sq(remainder))[1]
        optimal.append(best / norm)
    return ErrorCurve(np.array(valid, dtype=np.int64), np.array(sample), np.array(fit),
                      np.array(optimal), norm)
