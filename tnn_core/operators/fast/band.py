"""SKI's band (its sparse part): a depthwise convolution with m taps along the rows of
[B, n, D] on the channels-last view, checked against ``F.conv1d`` in
``tests/test_fast_paths.py``.

Letters: B batch, n length, D channels, m taps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

__all__ = ["band_conv", "conv_cl", "extend_taps", "taps_grad", "weight_grad", "weight_grad_gemm"]


def extend_taps(weight: torch.Tensor, left: int, n: int) -> tuple[torch.Tensor, int, int]:
    """(ext, pad, offset): taps [D, m] (tap j at lag ``left - j``) as a symmetric
    [D, 2 pad + 1] such that ``conv_cl(x, ext, pad)`` is the band on a length-n x; tap j is
    column j + offset. pad = max(left, m-1-left), zero-extending the shorter side, but at
    most n - 1: a tap of a larger lag meets no row (SKI's m may exceed n, and a band of
    65,536 at n = 64 would build a padded copy of 65,600 rows per channel, and a tap
    gradient of 10^12 numbers, for taps that do nothing)."""
    D, m = weight.shape
    pad = min(max(left, m - 1 - left), max(n - 1, 0))
    offset = pad - left
    lo, hi = max(0, -offset), min(m, 2 * pad + 1 - offset)  # the taps within reach
    ext = weight.new_zeros(D, 2 * pad + 1)
    ext[:, lo + offset : hi + offset] = weight[:, lo:hi]
    return ext, pad, offset


def taps_grad(grad_ext: torch.Tensor, offset: int, m: int) -> torch.Tensor:
    """The gradient of the m taps [D, m] from that of ``extend_taps``'s ext [D, 2 pad + 1]
    (tap j is column j + offset); a tap out of reach has gradient 0."""
    D, columns = grad_ext.shape
    grad = grad_ext.new_zeros(D, m)
    lo, hi = max(0, -offset), min(m, columns - offset)
    grad[:, lo:hi] = grad_ext[:, lo + offset : hi + offset]
    return grad


_GEMM_MIN_TAPS = 15  # from here the blocked GEMM beats oneDNN on CPU: docs/benchmarks.md


def weight_grad(grad_y: torch.Tensor, x: torch.Tensor, ext: torch.Tensor, pad: int
                ) -> torch.Tensor:
    """Gradient of ``conv_cl(x, ext, pad)`` with respect to ext: [D, 2 pad + 1];
    grad_y, x: [B, n, D]. grad[d, k] = Σ_b Σ_i grad_y[b, i, d] x[b, i + k - pad, d].

    On CPU from 15 extended taps (m >= 14) ``weight_grad_gemm``; otherwise oneDNN's
    backward-weights on the channels-last views, which costs ~m times the forward
    (docs/benchmarks.md, "What makes them fast")."""
    if x.device.type == "cpu" and ext.shape[-1] >= _GEMM_MIN_TAPS:
        return weight_grad_gemm(grad_y, x, pad)
    D = x.shape[-1]
    return torch.ops.aten.convolution_backward(
        grad_y.transpose(1, 2).unsqueeze(2), x.transpose(1, 2).unsqueeze(2),
        ext[:, None, None, :], None, [1, 1], [0, pad], [1, 1], False, [0, 0], D,
        [False, True, False])[1][:, 0, 0, :]  # (D, 2 pad + 1)


def weight_grad_gemm(grad_y: torch.Tensor, x: torch.Tensor, pad: int) -> torch.Tensor:
    """``weight_grad`` as one batched GEMM: [D, 2 pad + 1] from grad_y, x [B, n, D].

    Cut the sequence into Q blocks of L >= 2 pad rows. For each (b, d), with G[q, l] =
    grad_y[qL + l] and X[q, e] = x[qL + e - pad] (e < 2L, zero outside 0..n-1), the
    product M = Gᵀ X [L, 2L] holds M[l, e] = Σ_q G[q, l] X[q, e], so the gradient of
    tap k is the diagonal sum Σ_l M[l, l + k]. 2 L flops per element of x instead of
    the direct 2 pad + 1, but as BLAS GEMMs, where oneDNN's depthwise backward-weights
    runs a slow loop per tap.
    """
    B, n, D = x.shape
    P = 2 * pad + 1
    L = max(2 * pad, 8)  # rows per block
    Q = -(-n // L)
    G = grad_y.new_zeros(B, D, Q * L)  # (B, D, Q L): grad_y along rows, zero-padded
    G[..., :n] = grad_y.transpose(1, 2)
    X = x.new_zeros(B, D, (Q + 1) * L)  # (B, D, (Q+1) L): x shifted right by pad
    X[..., pad : pad + n] = x.transpose(1, 2)
    blocks = X.view(B * D, (Q + 1) * L).unfold(-1, 2 * L, L).contiguous()  # (B D, Q, 2L)
    M = torch.bmm(G.view(B * D, Q, L).transpose(1, 2), blocks)  # (B D, L, 2L)
    diag = M.as_strided((B, D, L, P), (D * L * 2 * L, L * 2 * L, 2 * L + 1, 1))  # M[l, l + k]
    return diag.sum((0, 2))  # (D, P)


def conv_cl(x: torch.Tensor, weight: torch.Tensor, pad: int) -> torch.Tensor:
    """Depthwise conv2d on the channels-last view of x [B, n, D] with 2 pad + 1 taps
    weight [D, 2 pad + 1] and padding pad on both sides: exactly n outputs, [B, n, D]."""
    D = x.shape[-1]
    y = F.conv2d(x.transpose(1, 2).unsqueeze(2), weight[:, None, None, :], padding=(0, pad),
                 groups=D)  # (B, D, 1, n), channels-last: the memory of [B, n, D]
    return y[:, :, 0, :].transpose(1, 2)  # (B, n, D)


class _BandConvCL(torch.autograd.Function):
    """The band on the channels-last view, with a backward that stays fast on CPU: the
    input gradient is the same convolution with the taps reversed (oneDNN's depthwise
    backward-data kernel is several times slower), the weight gradient oneDNN's
    backward-weights. Taps are zero-extended to a symmetric 2 pad + 1 so that the
    convolution yields exactly n outputs and nothing is sliced or padded."""

    @staticmethod
    def forward(ctx, x, weight, left: int):
        ext, pad, offset = extend_taps(weight, left, x.shape[1])  # (D, 2 pad + 1)
        ctx.save_for_backward(x, ext)
        ctx.pad, ctx.offset, ctx.m = pad, offset, weight.shape[-1]
        return conv_cl(x, ext, pad)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        x, ext = ctx.saved_tensors
        pad = ctx.pad
        grad_y = grad_y.contiguous()  # (B, n, D): the channels-last layout oneDNN wants
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = conv_cl(grad_y, ext.flip(-1), pad)  # (B, n, D)
        if ctx.needs_input_grad[1]:
            grad_w = taps_grad(weight_grad(grad_y, x, ext, pad), ctx.offset, ctx.m)
        return grad_x, grad_w, None


def band_conv(x: torch.Tensor, weight: torch.Tensor, left: int) -> torch.Tensor:
    """Depthwise convolution (cross-correlation, as F.conv1d) along n with zero padding
    ``left`` before and ``m - 1 - left`` after:
    y[b, i, c] = Σ_j weight[c, j] x[b, i - left + j, c]; tap j has lag ``left - j``.

    x: [B, n, D], weight: [D, m]  ->  [B, n, D] (a strided view). F.conv2d(groups=D) on
    the channels-last view [B, D, 1, n] of x, no copy; on CPU oneDNN's NHWC depthwise
    kernel (the NCHW conv1d on a [B, D, n] copy was ~7x slower: docs/benchmarks.md),
    with the backward of ``_BandConvCL``. Not twice differentiable.
    """
    B, n, D = x.shape
    m = weight.shape[-1]
    if weight.shape != (D, m):
        raise ValueError(f"weight must have shape [D={D}, m]; got {tuple(weight.shape)}")
    if not 0 <= left <= m - 1:
        raise ValueError(f"left must be in [0, m-1] = [0, {m - 1}]; got {left}")
    return _BandConvCL.apply(x, weight, left)  # (B, n, D)
