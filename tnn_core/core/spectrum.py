"""Frequency-domain kernels: the discrete Hilbert transform and causal spectra.

Algorithm 2 of "SKI to go Faster" (FD-TNN, causal): model only the real part
R(ω) of a kernel's frequency response on the grid ω_k = 2πk/N, k = 0..N/2, and
obtain the imaginary part as -Hilbert{R}. The resulting time-domain kernel is
exactly causal.

We compute it with one irfft and one rfft (the standard "analytic signal"
construction, transposed): the irfft of a real response is an even real
sequence h[t]; keep t = 0 and t = N/2 with weight 1, double t = 1..N/2-1 and
zero the negative times t = N/2+1..N-1. The authors' code also doubles t = N/2;
weight 1 is what keeps the real part of the spectrum equal to R.

Letters: D channels, N even FFT size, F = N//2 + 1 rfft bins.
"""

from __future__ import annotations

import math

import torch

from tnn_core.checks import check_int

__all__ = [
    "frequency_grid",
    "causal_weights",
    "causal_kernel",
    "causal_spectrum",
    "kernel_from_spectrum",
]


def _check_even(N: int) -> None:
    if check_int("N", N, 2) % 2:
        raise ValueError(f"N must be an even integer in [2, inf); got {N!r}")


def frequency_grid(N: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """ω_k = 2πk/N for k = 0..N/2, shape [N//2+1], from 0 to π."""
    _check_even(N)
    return torch.arange(N // 2 + 1, device=device, dtype=dtype) * (2 * math.pi / N)


def causal_weights(N: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """Time weights of the discrete Hilbert construction, shape [N]:
    1 at t = 0 and t = N/2, 2 at t = 1..N/2-1, 0 at negative times."""
    _check_even(N)
    w = torch.zeros(N, device=device, dtype=dtype)
    w[0] = 1
    w[1 : N // 2] = 2
    w[N // 2] = 1
    return w


def causal_kernel(real_response: torch.Tensor, N: int) -> torch.Tensor:
    """Time-domain causal kernel whose spectrum has real part ``real_response``.

    real_response: [..., N//2+1] real  ->  [..., N] real, zero for t > N/2.
    """
    _check_even(N)
    if real_response.shape[-1] != N // 2 + 1:
        raise ValueError(
            f"real_response must have N//2+1 = {N // 2 + 1} bins; got {real_response.shape[-1]}"
        )
    even = torch.fft.irfft(real_response, n=N)  # (..., N) even: h[t] = h[N-t]
    w = causal_weights(N, device=even.device, dtype=even.dtype)
    return even * w  # (..., N) causal


def causal_spectrum(real_response: torch.Tensor, N: int) -> torch.Tensor:
    """R(ω) - i·Hilbert{R}(ω), the spectrum of a causal kernel.

    real_response: [..., N//2+1] real  ->  complex [..., N//2+1].
    """
    return torch.fft.rfft(causal_kernel(real_response, N), n=N)  # (..., F)


def kernel_from_spectrum(spectrum: torch.Tensor, n: int, N: int) -> torch.Tensor:
    """Lag coefficients [..., 2n-1] of the Toeplitz matrix that ``apply_spectrum`` applies.

    spectrum: complex [..., N//2+1] with N >= 2n - 1. The circular kernel c = irfft(spectrum)
    gives t_k = c[k mod N] for k in [-(n-1), n-1].
    """
    _check_even(N)
    if N < 2 * n - 1:
        raise ValueError(f"N must be in [2n-1, inf) = [{2 * n - 1}, inf); got {N}")
    c = torch.fft.irfft(spectrum, n=N)  # (..., N)
    negative = c[..., N - (n - 1) :] if n > 1 else c[..., :0]  # lags -(n-1) .. -1
    return torch.cat([negative, c[..., :n]], dim=-1)  # (..., 2n-1)
