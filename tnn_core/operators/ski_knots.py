"""SKI with A's lag coefficients held directly: the operator of a converted model.

``tnn_core.compress`` turns a trained TNO or FD-TNO into band + W A Wᵀ per channel. Its A
is fitted to the learned kernel (``analysis.decompose``) and is in general not the
warped piecewise-linear RPE of SKI-TNN (§3.2.2 of "SKI to go Faster"), so this variant
holds the smooth kernel k(t) itself, as knots on the lags the decomposition used:

    k(t) piecewise linear through (l h0, c_l),  h0 = (n0-1)/(r-1),  n0 = ``knot_length``
        bidirectional: 2r-1 knots, l = -(r-1)..r-1, so |t| <= n0-1 is covered;
        causal: r knots, l = 0..r-1 (the tail of a causal kernel, lags t >= 0);
    k(t) = 0 for |t| > n0-1: the source kernel is known only up to its training length.

At n = n0, A's coefficients a_l = k(l h0) are the knots themselves; at another n the
inducing points spread over [0, n-1] (h = (n-1)/(r-1)) and A reads k at l h, as SKI
does. Everything else (the band, W, the fused product, the causal FFT product) is
``ski.BandPlusLowRank``'s.

Letters: D channels, r rank, n0 the knots' length, P lags asked for.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.ski import BandPlusLowRank

__all__ = ["SKIKnots"]


class SKIKnots(BandPlusLowRank):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        count = config.rank if config.causal else 2 * config.rank - 1
        self.lag_knots = nn.Parameter(torch.zeros(dim, count))  # (D, r) or (D, 2r-1): c_l

    @property
    def knot_spacing(self) -> float:
        """h0 = (n0-1)/(r-1), the lag between two knots."""
        return (self.config.knot_length - 1) / (self.config.rank - 1)

    def low_rank_kernel(self, t: torch.Tensor) -> torch.Tensor:
        """k(t) at (fractional) lags t [P] -> [D, P]: linear between knots, 0 beyond n0-1."""
        c = self.lag_knots
        first = 0 if self.config.causal else -(self.config.rank - 1)  # the first knot's l
        last = c.shape[-1] - 1
        s = (t / self.knot_spacing - first).clamp(0, last)  # (P,) fractional knot index
        left = torch.clamp(torch.floor(s), max=last - 1).long()  # (P,)
        frac = (s - left).to(c.dtype)  # (P,)
        k = c[:, left] * (1 - frac) + c[:, left + 1] * frac  # (D, P)
        inside = t.abs() <= self.config.knot_length - 1  # (P,)
        if self.config.causal:
            inside &= t >= 0
        return k * inside.to(c.dtype)  # (D, P)

    def causal_tail(self, n: int) -> torch.Tensor:
        """k(t) at the lags t = 0..n-1, [D, n], causal. The knots sit at l h0 and the lags
        0..n0-1 at l h0 · (r-1)/(n0-1) steps, so k there is a linear upsampling of the r
        knots to n0 points (align_corners): one op forward and backward, where the
        gather of ``low_rank_kernel`` costs a scatter-add in its backward."""
        n0 = self.config.knot_length
        tail = F.interpolate(self.lag_knots[None], size=n0, mode="linear",
                             align_corners=True)[0]  # (D, n0) lags 0..n0-1
        return tail[:, :n] if n <= n0 else F.pad(tail, (0, n - n0))  # zero beyond n0-1
