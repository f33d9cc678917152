"""TNO: the Toeplitz neural operator of TNN (Qin et al., ICLR 2023, §3.2-3.3).

t_k = λ^|k| · RPE(k) per channel, with RPE an MLP on the integer lag k (as in
the official code) and λ fixed, not trained. λ^0 = 1 leaves the zero lag
undecayed. The product is the FFT circulant embedding of ``toeplitz``.

Speed (``tnn_core.bench``): the FFTs run along the contiguous n axis of [B, D, n]
at a 5-smooth size N = ``fft_size(n)``; the RPE runs once per call on the lags in
circulant order (n for a causal kernel, whose column is just lags 0..n-1); the
product is one autograd node (``fast.fft_product.circulant_product``); under no_grad the
kernel spectrum is cached per length.

Letters: B batch, D channels, n length, L = 2n-1 lags, N FFT size.
"""

from __future__ import annotations

import torch

from tnn_core.core.rpe import RpeMLP
from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["TNO"]


class TNO(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        self.rpe = RpeMLP(config.rpe_width(dim), dim, config.rpe_layers, config.activation)

    def _decayed_rpe(self, k: torch.Tensor) -> torch.Tensor:
        """λ^|k| RPE(k) at lags k [P] -> [P, D]."""
        return self.rpe(k) * (self.config.decay ** k.abs())[:, None]  # (P, D)

    def kernel(self, n: int) -> torch.Tensor:
        self.check_length(n)
        p = self._param()
        start = 0 if self.config.causal else -(n - 1)
        k = torch.arange(start, n, device=p.device, dtype=p.dtype)  # (L,) or (n,) lags
        t = self._decayed_rpe(k).T  # (D, L)
        if self.config.causal:
            t = torch.cat([t.new_zeros(self.dim, n - 1), t], dim=-1)  # (D, 2n-1)
        return t

    def column(self, n: int, N: int) -> torch.Tensor:
        """First column of the size-N circulant embedding T: [D, N] (causal: [D, n], the
        rest is zero). Equal to ``toeplitz.circulant_column(self.kernel(n), N)``."""
        p = self._param()
        if self.config.causal:
            k = torch.arange(n, device=p.device, dtype=p.dtype)  # (n,) lags 0..n-1
            return self._decayed_rpe(k).T  # (D, n)
        k = torch.cat([torch.arange(n, device=p.device, dtype=p.dtype),
                       torch.arange(-(n - 1), 0, device=p.device, dtype=p.dtype)])  # (2n-1,)
        t = self._decayed_rpe(k)  # (2n-1, D): lags 0..n-1, then -(n-1)..-1
        wrap = t.new_zeros(N - (2 * n - 1), self.dim)  # (N-2n+1, D)
        return torch.cat([t[:n], wrap, t[n:]]).T  # (D, N)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        N = fft_size(n)
        if torch.is_grad_enabled():
            return circulant_product(x, self.column(n, N), N)  # (B, D, n)
        spectrum = self.cached(("spectrum", n), lambda: torch.fft.rfft(self.column(n, N), n=N))
        return spectral_product(x, spectrum, N)  # (B, D, n)
