"""Small, honest timers: medians of repeated runs (the full harness is ``tnn_core.bench``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from tnn_core.core.toeplitz import dense, matvec

__all__ = ["median_ms", "fft_vs_dense"]


def _sync(device: torch.device | str | None) -> None:
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def median_ms(fn: Callable[[], object], repeats: int = 21, warmup: int = 3,
              device: torch.device | str | None = None) -> float:
    """Median wall time of ``fn()`` in milliseconds over ``repeats`` runs after ``warmup``."""
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def fft_vs_dense(coeffs: torch.Tensor, batch: int = 8, seed: int = 0, repeats: int = 15,
                 device: str = "cpu") -> dict:
    """Push one random input through the FFT product and the dense matmul.

    coeffs: [2n-1]. Returns the max |difference| of the two outputs, both median
    timings (ms, building the matrix included for dense), and n.
    """
    coeffs = coeffs.to(device=device, dtype=torch.float64)
    n = (coeffs.shape[-1] + 1) // 2
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, 1, generator=g, dtype=torch.float64).to(device)  # (B, n, 1)
    c = coeffs[None]  # (1, 2n-1)

    def fast():
        return matvec(c, x)

    def slow():
        return dense(coeffs) @ x[..., 0].T  # (n, B)

    diff = (fast()[..., 0].T - slow()).abs().max().item()
    return {
        "n": n,
        "max_abs_diff": diff,
        "fft_ms": median_ms(fast, repeats, device=device),
        "dense_ms": median_ms(slow, repeats, device=device),
    }
