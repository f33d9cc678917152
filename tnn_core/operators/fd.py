"""FD-TNO: the frequency-domain Toeplitz operator of "SKI to go Faster".

The RPE MLP is evaluated on the real-frequency grid ω_k = 2πk/N, k = 0..N/2,
with N = ``fft_size(n)`` >= 2n, so a longer sequence is a finer frequency grid.

* Causal (Algorithm 2): the MLP gives the real part R(ω); the imaginary part is
  -Hilbert{R}, computed by ``spectrum.causal_spectrum``. The kernel is exactly causal.
* Bidirectional (§3.3.2): the MLP outputs 2D values, real and imaginary parts,
  with the imaginary part forced to 0 at ω = 0 and π. No kernel FFT is needed:
  one FFT fewer than TNO.

There is no explicit decay: the smoothness of the activation (relu, silu,
gelu) sets the decay of the kernel in time (Theorems 2-4).

Letters: B batch, D channels, n length, N FFT size, F = N//2+1 bins.
"""

from __future__ import annotations

import torch

from ..rpe import RpeMLP
from ..spectrum import (
    bidirectional_spectrum,
    causal_spectrum,
    frequency_grid,
    kernel_from_spectrum,
)
from ..toeplitz import apply_spectrum, check_length, fft_size
from .base import TokenMixer
from .config import OperatorConfig

__all__ = ["FD"]


class FD(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        out = dim if config.causal else 2 * dim
        self.rpe = RpeMLP(config.rpe_width(dim), out, config.rpe_layers, config.activation)

    def spectrum(self, N: int) -> torch.Tensor:
        """The kernel's frequency response on the size-N grid, complex [D, N//2+1]."""
        p = self._param()
        omega = frequency_grid(N, device=p.device, dtype=p.dtype)  # (F,)
        response = self.rpe(omega).T  # (D or 2D, F)
        if self.config.causal:
            return causal_spectrum(response, N)  # (D, F)
        return bidirectional_spectrum(response[: self.dim], response[self.dim :])  # (D, F)

    def kernel(self, n: int) -> torch.Tensor:
        N = fft_size(check_length(n))
        return kernel_from_spectrum(self.spectrum(N), n, N)  # (D, 2n-1)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        N = fft_size(x.shape[-1])
        return apply_spectrum(self.spectrum(N), x, N)  # (B, D, n)
