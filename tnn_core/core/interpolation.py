"""Linear interpolation onto inducing points: the sparse W of SKI.

Structured kernel interpolation (Wilson & Nickisch 2015), used asymmetrically
in §3.2.1 of "SKI to go Faster": T_low = W A Wᵀ with W [n, r] holding the
linear-interpolation weights of the positions 0..n-1 onto r inducing points
p_0..p_{r-1} evenly spaced on [0, n-1].

W has at most 2 nonzeros per row, rows sum to 1, and it reproduces linear
functions exactly: W p = (0, 1, .., n-1). We keep it as (index, weight) pairs
and apply it by gather (W y) and scatter-add (Wᵀ x), both O(n). The published
code swapped the two weights onto the wrong neighbour and let positions run
past the last inducing point; ``interpolation_matrix`` is the dense reference
the tests check the sparse form against.

Letters: n positions, r inducing points, D channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import check_length

__all__ = [
    "Interpolation",
    "inducing_points",
    "interpolation",
    "interpolation_matrix",
    "used_columns",
    "apply_w",
    "apply_wt",
]


def inducing_points(n: int, r: int, dtype=torch.float64) -> torch.Tensor:
    """r points evenly spaced on [0, n-1], shape [r]. Spacing h = (n-1)/(r-1)."""
    check_length(n)
    check_int("rank", r, 2)
    return torch.linspace(0, n - 1, r, dtype=dtype)


@dataclass(frozen=True)
class Interpolation:
    """Sparse linear-interpolation weights: row i of W has ``weight[i, 0]`` at column
    ``index[i]`` and ``weight[i, 1]`` at column ``index[i] + 1``."""

    n: int
    r: int
    index: torch.Tensor  # [n] long, in [0, r-2]
    weight: torch.Tensor  # [n, 2]

    @property
    def spacing(self) -> float:
        """h, the distance between neighbouring inducing points."""
        return (self.n - 1) / (self.r - 1)

    def to(self, device, dtype) -> Interpolation:
        return Interpolation(
            self.n, self.r, self.index.to(device), self.weight.to(device=device, dtype=dtype)
        )


def interpolation(n: int, r: int, dtype=torch.float64, device=None) -> Interpolation:
    """Weights for positions 0..n-1 onto ``inducing_points(n, r)``.

    Position i sits at fractional inducing index s = i (r-1)/(n-1); its left
    neighbour is floor(s) (clamped to r-2 so the last position uses the last
    interval) and the weights are (1 - frac, frac).
    """
    check_length(n)
    check_int("rank", r, 2)
    i = torch.arange(n, dtype=torch.long)
    num = i * (r - 1)  # s = num / (n - 1), kept in integers so frac is exact
    den = max(n - 1, 1)  # n = 1: all inducing points coincide at 0, W = e_0
    left = torch.clamp(num // den, max=r - 2)  # (n,)
    frac = (num - left * den).to(torch.float64) / den  # (n,) in [0, 1]
    weight = torch.stack([1 - frac, frac], dim=-1)  # (n, 2)
    return Interpolation(
        n=n,
        r=r,
        index=left.to(device=device),
        weight=weight.to(device=device, dtype=dtype),
    )


def interpolation_matrix(interp: Interpolation) -> torch.Tensor:
    """Dense W [n, r] (for references and display)."""
    W = interp.weight.new_zeros(interp.n, interp.r)
    rows = torch.arange(interp.n, device=interp.index.device)
    W[rows, interp.index] += interp.weight[:, 0]
    W[rows, interp.index + 1] += interp.weight[:, 1]
    return W


def used_columns(interp: Interpolation) -> tuple[torch.Tensor, torch.Tensor]:
    """The inducing points W uses and W on them only: (columns [u] long, W_u [n, u]).

    W's other columns are zero, so W A Wᵀ = W_u A[columns][:, columns] W_uᵀ exactly, with
    u <= min(r, 2n): a dense A costs what the length allows, however large r is."""
    columns = torch.unique(torch.cat([interp.index, interp.index + 1]))  # (u,) sorted
    left = torch.searchsorted(columns, interp.index)  # (n,); index + 1 is the next column
    W = interp.weight.new_zeros(interp.n, columns.numel())  # (n, u)
    rows = torch.arange(interp.n, device=interp.index.device)
    W[rows, left] += interp.weight[:, 0]
    W[rows, left + 1] += interp.weight[:, 1]
    return columns, W


def apply_w(interp: Interpolation, y: torch.Tensor) -> torch.Tensor:
    """W y along the last axis: y [..., r] -> [..., n]. A gather of two neighbours."""
    if y.shape[-1] != interp.r:
        raise ValueError(f"y last dimension must be r={interp.r}; got {y.shape[-1]}")
    left = y[..., interp.index]  # (..., n)
    right = y[..., interp.index + 1]  # (..., n)
    return left * interp.weight[:, 0] + right * interp.weight[:, 1]


def apply_wt(interp: Interpolation, x: torch.Tensor) -> torch.Tensor:
    """Wᵀ x along the last axis: x [..., n] -> [..., r]. The adjoint: a scatter-add."""
    if x.shape[-1] != interp.n:
        raise ValueError(f"x last dimension must be n={interp.n}; got {x.shape[-1]}")
    out = x.new_zeros(*x.shape[:-1], interp.r)  # (..., r)
    out = out.index_add(-1, interp.index, x * interp.weight[:, 0])
    return out.index_add(-1, interp.index + 1, x * interp.weight[:, 1])
