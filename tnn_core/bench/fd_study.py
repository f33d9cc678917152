"""Where FD's time goes against TNO's: ``python -m tnn_core.bench --fd-study``.

Both operators end in the same FFT product of the input (``fft_product``), four real
FFTs over B·D rows per forward+backward. What differs is the kernel side: TNO runs
its RPE on the lags and one kernel FFT over D rows (its adjoint in the backward); FD
runs its RPE on N/2+1 frequencies and, bidirectionally, needs no kernel FFT, while
causally it adds the Hilbert step (an irfft and an rfft over D rows). ``fd_parts``
times each operator next to the product alone, so

    kernel side = operator - product,   ratio bound = TNO / (product + FD's kernel side)

shows how much of TNO's time FD can save at all at this (B, n).

Letters: B batch, D channels, n length, N FFT size.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from tnn_core.bench.harness import interleaved_ms
from tnn_core.core.toeplitz import fft_size
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["fd_parts"]


def fd_parts(ns: Iterable[int] = (1024, 4096), batches: Iterable[int] = (1, 8), dim: int = 64,
             repeats: int = 21, device: str = "cpu", seed: int = 0) -> list[dict]:
    """One record per (causal, B, n): forward+backward ms of tno, fd and of the product
    alone (a kernel spectrum or column that needs a gradient, no RPE), plus
    tno_kernel_ms, fd_kernel_ms (operator - product) and fd_speedup (tno / fd)."""
    return [_case(causal, batch, n, dim, repeats, torch.device(device), seed)
            for causal in (False, True) for batch in batches for n in ns]


def _case(causal: bool, batch: int, n: int, dim: int, repeats: int, dev: torch.device,
          seed: int) -> dict:
    with seeded_weights(seed):
        ops = {k: build_operator(OperatorConfig(kind=k, causal=causal), dim).to(dev)
               for k in ("tno", "fd")}
    N = fft_size(n)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, n, dim, generator=g).to(dev).requires_grad_(True)
    gy = torch.randn(batch, n, dim, generator=g).to(dev)
    xt, gyt = x.detach().transpose(1, 2).requires_grad_(True), gy.transpose(1, 2)  # (B, D, n)
    column = torch.randn(dim, n if causal else N, generator=g).to(dev).requires_grad_(True)
    spectrum = torch.fft.rfft(column.detach(), n=N).requires_grad_(True)  # (D, N//2+1)

    def product():
        if causal:  # TNO's and causal FD's product: a column, its FFT inside the node
            circulant_product(xt, column, N).backward(gyt)
        else:  # bidirectional FD's product: the spectrum goes in directly
            spectral_product(xt, spectrum, N).backward(gyt)

    def reset():
        for t in (x, xt, column, spectrum):
            t.grad = None
        for op in ops.values():
            op.zero_grad(set_to_none=True)

    fns = {"tno": lambda: ops["tno"](x).backward(gy), "fd": lambda: ops["fd"](x).backward(gy),
           "product": product}
    ms = interleaved_ms(fns, repeats, 2, dev, resets={k: reset for k in fns})
    return dict(causal=causal, batch=batch, n=n, dim=dim, tno_ms=ms["tno"], fd_ms=ms["fd"],
                product_ms=ms["product"], tno_kernel_ms=ms["tno"] - ms["product"],
                fd_kernel_ms=ms["fd"] - ms["product"], fd_speedup=ms["tno"] / ms["fd"])
