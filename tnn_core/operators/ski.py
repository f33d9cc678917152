"""SKI-TNO: sparse plus low-rank Toeplitz operator (Algorithm 1 of "SKI to go Faster").

Bidirectional:  T ≈ T_sparse + W A Wᵀ
    * T_sparse: a depthwise convolution with m = ``band`` taps on lags
      m//2 .. m//2 - m + 1 (so |k| <= m//2).
    * W [n, r]: linear interpolation of positions 0..n-1 onto r inducing points
      evenly spaced on [0, n-1] (``interpolation``); applied in O(n) by linear
      upsampling and its adjoint.
    * A [r, r]: Toeplitz, A_ij = k(p_i - p_j) with k(t) = RPE(x(t)) and the
      inverse time warp x(t) = sign(t) λ^|t| (§3.2.2). RPE is piecewise linear on
      [-1, 1] with r knots and RPE(0) = 0. A is applied by an FFT of size >= 2r.
    Cost O(n + r log r) per channel. ``matrix(n)`` is band + W A Wᵀ, which is not
    Toeplitz; ``kernel(n)`` gives the Toeplitz kernel band + k(t) it approximates.

Causal: masking W A Wᵀ to its lower triangle defeats SKI (§3.3.1 and Appendix B),
so, as the authors do, the causal operator evaluates the interpolated kernel
band + k(t) at integer lags t >= 0 and applies it with the FFT product: O(n log n).

Speed: the bidirectional operator is one autograd node (``fast.ski_fused``) on the
[B, n, D] layout it is given, without a transpose: the band is a depthwise conv2d on
the channels-last view (``fast.band``; its tap gradient by a blocked GEMM from m = 14),
W and Wᵀ are linear upsampling and its adjoint (``fast.interp``), the fastest of the W
routes timed in ``tnn_core.bench.routes`` (docs/benchmarks.md).

Letters: B batch, D channels, n length, r inducing points, m taps.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tnn_core.core.interpolation import Interpolation, interpolation, used_columns
from tnn_core.core.rpe import piecewise_linear
from tnn_core.core.toeplitz import circulant_column, dense, fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product
from tnn_core.operators.fast.ski_fused import ski_bidirectional

__all__ = ["BandPlusLowRank", "SKI"]


class BandPlusLowRank(TokenMixer):
    """Band + W A Wᵀ with A's lag coefficients read from a smooth kernel ``low_rank_kernel(t)``
    at the fractional lags l h. Subclasses hold that kernel's parameters: ``SKI`` (the warped
    RPE of the paper) and ``ski_knots.SKIKnots`` (knots on integer lags, a converted model)."""

    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        m = config.band
        # scaled in place: on the meta device (checkpoint checks, budgets) an operation that
        # makes a new tensor from a number imports torch._dynamo, about a second per process
        self.band_weight = nn.Parameter(torch.empty(dim, m).uniform_(-1, 1).div_(math.sqrt(m)))
        self._interp_cache: dict[tuple, Interpolation] = {}

    # -- the sparse part ---------------------------------------------------------------
    def _band_lags(self) -> torch.Tensor:
        """Lag of each conv tap j: m//2 - j (bidirectional) or m-1-j (causal)."""
        m = self.config.band
        top = m - 1 if self.config.causal else m // 2
        return top - torch.arange(m)  # (m,)

    def band_kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [D, 2n-1] of the sparse part (taps with |lag| >= n dropped)."""
        t = self.band_weight.new_zeros(self.dim, 2 * n - 1)
        lag = self._band_lags()
        keep = lag.abs() < n
        t[:, (n - 1) + lag[keep]] = self.band_weight[:, keep]
        return t

    # -- the low-rank part -------------------------------------------------------------
    def low_rank_kernel(self, t: torch.Tensor) -> torch.Tensor:
        """k(t), the smooth kernel A samples, at (fractional) lags t [P] -> [D, P]."""
        raise NotImplementedError

    def interp(self, n: int) -> Interpolation:
        """W for length n as (index, weight), cached per (n, device, dtype)."""
        p = self.band_weight
        key = (n, p.device, p.dtype)
        if key not in self._interp_cache:
            self._interp_cache[key] = interpolation(n, self.config.rank, p.dtype, p.device)
        return self._interp_cache[key]

    def inducing_kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [D, 2r-1] of A: a_l = k(l h), h = (n-1)/(r-1)."""
        r = self.config.rank
        h = (n - 1) / (r - 1)
        p = self.band_weight
        l = torch.arange(-(r - 1), r, device=p.device, dtype=p.dtype)
        return self.low_rank_kernel(l * h)  # (D, 2r-1)

    # -- the operator ------------------------------------------------------------------
    def kernel(self, n: int) -> torch.Tensor:
        """Toeplitz kernel band + k(t) at integer lags [D, 2n-1] (causal: t >= 0 only).

        For the causal operator this is exactly what it applies. For the
        bidirectional one it is the kernel that band + W A Wᵀ approximates."""
        self.check_length(n)
        p = self.band_weight
        t = torch.arange(-(n - 1), n, device=p.device, dtype=p.dtype)
        k = self.band_kernel(n) + self.low_rank_kernel(t)  # (D, 2n-1)
        if self.config.causal:
            k = torch.cat([k.new_zeros(self.dim, n - 1), k[:, n - 1 :]], dim=-1)
        return k

    def matrix(self, n: int) -> torch.Tensor:
        self.check_dense_length(n, self.dim)
        if self.config.causal:
            return dense(self.kernel(n))
        columns, W = used_columns(self.interp(n))  # (u,), (n, u): u <= min(r, 2n)
        lags = columns[:, None] - columns[None, :] + self.config.rank - 1  # (u, u)
        A = self.inducing_kernel(n)[:, lags]  # (D, u, u): A on the points W uses
        return dense(self.band_kernel(n)) + W @ A @ W.T  # (D, n, n)

    def causal_column(self, n: int) -> torch.Tensor:
        """Lags 0..n-1 of the causal kernel band + k(t), [D, n] (== kernel(n)[:, n-1:])."""
        band = self.band_weight.new_zeros(self.dim, n)
        lag = self._band_lags()
        keep = lag < n
        band[:, lag[keep]] = self.band_weight[:, keep]
        return band + self.causal_tail(n)  # (D, n)

    def causal_tail(self, n: int) -> torch.Tensor:
        """k(t) at the lags t = 0..n-1, [D, n]."""
        p = self.band_weight
        return self.low_rank_kernel(torch.arange(n, device=p.device, dtype=p.dtype))

    def checked_forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, D) -> (B, n, D)
        if self.config.causal:
            return super().checked_forward(x)
        n, r = x.shape[1], self.config.rank
        column = self.cached(("inducing column", n), lambda: circulant_column(
            self.inducing_kernel(n), fft_size(r)))  # (D, Nr)
        return ski_bidirectional(x, self.band_weight, column, r, self.config.band // 2)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        if not self.config.causal:
            return self.checked_forward(x.transpose(1, 2)).transpose(1, 2)  # (B, D, n)
        N = fft_size(n)
        if torch.is_grad_enabled():
            return circulant_product(x, self.causal_column(n), N)  # (B, D, n)
        spectrum = self.cached(("causal", n), lambda: torch.fft.rfft(self.causal_column(n), n=N))
        return spectral_product(x, spectrum, N)  # (B, D, n)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", rank={self.config.rank}, band={self.config.band}"


class SKI(BandPlusLowRank):
    """SKI-TNO of the paper: k(t) = RPE(sign(t) λ^|t|), RPE piecewise linear with r knots."""

    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        # the RPE at r knots on [-1, 1], scaled in place (BandPlusLowRank: the meta device)
        self.knots = nn.Parameter(torch.randn(dim, config.rank).mul_(0.5))

    def low_rank_kernel(self, t: torch.Tensor) -> torch.Tensor:
        """k(t) = RPE(sign(t) λ^|t|) at (fractional) lags t [P] -> [D, P]."""
        x = torch.sign(t) * self.config.decay ** t.abs()  # (P,) in [-1, 1]
        return piecewise_linear(self.knots, x)  # (D, P)
