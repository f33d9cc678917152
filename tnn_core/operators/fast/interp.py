"""SKI's interpolation W [n, r] applied along the rows of [B, n, D], four routes.

    interp_w, interp_wt == interpolation.apply_w / apply_wt   (each route, each way)

``interp_plan`` builds everything the routes need once per (n, r, device, dtype);
``choose_interp_method`` in ``ski.py`` picks the route from docs/benchmarks.md.

Letters: B batch, D channels, n length, r inducing points, K chunks of c rows, w <= 3
columns per chunk.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from tnn_core.core.interpolation import (
    Interpolation,
    apply_w,
    apply_wt,
    interpolation,
    interpolation_matrix,
)

__all__ = ["InterpMethod", "INTERP_METHODS", "InterpPlan", "interp_plan", "chunk_size",
           "interp_w", "interp_wt"]


InterpMethod = Literal["block", "dense", "interpolate", "gather"]
INTERP_METHODS: tuple[str, ...] = ("block", "dense", "interpolate", "gather")


class InterpPlan:
    """Everything the four routes to W y and Wᵀ x need, for one (n, r, device, dtype).

    ``block``: W cut into K chunks of c consecutive rows; chunk k only touches the w
    (<= 3) columns col0_k .. col0_k + w - 1, so W is ``blocks`` [K, c, w] placed by the
    0/1 matrix ``place`` [r, K w]. Rows past n (when c does not divide n) are zero.
    ``dense`` [n, r] is built on first use.
    """

    def __init__(self, interp: Interpolation, chunk: int, blocks: torch.Tensor,
                 place: torch.Tensor):
        self.interp = interp  # (index, weight) pairs, the reference form
        self.chunk = chunk  # c rows per chunk
        self.blocks = blocks  # [K, c, w]
        self.place = place  # [r, K w]
        self._dense: torch.Tensor | None = None

    @property
    def n(self) -> int:
        return self.interp.n

    @property
    def r(self) -> int:
        return self.interp.r

    @property
    def dense(self) -> torch.Tensor:
        """W [n, r]."""
        if self._dense is None:
            self._dense = interpolation_matrix(self.interp)
        return self._dense


def chunk_size(n: int, r: int) -> int:
    """Rows per chunk: at most h + 1 (so a chunk spans <= 3 columns), a divisor of n if
    one lies in [(h+1)/2, h+1] (then no padding is needed)."""
    h = (n - 1) / (r - 1)
    cmax = max(1, int(h) + 1)
    for c in range(cmax, max(1, cmax // 2) - 1, -1):
        if n % c == 0:
            return c
    return cmax


def interp_plan(n: int, r: int, dtype=torch.float32, device=None) -> InterpPlan:
    """Build the :class:`InterpPlan` for W [n, r] of ``interpolation.interpolation(n, r)``."""
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
    return InterpPlan(
        interp=interp.to(device, dtype),
        chunk=c,
        blocks=blocks.view(K, c, width).to(device=device, dtype=dtype),
        place=place.to(device=device, dtype=dtype),
    )


def _upsample(z: torch.Tensor, n: int) -> torch.Tensor:
    """W z by linear upsampling: z [B, r, D] -> [B, n, D], on the channels-last view."""
    z4 = z.contiguous().transpose(1, 2).unsqueeze(2)  # (B, D, 1, r), channels-last
    y = F.interpolate(z4, size=(1, n), mode="bilinear", align_corners=True)  # (B, D, 1, n)
    return y[:, :, 0, :].transpose(1, 2)  # (B, n, D)


def _downsample(x: torch.Tensor, r: int) -> torch.Tensor:
    """Wᵀ x, the adjoint of ``_upsample``: x [B, n, D] -> [B, r, D]."""
    B, n, D = x.shape
    x4 = x.contiguous().transpose(1, 2).unsqueeze(2)  # (B, D, 1, n), channels-last
    z = torch.ops.aten.upsample_bilinear2d_backward(
        x4, [1, n], [B, D, 1, r], True, None, None)  # (B, D, 1, r)
    return z[:, :, 0, :].transpose(1, 2)  # (B, r, D)


class _Upsample(torch.autograd.Function):
    """W z with Wᵀ as its backward, both on channels-last views (plain autograd would hand
    the upsampling's backward an NCHW gradient and take oneDNN-less slow paths)."""

    @staticmethod
    def forward(ctx, z, n: int):
        ctx.r = z.shape[1]
        return _upsample(z, n)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        return _downsample(grad_y, ctx.r), None


class _Downsample(torch.autograd.Function):
    """Wᵀ x with W as its backward."""

    @staticmethod
    def forward(ctx, x, r: int):
        ctx.n = x.shape[1]
        return _downsample(x, r)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_z):
        return _upsample(grad_z, ctx.n), None


def interp_w(plan: InterpPlan, z: torch.Tensor, method: InterpMethod) -> torch.Tensor:
    """W z along the rows: z [B, r, D] -> [B, n, D] (possibly a strided view).

    "block": z's columns gathered per chunk (a small matmul with ``place``), then one
    batched matmul [K, c, w] @ [B, K, w, D]: O(n w D), writes the output once.
    "dense": W [n, r] @ z, a BLAS product, O(n r D).
    "interpolate": ``F.interpolate(mode="bilinear", align_corners=True)`` on the
    channels-last view [B, D, 1, r]; with align_corners row i sits at i (r-1)/(n-1) on
    the inducing grid, exactly W's rows (weights computed in floating point). Its
    backward is the adjoint kernel on the same layout (``_Upsample``); not twice
    differentiable.
    "gather": ``interpolation.apply_w`` (two gathers) on the [B, D, r] view: the reference.
    """
    B, r, D = z.shape
    if r != plan.r:
        raise ValueError(f"z must have shape [B, r={plan.r}, D]; got {tuple(z.shape)}")
    n = plan.n
    if method == "block":
        K, c, w = plan.blocks.shape
        zw = torch.matmul(plan.place.T, z).view(B, K, w, D)  # (B, K, w, D)
        y = torch.matmul(plan.blocks, zw)  # (B, K, c, D)
        return y.view(B, K * c, D)[:, :n]  # (B, n, D)
    if method == "dense":
        return torch.matmul(plan.dense, z)  # (B, n, D)
    if method == "interpolate":
        return _Upsample.apply(z, n)  # (B, n, D)
    if method == "gather":
        return apply_w(plan.interp, z.transpose(1, 2)).transpose(1, 2)  # (B, n, D)
    raise ValueError(f"method must be one of {INTERP_METHODS}; got {method!r}")


def interp_wt(plan: InterpPlan, x: torch.Tensor, method: InterpMethod) -> torch.Tensor:
    """Wᵀ x along the rows: x [B, n, D] -> [B, r, D], the adjoint of ``interp_w``.

    "block": chunks of x as a view [B, K, c, D] (x zero-padded when c does not divide
    n), one batched matmul with the blocks transposed, placed by ``place``.
    "dense": Wᵀ @ x. "interpolate": ``aten.upsample_bilinear2d_backward``, the adjoint
    of the upsampling, whose backward is the upsampling (``_Downsample``).
    "gather": ``interpolation.apply_wt`` (scatter-add), the reference.
    """
    B, n, D = x.shape
    if n != plan.n:
        raise ValueError(f"x must have shape [B, n={plan.n}, D]; got {tuple(x.shape)}")
    r = plan.r
    if method == "block":
        K, c, w = plan.blocks.shape
        if K * c != n:
            x = F.pad(x, (0, 0, 0, K * c - n))  # (B, K c, D)
        part = torch.matmul(plan.blocks.transpose(1, 2), x.reshape(B, K, c, D))  # (B, K, w, D)
        return torch.matmul(plan.place, part.reshape(B, K * w, D))  # (B, r, D)
    if method == "dense":
        return torch.matmul(plan.dense.T, x)  # (B, r, D)
    if method == "interpolate":
        return _Downsample.apply(x, r)  # (B, r, D)
    if method == "gather":
        return apply_wt(plan.interp, x.transpose(1, 2)).transpose(1, 2)  # (B, r, D)
    raise ValueError(f"method must be one of {INTERP_METHODS}; got {method!r}")
