"""Toeplitz matrices in numpy, whole or at the rows and columns a heatmap draws.

The numpy twin of ``core.toeplitz.dense`` for the analysis hot path and the pages: torch's
indexing kernels go parallel, and on a busy 2-core CPU each parallel region waited a
time slice. coeffs [2n-1]: coeffs[n-1+k] = t_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["HEATMAP_CELLS", "display_indices", "dense_toeplitz"]

HEATMAP_CELLS = 192  # rows/columns a heatmap draws at most; larger matrices show every k-th


def display_indices(n: int, max_cells: int = HEATMAP_CELLS) -> np.ndarray:
    """Rows/columns a heatmap of an n × n matrix draws: all, or every ⌈n/max_cells⌉-th."""
    step = max(1, math.ceil(n / max_cells))
    return np.arange(0, n, step)


def dense_toeplitz(coeffs, idx: np.ndarray | None = None) -> np.ndarray:
    """numpy T[i, j] = t_{i-j} for i, j in ``idx`` (all of 0..n-1 when None): [s, s].

    coeffs: [2n-1], torch or numpy; returned in float64.
    """
    t = coeffs.detach().cpu().numpy() if isinstance(coeffs, torch.Tensor) else coeffs
    t = np.asarray(t, dtype=np.float64)
    n = (len(t) + 1) // 2
    i = np.arange(n) if idx is None else np.asarray(idx)
    return t[(n - 1) + i[:, None] - i[None, :]]
