"""One channel of a trained model at length n: the matrix it applies, drawn beside its
Toeplitz part and, for bidirectional SKI, its target ``kernel(n)``.

A togeipi layer has no matrix per channel (``NO_CHANNEL_MATRIX`` says why).

Letters: n length, s rows and columns drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from tnn_core.analysis import channel_kernel
from tnn_core.analysis.applied import BASIS_CHUNK, applied_matrix
from tnn_core.lab.common.kernel_view import KernelView, kernel_view
from tnn_core.models import ModelConfig
from tnn_core.training.budget import MEMORY_LIMIT, check_cost, pass_cost

__all__ = ["NO_CHANNEL_MATRIX", "ChannelMatrix", "applied_chunk", "channel_matrix"]

NO_CHANNEL_MATRIX = ("A togeipi layer mixes its channels through its projections and adds a "
                     "learned sparse matrix that is not Toeplitz, so no matrix belongs to one "
                     "channel; the atlas above shows each head's Toeplitz point spread function.")


@dataclass(frozen=True)
class ChannelMatrix:
    """One channel at length n: the matrix the model applies, its Toeplitz part, the target."""

    view: KernelView  # matrix: the applied matrix at the drawn rows; coeffs: its diagonal means
    target: np.ndarray | None  # [2n-1] kernel(n), the Toeplitz target (bidirectional SKI only)
    target_gap: float  # ||M - dense(kernel(n))||_F / ||dense(kernel(n))||_F (NaN: no target)


def applied_chunk(config: ModelConfig, n: int) -> int:
    """Basis vectors per forward pass of ``applied_matrix`` at length n: BASIS_CHUNK, or
    fewer when a pass of that many would not fit the memory budget (an SKI of large r
    pays for its FFT of size 2r on every vector); BudgetError if one alone does not."""
    chunk = BASIS_CHUNK
    while chunk > 1 and pass_cost(config, chunk, n).bytes > MEMORY_LIMIT:
        chunk //= 2
    check_cost(f"drawing the matrix a channel applies at n = {n:,}", pass_cost(config, chunk, n),
               seconds_limit=None)
    return chunk


def channel_matrix(model: nn.Module, n: int, layer: int, channel: int) -> ChannelMatrix:
    """The matrix layer ``layer``, channel ``channel`` applies at length n (``applied``);
    ValueError (``NO_CHANNEL_MATRIX``) for togeipi."""
    if model.config.operator.kind == "togeipi":
        raise ValueError(NO_CHANNEL_MATRIX)
    operator = model.operators()[layer]
    chunk = applied_chunk(model.config, n)
    applied = applied_matrix(operator, n, [channel], chunk)[0].double().cpu().numpy()  # (n, n)
    coeffs = channel_kernel(operator, n, channel).numpy()  # (2n-1,) diagonal means
    base = kernel_view(coeffs)
    idx = base.indices
    view = KernelView(n=base.n, lags=base.lags, coeffs=coeffs, indices=idx, step=base.step,
                      matrix=applied[np.ix_(idx, idx)],
                      limit=float(np.abs(applied).max()) or 1.0)
    if operator.config.kind != "ski" or operator.config.causal:
        return ChannelMatrix(view=view, target=None, target_gap=math.nan)
    with torch.no_grad():
        target = operator.kernel(n)[channel].double().cpu().numpy()  # (2n-1,)
    lag = np.subtract.outer(np.arange(n), np.arange(n))  # (n, n) i - j
    dense_target = target[(n - 1) + lag]
    norm = float(np.linalg.norm(dense_target))
    gap = float(np.linalg.norm(applied - dense_target)) / norm if norm > 0 else math.nan
    return ChannelMatrix(view=view, target=target, target_gap=gap)
