"""SSM: a causal Toeplitz operator held as a diagonal state-space model.

The TNN paper (§4, "State space") notes that a time-invariant SSM (S4, S4D; not a
selective one such as Mamba, whose A and B depend on the input) is a TNN whose kernel is
k_l = C A^(l-1) B for l >= 1. This operator is that special case with A diagonal and
complex (S4D's convention: Gu, Gupta, Goel and Ré, NeurIPS 2022), per channel, s modes and
a real output:

    k_0 = d,    k_l = Re Σ_{j<s} c_j z_j^(l-1)   (l >= 1)

It is what a converted model's causal layers become (``compress.recurrent``: each learned
kernel fitted by ``analysis.exponential_fit``), and it runs two ways with one map:

* ``mix`` (a whole sequence): the kernel's lags 0..n-1 as a circulant column, one FFT
  product, as TNO's causal kernel;
* ``recurrence()`` (one token at a time): h_{t+1} = z ⊙ h_t + x_t, y_t = d x_t + Re(c · h_t),
  constant work and memory per token whatever the context (``generate.incremental``).

The poles and residues are stored as (real, imaginary) pairs, [D, s, 2], because
safetensors has no complex dtype. A built (not converted) operator starts as S4D-Lin:
z_j = exp(Δ (-1/2 + iπ j)), log Δ uniform in [log 0.001, log 0.1] per channel.

Letters: B batch, D channels, n length, s modes, N FFT size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["SSM", "modal_column", "mode_powers"]

_CHUNK_ELEMENTS = 1 << 22  # D * s * lags computed at once: bounds the Vandermonde's memory


def mode_powers(poles: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """z^e for complex poles [D, s] and real exponents [C] -> complex [D, s, C].

    Taken as |z|^e e^{i e arg z} in real arithmetic, so a pole at 0 is exact (0^0 = 1) and
    the gradient is defined."""
    radius, angle = poles.abs()[..., None], poles.angle()[..., None]  # (D, s, 1)
    return torch.polar(torch.pow(radius, exponent), angle * exponent)  # (D, s, C)


def modal_column(poles: torch.Tensor, residues: torch.Tensor, direct: torch.Tensor,
                 n: int) -> torch.Tensor:
    """Lags 0..n-1 of k: complex poles and residues [D, s], real direct [D] -> real [D, n],
    the lags taken in chunks of bounded memory."""
    D, s = poles.shape
    chunk = max(1, _CHUNK_ELEMENTS // max(1, D * s))
    pieces = [direct[:, None]]  # (D, 1) lag 0
    for start in range(0, n - 1, chunk):
        exponent = torch.arange(start, min(n - 1, start + chunk), device=direct.device,
                                dtype=direct.dtype)  # (C,) l - 1
        powers = mode_powers(poles, exponent)  # (D, s, C)
        pieces.append((residues[..., None] * powers).real.sum(dim=1))  # (D, C)
    return torch.cat(pieces, dim=1)  # (D, n)


class SSM(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        s = config.state
        log_step = torch.empty(dim, 1).uniform_(math.log(1e-3), math.log(1e-1))  # (D, 1)
        step = log_step.exp()
        real = -0.5 * step.expand(dim, s)  # (D, s)
        imaginary = math.pi * torch.arange(s, dtype=torch.float32) * step  # (D, s)
        z = torch.exp(torch.complex(real, imaginary))  # (D, s)
        c = torch.randn(dim, s, dtype=torch.complex64) / math.sqrt(s)  # (D, s)
        self.poles = nn.Parameter(torch.view_as_real(z).contiguous())  # (D, s, 2)
        self.residues = nn.Parameter(torch.view_as_real(c).contiguous())  # (D, s, 2)
        self.direct = nn.Parameter(torch.randn(dim))  # (D,)

    def complex_poles(self) -> torch.Tensor:  # -> complex (D, s)
        return torch.view_as_complex(self.poles)

    def complex_residues(self) -> torch.Tensor:  # -> complex (D, s)
        return torch.view_as_complex(self.residues)

    def column(self, n: int) -> torch.Tensor:
        """Lags 0..n-1 of the kernel, [D, n]."""
        return modal_column(self.complex_poles(), self.complex_residues(), self.direct, n)

    def kernel(self, n: int) -> torch.Tensor:
        self.check_length(n)
        column = self.column(n)  # (D, n)
        return torch.cat([column.new_zeros(self.dim, n - 1), column], dim=-1)  # (D, 2n-1)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        N = fft_size(n)
        if torch.is_grad_enabled():
            return circulant_product(x, self.column(n), N)  # (B, D, n)
        spectrum = self.cached(("spectrum", n), lambda: torch.fft.rfft(self.column(n), n=N))
        return spectral_product(x, spectrum, N)  # (B, D, n)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, causal=True, state={self.config.state}"
