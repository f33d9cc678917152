"""Toeplitz matrices in numpy, whole or at the rows and columns a heatmap draws.

The numpy twin of ``core.toeplitz.dense`` for the analysis hot path and the pages: torch's
indexing kernels go parallel, and on a busy 2-core CPU each parallel region waited a
time slice. coeffs [2n-1]: coeffs[n-1+k] = t_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["HEATMAP_CELLS", "LINE_POINTS", "display_indices", "display_line",
           "dense_toeplitz", "diagonal_lengths", "frobenius_sq"]

HEATMAP_CELLS = 192  # rows/columns a heatmap draws at most; larger matrices show every k-th
LINE_POINTS = 1024  # points a line chart draws (plus one per gap): about its width in pixels


def display_indices(n: int, max_cells: int = HEATMAP_CELLS) -> np.ndarray:
    """Rows/columns a heatmap of an n × n matrix draws: all, or every ⌈n/max_cells⌉-th."""
    step = max(1, math.ceil(n / max_cells))
    return np.arange(0, n, step)


def display_line(x: np.ndarray, y: np.ndarray, max_points: int = LINE_POINTS
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The points of the line (x, y) [L] a chart draws: all of them, or per run of
    consecutive points the smallest and the largest y in their order, so a spike as narrow
    as one point still shows at its height; a run with a gap (NaN) keeps one."""
    x, y = np.asarray(x), np.asarray(y)
    if len(x) <= max_points:
        return x, y
    per = math.ceil(len(y) / (max_points // 2))  # points per run
    runs = np.concatenate([y, np.full(-len(y) % per, np.nan)]).reshape(-1, per)
    gaps = np.isnan(runs)
    lowest = np.where(gaps, np.inf, runs).argmin(axis=1)  # an all-gap run keeps its first
    highest = np.where(gaps, -np.inf, runs).argmax(axis=1)
    start = np.arange(len(runs)) * per
    first_gap = (start + gaps.argmax(axis=1))[gaps.any(axis=1)]  # a gap stays a gap
    idx = np.unique(np.concatenate([start + lowest, start + highest, first_gap]))  # sorted
    idx = idx[idx < len(y)]
    return x[idx], y[idx]


def dense_toeplitz(coeffs, idx: np.ndarray | None = None) -> np.ndarray:
    """numpy T[i, j] = t_{i-j} for i, j in ``idx`` (all of 0..n-1 when None): [s, s].

    coeffs: [2n-1], torch or numpy; returned in float64.
    """
    t = coeffs.detach().cpu().numpy() if isinstance(coeffs, torch.Tensor) else coeffs
    t = np.asarray(t, dtype=np.float64)
    n = (len(t) + 1) // 2
    i = np.arange(n) if idx is None else np.asarray(idx)
    return t[(n - 1) + i[:, None] - i[None, :]]


def diagonal_lengths(n: int) -> np.ndarray:
    """n - |k| for k = -(n-1)..n-1: how many entries of an n × n Toeplitz T hold t_k. [2n-1]"""
    return n - np.abs(np.arange(-(n - 1), n))


def frobenius_sq(coeffs) -> float:
    """||Toeplitz(coeffs)||²_F = Σ_k (n - |k|) t_k², exact. coeffs [2n-1]."""
    t = np.asarray(coeffs, dtype=np.float64)
    n = (len(t) + 1) // 2
    return float(np.sum(diagonal_lengths(n) * t**2))
