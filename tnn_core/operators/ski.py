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

Speed (``tnn_core.bench``): the bidirectional operator works on the [B, n, D]
layout it is given, without a transpose: the band is a depthwise conv2d on the
channels-last view (oneDNN's NHWC kernel on CPU; its tap gradient by a blocked GEMM
from m = 14, ``band.weight_grad``), and W, Wᵀ are applied along the rows by the route
``interp_method`` names (``interp_routes.interp_w``; "block" splits W into chunks of
rows that touch <= 3 inducing points: one batched matmul, O(n); "interpolate", the
default, is the linear upsampling kernel and its adjoint).
``choose_interp_method`` picks the route per device and size from the measurements
in docs/benchmarks.md. Every route computes the same W; tests/test_bench.py checks
them against the dense W.

Letters: B batch, D channels, n length, r inducing points, m taps.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn

from tnn_core.core.interpolation import Interpolation, interpolation, interpolation_matrix
from tnn_core.core.rpe import piecewise_linear
from tnn_core.core.toeplitz import check_length, circulant_column, dense, fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.band import BandMethod, band_conv
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product
from tnn_core.operators.fast.interp import (
    InterpMethod,
    InterpPlan,
    interp_plan,
    interp_w,
    interp_wt,
)
from tnn_core.operators.fast.ski_fused import ski_bidirectional

__all__ = ["SKI", "choose_interp_method", "choose_band_method"]

_PLAN_CACHE_SIZE = 8


def choose_interp_method(n: int, r: int, device: torch.device | str) -> InterpMethod:
    """The route to W y / Wᵀ x for (n, r) on this device type (docs/benchmarks.md).

    "interpolate" (the channels-last linear upsampling and its adjoint, O(n), flat in r)
    everywhere. CPU, 2 threads, B = 8, D = 64, forward+backward: it is the fastest
    route alone at every n and r measured ("block" 1.2-1.5x slower, "dense" O(n r) up to
    17x, "gather" slower still), and inside SKI it matches "block" with W z added in
    place (``ski_fused._add_w``): 18.8 against 19.1 ms at n = 8192, 32.9 against 33.1
    at 16384 (interleaved, 31 rounds, with ``tnn_core.allocator``; without it, fresh
    32 MiB temporaries made the in-place "block" win from n = 4096). The low-rank part
    alone costs 4.4 ms on it against 5.6 by "block" W with "interpolate" Wᵀ. CUDA: the
    same single-pass kernels (not measured here).
    """
    return "interpolate"


def choose_band_method(device: torch.device | str) -> BandMethod:
    """The band convolution route: "conv_cl", the channels-last depthwise conv2d."""
    return "conv_cl"


class SKI(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        m, r = config.band, config.rank
        self.band_weight = nn.Parameter(torch.empty(dim, m).uniform_(-1, 1) / math.sqrt(m))
        self.knots = nn.Parameter(torch.randn(dim, r) * 0.5)  # RPE values at r knots on [-1, 1]
        self._interp_cache: dict[tuple, Interpolation] = {}
        self._plan_cache: OrderedDict = OrderedDict()
        self.interp_method: InterpMethod | None = None  # None: choose_interp_method(n, r, device)
        self.band_method: BandMethod | None = None  # None: choose_band_method(device)

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
        """The sparse part on the [B, n, D] layout -> [B, n, D]."""
        c = self.config
        left = c.band - 1 if c.causal else c.band // 2  # tap j has lag left - j
        method = self.band_method or choose_band_method(x.device)
        return band_conv(x, self.band_weight, left, method)  # (B, n, D)

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

    def plan(self, n: int) -> InterpPlan:
        """W for length n in every form the routes use, cached (the last few lengths)."""
        p = self.knots
        key = (n, p.device, p.dtype)
        plan = self._plan_cache.get(key)
        if plan is None:
            plan = interp_plan(n, self.config.rank, p.dtype, p.device)
            self._plan_cache[key] = plan
            while len(self._plan_cache) > _PLAN_CACHE_SIZE:
                self._plan_cache.popitem(last=False)
        return plan

    def inducing_kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [D, 2r-1] of A: a_l = k(l h), h = (n-1)/(r-1)."""
        r = self.config.rank
        h = (n - 1) / (r - 1)
        l = torch.arange(-(r - 1), r, device=self.knots.device, dtype=self.knots.dtype)
        return self.warped_kernel(l * h)  # (D, 2r-1)

    def _low_rank(self, x: torch.Tensor) -> torch.Tensor:
        """W A Wᵀ x on the [B, n, D] layout -> [B, n, D]."""
        n, r = x.shape[1], self.config.rank
        plan = self.plan(n)
        method = self.interp_method or choose_interp_method(n, r, x.device)
        Nr = fft_size(r)
        z = interp_wt(plan, x, method).transpose(1, 2)  # (B, D, r)
        if torch.is_grad_enabled():
            z = circulant_product(z, circulant_column(self.inducing_kernel(n), Nr), Nr)
        else:
            spectrum = self.cached(("inducing", n), lambda: torch.fft.rfft(
                circulant_column(self.inducing_kernel(n), Nr), n=Nr))  # (D, Nr//2+1)
            z = spectral_product(z, spectrum, Nr)  # (B, D, r)
        return interp_w(plan, z.transpose(1, 2), method)  # (B, n, D)

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

    def causal_column(self, n: int) -> torch.Tensor:
        """Lags 0..n-1 of the causal kernel band + k(t), [D, n] (== kernel(n)[:, n-1:])."""
        p = self.knots
        t = torch.arange(n, device=p.device, dtype=p.dtype)  # (n,) lags 0..n-1
        band = self.band_weight.new_zeros(self.dim, n)
        lag = self._band_lags()
        keep = lag < n
        band[:, lag[keep]] = self.band_weight[:, keep]
        return band + self.warped_kernel(t)  # (D, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        if self.config.causal:
            return super().forward(x)
        if (self.band_method or choose_band_method(x.device)) != "conv_cl":
            return self._band(x) + self._low_rank(x)  # (B, n, D)
        return self._one_node(x, with_band=True)  # (B, n, D)

    def _one_node(self, x: torch.Tensor, with_band: bool) -> torch.Tensor:
        """band + W A Wᵀ x (with_band=False: W A Wᵀ x alone) as one autograd node on the
        [B, n, D] layout (``ski_fused.ski_bidirectional``), no transpose."""
        n, r = x.shape[1], self.config.rank
        method = self.interp_method or choose_interp_method(n, r, x.device)
        Nr = fft_size(r)
        column = self.cached(("inducing column", n), lambda: circulant_column(
            self.inducing_kernel(n), Nr))  # (D, Nr)
        return ski_bidirectional(x, self.band_weight if with_band else None, column,
                                 self.plan(n), method, self.config.band // 2)  # (B, n, D)

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        if not self.config.causal:
            return self.forward(x.transpose(1, 2)).transpose(1, 2)  # (B, D, n)
        N = fft_size(n)
        if torch.is_grad_enabled():
            return circulant_product(x, self.causal_column(n), N)  # (B, D, n)
        spectrum = self.cached(("causal", n), lambda: torch.fft.rfft(self.causal_column(n), n=N))
        return spectral_product(x, spectrum, N)  # (B, D, n)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", rank={self.config.rank}, band={self.config.band}"
