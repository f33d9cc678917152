"""Bidirectional SKI, band(x) + W A Wᵀ x, as one autograd node on [B, n, D].

Equal to ``band_conv(x) + interp_w(circulant_product(interp_wt(x)))`` (checked in
float64, gradients included, by ``tests/test_fast_paths.py``); faster because it
allocates fewer [B, n, D] tensors and adds W z into the band's output in place.

Letters: B batch, n length, D channels, r inducing points, m taps, Nr FFT size of A.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from tnn_core.core.toeplitz import fft_size
from tnn_core.operators.fast.band import conv_cl, extend_taps, taps_grad, weight_grad
from tnn_core.operators.fast.interp import interp_w, interp_wt

__all__ = ["ski_bidirectional"]


class _SkiBidirectional(torch.autograd.Function):
    """y = band(x) + W A Wᵀ x on [B, n, D] (band_weight None: W A Wᵀ x alone): the band
    on the channels-last view, Wᵀ and W by linear interpolation (``interp``), A by FFT.
    The backward mirrors it: input gradient = the band with reversed taps plus
    W Aᵀ Wᵀ g. Forward and backward each allocate the result and one W z temporary,
    where autograd of the parts allocates three or more [B, n, D] tensors. (Running it
    chunk by chunk over the batch was slower: docs/benchmarks.md.)"""

    @staticmethod
    def forward(ctx, x, band_weight, column, r: int, left: int, Nr: int):
        n = x.shape[1]
        KA = torch.fft.rfft(column, n=Nr)  # (D, Nr//2+1)
        Z = torch.fft.rfft(interp_wt(x, r).transpose(1, 2), n=Nr)  # (B, D, F)
        u = torch.fft.irfft(Z * KA, n=Nr)[..., :r].transpose(1, 2)  # (B, r, D): A Wᵀ x
        if band_weight is None:
            y, ext, pad, offset, m = interp_w(u, n), None, 0, 0, 0  # (B, n, D)
        else:
            m = band_weight.shape[-1]
            ext, pad, offset = extend_taps(band_weight, left, n)  # (D, 2 pad + 1)
            y = conv_cl(x, ext, pad).add_(interp_w(u, n))  # (B, n, D)
        ctx.save_for_backward(x, ext, Z, KA)
        ctx.r, ctx.pad, ctx.offset, ctx.m = r, pad, offset, m
        ctx.Nr, ctx.column_len = Nr, column.shape[-1]
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        x, ext, Z, KA = ctx.saved_tensors
        r, pad, Nr = ctx.r, ctx.pad, ctx.Nr
        n = x.shape[1]
        need_x, need_w, need_column = ctx.needs_input_grad[:3]
        grad_y = grad_y.contiguous()  # (B, n, D): the channels-last layout oneDNN wants
        GU = torch.fft.rfft(interp_wt(grad_y, r).transpose(1, 2), n=Nr)  # (B, D, F)
        grad_x = grad_w = grad_column = None
        if need_x:
            gz = torch.fft.irfft(GU * torch.conj_physical(KA), n=Nr)[..., :r]  # (B, D, r)
            grad_x = interp_w(gz.transpose(1, 2), n)  # (B, n, D)
            if ext is not None:
                grad_x = conv_cl(grad_y, ext.flip(-1), pad).add_(grad_x)  # (B, n, D)
        if need_w:
            grad_w = taps_grad(weight_grad(grad_y, x, ext, pad), ctx.offset, ctx.m)
        if need_column:
            S = (torch.conj_physical(Z) * GU).sum(0)  # (D, F)
            grad_column = torch.fft.irfft(S, n=Nr)[..., : ctx.column_len]  # (D, len)
        return grad_x, grad_w, grad_column, None, None, None


def ski_bidirectional(x: torch.Tensor, band_weight: torch.Tensor | None, column: torch.Tensor,
                      rank: int, left: int) -> torch.Tensor:
    """Bidirectional SKI, band(x) + W A Wᵀ x, as one autograd node.

    x: [B, n, D]; band_weight: [D, m], tap j at lag ``left - j`` (as ``band_conv``), or
    None for the low-rank part W A Wᵀ x alone; column: [D, c <= Nr] the first column of
    the circulant embedding of A [r, r] (Nr = ``fft_size(rank)``); W [n, r] the linear
    interpolation onto ``rank`` inducing points (``interp_w``). Returns [B, n, D], equal
    to ``band_conv(x, band_weight, left) + interp_w(circulant_product(interp_wt(x,
    rank).mT, column, Nr).mT, n)``. Not twice differentiable.
    """
    B, n, D = x.shape
    m = left + 1 if band_weight is None else band_weight.shape[-1]
    if column.shape[0] != D or (band_weight is not None and band_weight.shape != (D, m)):
        shape = None if band_weight is None else tuple(band_weight.shape)
        raise ValueError(f"shapes do not match: x {tuple(x.shape)}, band_weight {shape}, "
                         f"column {tuple(column.shape)}")
    if not 0 <= left <= m - 1:
        raise ValueError(f"left must be in [0, m-1] = [0, {m - 1}]; got {left}")
    Nr = fft_size(rank)
    return _SkiBidirectional.apply(x, band_weight, column, rank, left, Nr)
