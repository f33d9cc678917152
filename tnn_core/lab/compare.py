"""The Compare A/B page: two settings of one decomposition side by side, and B − A.

Each side is one kernel (the shared preset, n and causal at its own λ) split as
T ≈ band + W A Wᵀ at its own band m, rank r and method (Algorithm 1 of "SKI to go
Faster", ``analysis.decompose``). ``compare_side`` gives what a column draws, its errors
read from ``Decomposition.errors`` (the Decomposition page's own); ``difference`` gives
the strip between the columns: B − A of every number, in words, and the difference of the
two approximations at the rows and columns both heatmaps draw.

Letters: n length, r rank (inducing points), s rows and columns drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import display_indices
from tnn_core.lab.decomposition import HEATMAP_CELLS

__all__ = ["SideView", "compare_side", "change_text", "NumberChange", "Difference",
           "difference"]


@dataclass(frozen=True)
class SideView:
    """What one column (A or B) draws for its setting."""

    n: int
    band: int
    rank: int
    method: str
    decay: float
    relative_spectral: float  # ||T - approx||_2 / ||T||_2 (nan: all-zero kernel)
    relative_frobenius: float  # ||T - approx||_F / ||T||_F
    relative_optimal_frobenius: float  # Eckart–Young optimum with this band, over ||T||_F
    note: str  # why relative errors are undefined, or ""
    lags: np.ndarray  # [2n-1] k = -(n-1)..n-1
    coeffs: np.ndarray  # [2n-1] t_k
    idx: np.ndarray  # [s] rows and columns the heatmaps draw
    approximation: np.ndarray  # [s, s] band + W A Wᵀ
    residual: np.ndarray  # [s, s] T - band - W A Wᵀ


def compare_side(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                 decay: float) -> SideView:
    """One column for kernel coeffs [2n-1] (built at λ = ``decay``); ValueError naming the
    field when band, rank or method do not fit n (``decompose``'s checks)."""
    dec = decompose(coeffs, band, rank, causal=causal, method=method)
    n, errors = dec.n, dec.errors
    idx = display_indices(n, HEATMAP_CELLS)
    approximation = dec.band_matrix(idx) + dec.low_rank_matrix(idx)  # (s, s)
    return SideView(n=n, band=dec.band, rank=dec.rank, method=method, decay=float(decay),
                    relative_spectral=errors.relative_spectral,
                    relative_frobenius=errors.relative_frobenius,
                    relative_optimal_frobenius=errors.relative_optimal_frobenius,
                    note=errors.note, lags=np.arange(-(n - 1), n), coeffs=dec.coeffs,
                    idx=idx, approximation=approximation, residual=dec.residual_matrix(idx))


def change_text(a: float, b: float) -> str:
    """B against A in words: "B is 3.2× smaller", "B is 1.5× larger", "B equals A"; two
    significant figures (three below 1.1×, so a change of a few percent never reads "1.0×")."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return "undefined on one side"
    if a == b:
        return "B equals A"
    if a == 0 or b == 0:
        return "A is 0, B is not" if a == 0 else "B is 0, A is not"
    if np.sign(a) != np.sign(b):
        return "B and A have opposite signs"
    factor = max(abs(a), abs(b)) / min(abs(a), abs(b))
    if factor < 1.005:
        return "B is within 0.5 % of A"
    decimals = 2 if factor < 1.1 else 1 if factor < 10 else 0
    return f"B is {factor:.{decimals}f}× {'smaller' if abs(b) < abs(a) else 'larger'}"


@dataclass(frozen=True)
class NumberChange:
    """One number of both columns and B − A, with the change in words."""

    label: str
    a: float
    b: float
    delta: float  # b - a
    words: str  # ``change_text(a, b)``


@dataclass(frozen=True)
class Difference:
    """The strip between the columns."""

    numbers: tuple[NumberChange, ...]
    idx: np.ndarray  # [s] rows and columns drawn (the same on both sides)
    approximation: np.ndarray  # [s, s] (band + W A Wᵀ) of B minus that of A
    limit: float  # colour range ±limit: max|approximation difference| (1 when 0)
    kernel_gap: float  # max_k |t_k of B − t_k of A|: the kernels differ when λ does


def difference(a: SideView, b: SideView) -> Difference:
    """B − A of two columns over the same n (ValueError when their n differ)."""
    if a.n != b.n:
        raise ValueError(f"both sides must have the same n to be compared; got n = {a.n} "
                         f"and n = {b.n}")
    numbers = tuple(
        NumberChange(label, x, y, y - x, change_text(x, y)) for label, x, y in (
            ("spectral error", a.relative_spectral, b.relative_spectral),
            ("Frobenius error", a.relative_frobenius, b.relative_frobenius),
            ("SVD optimum", a.relative_optimal_frobenius, b.relative_optimal_frobenius)))
    change = b.approximation - a.approximation  # (s, s)
    return Difference(numbers=numbers, idx=a.idx, approximation=change,
                      limit=float(np.abs(change).max(initial=0.0)) or 1.0,
                      kernel_gap=float(np.abs(b.coeffs - a.coeffs).max(initial=0.0)))
