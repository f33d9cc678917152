"""SKI's low-rank part drawn as a product: W [n, r] · A [r, r] · Wᵀ = W A Wᵀ.

*SKI to go Faster* §3.2 (Algorithm 1): W holds the linear-interpolation weights of the
positions 0..n-1 onto r inducing points p_0 = 0 .. p_{r-1} = n - 1 (two nonzeros a row,
one where a position sits on an inducing point), and A_ij = a_{i-j} is Toeplitz. The
Decomposition page draws the three factors and their product beside T - band, the part
of T they stand for.

What is drawn, at most PIECE_CELLS a side: the columns of W (and rows and columns of A)
p_0 .. p_{c-1}, c = min(r, PIECE_CELLS); the rows of W are the positions whose two
neighbours are among those columns, every ``row_step``-th of them. Every drawn row is a
whole row of W, so ``product`` = ``W @ A @ W.T`` of the drawn pieces exactly. A close-up
of W's first ZOOM_POINTS columns shows each row's two weights.

Letters: n length, r rank, s rows of W drawn, c columns of W drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.low_rank import interpolation_weights

__all__ = ["PIECE_CELLS", "InterpolatedRow", "SkiPieces", "ski_pieces"]

PIECE_CELLS = 128  # rows and columns a piece draws at most: five pieces sit side by side
ZOOM_POINTS = 4  # inducing points in the close-up of W
ZOOM_ROWS = 64  # rows the close-up draws at most


@dataclass(frozen=True)
class InterpolatedRow:
    """One row of W in words: position i between its two inducing points."""

    position: int  # i
    columns: tuple[int, int]  # (l, l + 1): the inducing points it interpolates from
    points: tuple[float, float]  # (p_l, p_{l+1})
    weights: tuple[float, float]  # (1 - f, f) with f = (i - p_l) / h


@dataclass(frozen=True)
class SkiPieces:
    """W, A and W A Wᵀ at the rows and columns drawn (see the module docstring)."""

    n: int
    rank: int
    rows: np.ndarray  # [s] positions i drawn (rows of W, rows and columns of the product)
    row_step: int  # one position in ``row_step`` drawn (1: all of them)
    columns: int  # c: inducing points drawn, p_0 .. p_{c-1}
    W: np.ndarray  # [s, c] W[rows, :c]
    A: np.ndarray  # [c, c] A[:c, :c] = a_{i-j}
    product: np.ndarray  # [s, s] (W A Wᵀ)[rows, rows] = W @ A @ W.T
    target: np.ndarray  # [s, s] (T - band)[rows, rows]: what W A Wᵀ approximates
    a_max: float  # max |a_l| (the page clips A's picture at T's colour limit)
    zoom_rows: np.ndarray  # [z] positions between p_0 and p_{q-1}, every ``zoom_step``-th
    zoom_step: int
    zoom: np.ndarray  # [z, q] W[zoom_rows, :q], q = min(r, ZOOM_POINTS): a close-up of W
    example: InterpolatedRow


def _example_row(index: np.ndarray, weight: np.ndarray, points: np.ndarray
                 ) -> InterpolatedRow:
    """The row of the first position from a third of the way along that is not on an
    inducing point (the last position when all are: r = n)."""
    n = len(index)
    between = np.flatnonzero((weight[:, 0] > 0) & (weight[:, 1] > 0))  # (k,)
    later = between[between >= n // 3]
    i = int(later[0]) if len(later) else n - 1
    left = int(index[i])
    return InterpolatedRow(position=i, columns=(left, left + 1),
                           points=(float(points[left]), float(points[left + 1])),
                           weights=(float(weight[i, 0]), float(weight[i, 1])))


def _window(index: np.ndarray, columns: int, max_rows: int) -> tuple[np.ndarray, int]:
    """The positions whose two neighbours are among the first ``columns`` inducing points,
    every step-th so that at most ``max_rows`` remain: (rows [s], step)."""
    last = int(np.flatnonzero(index + 1 < columns)[-1])  # index + 1 <= r - 1 always
    step = max(1, math.ceil((last + 1) / max_rows))
    return np.arange(0, last + 1, step), step


def ski_pieces(dec) -> SkiPieces:
    """The factors of ``dec.low_rank_matrix()`` for a ``analysis.decompose.Decomposition``."""
    n, r = dec.n, dec.rank
    columns = min(r, PIECE_CELLS)
    W_sparse = interpolation_weights(dec.interp)  # (n, r)
    index = dec.interp.index.cpu().numpy()  # (n,) left neighbour of each position
    rows, row_step = _window(index, columns, PIECE_CELLS)  # (s,)
    W = W_sparse[rows].toarray()[:, :columns]  # (s, c)
    zoom_points = min(r, ZOOM_POINTS)
    zoom_rows, zoom_step = _window(index, zoom_points, ZOOM_ROWS)  # (z,)
    A = dense_toeplitz(dec.A_coeffs)[:columns, :columns]  # (c, c)
    example = _example_row(index, dec.interp.weight.cpu().double().numpy(),
                           dec.inducing_points)
    return SkiPieces(n=n, rank=r, rows=rows, row_step=row_step, columns=columns, W=W, A=A,
                     product=W @ A @ W.T,  # (s, c) (c, c) (c, s) -> (s, s)
                     target=dense_toeplitz(dec.coeffs - dec.band_coeffs, rows),
                     a_max=float(np.abs(dec.A_coeffs).max(initial=0.0)),
                     zoom_rows=zoom_rows, zoom_step=zoom_step,
                     zoom=W_sparse[zoom_rows].toarray()[:, :zoom_points], example=example)
