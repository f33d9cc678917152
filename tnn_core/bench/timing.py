"""Small, honest timers and how to show them: medians with their spread, and ratios that
never round to "0.0×" (the full harness is ``tnn_core.bench``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

import tnn_core.bench.flops as flops
from tnn_core.bench.harness import interleaved_times, quartiles
from tnn_core.core.toeplitz import dense, matvec

__all__ = ["median_ms", "fft_dense_difference", "fft_vs_dense", "format_ratio", "format_ms",
           "format_flops"]


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


def _fft_and_dense(coeffs: torch.Tensor, batch: int, seed: int, device: str):
    """(n, the FFT product, the dense product) of one random input [B, n] (float64)."""
    coeffs = coeffs.to(device=device, dtype=torch.float64)
    n = (coeffs.shape[-1] + 1) // 2
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, 1, generator=g, dtype=torch.float64).to(device)  # (B, n, 1)
    c = coeffs[None]  # (1, 2n-1)

    def fast():
        return matvec(c, x)  # (B, n, 1)

    def slow():
        return dense(coeffs) @ x[..., 0].T  # (n, B)

    return n, fast, slow


def fft_dense_difference(coeffs: torch.Tensor, batch: int = 8, seed: int = 0,
                         device: str = "cpu") -> float:
    """max |FFT product − dense product| over one random input (float64): round-off, as
    the FFT product is exact (NaN or inf where the product overflows float64)."""
    _, fast, slow = _fft_and_dense(coeffs, batch, seed, device)
    return (fast()[..., 0].T - slow()).abs().max().item()


def fft_vs_dense(coeffs: torch.Tensor, batch: int = 8, seed: int = 0, repeats: int = 15,
                 warmup: int = 3, device: str = "cpu") -> dict:
    """Push one random input through the FFT product and the dense matmul.

    coeffs: [2n-1]. Both start from the coefficients: the FFT product transforms the
    kernel (``toeplitz.matvec``), the dense one builds the n × n matrix. ``warmup``
    untimed runs of each, then ``repeats`` interleaved rounds. Returns n, batch, repeats,
    warmup, the max |difference| of the two outputs, for each product (``fft``, ``dense``) the
    median ms, its quartiles ``*_p25_ms``, ``*_p75_ms`` and the flops of the whole batch
    (``tnn_core.bench.flops``), and ``flop_crossover_n``: the n from which the FFT
    product needs fewer flops than the dense one at this batch.
    """
    n, fast, slow = _fft_and_dense(coeffs, batch, seed, device)
    diff = (fast()[..., 0].T - slow()).abs().max().item()
    times = interleaved_times({"fft": fast, "dense": slow}, repeats, warmup, device)
    out = dict(n=n, batch=batch, repeats=repeats, warmup=warmup, max_abs_diff=diff,
               fft_flops=flops.fft_product_flops(n, batch, 1, kernel_transform=True),
               dense_flops=flops.dense_flops(n, batch, 1),
               flop_crossover_n=flops.fft_crossover_n(batch, kernel_transform=True))
    for key, values in times.items():
        out[f"{key}_ms"] = statistics.median(values)
        out[f"{key}_p25_ms"], out[f"{key}_p75_ms"] = quartiles(values)
    return out


def _significant(x: float, digits: int) -> str:
    """x to ``digits`` significant figures, in plain notation from 1e-4 to 1e6."""
    if x == 0 or not 1e-4 <= abs(x) < 1e6:
        return f"{x:.{digits}g}"
    rounded = float(f"{x:.{digits}g}")
    return f"{rounded:.{max(0, digits - 1 - _exponent(rounded))}f}"


def _exponent(x: float) -> int:
    return int(f"{abs(x):e}".split("e")[1])


def format_ratio(x: float) -> str:
    """A speed-up or cost ratio to 2 significant figures: 0.0043×, 0.98×, 12×, 1200×."""
    return f"{_significant(x, 2)}×"


def format_ms(median: float, p25: float | None = None, p75: float | None = None) -> str:
    """A median time to 3 significant figures, with its IQR (p75 − p25) when given."""
    text = f"{_significant(median, 3)} ms"
    if p25 is not None and p75 is not None:
        text += f" (IQR {_significant(p75 - p25, 2)} ms)"
    return text


def format_flops(count: float) -> str:
    """A flop count to 2 significant figures with an SI prefix: 58 flop, 3.2 kflop, 1.1 Gflop."""
    count = float(f"{count:.2g}")  # round first, so that 999 reads 1.0 kflop
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= scale:
            return f"{_significant(count / scale, 2)} {prefix}flop"
    return f"{_significant(count, 2)} flop"
