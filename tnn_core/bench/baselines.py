"""Baselines the harness times our operators against.

* ``TnoReference``: the official TNN code's algorithm and layout (Doraemonzzz/tnn-pytorch,
  ``Tno.forward_non_causal`` / ``forward_causal`` / ``compute``), as follows:
  x [B, n, D] viewed as [B, h, n, d] with the FFT along the strided
  n axis at size 2n, the kernel assembled on every call from three RPE calls (lag 0,
  lags 1..n-1, lags -(n-1)..-1), the decay applied to each half, and
  a = [t0, t1..t(n-1), t0 (wrap slot), t(-(n-1))..t(-1)]; plain autograd throughout.
  It shares the RPE of a ``TNO`` so the two compute the same map (the official code
  puts t0 in the wrap slot, which the truncation to n outputs never reads).
* ``Attention``: multi-head softmax attention, q/k/v/out projections around
  ``F.scaled_dot_product_attention`` (flash / memory-efficient kernels where torch has
  them), causal by ``is_causal``.

Letters: B batch, n length, D channels, h heads, d = D/h, P RPE points.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.operators import TNO

__all__ = ["TnoReference", "Attention"]


class TnoReference(nn.Module):
    """The official TNO algorithm around ``tno``'s RPE and decay. x [B, n, D] -> [B, n, D]."""

    def __init__(self, tno: TNO, heads: int = 1):
        super().__init__()
        if tno.dim % heads:
            raise ValueError(f"dim must be divisible by heads={heads}; got dim={tno.dim}")
        self.tno = tno
        self.heads = heads
        self.causal = tno.config.causal
        self.gamma = tno.config.decay

    def rpe_transform(self, index: torch.Tensor) -> torch.Tensor:
        """RPE of lags index [P] -> [h, P, d] ('n (h d) -> h n d')."""
        out = self.tno.rpe(index)  # (P, D)
        P = out.shape[0]
        return out.view(P, self.heads, out.shape[1] // self.heads).transpose(0, 1)  # (h, P, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, n, D = x.shape
        h = self.heads
        x = x.view(B, n, h, D // h).transpose(1, 2)  # (B, h, n, d): n is the strided axis
        opts = dict(device=x.device, dtype=x.dtype)
        zero = self.rpe_transform(torch.zeros(1, **opts))  # (h, 1, d)
        pos = self.rpe_transform(torch.arange(1, n, **opts))  # (h, n-1, d)
        coef = torch.arange(1, n, **opts).reshape(1, -1, 1)  # (1, n-1, 1)
        gamma = self.gamma ** coef  # (1, n-1, 1)
        pos = gamma * pos
        if self.causal:
            a = torch.cat([zero, pos, zero], dim=1)  # (h, n+1, d)
        else:
            neg = self.rpe_transform(-torch.arange(1, n, **opts).flip(0))  # (h, n-1, d)
            neg = torch.flip(gamma, dims=[1]) * neg
            a = torch.cat([zero, pos, zero, neg], dim=1)  # (h, 2n, d)
        y = torch.fft.rfft(x, 2 * n, dim=-2)  # (B, h, n+1, d)
        v = torch.fft.rfft(a, 2 * n, dim=-2).unsqueeze(0)  # (1, h, n+1, d)
        out = torch.fft.irfft(v * y, 2 * n, dim=-2)[:, :, :n, :]  # (B, h, n, d)
        return out.transpose(1, 2).reshape(B, n, D)  # (B, n, D)


class Attention(nn.Module):
    """Multi-head softmax attention with SDPA. x [B, n, D] -> [B, n, D]."""

    def __init__(self, dim: int, heads: int, causal: bool):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads={heads}; got dim={dim}")
        self.heads = heads
        self.causal = causal
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, n, D = x.shape
        h = self.heads
        q, k, v = self.qkv(x).view(B, n, 3, h, D // h).permute(2, 0, 3, 1, 4)  # (B, h, n, d) x3
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, h, n, d)
        return self.out(y.transpose(1, 2).reshape(B, n, D))  # (B, n, D)
