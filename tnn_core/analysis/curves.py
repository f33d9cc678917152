"""Error against rank: how fast SKI's band + W A Wᵀ closes in on T.

``error_curve`` gives, for each rank r, the relative Frobenius error
||T - band - W A Wᵀ||_F / ||T||_F of the "sample" and "fit" decompositions
(``decompose``) and the Eckart–Young optimum. It is drawn live for many ranks
at n up to 4096, so it never forms an n × n matrix nor a spectral norm: the
Frobenius errors come from the small Gram matrices of ``gram`` (O(n m + r²)
plus r FFT products per rank), and the optimum from the top r singular values
of T - band by Lanczos on the symmetric Hankel matrix (T - band) J (``norms``).

The optimum is ``decompose(..., method="fit").errors["optimal_frobenius"]``:
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

import numpy as np

from tnn_core.analysis.decompose import (
    as_kernel,
    check_decomposition,
    sample_inducing_coeffs,
    smooth_continuation,
)
from tnn_core.analysis.errors import ZERO_KERNEL_NOTE, frobenius_sq, optimal_errors
from tnn_core.analysis.gram import (
    band_lags,
    fit_inducing_coeffs,
    inducing_projection,
    residual_frobenius_sq,
    ski_gram,
)
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import kernel_rfft, toeplitz_singular_values
from tnn_core.core.interpolation import interpolation
from tnn_core.core.toeplitz import fft_size

__all__ = ["CURVE_RANKS", "error_curve"]

CURVE_RANKS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # the pages' error-against-r curve
OPTIMAL_TOL = 1e-9  # Lanczos residual for the optimum's singular values (or the energy test)


def error_curve(coeffs, band: int, ranks: Iterable[int], causal: bool = False) -> dict:
    """Relative Frobenius errors against rank for one kernel coeffs [2n-1].

    Returns ``ranks`` (those in [2, n], in the order given), ``sample``, ``fit`` and
    ``optimal`` (lists of floats, one per rank: ||T - approx||_F / ||T||_F and the
    Eckart–Young optimum for the fitted band over ||T||_F), and ``norm_frobenius``.
    For an all-zero kernel the errors are nan and ``note`` says why.
    """
    with single_threaded_blas():
        return _error_curve(coeffs, band, ranks, causal)


def _error_curve(coeffs, band: int, ranks: Iterable[int], causal: bool) -> dict:
    t = as_kernel(coeffs)
    n = (t.shape[0] + 1) // 2
    check_decomposition(n, band, 2, causal)
    ranks = list(ranks)
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int | np.integer):
            raise ValueError(f"ranks must be integers in [2, n] = [2, {n}]; got {r!r}")
    valid = [int(r) for r in ranks if 2 <= r <= n]
    t_np = t.numpy()
    lags = band_lags(n, int(band), causal)
    t_band = t_np[n - 1 + lags]  # (m,)
    smooth = smooth_continuation(t_np, lags)  # (2n-1,) k̃
    norm_sq = frobenius_sq(t_np)
    norm = math.sqrt(norm_sq)
    out = {"ranks": valid, "sample": [], "fit": [], "optimal": [], "norm_frobenius": norm}
    if norm == 0:
        nan = [float("nan")] * len(valid)
        out.update(sample=nan, fit=list(nan), optimal=list(nan), note=ZERO_KERNEL_NOTE)
        return out

    N = fft_size(n)
    spectrum = kernel_rfft(t_np, N)  # (F,)
    for r in valid:
        interp = interpolation(n, r)
        gram = ski_gram(interp, lags)
        projection = inducing_projection(spectrum, interp, N)  # (2r-1,)
        fitted = fit_inducing_coeffs(gram, projection, t_band)
        for name, a in (("sample", sample_inducing_coeffs(smooth, r)), ("fit", fitted)):
            error_sq = residual_frobenius_sq(gram, a, projection, t_band, norm_sq)
            out[name].append(math.sqrt(error_sq) / norm)
        remainder = t_np.copy()  # T - band with the fitted taps: t_k - β_k = μ_k in the band
        remainder[n - 1 + lags] = gram.diagonal @ fitted / gram.counts
        optimal = 0.0
        if r < n:
            sigma, how = toeplitz_singular_values(remainder, r + 1, tol=OPTIMAL_TOL,
                                                  energy_rank=r)
            optimal = optimal_errors(sigma, how == "dense", r, n, frobenius_sq(remainder))[1]
        out["optimal"].append(optimal / norm)
    return out
