"""Bidirectional SKI, band(x) + W A Wᵀ x, as one autograd node on [B, n, D].

Equal to ``band_conv(x) + interp_w(circulant_product(interp_wt(x)))`` (checked in
float64 by ``tests/test_bench.py``); faster because it allocates fewer [B, n, D]
tensors and adds W z into the band's output in place.

Letters: B batch, n length, D channels, r inducing points, m taps, Nr FFT size of A.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.fast.band import conv_cl, extend_taps, weight_grad
from tnn_core.operators.fast.interp import InterpMethod, InterpPlan, interp_w, interp_wt

__all__ = ["ski_bidirectional"]


def _add_w(out: torch.Tensor, plan: InterpPlan, z: torch.Tensor, method: str) -> torch.Tensor:
    """out += W z in place; out [B, n, D], z [B, r, D]. The "block" route accumulates
    straight into out (``baddbmm_``, no [B, n, D] temporary) when its chunks tile n."""
    B, n, D = out.shape
    K, c, w = plan.blocks.shape
    if method == "block" and K * c == n and out.is_contiguous():
        zw = torch.matmul(plan.place.T, z).view(B * K, w, D)  # (B K, w, D)
        blocks = plan.blocks.expand(B, K, c, w).reshape(B * K, c, w)  # (B K, c, w)
        out.view(B * K, c, D).baddbmm_(blocks, zw)
        return out
    return out.add_(interp_w(plan, z, method))


class _SkiBidirectional(torch.autograd.Function):
    """y = band(x) + W A Wᵀ x on [B, n, D] (band_weight None: W A Wᵀ x alone): the band
    on the channels-last view, Wᵀ and W by the plan's route (W z added into the band's
    output in place by "block") and A by FFT. The backward mirrors it: input
    gradient = the band with reversed taps plus W Aᵀ Wᵀ g. Forward and backward each
    allocate the result and one W z temporary ("block": none), where autograd of the
    parts allocates three or more [B, n, D] tensors.

    (Running it chunk by chunk over the batch, to keep x and y in cache between the band
    and the W passes, measured 10-25 % slower here: docs/benchmarks.md.)"""

    @staticmethod
    def forward(ctx, x, band_weight, column, plan: InterpPlan, method: str, left: int, Nr: int):
        r = plan.r
        KA = torch.fft.rfft(column, n=Nr)  # (D, Nr//2+1)
        Z = torch.fft.rfft(interp_wt(plan, x, method).transpose(1, 2), n=Nr)  # (B, D, F)
        u = torch.fft.irfft(Z * KA, n=Nr)[..., :r].transpose(1, 2)  # (B, r, D): A Wᵀ x
        if band_weight is None:
            y, ext, pad, m = interp_w(plan, u, method), None, 0, 0  # (B, n, D)
        else:
            m = band_weight.shape[-1]
            ext, pad = extend_taps(band_weight, left)  # (D, 2 pad + 1)
            y = _add_w(conv_cl(x, ext, pad), plan, u, method)  # (B, n, D)
        ctx.save_for_backward(x, ext, Z, KA)
        ctx.plan, ctx.method, ctx.pad, ctx.offset, ctx.m = plan, method, pad, pad - left, m
        ctx.Nr, ctx.column_len = Nr, column.shape[-1]
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        x, ext, Z, KA = ctx.saved_tensors
        plan, method, pad, Nr = ctx.plan, ctx.method, ctx.pad, ctx.Nr
        need_x, need_w, need_column = ctx.needs_input_grad[:3]
        grad_y = grad_y.contiguous()  # (B, n, D): the channels-last layout oneDNN wants
        GU = torch.fft.rfft(interp_wt(plan, grad_y, method).transpose(1, 2), n=Nr)  # (B, D, F)
        grad_x = grad_w = grad_column = None
        if need_x:
            gz = torch.fft.irfft(GU * torch.conj_physical(KA), n=Nr)[..., : plan.r]  # (B, D, r)
            if ext is None:
                grad_x = interp_w(plan, gz.transpose(1, 2), method)  # (B, n, D)
            else:
                grad_x = _add_w(conv_cl(grad_y, ext.flip(-1), pad), plan, gz.transpose(1, 2),
                                method)  # (B, n, D)
        if need_w:
            grad_w = weight_grad(grad_y, x, ext, pad)[:, ctx.offset : ctx.offset + ctx.m]
        if need_column:
            S = (torch.conj_physical(Z) * GU).sum(0)  # (D, F)
            grad_column = torch.fft.irfft(S, n=Nr)[..., : ctx.column_len]  # (D, len)
        return grad_x, grad_w, grad_column, None, None, None, None


def ski_bidirectional(x: torch.Tensor, band_weight: torch.Tensor | None, column: torch.Tensor,
                      plan: InterpPlan, method: InterpMethod, left: int) -> torch.Tensor:
    """Bidirectional SKI, band(x) + W A Wᵀ x, as one autograd node.

    x: [B, n, D]; band_weight: [D, m], tap j at lag ``left - j`` (as ``band_conv``), or
    None for the low-rank part W A Wᵀ x alone;
    column: [D, c <= Nr] the first column of the circulant embedding of A (Nr =
    ``fft_size(r)``); plan: W for this n (``interp_plan``); method: its route
    (``interp_w``). Returns [B, n, D], equal to ``band_conv(x, band_weight, left) +
    interp_w(plan, circulant_product(interp_wt(plan, x).mT, column, Nr).mT)``.
    Not twice differentiable.
    """
    B, n, D = x.shape
    m = left + 1 if band_weight is None else band_weight.shape[-1]
    if plan.n != n or column.shape[0] != D or (band_weight is not None
                                               and band_weight.shape != (D, m)):
        shape = None if band_weight is None else tuple(band_weight.shape)
        raise ValueError(f"shapes do not match: x {tuple(x.shape)}, plan n={plan.n}, band_weight "
                         f"{shape}, column {tuple(column.shape)}")
    if not 0 <= left <= m - 1:
        raise ValueError(f"left must be in [0, m-1] = [0, {m - 1}]; got {left}")
    Nr = fft_size(plan.r)
    return _SkiBidirectional.apply(x, band_weight, column, plan, method, left, Nr)
