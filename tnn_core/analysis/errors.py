"""Errors of a SKI decomposition, and the Eckart–Young optimum to compare them with.

For T ≈ B + W A Wᵀ (``decompose``) with residual R = T - B - W A Wᵀ:

* spectral ||R||_2: dense, max |eigvalsh(R J)|; or Lanczos on R J. R is
  persymmetric (Toeplitz parts, and W A Wᵀ on a symmetric inducing grid), so
  R J is symmetric and σ(R) = |λ(R J)| (``persymmetric``).
* Frobenius ||R||_F: dense up to n = 512, else exact from lag coefficients and
  the Gram matrices of ``gram`` (no n × n):
      ||R||² = ||T - W A Wᵀ||² - Σ_{k in band} c_k (t_k - μ_k)².
* Eckart–Young: no rank-r matrix is closer to T - B than its truncated SVD, so
  ||R||_2 >= σ_{r+1}(T - B) and ||R||_F >= (Σ_{i>r} σ_i²)^½ (W A Wᵀ has rank <= r).
  With only the top r values, Σ_{i>r} σ_i² = ||T - B||²_F - Σ_{i<=r} σ_i², and
  ||T - B||²_F = Σ_k (n - |k|) (t_k - β_k)² is exact from coefficients.

Theorem 1 of "SKI to go Faster" bounds ||W A Wᵀ - T_{r,opt}||_2 with the
linear-interpolation factor h²/8; these are the two sides of that comparison.

Letters: n length, r rank, m band lags.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.gram import residual_frobenius_sq
from tnn_core.analysis.norms import NumpyProduct
from tnn_core.analysis.persymmetric import (
    capped_norm,
    persymmetric_singular_values,
    toeplitz_norm,
    toeplitz_product,
)

if TYPE_CHECKING:
    from tnn_core.analysis.decompose import Decomposition

__all__ = ["frobenius_sq", "optimal_errors", "low_rank_product", "residual_hankel_product",
           "decomposition_errors", "ZERO_KERNEL_NOTE"]

DENSE_FROBENIUS_MAX_N = 512  # form R densely for its Frobenius norm up to this n
LANCZOS_TOL = 1e-10  # relative Ritz residual for the spectral norms
ZERO_KERNEL_NOTE = "relative errors are undefined for an all-zero kernel (||T|| = 0)"


def frobenius_sq(coeffs) -> float:
    """||Toeplitz(coeffs)||²_F = Σ_k (n - |k|) t_k², exact. coeffs [2n-1]."""
    t = np.asarray(coeffs, dtype=np.float64)
    n = (len(t) + 1) // 2
    return float(np.sum((n - np.abs(np.arange(-(n - 1), n))) * t**2))


def optimal_errors(sigma: np.ndarray, complete: bool, r: int, n: int,
                   smooth_sq: float) -> tuple[float, float]:
    """Eckart–Young (σ_{r+1}, (Σ_{i>r} σ_i²)^½) from singular values of T - B, descending.

    complete: sigma holds all n values (sum the tail directly, no cancellation); else
    it holds at least the top r + 1 and the tail is smooth_sq - Σ_{i<=r} σ_i².
    """
    if r >= n:
        return 0.0, 0.0
    if complete:
        return float(sigma[r]), float(np.sqrt(np.sum(sigma[r:] ** 2)))
    tail = smooth_sq - float(np.sum(sigma[:r] ** 2))
    return float(sigma[r]) if len(sigma) > r else float("nan"), math.sqrt(max(tail, 0.0))


def low_rank_product(dec: Decomposition, transpose: bool = False) -> NumpyProduct:
    """numpy x [n] -> W A Wᵀ x (or W Aᵀ Wᵀ x), O(n + r²) (FFT for A when r > 256)."""
    index = dec.interp.index.numpy()  # (n,)
    w0, w1 = dec.interp.weight[:, 0].numpy(), dec.interp.weight[:, 1].numpy()  # (n,)
    r = dec.rank
    a = dec.A_coeffs.numpy()[::-1].copy() if transpose else dec.A_coeffs.numpy()  # Aᵀ: reversed
    if r > 256:
        apply_a = toeplitz_product(a)
    else:
        A = dec.A.numpy().T if transpose else dec.A.numpy()

        def apply_a(z):
            return A @ z

    def product(x: np.ndarray) -> np.ndarray:
        z = np.bincount(index, x * w0, r) + np.bincount(index + 1, x * w1, r)  # (r,) Wᵀ x
        z = apply_a(z)  # (r,)
        return z[index] * w0 + z[index + 1] * w1  # (n,) W z

    return product


def residual_hankel_product(dec: Decomposition) -> NumpyProduct:
    """numpy x [n] -> R J x = (T - B) J x - W A Wᵀ J x, symmetric in x (module docstring)."""
    toeplitz = toeplitz_product(dec.coeffs - dec.band_coeffs, flip=True)
    low_rank = low_rank_product(dec)

    def product(x: np.ndarray) -> np.ndarray:
        return toeplitz(x) - low_rank(x[::-1].copy())

    return product


def decomposition_errors(dec: Decomposition) -> dict:
    """The ``Decomposition.errors`` dict (see there)."""
    n, r = dec.n, dec.rank
    route = dec.spectral_method
    t = dec.coeffs.numpy()
    smooth = (dec.coeffs - dec.band_coeffs).numpy()  # T - B
    norm_sq, smooth_sq = frobenius_sq(t), frobenius_sq(smooth)
    R = dec.residual_matrix().numpy() if route == "dense" or n <= DENSE_FROBENIUS_MAX_N else None
    if route == "dense":
        spectral = persymmetric_singular_values(R)[0]
        norm_spectral = persymmetric_singular_values(dense_toeplitz(t))[0]
    else:
        spectral = capped_norm(residual_hankel_product(dec), n, tol=LANCZOS_TOL).values[0]
        norm_spectral = toeplitz_norm(t, tol=LANCZOS_TOL)
    if n <= DENSE_FROBENIUS_MAX_N:
        frobenius = float(np.linalg.norm(R))
    else:
        t_band = t[n - 1 + dec.band_lags]
        frobenius = math.sqrt(residual_frobenius_sq(dec.gram, dec.A_coeffs.numpy(),
                                                    dec.projection, t_band, norm_sq))
    sigma, how = dec.singular_values_and_method
    optimal_spectral, optimal_frobenius = optimal_errors(sigma, how == "dense", r, n, smooth_sq)
    norm_frobenius = math.sqrt(norm_sq)
    out = {
        "spectral": float(spectral),
        "frobenius": frobenius,
        "relative_spectral": float("nan"),
        "relative_frobenius": float("nan"),
        "optimal_spectral": optimal_spectral,
        "optimal_frobenius": optimal_frobenius,
        "norm_spectral": float(norm_spectral),
        "norm_frobenius": norm_frobenius,
        "spectral_method": route,
        "singular_values_method": how,
    }
    if norm_frobenius > 0:
        out["relative_spectral"] = out["spectral"] / out["norm_spectral"]
        out["relative_frobenius"] = frobenius / norm_frobenius
    else:
        out["note"] = ZERO_KERNEL_NOTE
    return out

