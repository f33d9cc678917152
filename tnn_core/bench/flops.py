"""Deterministic costs of the Toeplitz products, in floating-point operations (flops).

A timing depends on the machine, its load and the library's kernels; a flop count
depends only on the sizes, so a student can reason with it: where the FFT product's
count falls below the dense one, and how SKI's grows with the band m. The counts
follow the steps the code runs (``tnn_core.core.toeplitz``,
``tnn_core.operators.fast.fft_product`` and ``fast.ski_fused``), with the textbook
costs below; a real FFT library does a little better or worse by a constant factor.

    one real FFT (rfft or irfft) of size N      2.5 N log2 N  (half a complex FFT's 5 N log2 N)
    one complex product of two bins             6             (4 multiplies, 2 adds)
    a multiply-add                              2

Letters: B batch, n length, D channels, N FFT size (``fft_size(n)``), F = N//2+1 bins,
r inducing points, Nr = ``fft_size(r)``, m band taps.
"""

from __future__ import annotations

import functools
import math

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import fft_size

__all__ = ["real_fft_flops", "dense_flops", "fft_product_flops", "band_taps", "ski_flops",
           "fft_crossover_n"]

_COMPLEX_PRODUCT = 6  # flops of one complex multiply: 4 real multiplies + 2 adds


def real_fft_flops(N: int) -> float:
    """2.5 N log2 N: one real-input (or real-output) FFT of size N."""
    check_int("N", N, 1)
    return 2.5 * N * math.log2(N) if N > 1 else 0.0


def _check_sizes(n: int, batch: int, dim: int) -> None:
    check_int("n", n, 1)
    check_int("batch", batch, 1)
    check_int("dim", dim, 1)


def dense_flops(n: int, batch: int = 1, dim: int = 1) -> float:
    """T x by the dense matmul: one n × n matrix times B columns per channel.

    Each output entry is n multiply-adds: 2 n² per column, 2 n² B D in all (the
    matrix is given; building it moves n² numbers and does no arithmetic)."""
    _check_sizes(n, batch, dim)
    return 2.0 * n * n * batch * dim


def fft_product_flops(n: int, batch: int = 1, dim: int = 1, kernel_transform: bool = False
                      ) -> float:
    """T x by circulant embedding (TNN §3.1): irfft(rfft(x, N) · K, N)[:n], N = fft_size(n).

    Per sequence-channel: rfft of x, the complex product over F bins, irfft.
    ``kernel_transform``: also rfft the kernel's circulant column once per channel (as
    ``toeplitz.matvec`` does on every call); False when the spectrum K is cached (as
    an operator in inference and ``live_speed`` do)."""
    _check_sizes(n, batch, dim)
    N = fft_size(n)
    bins = N // 2 + 1
    per_sequence = (real_fft_flops(N)  # rfft(x, N)
                    + _COMPLEX_PRODUCT * bins  # X · K over F bins
                    + real_fft_flops(N))  # irfft(·, N), of which the first n are kept
    kernel = real_fft_flops(N) if kernel_transform else 0.0  # rfft(column, N), per channel
    return per_sequence * batch * dim + kernel * dim


def band_taps(band: int, n: int) -> int:
    """Taps the band convolution runs at length n: m zero-extended to the symmetric
    2⌊m/2⌋ + 1 around lag 0 (``fast.band.extend_taps`` with left = m//2), m for odd m and
    m + 1 for even m, but none of a lag beyond n - 1 (at most 2n - 1)."""
    check_int("band", band, 1)
    check_int("n", n, 1)
    left = band // 2
    return 2 * min(max(left, band - 1 - left), n - 1) + 1


def ski_flops(n: int, rank: int, band: int, batch: int = 1, dim: int = 1) -> float:
    """Bidirectional SKI, band(x) + W A Wᵀ x (Algorithm 1 of "SKI to go Faster"), as
    ``fast.ski_fused`` runs it in inference (A's circulant column cached).

    Per sequence-channel:
      band     2 · taps · n      a multiply-add per tap per position (``band_taps``)
      Wᵀ x     2 · 2 · n         each position sends 2 weighted values to its 2 inducing
                                 neighbours (a multiply-add each)
      A (Wᵀx)  rfft(Nr) + 6 F_r + irfft(Nr), F_r = Nr//2+1: the r-sized FFT product
      W u      2 · 2 · n         each position is 2 weighted inducing values
      + band   n                 W A Wᵀ x added into the band's output
    Per channel (once per call, not per sequence): rfft(Nr) of A's cached column.
    """
    _check_sizes(n, batch, dim)
    check_int("rank", rank, 2)
    taps = band_taps(band, n)
    Nr = fft_size(rank)
    bins = Nr // 2 + 1
    per_sequence = (2.0 * taps * n  # the band convolution
                    + 2.0 * 2 * n  # Wᵀ x: 2 neighbours × multiply-add per position
                    + real_fft_flops(Nr) + _COMPLEX_PRODUCT * bins + real_fft_flops(Nr)  # A z
                    + 2.0 * 2 * n  # W u: 2 neighbours × multiply-add per position
                    + n)  # band(x) + W u, in place
    per_channel = real_fft_flops(Nr)  # rfft of A's circulant column (ski_fused's KA)
    return per_sequence * batch * dim + per_channel * dim


@functools.cache
def fft_crossover_n(batch: int = 1, kernel_transform: bool = False, n_max: int = 4096
                    ) -> int | None:
    """The smallest n from which the FFT product's flops are below the dense product's
    at every length up to ``n_max`` (None if not even at n_max). FFT sizes jump (5-smooth
    N), so the count is scanned at every n rather than solved for (once per argument set:
    the scan takes a tenth of a second and pages ask on every rerun)."""
    check_int("n_max", n_max, 1)
    last_not_cheaper = 0
    for n in range(1, n_max + 1):
        if fft_product_flops(n, batch, 1, kernel_transform) >= dense_flops(n, batch, 1):
            last_not_cheaper = n
    return last_not_cheaper + 1 if last_not_cheaper < n_max else None
