"""TNO: the Toeplitz neural operator of TNN (Qin et al., ICLR 2023, §3.2-3.3).

t_k = act(γ^|k| · RPE(p(k, n))) per channel, the official code's ``Tno`` (tnn-pytorch
tnn_pytorch/tno.py), with

* p(k, n) what the RPE reads at lag k of a length-n kernel (``config.positions``): the
  integer lag k (par_type 1, the default), k/(n-1) (2) or exp(k/(n-1)) (3, causal only);
* γ the decay (``config.decay_mode``): λ = ``config.decay`` for every channel (default),
  a fixed rate per channel ``decay_rates`` [D] (use_decay), or λ + (1-λ)·sigmoid(g) with
  g = ``decay_logits`` [D] learned (use_multi_decay). γ^0 = 1 leaves the zero lag undecayed;
  the negative lags decay as γ^|k|;
* act the kernel activation (``config.kernel_activation``, their act_type; identity by
  default), applied to every lag computed. A causal kernel's negative lags are exact
  zeros, never passed through it (their activation runs before the FFT's zero padding).

The product is the FFT circulant embedding of ``toeplitz``.

Speed (``tnn_core.bench``): the FFTs run along the contiguous n axis of [B, D, n]
at a 5-smooth size N = ``fft_size(n)``; the RPE runs once per call on the lags in
circulant order (n for a causal kernel, whose column is just lags 0..n-1); the
product is one autograd node (``fast.fft_product.circulant_product``); under no_grad the
kernel spectrum is cached per length (positions "fraction" make the kernel depend on n:
every column is computed for its own n).

Letters: B batch, D channels, n length, L = 2n-1 lags, P lags evaluated, N FFT size.
"""

from __future__ import annotations

import torch
from torch import nn

from tnn_core.core.rpe import ACTIVATIONS, RpeMLP
from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["TNO"]


class TNO(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        self.rpe = RpeMLP(config.rpe_width(dim), dim, config.rpe_layers, config.activation,
                          config.rpe_residual)
        self.kernel_activation = ACTIVATIONS[config.kernel_activation]
        if config.decay_mode == "channel":  # γ [h, 1, d] of use_decay, as [D = h·d]
            self.decay_rates = nn.Parameter(torch.full((dim,), config.decay),
                                            requires_grad=False)
        elif config.decay_mode == "learned":  # g [h, 1, d] of use_multi_decay, as [D]
            self.decay_logits = nn.Parameter(torch.zeros(dim))

    def rpe_positions(self, k: torch.Tensor, n: int) -> torch.Tensor:
        """What the RPE reads at lags k [P] of a length-n kernel, [P] (``config.positions``):
        k, k/(n-1) or exp(k/(n-1)); at n = 1 the only lag, 0, reads 0, 0 or 1."""
        mode = self.config.positions
        if mode == "lag":
            return k
        scaled = k / (n - 1) if n > 1 else k  # (P,)
        return scaled if mode == "fraction" else torch.exp(scaled)

    def channel_decay(self) -> torch.Tensor:
        """γ per channel [D]: λ, ``decay_rates`` or λ + (1-λ)·sigmoid(``decay_logits``)."""
        mode, decay = self.config.decay_mode, self.config.decay
        if mode == "channel":
            return self.decay_rates
        if mode == "learned":
            return decay + (1 - decay) * torch.sigmoid(self.decay_logits)
        p = self._param()
        return torch.full((self.dim,), decay, device=p.device, dtype=p.dtype)

    def _decayed_rpe(self, k: torch.Tensor, n: int) -> torch.Tensor:
        """act(γ^|k| RPE(p(k, n))) at lags k [P] of a length-n kernel -> [P, D]."""
        decay = self.channel_decay() ** k.abs()[:, None]  # (P, D), 1 at k = 0
        return self.kernel_activation(self.rpe(self.rpe_positions(k, n)) * decay)  # (P, D)

    def kernel(self, n: int) -> torch.Tensor:
        self.check_length(n)
        p = self._param()
        start = 0 if self.config.causal else -(n - 1)
        k = torch.arange(start, n, device=p.device, dtype=p.dtype)  # (L,) or (n,) lags
        t = self._decayed_rpe(k, n).T  # (D, L)
        if self.config.causal:
            t = torch.cat([t.new_zeros(self.dim, n - 1), t], dim=-1)  # (D, 2n-1)
        return t

    def column(self, n: int, N: int) -> torch.Tensor:
        """First column of the size-N circulant embedding T: [D, N] (causal: [D, n], the
        rest is zero). Equal to ``toeplitz.circulant_column(self.kernel(n), N)``."""
        p = self._param()
        if self.config.causal:
            k = torch.arange(n, device=p.device, dtype=p.dtype)  # (n,) lags 0..n-1
            return self._decayed_rpe(k, n).T  # (D, n)
        k = torch.cat([torch.arange(n, device=p.device, dtype=p.dtype),
                       torch.arange(-(n - 1), 0, device=p.device, dtype=p.dtype)])  # (2n-1,)
        t = self._decayed_rpe(k, n)  # (2n-1, D): lags 0..n-1, then -(n-1)..-1
        wrap = t.new_zeros(N - (2 * n - 1), self.dim)  # (N-2n+1, D)
        return torch.cat([t[:n], wrap, t[n:]]).T  # (D, N)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        N = fft_size(n)
        if torch.is_grad_enabled():
            return circulant_product(x, self.column(n, N), N)  # (B, D, n)
        spectrum = self.cached(("spectrum", n), lambda: torch.fft.rfft(self.column(n, N), n=N))
        return spectral_product(x, spectrum, N)  # (B, D, n)
