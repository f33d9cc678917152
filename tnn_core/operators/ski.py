"""SKI-TNO: sparse plus low-rank Toeplitz operator (Algorithm 1 of "SKI to go Faster").

Bidirectional:  T ≈ T_sparse + W A Wᵀ
    * T_sparse: a depthwise convolution with m = ``band`` taps on lags
      m//2 .. m//2 - m + 1 (so |k| <= m//2).
    * W [n, r]: linear interpolation of positions 0..n-1 onto r inducing points
      evenly spaced on [0, n-1] (``interpolation``), built once per n and cached
      as (index, weight); applied by gather and scatter-add in O(n).
    * A [r, r]: Toeplitz, A_ij = k(p_i - p_j) with k(t) = RPE(x(t)) and the
      inverse time warp x(t) = sign(t) λ^|t| (§3.2.2). RPE is piecewise linear on
      [-1, 1] with r knots and RPE(0) = 0. A is applied by an FFT of size >= 2r.
    Cost O(n + r log r) per channel. ``matrix(n)`` is band + W A Wᵀ, which is not
    Toeplitz; ``kernel(n)`` gives the Toeplitz kernel band + k(t) it approximates.

Causal: masking W A Wᵀ to its lower triangle defeats SKI (§3.3.1 and Appendix B),
so, as the authors do, the causal operator evaluates the interpolated kernel
band + k(t) at integer lags t >= 0 and applies it with the FFT product: O(n log n).

Letters: B batch, D channels, n length, r inducing points, m taps.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..interpolation import Interpolation, apply_w, apply_wt, interpolation, interpolation_matrix
from ..rpe import piecewise_linear
from ..toeplitz import check_length, dense, fft_size, matvec_last
from .base import TokenMixer
from .config import OperatorConfig

__all__ = ["SKI"]


class SKI(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        m, r = config.band, config.rank
        self.band_weight = nn.Parameter(torch.empty(dim, m).uniform_(-1, 1) / math.sqrt(m))
        self.knots = nn.Parameter(torch.randn(dim, r) * 0.5)  # RPE values at r knots on [-1, 1]
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

    def _band(self, x: torch.Tensor) -> torch.Tensor:
        m = self.config.band
        left = m - 1 if self.config.causal else m // 2
        x = F.pad(x, (left, m - 1 - left))  # (B, D, n + m - 1)
        return F.conv1d(x, self.band_weight[:, None, :], groups=self.dim)  # (B, D, n)

    # -- the low-rank part -------------------------------------------------------------
    def warped_kernel(self, t: torch.Tensor) -> torch.Tensor:
        """k(t) = RPE(sign(t) λ^|t|) at (fractional) lags t [P] -> [D, P]."""
        x = torch.sign(t) * self.config.decay ** t.abs()  # (P,) in [-1, 1]
        return piecewise_linear(self.knots, x)  # (D, P)

    def interp(self, n: int) -> Interpolation:
        """W for length n as (index, weight), cached per (n, device, dtype)."""
        p = self.knots
        key = (n, p.device, p.dtype)
        if key not in self._interp_cache:
            self._interp_cache[key] = interpolation(n, self.config.rank, p.dtype, p.device)
        return self._interp_cache[key]

    def inducing_kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [D, 2r-1] of A: a_l = k(l h), h = (n-1)/(r-1)."""
        r = self.config.rank
        h = (n - 1) / (r - 1)
        l = torch.arange(-(r - 1), r, device=self.knots.device, dtype=self.knots.dtype)
        return self.warped_kernel(l * h)  # (D, 2r-1)

    def _low_rank(self, x: torch.Tensor) -> torch.Tensor:
        n, r = x.shape[-1], self.config.rank
        w = self.interp(n)
        z = apply_wt(w, x)  # (B, D, r)
        z = matvec_last(self.inducing_kernel(n), z, fft_size(r))  # (B, D, r)
        return apply_w(w, z)  # (B, D, n)

    # -- the operator ------------------------------------------------------------------
    def kernel(self, n: int) -> torch.Tensor:
        """Toeplitz kernel band + k(t) at integer lags [D, 2n-1] (causal: t >= 0 only).

        For the causal operator this is exactly what it applies. For the
        bidirectional one it is the kernel that band + W A Wᵀ approximates."""
        check_length(n)
        t = torch.arange(-(n - 1), n, device=self.knots.device, dtype=self.knots.dtype)
        k = self.band_kernel(n) + self.warped_kernel(t)  # (D, 2n-1)
        if self.config.causal:
            k = torch.cat([k.new_zeros(self.dim, n - 1), k[:, n - 1 :]], dim=-1)
        return k

    def matrix(self, n: int) -> torch.Tensor:
        check_length(n)
        if self.config.causal:
            return dense(self.kernel(n))
        W = interpolation_matrix(self.interp(n))  # (n, r)
        A = dense(self.inducing_kernel(n))  # (D, r, r)
        return dense(self.band_kernel(n)) + W @ A @ W.T  # (D, n, n)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        if self.config.causal:
            return matvec_last(self.kernel(n), x, fft_size(n))  # (B, D, n)
        return self._band(x) + self._low_rank(x)  # (B, D, n)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", rank={self.config.rank}, band={self.config.band}"
