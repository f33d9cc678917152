"""SKI's interpolation W [n, r] along the rows of [B, n, D], by linear upsampling.

    interp_w(z, n)   == interpolation.apply_w   W z:  [B, r, D] -> [B, n, D]
    interp_wt(x, r)  == interpolation.apply_wt  Wᵀ x: [B, n, D] -> [B, r, D]

``F.interpolate(mode="bilinear", align_corners=True)`` puts output row i at
i (r-1)/(n-1) on the inducing grid, exactly W's rows (``interpolation.interpolation``);
Wᵀ is its adjoint, ``aten.upsample_bilinear2d_backward``. Both run on the channels-last
view [B, D, 1, ·] of the [B, n, D] layout, with each other as backward. The other routes
(block, dense, gather) live in ``tnn_core.bench.routes``, which times them against this
one (docs/benchmarks.md, "SKI: W routes").

Letters: B batch, D channels, n length, r inducing points.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

__all__ = ["INTERP_METHOD", "interp_w", "interp_wt"]

INTERP_METHOD = "interpolate"  # the fastest W route at every n, r measured: docs/benchmarks.md


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


def interp_w(z: torch.Tensor, n: int) -> torch.Tensor:
    """W z along the rows: z [B, r, D] -> [B, n, D] (a strided view), W [n, r] the linear
    interpolation of positions 0..n-1 onto r inducing points evenly spaced on [0, n-1].
    Not twice differentiable."""
    if z.dim() != 3 or z.shape[1] < 2:
        raise ValueError(f"z must have shape [B, r >= 2, D]; got {tuple(z.shape)}")
    return _Upsample.apply(z, n)  # (B, n, D)


def interp_wt(x: torch.Tensor, r: int) -> torch.Tensor:
    """Wᵀ x along the rows: x [B, n, D] -> [B, r, D] (a strided view), the adjoint of
    ``interp_w``. Not twice differentiable."""
    if x.dim() != 3:
        raise ValueError(f"x must have shape [B, n, D]; got {tuple(x.shape)}")
    return _Downsample.apply(x, r)  # (B, r, D)
