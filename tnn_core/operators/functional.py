"""Fast paths of the operators: pure functions over the contiguous [..., D, n] layout.

Each one computes exactly what a reference in the functional core computes (up to
rounding), and ``tests/test_bench.py`` checks them against it in float64:

    circulant_product   == toeplitz.matvec_last        (TNO, SKI causal, FD causal)
    spectral_product    == toeplitz.apply_spectrum     (FD bidirectional)
    band_conv           == the depthwise F.conv1d of SKI's sparse part, three ways
    interp_w, interp_wt == interpolation.apply_w / apply_wt, four ways each

Why they are faster. ``circulant_product`` and ``spectral_product`` are one autograd
node whose backward needs two real FFTs over [..., D, n] (rfft of the output
gradient, irfft for the input gradient) and none over the kernel for a spectrum
input: autograd of ``irfft(rfft(x) * K)`` runs a complex c2c FFT for the rfft
backward, two complex products, a pad and a slice, each a fresh [B, D, N]
allocation (on CPU a fresh allocation that size is page-faulted memory). The kernel
gradient is the circular cross-correlation of the output gradient with x, reduced
over the batch in the frequency domain before its single irfft over D rows.

Letters: B batch (any leading dims), D channels, n length, N FFT size, F = N//2+1,
r inducing points, m band taps.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from ..interpolation import (
    Interpolation,
    apply_w,
    apply_wt,
    interpolation,
    interpolation_matrix,
)
from ..toeplitz import fft_size

__all__ = [
    "circulant_product",
    "spectral_product",
    "InterpMethod",
    "INTERP_METHODS",
    "InterpPlan",
    "interp_plan",
    "chunk_size",
    "interp_w",
    "interp_wt",
    "BandMethod",
    "BAND_METHODS",
    "band_conv",
    "ski_bidirectional",
]


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
    if isinstance(N, bool) or not isinstance(N, int) or N < 2 * n - 1:
        raise ValueError(f"N must be an integer in [2n-1, inf) = [{2 * n - 1}, inf); got {N!r}")
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


# -- SKI's interpolation W [n, r], applied along the rows of [B, n, D] ------------------

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


# -- SKI's band: a depthwise convolution with m taps, along the rows of [B, n, D] -----

BandMethod = Literal["conv_cl", "conv", "shift"]
BAND_METHODS: tuple[str, ...] = ("conv_cl", "conv", "shift")


def _conv_cl(x: torch.Tensor, weight: torch.Tensor, pad: int) -> torch.Tensor:
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
        m = weight.shape[-1]
        pad = max(left, m - 1 - left)
        ext = F.pad(weight, (pad - left, pad - (m - 1 - left)))  # (D, 2 pad + 1)
        ctx.save_for_backward(x, ext)
        ctx.pad, ctx.offset, ctx.m = pad, pad - left, m
        return _conv_cl(x, ext, pad)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        x, ext = ctx.saved_tensors
        pad, D = ctx.pad, x.shape[-1]
        grad_y = grad_y.contiguous()  # (B, n, D): the channels-last layout oneDNN wants
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = _conv_cl(grad_y, ext.flip(-1), pad)  # (B, n, D)
        if ctx.needs_input_grad[1]:
            grad_ext = torch.ops.aten.convolution_backward(
                grad_y.transpose(1, 2).unsqueeze(2), x.transpose(1, 2).unsqueeze(2),
                ext[:, None, None, :], None, [1, 1], [0, pad], [1, 1], False, [0, 0], D,
                [False, True, False])[1]  # (D, 1, 1, 2 pad + 1)
            grad_w = grad_ext[:, 0, 0, ctx.offset : ctx.offset + ctx.m]  # (D, m)
        return grad_x, grad_w, None


def band_conv(x: torch.Tensor, weight: torch.Tensor, left: int, method: BandMethod = "conv_cl"
              ) -> torch.Tensor:
    """Depthwise convolution (cross-correlation, as F.conv1d) along n with zero padding
    ``left`` before and ``m - 1 - left`` after:
    y[b, i, c] = Σ_j weight[c, j] x[b, i - left + j, c]; tap j has lag ``left - j``.

    x: [B, n, D], weight: [D, m]  ->  [B, n, D] (possibly a strided view).
    "conv_cl": F.conv2d(groups=D) on the channels-last view [B, D, 1, n] of x, no copy;
    on CPU oneDNN's NHWC depthwise kernel, with the backward of ``_BandConvCL``;
    several times faster than "conv". Not twice differentiable.
    "conv": F.conv1d(groups=D) on a contiguous [B, D, n] copy, plain autograd.
    "shift": m shifted multiply-adds into the output.
    """
    B, n, D = x.shape
    m = weight.shape[-1]
    if weight.shape != (D, m):
        raise ValueError(f"weight must have shape [D={D}, m]; got {tuple(weight.shape)}")
    if not 0 <= left <= m - 1:
        raise ValueError(f"left must be in [0, m-1] = [0, {m - 1}]; got {left}")
    if method == "conv_cl":
        return _BandConvCL.apply(x, weight, left)
    if method == "conv":
        pad = max(left, m - 1 - left)
        start = pad - left
        y = F.conv1d(x.transpose(1, 2).contiguous(), weight[:, None, :], padding=pad,
                     groups=D)  # (B, D, n + 2 pad - m + 1)
        return y[..., start : start + n].transpose(1, 2)  # (B, n, D)
    if method == "shift":
        y = x * weight[:, left]  # (B, n, D): the tap of lag 0
        for j in range(m):
            s = j - left  # y[i] += w_j x[i + s]
            lo, hi = max(0, -s), min(n, n - s)
            if j == left or lo >= hi:
                continue
            y[:, lo:hi].addcmul_(x[:, lo + s : hi + s], weight[:, j])
        return y
    raise ValueError(f"method must be one of {BAND_METHODS}; got {method!r}")


# -- SKI bidirectional as one node: band + W A Wᵀ ----------------------------------------


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
    """y = band(x) + W A Wᵀ x on [B, n, D] with the band on the channels-last view and A
    by FFT; forward and backward each allocate two [B, n, D] tensors (the result and one
    W product, added in place), where autograd of the parts allocates three or more."""

    @staticmethod
    def forward(ctx, x, band_weight, column, plan: InterpPlan, method: str, left: int, Nr: int):
        m, r = band_weight.shape[-1], plan.r
        pad = max(left, m - 1 - left)
        ext = F.pad(band_weight, (pad - left, pad - (m - 1 - left)))  # (D, 2 pad + 1)
        y = _conv_cl(x, ext, pad)  # (B, n, D)
        Z = torch.fft.rfft(interp_wt(plan, x, method).transpose(1, 2), n=Nr)  # (B, D, Nr//2+1)
        KA = torch.fft.rfft(column, n=Nr)  # (D, Nr//2+1)
        u = torch.fft.irfft(Z * KA, n=Nr)[..., :r]  # (B, D, r): A Wᵀ x
        _add_w(y, plan, u.transpose(1, 2), method)  # (B, n, D)
        ctx.save_for_backward(x, ext, Z, KA)
        ctx.plan, ctx.method, ctx.pad, ctx.offset, ctx.m = plan, method, pad, pad - left, m
        ctx.Nr, ctx.column_len = Nr, column.shape[-1]
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        x, ext, Z, KA = ctx.saved_tensors
        plan, method, pad, Nr, D = ctx.plan, ctx.method, ctx.pad, ctx.Nr, x.shape[-1]
        grad_y = grad_y.contiguous()  # (B, n, D)
        GU = torch.fft.rfft(interp_wt(plan, grad_y, method).transpose(1, 2), n=Nr)  # (B, D, F)
        grad_x = grad_w = grad_column = None
        if ctx.needs_input_grad[0]:
            grad_x = _conv_cl(grad_y, ext.flip(-1), pad)  # (B, n, D)
            gz = torch.fft.irfft(GU * torch.conj_physical(KA), n=Nr)[..., : plan.r]  # (B, D, r)
            _add_w(grad_x, plan, gz.transpose(1, 2), method)
        if ctx.needs_input_grad[1]:
            grad_ext = torch.ops.aten.convolution_backward(
                grad_y.transpose(1, 2).unsqueeze(2), x.transpose(1, 2).unsqueeze(2),
                ext[:, None, None, :], None, [1, 1], [0, pad], [1, 1], False, [0, 0], D,
                [False, True, False])[1]  # (D, 1, 1, 2 pad + 1)
            grad_w = grad_ext[:, 0, 0, ctx.offset : ctx.offset + ctx.m]  # (D, m)
        if ctx.needs_input_grad[2]:
            S = (torch.conj_physical(Z) * GU).sum(0)  # (D, F)
            grad_column = torch.fft.irfft(S, n=Nr)[..., : ctx.column_len]  # (D, len)
        return grad_x, grad_w, grad_column, None, None, None, None


def ski_bidirectional(x: torch.Tensor, band_weight: torch.Tensor, column: torch.Tensor,
                      plan: InterpPlan, method: InterpMethod, left: int) -> torch.Tensor:
    """Bidirectional SKI, band(x) + W A Wᵀ x, as one autograd node.

    x: [B, n, D]; band_weight: [D, m], tap j at lag ``left - j`` (as ``band_conv``);
    column: [D, c <= Nr] the first column of the circulant embedding of A (Nr =
    ``fft_size(r)``); plan: W for this n (``interp_plan``); method: its route
    (``interp_w``). Returns [B, n, D], equal to ``band_conv(x, band_weight, left) +
    interp_w(plan, circulant_product(interp_wt(plan, x).mT, column, Nr).mT)``.
    Not twice differentiable.
    """
    B, n, D = x.shape
    m = band_weight.shape[-1]
    if plan.n != n or band_weight.shape != (D, m) or column.shape[0] != D:
        raise ValueError(f"shapes do not match: x {tuple(x.shape)}, plan n={plan.n}, band_weight "
                         f"{tuple(band_weight.shape)}, column {tuple(column.shape)}")
    if not 0 <= left <= m - 1:
        raise ValueError(f"left must be in [0, m-1] = [0, {m - 1}]; got {left}")
    Nr = fft_size(plan.r)
    return _SkiBidirectional.apply(x, band_weight, column, plan, method, left, Nr)
