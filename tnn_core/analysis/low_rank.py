"""SKI's low-rank part W A Wᵀ in numpy: the one product behind the errors and the heatmaps.

W [n, r] holds the linear-interpolation weights onto r inducing points (``core.interpolation``),
two nonzeros a row, kept as a scipy.sparse matrix; A [r, r] is the Toeplitz matrix of the
lag coefficients a [2r-1]. ``low_rank_matrix`` gives W A Wᵀ densely at the rows and columns a
heatmap draws (or all of them, for the dense errors); ``low_rank_product`` applies it to a
vector, O(n + r²), for Lanczos at large n. Both go through ``interpolation_weights``.

Letters: n length, r inducing points, s rows and columns drawn.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.core.interpolation import Interpolation

__all__ = ["interpolation_weights", "low_rank_matrix", "low_rank_product", "residual_matrix"]


def interpolation_weights(interp: Interpolation) -> scipy.sparse.csr_array:
    """W [n, r] as a sparse matrix: row i has weights (w_i0, w_i1) at columns (p_i, p_i + 1)."""
    n, r = interp.n, interp.r
    index = interp.index.cpu().numpy()  # (n,)
    weight = interp.weight.detach().cpu().double().numpy()  # (n, 2)
    rows = np.repeat(np.arange(n), 2)  # (2n,)
    cols = np.stack([index, index + 1], axis=1).ravel()  # (2n,)
    return scipy.sparse.csr_array((weight.ravel(), (rows, cols)), shape=(n, r))


def low_rank_matrix(interp: Interpolation, A_coeffs: np.ndarray,
                    idx: np.ndarray | None = None) -> np.ndarray:
    """(W A Wᵀ)[idx, idx] = W[idx] A W[idx]ᵀ [s, s] (all n rows and columns when idx is None).

    A_coeffs: [2r-1], a_l at A_coeffs[r-1+l]."""
    W = interpolation_weights(interp)
    if idx is not None:
        W = W[np.asarray(idx)]  # (s, r)
    return np.asarray((W @ dense_toeplitz(A_coeffs)) @ W.T)  # (s, r) (r, s) -> (s, s)


def low_rank_product(interp: Interpolation, A_coeffs: np.ndarray
                     ) -> Callable[[np.ndarray], np.ndarray]:
    """x [n] -> W A Wᵀ x [n], numpy float64."""
    W = interpolation_weights(interp)
    A = dense_toeplitz(A_coeffs)  # (r, r)

    def product(x: np.ndarray) -> np.ndarray:
        return W @ (A @ (W.T @ x))  # (n,)

    return product


def residual_matrix(smooth_coeffs: np.ndarray, interp: Interpolation, A_coeffs: np.ndarray,
                    idx: np.ndarray | None = None) -> np.ndarray:
    """(T - B - W A Wᵀ)[idx, idx] [s, s], given the lags of T - B, smooth_coeffs [2n-1]."""
    return dense_toeplitz(smooth_coeffs, idx) - low_rank_matrix(interp, A_coeffs, idx)
