"""The FFT product of a Toeplitz (circulant-embedded) operator as one autograd node.

    circulant_product   == toeplitz.matvec_last        (TNO, SKI causal, FD causal, Togeipi)
    spectral_product    == toeplitz.apply_spectrum     (FD bidirectional)

Why it is faster than autograd of ``irfft(rfft(x) * K)``: that runs a complex c2c FFT
for the rfft backward, two complex products, a pad and a slice, each a fresh
[B, D, N] allocation. This node's backward needs two real FFTs over [..., D, n]
(rfft of the output gradient, irfft for the input gradient) and none over the kernel
for a spectrum input. The kernel gradient is the circular cross-correlation of the
output gradient with x, reduced over the batch in the frequency domain before its
single irfft over D rows. ``tests/test_fast_paths.py`` checks both against the reference
in float64, gradients included.

Letters: B batch (any leading dims), D channels, n length, N FFT size, F = N//2+1.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from tnn_core.checks import check_int

__all__ = ["circulant_product", "spectral_product"]


def _reduce_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum ``grad`` over the dims broadcast to reach it from ``shape`` (like sum_to_size)."""
    lead = grad.dim() - len(shape)
    if lead > 0:
        if all(s == 1 for s in grad.shape[:lead]):
            grad = grad.reshape(grad.shape[lead:])  # nothing to add up: a view
        else:
            grad = grad.sum(dim=tuple(range(lead)))  # (*shape with broadcast dims kept)
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.sum(dim=dims, keepdim=True) if dims else grad


_CHUNK_BYTES = 8 << 20  # spectra per chunk: well below glibc's 32 MiB mmap threshold


def _batch_chunks(x: torch.Tensor, kernel_dims: int, N: int) -> list[slice]:
    """Slices of x's dim 0 whose spectra take <= _CHUNK_BYTES each (one slice: all of it).

    Large transforms go chunk by chunk so that every temporary is a few MiB: on Linux a
    block of 32 MiB or more is mapped fresh on each allocation and page-faulted while it
    is first written, which at n = 8192, B = 8, D = 64 cost about as much as the FFTs."""
    if x.dim() - 1 <= kernel_dims or x.shape[0] < 2:
        return [slice(None)]
    n = x.shape[-1]
    per_item = (x[0].numel() // max(n, 1)) * (N // 2 + 1) * 2 * x.element_size()
    if per_item * x.shape[0] <= _CHUNK_BYTES:
        return [slice(None)]
    step = max(1, _CHUNK_BYTES // per_item)
    return [slice(i, min(i + step, x.shape[0])) for i in range(0, x.shape[0], step)]


class _SpectralProduct(torch.autograd.Function):
    """y = irfft(rfft(x, N) * K, N)[..., :n], K = rfft(column, N) or a given spectrum."""

    @staticmethod
    def forward(ctx, x, kernel, N: int, is_column: bool):
        n = x.shape[-1]
        K = torch.fft.rfft(kernel, n=N) if is_column else kernel.contiguous()  # (..D, F)
        chunks = _batch_chunks(x, kernel.dim() - 1, N)
        spectra = []
        if len(chunks) == 1:
            X = torch.fft.rfft(x, n=N)  # (..., D, F)
            y = torch.fft.irfft(X * K, n=N)[..., :n]  # (..., D, n)
            spectra.append(X)
        else:
            y = x.new_empty(x.shape)  # (..., D, n)
            for c in chunks:
                X = torch.fft.rfft(x[c], n=N)  # (chunk, ..., D, F)
                y[c] = torch.fft.irfft(X.mul(K), n=N)[..., :n]
                spectra.append(X)
        ctx.save_for_backward(K, *spectra)
        ctx.chunks, ctx.N, ctx.n, ctx.is_column = chunks, N, n, is_column
        ctx.kernel_shape, ctx.kernel_len = kernel.shape, kernel.shape[-1]
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        K, *spectra = ctx.saved_tensors
        N, n, chunks = ctx.N, ctx.n, ctx.chunks
        need_x, need_kernel = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        # (conj_physical: a lazily conjugated operand sends mul down a path ~10x slower)
        K_conj = torch.conj_physical(K) if need_x else None
        bins = torch.Size(ctx.kernel_shape[:-1]) + (N // 2 + 1,)
        S = None  # Σ over broadcast dims of conj(X) G: the spectrum of the cross-correlation
        grad_x = None if len(chunks) == 1 or not need_x else grad_y.new_empty(grad_y.shape)
        for c, X in zip(chunks, spectra, strict=True):
            G = torch.fft.rfft(grad_y[c], n=N)  # (chunk, ..., D, F)
            if need_kernel:
                part = _reduce_to(torch.conj_physical(X).mul_(G), bins)  # (..D, F)
                S = part if S is None else S.add_(part)
            if need_x:
                gx = torch.fft.irfft(G.mul_(K_conj), n=N)[..., :n]  # (chunk, ..., D, n)
                if grad_x is None:
                    grad_x = gx
                else:
                    grad_x[c] = gx
        grad_kernel = None
        if need_kernel:
            if ctx.is_column:
                grad_kernel = torch.fft.irfft(S, n=N)[..., : ctx.kernel_len]  # (..D, len)
            else:  # the adjoint of irfft: 1/N on DC and Nyquist, 2/N on the other bins
                w = torch.full((S.shape[-1],), 2.0 / N, dtype=K.real.dtype, device=K.device)
                w[0] = 1.0 / N
                if N % 2 == 0:
                    w[-1] = 1.0 / N
                grad_kernel = S * w  # (..D, F)
        return grad_x, grad_kernel, None, None


def _check_product(x: torch.Tensor, kernel_lead: torch.Size, N: int) -> None:
    n = x.shape[-1]
    check_int("N", N, 2 * n - 1, span="[2n-1, inf)")
    if x.dim() < len(kernel_lead) + 1:
        raise ValueError(f"x must have shape [..., {', '.join(map(str, kernel_lead))}, n]; "
                         f"got {tuple(x.shape)}")
    try:
        torch.broadcast_shapes(x.shape[:-1], kernel_lead)
    except RuntimeError:
        raise ValueError(f"kernel leading shape {tuple(kernel_lead)} does not broadcast with "
                         f"x {tuple(x.shape)}") from None


def circulant_product(x: torch.Tensor, column: torch.Tensor, N: int) -> torch.Tensor:
    """Product with the size-N circulant whose first column is ``column`` zero-padded to N,
    truncated to the first n outputs.

    x: [..., D, n], column: [..D, c] real with c <= N  ->  [..., D, n]. With
    ``column = toeplitz.circulant_column(coeffs, N)`` (or, for a causal kernel, just the
    lags 0..n-1) and N >= 2n-1 this is exactly ``toeplitz.matvec_last(coeffs, x, N)``.
    The column's leading dims broadcast against x's (e.g. [H, 1, c] for one kernel per
    head of d channels). Not twice differentiable.
    """
    if column.shape[-1] > N:
        raise ValueError(f"column length must be <= N={N}; got {column.shape[-1]}")
    _check_product(x, column.shape[:-1], N)
    return _SpectralProduct.apply(x, column, N, True)


def spectral_product(x: torch.Tensor, spectrum: torch.Tensor, N: int) -> torch.Tensor:
    """``toeplitz.apply_spectrum``: irfft(rfft(x, N) * spectrum)[..., :n], one autograd node.

    x: [..., D, n], spectrum: complex [..D, N//2+1]  ->  [..., D, n]. Gradients reach the
    spectrum as torch's own irfft backward gives them. Not twice differentiable.
    """
    if not spectrum.is_complex() or spectrum.shape[-1] != N // 2 + 1:
        raise ValueError(f"spectrum must be complex [..., N//2+1 = {N // 2 + 1}]; got "
                         f"{spectrum.dtype} {tuple(spectrum.shape)}")
    _check_product(x, spectrum.shape[:-1], N)
    return _SpectralProduct.apply(x, spectrum, N, False)
