"""Every layer's learned kernels as plain arrays, for one's own plots and papers.

``kernel_arrays(operators, n)`` gives, per layer, ``layer0``, ``layer1``, … of shape
[channels, 2n − 1]: t_k for k = −(n − 1) … n − 1 (column n − 1 is the zero lag; a causal
model's negative lags are exact zeros). That is each operator's ``kernel(n)``: the matrix a
tno, fd, causal SKI or ssm channel applies is ``toeplitz.dense`` of it. Bidirectional SKI
applies band + W A Wᵀ, which is not Toeplitz: its array is the Toeplitz kernel it
interpolates (``analysis.applied`` gives the matrix itself). A togeipi layer has one
Toeplitz part per head, not per channel, and is refused by name.

``npz_bytes`` writes them as one NumPy ``.npz`` (what ``python -m tnn_core.report --kernels``
and Inspect's download give), float64 for a float64 model, float32 otherwise.

Letters: L layers, D channels, n length.
"""

from __future__ import annotations

import io

import numpy as np
import torch

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import MAX_LENGTH
from tnn_core.operators import CHANNEL_KINDS

__all__ = ["MAX_EXPORT_NUMBERS", "kernel_arrays", "npz_bytes"]

MAX_EXPORT_NUMBERS = 200_000_000  # L·D·(2n − 1) numbers: 800 MB of float32 at most


@torch.no_grad()
def kernel_arrays(operators: list, n: int) -> dict[str, np.ndarray]:
    """{"layer{i}": t [D, 2n-1]} for every operator; ValueError before anything is computed
    for an n out of range, a togeipi layer, or more than MAX_EXPORT_NUMBERS numbers."""
    check_int("n", n, 1, MAX_LENGTH)
    numbers = sum(op.dim for op in operators) * (2 * n - 1)
    if numbers > MAX_EXPORT_NUMBERS:
        raise ValueError(f"the kernels at n = {n} are {numbers:,} numbers; the export holds at "
                         f"most {MAX_EXPORT_NUMBERS:,}: choose a smaller n")
    for i, op in enumerate(operators):
        if op.config.kind not in CHANNEL_KINDS:
            raise ValueError(f"layer {i} is a {op.config.kind} mixer: its channels do not each "
                             f"apply one Toeplitz matrix, so it has no kernel array")
    return {f"layer{i}": op.kernel(n).detach().cpu().numpy() for i, op in enumerate(operators)}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``arrays`` as the bytes of one uncompressed ``.npz``."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()
