"""Toeplitz matrices in the lag layout, and their O(n log n) product.

Letters used in shape comments:
    B  batch
    D  channels (each channel has its own Toeplitz matrix)
    n  sequence length
    L  2n - 1, the number of lags
    N  FFT size (>= 2n)
    F  N // 2 + 1, rfft bins

Lag layout: a kernel for length n is ``coeffs[..., L]`` with
``coeffs[..., n - 1 + k] = t_k``, the coefficient of lag ``k = i - j`` for
``k`` in ``[-(n-1), n-1]``. The matrix is ``T[i, j] = t_{i-j}``; a causal
kernel has ``t_k = 0`` for ``k < 0`` (lower triangular ``T``).

``dense`` is the reference; ``matvec`` is the fast product by circulant
embedding (TNN paper §3.1): a Toeplitz matrix of size n sits in the top-left
corner of a circulant of size N >= 2n - 1, and a circulant is diagonalised by
the DFT, so ``T x = irfft(rfft(c) * rfft(x_padded))[:n]``.
"""

from __future__ import annotations

import torch

from tnn_core.checks import check_int

__all__ = [
    "MAX_LENGTH",
    "check_length",
    "length_from_coeffs",
    "lags",
    "dense",
    "fft_size",
    "circulant_column",
    "kernel_spectrum",
    "apply_spectrum",
    "matvec_last",
    "matvec",
    "causal_part",
]


MAX_LENGTH = 2**20  # longest n anything here builds: a [D=64, 2n-1] float32 kernel is 512 MiB


def check_length(n: int, name: str = "n") -> int:
    """A sequence length in [1, MAX_LENGTH] as an int, checked before anything is allocated."""
    return check_int(name, n, 1, MAX_LENGTH)


def length_from_coeffs(coeffs: torch.Tensor) -> int:
    """The length n of a kernel whose last dimension holds 2n - 1 lags."""
    L = coeffs.shape[-1]
    if L < 1 or L % 2 == 0:
        raise ValueError(
            f"coeffs last dimension must be 2n-1 (odd, >= 1) lags; got {L}"
        )
    return (L + 1) // 2


def lags(n: int, device=None, dtype=torch.long) -> torch.Tensor:
    """The lags ``-(n-1) .. n-1`` in layout order, shape ``[2n-1]``."""
    check_length(n)
    return torch.arange(-(n - 1), n, device=device, dtype=dtype)


def dense(coeffs: torch.Tensor) -> torch.Tensor:
    """Dense Toeplitz matrix from lag coefficients: the reference.

    coeffs: [..., 2n-1]  ->  [..., n, n] with ``T[i, j] = coeffs[n-1+i-j]``.
    """
    n = length_from_coeffs(coeffs)
    i = torch.arange(n, device=coeffs.device)
    index = (n - 1) + i[:, None] - i[None, :]  # (n, n) lag index
    return coeffs[..., index]  # (..., n, n)


def _is_fast_size(m: int) -> bool:
    for p in (2, 3, 5):
        while m % p == 0:
            m //= p
    return m == 1


def fft_size(n: int) -> int:
    """Smallest even 5-smooth FFT size N >= 2n (pocketfft and cuFFT are fast there)."""
    check_length(n)
    N = 2 * n
    while not _is_fast_size(N):
        N += 2
    return N


def circulant_column(coeffs: torch.Tensor, N: int) -> torch.Tensor:
    """First column of the size-N circulant that embeds T.

    coeffs: [..., 2n-1]  ->  [..., N] = [t_0 .. t_{n-1}, 0 .., t_{-(n-1)} .. t_{-1}]
    """
    n = length_from_coeffs(coeffs)
    if N < 2 * n - 1:
        raise ValueError(f"N must be in [2n-1, inf) = [{2 * n - 1}, inf); got {N}")
    column = coeffs.new_zeros(*coeffs.shape[:-1], N)
    column[..., :n] = coeffs[..., n - 1 :]  # lags 0 .. n-1
    if n > 1:
        column[..., N - (n - 1) :] = coeffs[..., : n - 1]  # lags -(n-1) .. -1
    return column


def kernel_spectrum(coeffs: torch.Tensor, N: int) -> torch.Tensor:
    """rfft of the circulant column. coeffs [..., 2n-1] -> complex [..., N//2+1]."""
    return torch.fft.rfft(circulant_column(coeffs, N), n=N)  # (..., F)


def apply_spectrum(spectrum: torch.Tensor, x: torch.Tensor, N: int) -> torch.Tensor:
    """Circular convolution of x (zero-padded to N) with a kernel given by its spectrum.

    spectrum: [D, N//2+1] complex, x: [..., D, n]  ->  [..., D, n].
    Exactly ``T x`` when the kernel is a circulant column of a Toeplitz T and N >= 2n - 1.
    """
    n = x.shape[-1]
    x_f = torch.fft.rfft(x, n=N)  # (..., D, F)
    return torch.fft.irfft(x_f * spectrum, n=N)[..., :n]  # (..., D, n)


def matvec_last(coeffs: torch.Tensor, x: torch.Tensor, N: int | None = None) -> torch.Tensor:
    """Toeplitz product along the last (contiguous) axis.

    coeffs: [D, 2n-1], x: [..., D, n]  ->  [..., D, n],
    ``y[..., c, :] = dense(coeffs[c]) @ x[..., c, :]``.
    """
    n = length_from_coeffs(coeffs)
    if x.shape[-1] != n:
        raise ValueError(f"x length must equal kernel length n={n}; got {x.shape[-1]}")
    if N is None:
        N = fft_size(n)
    return apply_spectrum(kernel_spectrum(coeffs, N), x, N)


def matvec(coeffs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Fast Toeplitz product in the sequence layout, O(n log n).

    coeffs: [D, 2n-1], x: [B, n, D]  ->  [B, n, D], with
    ``y[b, :, c] = dense(coeffs[c]) @ x[b, :, c]``. Causal kernels (zero negative
    lags) take the same path. Any leading batch shape is allowed for x.
    """
    if coeffs.dim() != 2:
        raise ValueError(f"coeffs must have shape [D, 2n-1]; got {tuple(coeffs.shape)}")
    D = coeffs.shape[0]
    n = length_from_coeffs(coeffs)
    if x.dim() < 2 or x.shape[-1] != D or x.shape[-2] != n:
        raise ValueError(f"x must have shape [..., n={n}, D={D}]; got {tuple(x.shape)}")
    y = matvec_last(coeffs, x.transpose(-1, -2))  # (..., D, n)
    return y.transpose(-1, -2)  # (..., n, D)


def causal_part(coeffs: torch.Tensor) -> torch.Tensor:
    """Zero the negative lags. coeffs [..., 2n-1] -> [..., 2n-1]."""
    n = length_from_coeffs(coeffs)
    out = coeffs.clone()
    out[..., : n - 1] = 0
    return out
