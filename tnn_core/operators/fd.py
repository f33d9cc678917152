"""FD-TNO: the frequency-domain Toeplitz operator of "SKI to go Faster".

The RPE MLP is evaluated on the real-frequency grid ω_k = 2πk/N, k = 0..N/2,
with N = ``grid_size(n)`` >= 2n, so a longer sequence is a finer frequency grid.
``config.fft_grid`` chooses N: "smooth" = ``fft_size(n)`` (5-smooth), or "power_of_two",
the next power of two >= 2n of the authors' ``TnoFD`` (ski-tnn laxtnn/modules/tno_fd.py,
whose RPE reads linspace(0, π, N/2+1): the same grid). The grid changes the kernel: the
RPE is sampled at other frequencies.

* Causal (Algorithm 2): the MLP gives the real part R(ω); the imaginary part is
  -Hilbert{R}, computed by ``spectrum.causal_spectrum``. ``kernel(n)`` is exactly
  zero at negative lags: its lags 0..n-1 are computed in time (``causal_column``)
  and the negative lags are not computed at all.
* Bidirectional (§3.3.2): the MLP outputs 2D values, real and imaginary parts,
  with the imaginary part forced to 0 at ω = 0 and π. No kernel FFT is needed:
  one FFT fewer than TNO.

There is no explicit decay: the smoothness of the response sets the decay of the
kernel in time (Theorems 2-4). ``config.fd_input`` chooses what the MLP reads:

* "omega" (Algorithm 2): R(ω) on [0, π]. The response of a real kernel is even, so the
  MLP's slope at ω = 0 and π becomes a kink of the periodic response, and the kernel
  decays like 1/t² (causal). Bidirectional, the imaginary half is odd and forced to 0
  at 0 and π: a jump, and the kernel decays like 1/t.
* "cosine": R(cos ω) and, bidirectional, sin ω · I(cos ω). Both are smooth 2π-periodic
  functions of ω (even and odd), zero-slope and zero where they must be, so the
  response is as smooth as the MLP on the whole circle: the premise of Theorems 2-3.

Speed (``tnn_core.bench``): the RPE runs on N/2+1 frequencies (TNO: 2n-1 lags);
bidirectional needs no kernel FFT at all, the spectrum goes straight into one
autograd node (``fast.fft_product.spectral_product``) whose backward needs no FFT over
D rows either. Causal applies the causal kernel's lags 0..n-1 as a circulant
column (``fast.fft_product.circulant_product``). Under no_grad the spectrum is cached
per length.

Letters: B batch, D channels, n length, N FFT size, F = N//2+1 bins.
"""

from __future__ import annotations

import torch

from tnn_core.core.rpe import RpeMLP
from tnn_core.core.spectrum import causal_spectrum, frequency_grid, kernel_from_spectrum
from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["FD"]


class FD(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        out = dim if config.causal else 2 * dim
        self.rpe = RpeMLP(config.rpe_width(dim), out, config.rpe_layers, config.activation,
                          config.rpe_residual)

    def grid_size(self, n: int) -> int:
        """The FFT size N >= 2n for length n (``config.fft_grid``): ``fft_size(n)``, or the
        next power of two >= 2n (ski-tnn TnoFD: n = 100 -> 256)."""
        if self.config.fft_grid == "power_of_two":
            return 1 << (2 * self.check_length(n) - 1).bit_length()
        return fft_size(n)

    def rpe_input(self, N: int) -> torch.Tensor:
        """What the RPE reads on the size-N grid, [F]: ω_k, or cos ω_k (``config.fd_input``)."""
        p = self._param()
        omega = frequency_grid(N, device=p.device, dtype=p.dtype)  # (F,)
        return torch.cos(omega) if self.config.fd_input == "cosine" else omega

    def real_response(self, N: int) -> torch.Tensor:
        """Causal: the real part R(ω) of the response on the size-N grid, [D, F]."""
        return self.rpe(self.rpe_input(N)).T  # (D, F)

    def spectrum(self, N: int) -> torch.Tensor:
        """The kernel's frequency response on the size-N grid, complex [D, N//2+1]."""
        if self.config.causal:
            return causal_spectrum(self.real_response(N).contiguous(), N)  # (D, F)
        # the response of a real kernel from its two halves (§3.3.2 of SKI to go Faster):
        # out[:D] + i weight out[D:] for out = rpe(input).T, with the output layer applied as
        # W hᵀ so that the real and imaginary halves come out contiguous
        p = self._param()
        h = self.rpe.features(self.rpe_input(N))  # (F, e)
        out = torch.addmm(self.rpe.out.bias[:, None], self.rpe.out.weight, h.T)  # (2D, F)
        if self.config.fd_input == "cosine":
            weight = torch.sin(frequency_grid(N, device=p.device, dtype=p.dtype))  # (F,) odd
        else:
            weight = torch.ones(h.shape[0], device=p.device, dtype=p.dtype)  # (F,)
        weight[0] = weight[-1] = 0  # a real kernel's response is real at ω = 0 and π
        return torch.complex(out[: self.dim], out[self.dim :] * weight)  # (D, F)

    def kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [D, 2n-1] of the map applied at length n. Causal: lags 0..n-1
        from ``causal_column`` and exact zeros at lags -(n-1)..-1, not an irfft's round-off."""
        N = self.grid_size(n)
        if not self.config.causal:
            return kernel_from_spectrum(self.spectrum(N), n, N)  # (D, 2n-1)
        column = self.causal_column(n, N)  # (D, n)
        return torch.cat([column.new_zeros(self.dim, n - 1), column], dim=-1)  # (D, 2n-1)

    def causal_column(self, n: int, N: int) -> torch.Tensor:
        """Lags 0..n-1 of the causal kernel, [D, n]: ``causal_kernel(R, N)[:, :n]``, whose
        weights are 1 at t = 0 and 2 at t = 1..n-1 < N/2."""
        p = self._param()
        even = torch.fft.irfft(self.real_response(N), n=N)[:, :n]  # (D, n)
        weight = torch.full((n,), 2.0, device=p.device, dtype=p.dtype)
        weight[0] = 1.0
        return even * weight  # (D, n)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        N = self.grid_size(n)
        if not torch.is_grad_enabled():
            return spectral_product(x, self.cached(("spectrum", N), lambda: self.spectrum(N)), N)
        if self.config.causal:
            return circulant_product(x, self.causal_column(n, N), N)  # (B, D, n)
        return spectral_product(x, self.spectrum(N), N)  # (B, D, n)
