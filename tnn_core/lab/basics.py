"""Page "Toeplitz basics": a kernel, its matrix as a heatmap draws it, and the FFT product.

coeffs [2n-1] holds t_{-(n-1)} .. t_{n-1}: coeffs[n-1+k] = t_k. ``kernel_view`` is also
what the Inspect page draws for one learned channel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.dense import HEATMAP_CELLS, dense_toeplitz, display_indices
from tnn_core.bench import timing

__all__ = ["KernelView", "kernel_view", "FftCheck", "fft_check"]


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


@dataclass(frozen=True)
class FftCheck:
    """The FFT product against the dense matmul on one random input (float64, batch 8)."""

    max_abs_diff: float  # max |FFT − dense| over the outputs
    fft_ms: float  # median of 15 runs
    dense_ms: float  # median of 15 runs, building the n × n matrix included
    speedup: float  # dense_ms / fft_ms


def fft_check(coeffs: np.ndarray, seed: int, device: str) -> FftCheck:
    """Time both products now, on this machine (a measurement: do not cache it)."""
    result = timing.fft_vs_dense(torch.from_numpy(np.asarray(coeffs)), seed=seed,
                                 device=device)
    return FftCheck(max_abs_diff=result["max_abs_diff"], fft_ms=result["fft_ms"],
                    dense_ms=result["dense_ms"],
                    speedup=result["dense_ms"] / max(result["fft_ms"], 1e-9))
