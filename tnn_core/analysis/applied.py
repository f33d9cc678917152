"""The matrix an operator actually applies, read off its forward pass.

``kernel(n)`` is a Toeplitz kernel, but bidirectional SKI applies band + W A Wᵀ ("SKI to
go Faster", Algorithm 1), which is not Toeplitz: ``kernel(n)`` is only its Toeplitz
target. To show what a model computes, push the basis vectors e_0 .. e_{n-1} through
``forward`` on every channel at once; column j of channel c's matrix is the output for e_j:

    y[j, :, c] = M[c] @ e_j = M[c][:, j]

This uses nothing but ``forward``, so it is an independent check of ``op.matrix(n)`` too.

Letters: n length, D channels, C channels asked for, J basis vectors per pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tnn_core.checks import check_int
from tnn_core.operators import CHANNEL_KINDS, TokenMixer

__all__ = ["BASIS_CHUNK", "applied_matrix"]

BASIS_CHUNK = 64  # basis vectors per forward pass: [J, n, D] stays a few MiB up to n = 1024


@torch.no_grad()
def applied_matrix(operator: TokenMixer, n: int, channels: Sequence[int] | None = None,
                   chunk: int = BASIS_CHUNK) -> torch.Tensor:
    """M[c] with ``operator(x)[b, :, c] == M[c] @ x[b, :, c]`` at length n: [C, n, n].

    ``channels``: which channels (default all D), in the operator's dtype and device;
    ``chunk``: basis vectors per forward pass (a smaller one bounds its memory).
    Only the per-channel operators (``operators.CHANNEL_KINDS``) have one matrix per channel."""
    if operator.config.kind not in CHANNEL_KINDS:
        raise ValueError(f"operator kind must be one of {CHANNEL_KINDS} (one matrix per channel); "
                         f"got {operator.config.kind!r}")
    check_int("n", n, 1)
    D = operator.dim
    channels = list(range(D)) if channels is None else [
        check_int("channel", c, 0, D - 1) for c in channels]
    p = next(operator.parameters())
    out = p.new_empty(len(channels), n, n)  # (C, n, n)
    check_int("chunk", chunk, 1)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        basis = p.new_zeros(stop - start, n, D)  # (J, n, D)
        basis[torch.arange(stop - start), torch.arange(start, stop)] = 1.0  # e_j on every c
        y = operator(basis)[:, :, channels]  # (J, n, C): y[j, i, c] = M[c][i, start + j]
        out[:, :, start:stop] = y.permute(2, 1, 0)  # (C, n, J)
    return out
