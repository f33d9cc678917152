"""One kernel as the pages draw it: its lags and coefficients, and its Toeplitz matrix at the
rows and columns a heatmap shows (Basics, Inspect's channels and atlas tiles), and as a line
(``display_line``: at most about a chart's width of points).

coeffs [2n-1] holds t_{-(n-1)} .. t_{n-1}: coeffs[n-1+k] = t_k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.dense import HEATMAP_CELLS, dense_toeplitz, display_indices, display_line

__all__ = ["KernelView", "kernel_view", "display_line"]


@dataclass(frozen=True)
class KernelView:
    """A kernel and its Toeplitz matrix at the rows/columns a heatmap draws."""

    n: int
    lags: np.ndarray  # [2n-1] k = -(n-1) .. n-1
    coeffs: np.ndarray  # [2n-1] t_k
    indices: np.ndarray  # [s] rows (and columns) drawn: analysis.dense.display_indices
    step: int  # 1 row/column in `step` is drawn
    matrix: np.ndarray  # [s, s] T[i, j] = t_{i-j} for i, j in indices
    limit: float  # max |t_k| (1 for the zero kernel): symmetric colour limits


def kernel_view(coeffs: np.ndarray, max_cells: int = HEATMAP_CELLS) -> KernelView:
    """The kernel coeffs [2n-1] and T sampled at ``display_indices(n, max_cells)``."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (len(coeffs) + 1) // 2
    indices = display_indices(n, max_cells)
    step = int(indices[1] - indices[0]) if len(indices) > 1 else 1
    return KernelView(n=n, lags=np.arange(-(n - 1), n), coeffs=coeffs, indices=indices,
                      step=step, matrix=dense_toeplitz(coeffs, indices),
                      limit=float(np.abs(coeffs).max()) or 1.0)
