"""Split one Toeplitz kernel into SKI's sparse band plus low-rank W A Wᵀ.

Algorithm 1 of "SKI to go Faster" approximates T (T[i, j] = t_{i-j}) by
    T ≈ B + W A Wᵀ
* B: banded Toeplitz on the band lags |k| <= band//2 (or 0 <= k < band, causal),
  lags with |k| >= n dropped. Given the low-rank part, its best taps (in
  Frobenius) are the diagonal means of T - W A Wᵀ on those lags.
* W [n, r]: linear interpolation onto r inducing points evenly spaced on
  [0, n-1], spacing h = (n-1)/(r-1) (``tnn_core.interpolation``).
* A [r, r]: Toeplitz with lag coefficients a_l at the fractional lags l h.
  ``method="sample"``: a_l = k̃(l h), k̃ the kernel continued linearly across the
  band (the spike removed, the smooth part kept), read between integer lags by
  linear interpolation. ``method="fit"``: a is the joint least-squares optimum of
  ||T - B - W A Wᵀ||_F over a with B's taps optimal (``gram.fit_inducing_coeffs``),
  so its Frobenius error is never above sample's.

Theorem 1 bounds the low-rank error through the linear-interpolation factor
h²/8 (``Decomposition.theorem1_factor``). ``Decomposition.errors`` compares the
approximation with T and with the Eckart–Young optimum σ_{r+1}(T - B).

Errors and singular values are computed when first read, then cached
(``errors``): building a Decomposition costs O(n m + r²) (plus r FFT products
for "fit").

Letters: n length, r rank (inducing points), m band lags, N FFT size.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.errors import decomposition_errors
from tnn_core.analysis.gram import (
    SkiGram,
    band_lags,
    fit_inducing_coeffs,
    inducing_projection,
    ski_gram,
)
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import kernel_rfft, toeplitz_singular_values
from tnn_core.core.interpolation import apply_w, apply_wt, inducing_points, interpolation
from tnn_core.core.toeplitz import fft_size, matvec_last

__all__ = ["METHODS", "SPECTRAL_ROUTES", "LANCZOS_FROM_N", "Decomposition", "decompose",
           "as_kernel", "check_decomposition", "smooth_continuation", "sample_inducing_coeffs"]

Method = Literal["sample", "fit"]
SpectralRoute = Literal["auto", "dense", "lanczos"]
METHODS: tuple[str, ...] = ("sample", "fit")
SPECTRAL_ROUTES: tuple[str, ...] = ("auto", "dense", "lanczos")

# spectral="auto" takes Lanczos from this n on. Measured with bench.spectral_crossover on
# the 2-core CPU (median of 9 fresh ``.errors``, spike_smooth λ = 0.99, r = 32, band = 9;
# dense / Lanczos ms): n = 64: 1.05 / 2.8, 128: 2.4 / 3.2, 192: 4.6 / 4.8, 224: 6.0 / 5.8,
# 256: 9.6 / 6.4, 384: 25 / 13.5, 512: 52 / 23. Both routes take the singular values of
# T - band densely up to n = 512; the route decides the two spectral norms.
LANCZOS_FROM_N = 224
DENSE_MAX_N = 512  # all singular values of T - band, densely, up to this n


def as_kernel(coeffs, name: str = "coeffs") -> torch.Tensor:
    """A 1-D finite kernel [2n-1] as a float64 torch tensor (a copy)."""
    t = torch.as_tensor(np.asarray(coeffs) if not isinstance(coeffs, torch.Tensor) else coeffs)
    t = t.detach().to("cpu", torch.float64).clone()
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D with 2n-1 lags; got shape {tuple(t.shape)}")
    if t.shape[0] % 2 == 0:
        raise ValueError(f"{name} length must be odd, 2n-1 lags -(n-1)..n-1; got {t.shape[0]}")
    bad = ~torch.isfinite(t)
    if bad.any():
        n = (t.shape[0] + 1) // 2
        where = (torch.nonzero(bad).flatten() - (n - 1)).tolist()[:5]
        raise ValueError(f"{name} must be finite; got NaN or Inf at lags {where}")
    return t


def _check_int(name: str, value, low: int, high: int, span: str) -> int:
    is_int = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not is_int or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {span} = [{low}, {high}]; got {value!r}")
    return int(value)


def _check_choice(name: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_decomposition(n: int, band, rank, causal, method="sample", spectral="auto") -> None:
    """Validate decompose's arguments for a kernel of length n (ValueError naming the field)."""
    if n < 2:
        raise ValueError(f"n must be >= 2 to decompose: rank must be in [2, n] and [2, {n}] is "
                         f"empty; got a kernel of {2 * n - 1} lag (n = {n})")
    _check_int("rank", rank, 2, n, "[2, n]")
    _check_int("band", band, 1, 2 * n - 2, "[1, 2n-2]")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {causal!r}")
    _check_choice("method", method, METHODS)
    _check_choice("spectral", spectral, SPECTRAL_ROUTES)


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
    """T ≈ band + W A Wᵀ for one kernel; see the module docstring. Build with ``decompose``."""

    def __init__(self, coeffs: torch.Tensor, band: int, rank: int, causal: bool, method: str,
                 spectral: str, A_coeffs: np.ndarray, gram: SkiGram, projection: np.ndarray | None,
                 smooth: np.ndarray):
        n = (coeffs.shape[0] + 1) // 2
        self.n, self.band, self.rank, self.causal = n, band, rank, causal
        self.method, self.spectral = method, spectral
        self.coeffs = coeffs  # [2n-1]
        self.A_coeffs = torch.from_numpy(np.asarray(A_coeffs, dtype=np.float64))  # [2r-1]
        self.smooth_coeffs = torch.from_numpy(smooth)  # [2n-1] k̃, the continued kernel
        self.interp = gram.interp
        self.band_lags = gram.lags  # [m]
        self.gram = gram  # SkiGram: diagonal sums and Gram of the SKI basis
        if projection is not None:
            self.__dict__["projection"] = projection  # already computed by "fit"
        t_band = coeffs.numpy()[n - 1 + gram.lags]
        mu = gram.diagonal @ A_coeffs / gram.counts  # (m,) diagonal means of W A Wᵀ
        band_coeffs = torch.zeros_like(coeffs)
        band_coeffs[n - 1 + torch.from_numpy(gram.lags)] = torch.from_numpy(t_band - mu)
        self.band_coeffs = band_coeffs  # [2n-1], zero outside the band lags
        self._N = fft_size(n)

    def __repr__(self) -> str:
        return (f"Decomposition(n={self.n}, band={self.band}, rank={self.rank}, "
                f"causal={self.causal}, method={self.method!r})")

    # -- the pieces ---------------------------------------------------------------------
    @property
    def spacing(self) -> float:
        """h = (n-1)/(r-1), the inducing-point spacing."""
        return (self.n - 1) / (self.rank - 1)

    @property
    def theorem1_factor(self) -> float:
        """h²/8: Theorem 1's linear-interpolation factor max|ψ(i)|/2! <= h²/8."""
        return self.spacing**2 / 8

    @cached_property
    def inducing_points(self) -> torch.Tensor:  # [r]
        return inducing_points(self.n, self.rank)

    # Dense pieces are built in numpy (``norms`` explains why), returned as torch.
    @cached_property
    def W(self) -> torch.Tensor:  # [n, r]
        index, weight = self.interp.index.numpy(), self.interp.weight.numpy()
        W = np.zeros((self.n, self.rank))
        rows = np.arange(self.n)
        W[rows, index] = weight[:, 0]
        W[rows, index + 1] += weight[:, 1]
        return torch.from_numpy(W)

    @cached_property
    def A(self) -> torch.Tensor:  # [r, r]
        return torch.from_numpy(dense_toeplitz(self.A_coeffs))

    def band_matrix(self) -> torch.Tensor:  # [n, n]
        return torch.from_numpy(dense_toeplitz(self.band_coeffs))

    def low_rank_matrix(self) -> torch.Tensor:  # [n, n]
        W = self.W.numpy()
        return torch.from_numpy((W @ self.A.numpy()) @ W.T)

    def matrix(self) -> torch.Tensor:  # [n, n]
        return self.band_matrix() + self.low_rank_matrix()

    def residual_matrix(self) -> torch.Tensor:  # [n, n]
        smooth = dense_toeplitz(self.coeffs - self.band_coeffs)  # T - band
        return torch.from_numpy(smooth - self.low_rank_matrix().numpy())

    # -- fast products --------------------------------------------------------------------
    def _check_x(self, x) -> torch.Tensor:
        x = torch.as_tensor(x).to(torch.float64)
        if x.dim() < 1 or x.shape[-1] != self.n:
            raise ValueError(f"x must have shape [..., n={self.n}]; got {tuple(x.shape)}")
        return x

    def _low_rank(self, x: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """W A Wᵀ x (or W Aᵀ Wᵀ x): x [..., n] -> [..., n], O(n + r²)."""
        z = apply_wt(self.interp, x)  # (..., r)
        if self.rank > 256:
            a = self.A_coeffs.flip(0) if transpose else self.A_coeffs
            z = matvec_last(a[None], z.unsqueeze(-2)).squeeze(-2)  # (..., r) by FFT
        else:
            z = z @ (self.A if transpose else self.A.T)  # (..., r)
        return apply_w(self.interp, z)  # (..., n)

    def _band(self, x: torch.Tensor) -> torch.Tensor:
        """Band part as a convolution: y_i = Σ_k β_k x_{i-k}. x [..., n] -> [..., n]."""
        lags = self.band_lags
        lo, hi = int(lags[0]), int(lags[-1])
        taps = self.band_coeffs[self.n - 1 + lo : self.n + hi].flip(0)  # (m,): β_hi .. β_lo
        flat = F.pad(x.reshape(-1, 1, self.n), (hi, -lo))  # (B, 1, n + m - 1)
        return F.conv1d(flat, taps[None, None]).reshape(x.shape)  # (..., n)

    def matvec(self, x) -> torch.Tensor:
        """(band + W A Wᵀ) x. x [..., n] -> [..., n]."""
        x = self._check_x(x)
        return self._band(x) + self._low_rank(x)

    def _toeplitz(self, lag_coeffs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Toeplitz(lag_coeffs) x by FFT. x [..., n] -> [..., n]."""
        return matvec_last(lag_coeffs[None], x.unsqueeze(-2), self._N).squeeze(-2)

    def residual_matvec(self, x) -> torch.Tensor:
        """(T - band - W A Wᵀ) x, with T and band in one FFT product. x [..., n] -> [..., n]."""
        x = self._check_x(x)
        return self._toeplitz(self.coeffs - self.band_coeffs, x) - self._low_rank(x)

    def residual_rmatvec(self, x) -> torch.Tensor:
        """(T - band - W A Wᵀ)ᵀ x. x [..., n] -> [..., n]."""
        x = self._check_x(x)
        smooth_t = (self.coeffs - self.band_coeffs).flip(0)  # transpose: lags reversed
        return self._toeplitz(smooth_t, x) - self._low_rank(x, transpose=True)

    # -- errors ---------------------------------------------------------------------------
    @property
    def spectral_method(self) -> str:
        """The route of the spectral norms: "dense" or "lanczos"."""
        if self.spectral != "auto":
            return self.spectral
        return "lanczos" if self.n >= LANCZOS_FROM_N else "dense"

    @cached_property
    def projection(self) -> np.ndarray:
        """b[l] = <W S_l Wᵀ, T>_F, [2r-1] (``gram.inducing_projection``)."""
        with single_threaded_blas():
            return inducing_projection(kernel_rfft(self.coeffs, self._N), self.interp, self._N)

    @cached_property
    def singular_values_and_method(self) -> tuple[np.ndarray, str]:
        """Leading singular values of T - band (numpy, descending) and their route."""
        n, r = self.n, self.rank
        k = min(n, max(min(2 * r + 2, 256), r + 1))
        limit = n if self.spectral == "dense" else DENSE_MAX_N
        with single_threaded_blas():
            return toeplitz_singular_values(self.coeffs - self.band_coeffs, k, dense_max_n=limit)

    @property
    def singular_values(self) -> torch.Tensor:
        """Singular values of T - band, descending, [k] float64: all n when n <= 512 (or
        spectral="dense"), else the top max(min(2r+2, 256), r+1) by Lanczos."""
        return torch.from_numpy(self.singular_values_and_method[0].copy())

    @cached_property
    def errors(self) -> dict:
        """Errors of the approximation, computed on first access and cached.

        spectral, frobenius: ||T - matrix()|| in the 2- and Frobenius norms;
        relative_spectral, relative_frobenius: divided by ||T|| (nan, with a ``note``,
        for an all-zero kernel); optimal_spectral, optimal_frobenius: the Eckart–Young
        optima σ_{r+1}(T - band) and (Σ_{i>r} σ_i²)^½, which no rank-r low-rank part can
        beat with this band; norm_spectral, norm_frobenius: ||T||; spectral_method:
        "dense" or "lanczos"; singular_values_method: how the σ_i were found.
        """
        with single_threaded_blas():
            return decomposition_errors(self)


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
    t = as_kernel(coeffs)
    n = (t.shape[0] + 1) // 2
    check_decomposition(n, band, rank, causal, method, spectral)
    band, rank = int(band), int(rank)
    interp = interpolation(n, rank)
    gram = ski_gram(interp, band_lags(n, band, causal))
    t_np = t.numpy()
    smooth = smooth_continuation(t_np, gram.lags)
    projection = None
    if method == "sample":
        a = sample_inducing_coeffs(smooth, rank)
    else:
        N = fft_size(n)
        with single_threaded_blas():
            projection = inducing_projection(kernel_rfft(t_np, N), interp, N)
            a = fit_inducing_coeffs(gram, projection, t_np[n - 1 + gram.lags])
    return Decomposition(t, band, rank, causal, method, spectral, a, gram, projection, smooth)
