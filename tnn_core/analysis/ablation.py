"""Band ablation: a model with some layers' token mixers restricted to their band.

A researcher who reads "most of the mass sits in the band" asks whether the tails beyond
it matter. Answer it with the task: keep the band |i - j| <= m//2 (causal: 0 <= i - j < m)
of the matrix each chosen layer applies and zero the rest, then evaluate the model.

What is kept is what the operator applies. For tno, fd and causal SKI that is the Toeplitz
matrix of ``kernel(n)``, so the restricted mixer is the FFT product of the kernel with its
off-band lags zeroed (O(n log n)). Bidirectional SKI applies band + W A Wᵀ, which is not
Toeplitz: its restricted mixer is the dense applied matrix (``applied.applied_matrix``)
with the off-band entries zeroed, O(n² D) per sequence. Both work at the one length n they
were cut at (evaluate at the training length).

Letters: B batch, n length, D channels, L layers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch import nn

from tnn_core.analysis.applied import applied_matrix
from tnn_core.analysis.atlas import band_mask
from tnn_core.checks import check_int
from tnn_core.core import toeplitz
from tnn_core.operators import TokenMixer

__all__ = ["band_lag_mask", "band_matrix_mask", "BandToeplitz", "BandDense", "band_restricted"]


def band_lag_mask(n: int, band: int, causal: bool) -> torch.Tensor:
    """Lags k = -(n-1) .. n-1 the band keeps: |k| <= m//2, or 0 <= k < m (causal), [2n-1]."""
    return torch.from_numpy(band_mask(n, check_int("band", band, 1), causal))


def band_matrix_mask(n: int, band: int, causal: bool) -> torch.Tensor:
    """Entries (i, j) of an n × n matrix the band keeps, [n, n]."""
    lag = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # (n, n) i - j
    return band_lag_mask(n, band, causal)[(n - 1) + lag]


def _check_shape(x: torch.Tensor, n: int, D: int) -> None:
    if x.dim() != 3 or x.shape[1] != n or x.shape[2] != D:
        raise ValueError(f"x must have shape [B, {n}, {D}] (the length the band was cut "
                         f"at); got {tuple(x.shape)}")


class BandToeplitz(nn.Module):
    """Token mixer: the FFT Toeplitz product of a kernel whose off-band lags are zero."""

    def __init__(self, coeffs: torch.Tensor):
        super().__init__()
        self.register_buffer("coeffs", coeffs)  # (D, 2n-1), already masked

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, D) -> (B, n, D)
        D, lags = self.coeffs.shape
        _check_shape(x, (lags + 1) // 2, D)
        return toeplitz.matvec(self.coeffs, x)


class BandDense(nn.Module):
    """Token mixer y[:, :, c] = (M[c] ⊙ band) x[:, :, c] with the dense masked matrices."""

    def __init__(self, matrices: torch.Tensor):
        super().__init__()
        self.register_buffer("matrices", matrices)  # (D, n, n), already masked

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, D) -> (B, n, D)
        D, n, _ = self.matrices.shape
        _check_shape(x, n, D)
        return torch.einsum("dij,bjd->bid", self.matrices, x)  # (B, n, D)


def _restricted(operator: TokenMixer, n: int, band: int, causal: bool) -> nn.Module:
    device = next(operator.parameters()).device
    if operator.config.kind == "ski" and not causal:
        return BandDense(applied_matrix(operator, n) * band_matrix_mask(n, band, causal).to(device))
    return BandToeplitz(operator.kernel(n) * band_lag_mask(n, band, causal).to(device))


@torch.no_grad()
def band_restricted(model: nn.Module, n: int, band: int, layers: Iterable[int]) -> nn.Module:
    """A copy of ``model`` whose token mixers in ``layers`` keep only their band at length n.

    ``model`` itself is not changed (a shared, cached model may be read by other sessions)."""
    operators = model.operators()
    chosen = {check_int("layer", layer, 0, len(operators) - 1) for layer in layers}
    copied = copy.deepcopy(model)
    parents = {id(module): (parent, name) for parent in copied.modules()
               for name, module in parent.named_children()}
    causal = copied.config.operator.causal
    for layer, operator in enumerate(copied.operators()):
        if layer in chosen:
            parent, name = parents[id(operator)]
            setattr(parent, name, _restricted(operator, n, band, causal))
    return copied
