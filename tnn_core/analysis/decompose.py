"""Split one Toeplitz kernel into SKI's sparse band plus low-rank W A Wᵀ.

Algorithm 1 of "SKI to go Faster" approximates T (T[i, j] = t_{i-j}) by
    T ≈ B + W A Wᵀ
* B: banded Toeplitz on the band lags |k| <= band//2 (or 0 <= k < band, causal),
  lags with |k| >= n dropped. Given the low-rank part, its best taps (in
  Frobenius) are the diagonal means of T - W A Wᵀ on those lags.
* W [n, r]: linear interpolation onto r inducing points evenly spaced on
  [0, n-1], spacing h = (n-1)/(r-1) (``tnn_core.core.interpolation``).
* A [r, r]: Toeplitz with lag coefficients a_l at the fractional lags l h.
  ``method="sample"``: a_l = k̃(l h), k̃ the kernel continued linearly across the
  band (the spike removed, the smooth part kept), read between integer lags by
  linear interpolation. ``method="fit"``: a is the joint least-squares optimum of
  ||T - B - W A Wᵀ||_F over a with B's taps optimal (``gram.inducing_solver``),
  so its Frobenius error is never above sample's.

Theorem 1 bounds the low-rank error through the linear-interpolation factor h²/8, h the
inducing spacing (``Decomposition.spacing``; ``errors.theorem1_terms`` evaluates the
bound). ``Decomposition.errors`` compares the approximation with T and with the
Eckart–Young optimum σ_{r+1}(T - B).

Errors and singular values are computed when first read, then cached
(``errors``, by ``errors.decomposition_errors`` on plain arrays): building a
Decomposition costs O(n m + r²) (plus r FFT products for "fit"). Everything is numpy
float64 (``norms`` explains why not torch).

Letters: n length, r rank (inducing points), m band lags, N FFT size.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Literal

import numpy as np
import torch

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.errors import DecompositionErrors, decomposition_errors
from tnn_core.analysis.gram import (
    SkiGram,
    band_lags,
    inducing_projection,
    inducing_solver,
    ski_gram,
)
from tnn_core.analysis.low_rank import interpolation_weights, low_rank_matrix, residual_matrix
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import toeplitz_singular_values
from tnn_core.checks import check_choice, check_int
from tnn_core.core.interpolation import inducing_points, interpolation

__all__ = ["METHODS", "SPECTRAL_ROUTES", "LANCZOS_FROM_N", "Decomposition", "decompose",
           "decompose_channels", "as_kernel", "decomposition_limits", "check_decomposition",
           "smooth_continuation",
           "sample_inducing_coeffs"]

Method = Literal["sample", "fit"]
SpectralRoute = Literal["auto", "dense", "lanczos"]
METHODS: tuple[str, ...] = ("sample", "fit")
SPECTRAL_ROUTES: tuple[str, ...] = ("auto", "dense", "lanczos")

# spectral="auto" takes Lanczos from this n on, where it overtook the dense route
# (measured: docs/benchmarks.md). Both routes take the singular values of T - band
# densely up to n = 512; the route decides the two spectral norms.
LANCZOS_FROM_N = 224
DENSE_MAX_N = 512  # all singular values of T - band, densely, up to this n


def as_kernel(coeffs, name: str = "coeffs") -> np.ndarray:
    """A 1-D finite kernel [2n-1] (torch or numpy) as a float64 numpy array (a copy)."""
    if isinstance(coeffs, torch.Tensor):
        coeffs = coeffs.detach().cpu().double().numpy()
    t = np.array(coeffs, dtype=np.float64)
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D with 2n-1 lags; got shape {t.shape}")
    if t.shape[0] % 2 == 0:
        raise ValueError(f"{name} length must be odd, 2n-1 lags -(n-1)..n-1; got {t.shape[0]}")
    bad = ~np.isfinite(t)
    if bad.any():
        n = (t.shape[0] + 1) // 2
        where = (np.flatnonzero(bad) - (n - 1)).tolist()[:5]
        raise ValueError(f"{name} must be finite; got NaN or Inf at lags {where}")
    return t


def decomposition_limits(n: int) -> tuple[int, int]:
    """(largest band m, largest rank r) for a kernel of length n >= 2: the band's 2n - 2
    lags leave one lag a side to the low-rank part, and r inducing points on the n
    positions 0 .. n-1 are at most n. The one rule: ``check_decomposition`` refuses past
    it, ``lab.fit_to_length`` clamps the pages' sliders to it and sends it to the figure,
    whose JavaScript clamps a drag with it and says so."""
    return 2 * n - 2, n


def check_decomposition(n: int, band, rank, causal, method="sample", spectral="auto") -> None:
    """Validate decompose's arguments for a kernel of length n (ValueError naming the field)."""
    if n < 2:
        raise ValueError(f"n must be >= 2 to decompose: rank must be in [2, n] and [2, {n}] is "
                         f"empty; got a kernel of {2 * n - 1} lag (n = {n})")
    max_band, max_rank = decomposition_limits(n)
    check_int("rank", rank, 2, max_rank, "[2, n]")
    check_int("band", band, 1, max_band, "[1, 2n-2]")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {causal!r}")
    check_choice("method", method, METHODS)
    check_choice("spectral", spectral, SPECTRAL_ROUTES)


def smooth_continuation(t: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """k̃: the kernel with its band lags replaced by the straight line between the
    first lags just outside the band (0 beyond ±(n-1)). t, lags -> [2n-1]."""
    n = (len(t) + 1) // 2
    out = np.array(t, dtype=np.float64)
    if len(lags) == 0:
        return out
    lo, hi = int(lags[0]) - 1, int(lags[-1]) + 1  # the anchoring lags
    left = t[n - 1 + lo] if lo >= -(n - 1) else 0.0
    right = t[n - 1 + hi] if hi <= n - 1 else 0.0
    frac = (lags - lo) / (hi - lo)
    out[n - 1 + lags] = left + frac * (right - left)
    return out


def sample_inducing_coeffs(continued: np.ndarray, r: int) -> np.ndarray:
    """a_l = k̃(l h) for l = -(r-1)..r-1, linear between integer lags. -> [2r-1]."""
    n = (len(continued) + 1) // 2
    h = (n - 1) / (r - 1)
    at = np.clip(np.arange(-(r - 1), r) * h, -(n - 1), n - 1)  # rounding must not leave the grid
    return np.interp(at, np.arange(-(n - 1), n), continued)


class Decomposition:
    """T ≈ band + W A Wᵀ for one kernel; see the module docstring. Build with ``decompose``.

    Dense pieces take ``idx`` (rows and columns to evaluate, all when None) so a heatmap
    never forms n × n."""

    def __init__(self, coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                 spectral: str, A_coeffs: np.ndarray, gram: SkiGram,
                 projection: np.ndarray | None):
        n = (coeffs.shape[0] + 1) // 2
        self.n, self.band, self.rank, self.causal = n, band, rank, causal
        self.method, self.spectral = method, spectral
        self.coeffs = coeffs  # [2n-1]
        self.A_coeffs = np.asarray(A_coeffs, dtype=np.float64)  # [2r-1]
        self.interp = gram.interp
        self.band_lags = gram.lags  # [m]
        self.gram = gram  # SkiGram: diagonal sums and Gram of the SKI basis
        self._projection = projection  # [2r-1] b, when "fit" computed it
        mu = gram.diagonal @ self.A_coeffs / gram.counts  # (m,) diagonal means of W A Wᵀ
        self.band_coeffs = np.zeros_like(coeffs)  # [2n-1], zero outside the band lags
        self.band_coeffs[n - 1 + gram.lags] = coeffs[n - 1 + gram.lags] - mu

    def __repr__(self) -> str:
        return (f"Decomposition(n={self.n}, band={self.band}, rank={self.rank}, "
                f"causal={self.causal}, method={self.method!r})")

    # -- the pieces ---------------------------------------------------------------------
    @property
    def spacing(self) -> float:
        """h = (n-1)/(r-1), the inducing-point spacing."""
        return (self.n - 1) / (self.rank - 1)

    @cached_property
    def inducing_points(self) -> np.ndarray:  # [r] p_i
        return inducing_points(self.n, self.rank).numpy()

    @property
    def W(self) -> np.ndarray:  # [n, r]
        return interpolation_weights(self.interp).toarray()

    @property
    def A(self) -> np.ndarray:  # [r, r]
        return dense_toeplitz(self.A_coeffs)

    def band_matrix(self, idx: np.ndarray | None = None) -> np.ndarray:  # [s, s]
        return dense_toeplitz(self.band_coeffs, idx)

    def low_rank_matrix(self, idx: np.ndarray | None = None) -> np.ndarray:  # [s, s]
        return low_rank_matrix(self.interp, self.A_coeffs, idx)

    def residual_matrix(self, idx: np.ndarray | None = None) -> np.ndarray:  # [s, s]
        return residual_matrix(self.coeffs - self.band_coeffs, self.interp, self.A_coeffs, idx)

    @cached_property
    def projection(self) -> np.ndarray:
        """b[l] = <W S_l Wᵀ, T>_F [2r-1] (``gram.inducing_projection``): "fit" computed it,
        "sample" computes it on first read. With ``gram`` it gives ||T - band - W A Wᵀ||_F
        exactly (``gram.residual_frobenius_sq``)."""
        if self._projection is not None:
            return self._projection
        with single_threaded_blas():
            return inducing_projection(self.coeffs, self.gram)

    # -- errors ---------------------------------------------------------------------------
    @property
    def spectral_method(self) -> str:
        """The route of the spectral norms: "dense" or "lanczos"."""
        if self.spectral != "auto":
            return self.spectral
        return "lanczos" if self.n >= LANCZOS_FROM_N else "dense"

    @cached_property
    def _singular_values(self) -> tuple[np.ndarray, str]:
        """Leading singular values of T - band (descending) and their route: the top r + 1
        that the Eckart–Young optima need, or all of them by the dense route."""
        n, r = self.n, self.rank
        k = min(n, r + 1)
        limit = n if self.spectral == "dense" else DENSE_MAX_N
        with single_threaded_blas():
            return toeplitz_singular_values(self.coeffs - self.band_coeffs, k, dense_max_n=limit)

    @property
    def singular_values(self) -> np.ndarray:
        """Singular values of T - band, descending, [k] float64: all n when n <= 512 (or
        spectral="dense"), else the top r + 1 by Lanczos."""
        return self._singular_values[0].copy()

    @cached_property
    def errors(self) -> DecompositionErrors:
        """Errors of the approximation against T and the Eckart–Young optimum, computed on
        first access and cached (``errors.DecompositionErrors``)."""
        sigma, how = self._singular_values
        with single_threaded_blas():
            return decomposition_errors(
                coeffs=self.coeffs, band_coeffs=self.band_coeffs, interp=self.interp,
                A_coeffs=self.A_coeffs, gram=self.gram, projection=self._projection,
                singular_values=sigma, singular_values_method=how,
                spectral_method=self.spectral_method)


def decompose(coeffs, band: int, rank: int, causal: bool = False, method: Method = "sample",
              spectral: SpectralRoute = "auto") -> Decomposition:
    """T ≈ band + W A Wᵀ for one kernel coeffs [2n-1] (torch or numpy; float64 inside).

    band in [1, 2n-2]: the band holds lags |k| <= band//2 (band + 1 lags for an even
    band), or 0 <= k < band when causal. causal only chooses those lags; the kernel is
    used as given (pass zero negative lags for a causal T). rank in [2, n] inducing
    points (so n >= 2). method "sample" or "fit"; spectral "auto", "dense" or "lanczos"
    (the route of the spectral norms in ``errors``). Cheap: errors and singular values
    are computed when first read.
    """
    return next(decompose_channels([coeffs], band, rank, causal, method, spectral))


def decompose_channels(kernels, band: int, rank: int, causal: bool = False,
                       method: Method = "sample", spectral: SpectralRoute = "auto"
                       ) -> Iterator[Decomposition]:
    """``decompose`` of each kernel [2n-1] of ``kernels`` (a layer's channels, one length),
    in turn: W, the SKI Gram and, for "fit", the normal equations' eigendecomposition
    depend on (n, band, rank, causal) alone and are built once. One decomposition is
    alive at a time, as in a loop over ``decompose``, and each is the one it returns."""
    gram = solve = None
    for coeffs in kernels:
        t = as_kernel(coeffs)
        if gram is None:
            n = (t.shape[0] + 1) // 2
            check_decomposition(n, band, rank, causal, method, spectral)
            band, rank = int(band), int(rank)
            gram = ski_gram(interpolation(n, rank), band_lags(n, band, causal))
            if method == "fit":
                with single_threaded_blas():
                    solve = inducing_solver(gram)
        elif t.shape[0] != 2 * n - 1:
            raise ValueError(f"kernels must share one length: {t.shape[0]} coefficients "
                             f"after {2 * n - 1}")
        yield _decomposition(t, band, rank, causal, method, spectral, gram, solve)


def _decomposition(t: np.ndarray, band: int, rank: int, causal: bool, method: str,
                   spectral: str, gram: SkiGram, solve) -> Decomposition:
    """One kernel on a layout's ``gram`` (and its "fit" solver, None for "sample")."""
    n = (t.shape[0] + 1) // 2
    projection = None
    if solve is None:
        a = sample_inducing_coeffs(smooth_continuation(t, gram.lags), rank)
    else:
        with single_threaded_blas():
            projection = inducing_projection(t, gram)
            a = solve(projection, t[n - 1 + gram.lags])
    return Decomposition(t, band, rank, causal, method, spectral, a, gram, projection)
