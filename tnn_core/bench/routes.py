"""The W routes SKI does not use, kept to time against the one it does.

    route_w(plan, z, route)   W z along the rows: [B, r, D] -> [B, n, D]
    route_wt(plan, x, route)  Wᵀ x along the rows: [B, n, D] -> [B, r, D]

"interpolate" is the operator's route (``operators.fast.interp``); "block", "dense" and
"gather" compute the same W another way. ``ski_study.interp_routes`` times them all;
docs/benchmarks.md ("SKI: W routes") has the table that chose "interpolate".

Letters: B batch, D channels, n length, r inducing points, K chunks of c rows, w <= 3
columns per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from tnn_core.core.interpolation import (
    Interpolation,
    apply_w,
    apply_wt,
    interpolation,
    interpolation_matrix,
)
from tnn_core.operators.fast.interp import interp_w, interp_wt

__all__ = ["Route", "ROUTES", "RoutePlan", "route_plan", "chunk_size", "route_w", "route_wt"]

Route = Literal["block", "dense", "interpolate", "gather"]
ROUTES: tuple[str, ...] = ("block", "dense", "interpolate", "gather")


@dataclass(frozen=True)
class RoutePlan:
    """W [n, r] in the form of every route, for one (n, r, device, dtype).

    ``block``: W cut into K chunks of c consecutive rows; chunk k only touches the w
    (<= 3) columns col0_k .. col0_k + w - 1, so W is ``blocks`` [K, c, w] placed by the
    0/1 matrix ``place`` [r, K w]. Rows past n (when c does not divide n) are zero.
    """

    interp: Interpolation  # (index, weight) pairs: "gather"
    dense: torch.Tensor  # [n, r]: "dense"
    blocks: torch.Tensor  # [K, c, w]: "block"
    place: torch.Tensor  # [r, K w]: "block"

    @property
    def n(self) -> int:
        return self.interp.n

    @property
    def r(self) -> int:
        return self.interp.r


def chunk_size(n: int, r: int) -> int:
    """Rows per chunk: at most h + 1 (so a chunk spans <= 3 columns), a divisor of n if
    one lies in [(h+1)/2, h+1] (then no padding is needed)."""
    h = (n - 1) / (r - 1)
    cmax = max(1, int(h) + 1)
    for c in range(cmax, max(1, cmax // 2) - 1, -1):
        if n % c == 0:
            return c
    return cmax


def route_plan(n: int, r: int, dtype=torch.float32, device=None) -> RoutePlan:
    """Build the :class:`RoutePlan` for W [n, r] of ``interpolation.interpolation(n, r)``."""
    interp = interpolation(n, r, torch.float64)
    c = chunk_size(n, r)
    K = -(-n // c)
    rows = torch.arange(K * c)
    valid = rows < n  # (K c,)
    rows = rows.clamp(max=n - 1)
    left = interp.index[rows]  # (K c,) left column of each row
    w0, w1 = interp.weight[rows, 0] * valid, interp.weight[rows, 1] * valid  # (K c,)
    first = left.view(K, c)[:, 0]  # (K,): rows are sorted, so the chunk's leftmost column
    last = left.view(K, c).max(dim=1).values + 1  # (K,)
    width = min(int((last - first).max()) + 1, r)
    col0 = first.clamp(max=r - width)  # (K,)
    u = left - col0.repeat_interleave(c)  # (K c,) in [0, width - 2] (or width - 1 at the end)
    blocks = torch.zeros(K * c, width, dtype=torch.float64)
    blocks[torch.arange(K * c), u] += w0
    right = u + 1 < width  # the clamp can only drop a zero weight (frac = 0 at the last row)
    blocks[torch.arange(K * c)[right], u[right] + 1] += w1[right]
    cols = col0[:, None] + torch.arange(width)  # (K, w)
    place = torch.zeros(r, K * width, dtype=torch.float64)
    place[cols.flatten(), torch.arange(K * width)] = 1
    return RoutePlan(
        interp=interp.to(device, dtype),
        dense=interpolation_matrix(interp).to(device=device, dtype=dtype),
        blocks=blocks.view(K, c, width).to(device=device, dtype=dtype),
        place=place.to(device=device, dtype=dtype),
    )


def route_w(plan: RoutePlan, z: torch.Tensor, route: Route) -> torch.Tensor:
    """W z along the rows: z [B, r, D] -> [B, n, D] (possibly a strided view).

    "block": z's columns gathered per chunk (a small matmul with ``place``), then one
    batched matmul [K, c, w] @ [B, K, w, D]: O(n w D), writes the output once.
    "dense": W [n, r] @ z, a BLAS product, O(n r D).
    "interpolate": the operator's linear upsampling (``fast.interp.interp_w``).
    "gather": ``interpolation.apply_w`` (two gathers) on the [B, D, r] view: the reference.
    """
    B, r, D = z.shape
    if r != plan.r:
        raise ValueError(f"z must have shape [B, r={plan.r}, D]; got {tuple(z.shape)}")
    n = plan.n
    if route == "block":
        K, c, w = plan.blocks.shape
        zw = torch.matmul(plan.place.T, z).view(B, K, w, D)  # (B, K, w, D)
        y = torch.matmul(plan.blocks, zw)  # (B, K, c, D)
        return y.view(B, K * c, D)[:, :n]  # (B, n, D)
    if route == "dense":
        return torch.matmul(plan.dense, z)  # (B, n, D)
    if route == "interpolate":
        return interp_w(z, n)  # (B, n, D)
    if route == "gather":
        return apply_w(plan.interp, z.transpose(1, 2)).transpose(1, 2)  # (B, n, D)
    raise ValueError(f"route must be one of {ROUTES}; got {route!r}")


def route_wt(plan: RoutePlan, x: torch.Tensor, route: Route) -> torch.Tensor:
    """Wᵀ x along the rows: x [B, n, D] -> [B, r, D], the adjoint of ``route_w``.

    "block": chunks of x as a view [B, K, c, D] (x zero-padded when c does not divide
    n), one batched matmul with the blocks transposed, placed by ``place``.
    "dense": Wᵀ @ x. "interpolate": the operator's adjoint upsampling
    (``fast.interp.interp_wt``). "gather": ``interpolation.apply_wt`` (scatter-add).
    """
    B, n, D = x.shape
    if n != plan.n:
        raise ValueError(f"x must have shape [B, n={plan.n}, D]; got {tuple(x.shape)}")
    r = plan.r
    if route == "block":
        K, c, w = plan.blocks.shape
        if K * c != n:
            x = F.pad(x, (0, 0, 0, K * c - n))  # (B, K c, D)
        part = torch.matmul(plan.blocks.transpose(1, 2), x.reshape(B, K, c, D))  # (B, K, w, D)
        return torch.matmul(plan.place, part.reshape(B, K * w, D))  # (B, r, D)
    if route == "dense":
        return torch.matmul(plan.dense.T, x)  # (B, r, D)
    if route == "interpolate":
        return interp_wt(x, r)  # (B, r, D)
    if route == "gather":
        return apply_wt(plan.interp, x.transpose(1, 2)).transpose(1, 2)  # (B, r, D)
    raise ValueError(f"route must be one of {ROUTES}; got {route!r}")
