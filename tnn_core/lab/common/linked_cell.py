"""Linked views: one cell (i, j) of T and everything that belongs to it.

T_ij = t_{i-j}, so the cell sits on the diagonal of lag k = i - j (every cell of that
diagonal holds the same t_k), and in SKI's W A Wᵀ (*SKI to go Faster* §3.2) its value is
interpolated from the inducing points p_l, p_{l+1} on either side of i and those of j:
(W A Wᵀ)_ij = Σ W_ia A_ab W_jb over those two times two points.

Pages pick the cell on a small chart of T (``cell_picker``: at most PICK_CELLS rows and
columns, every ``step``-th, each drawn cell carrying its real (i, j)), read the chart's
selection with ``cell_from_selection``, and draw ``linked_cell``'s overlays.

Letters: n length, r rank (inducing points), s rows and columns of the picker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.dense import dense_toeplitz, display_indices
from tnn_core.checks import check_int
from tnn_core.core.interpolation import inducing_points, interpolation

__all__ = ["PICK_CELLS", "SELECTION", "InterpolatedRow", "LinkedCell", "linked_cell", "CellPicker",
           "cell_picker", "cell_from_selection", "low_rank_entry"]

PICK_CELLS = 32  # rows and columns of the clickable T at most: cells big enough to hit
SELECTION = "cell"  # the chart's selection parameter; its fields are "i" and "j"


@dataclass(frozen=True)
class InterpolatedRow:
    """One row of W in words: position i between its two inducing points."""

    position: int  # i
    columns: tuple[int, int]  # (l, l + 1): the inducing points it interpolates from
    points: tuple[float, float]  # (p_l, p_{l+1})
    weights: tuple[float, float]  # (1 - f, f) with f = (i - p_l) / h


@dataclass(frozen=True)
class LinkedCell:
    """Cell (i, j) of an n × n Toeplitz matrix, its diagonal, and (given r) the inducing
    points i and j interpolate from."""

    n: int
    i: int
    j: int
    lag: int  # k = i - j
    diagonal_rows: np.ndarray  # [n - |k|] rows of the cells on the diagonal i - j = k
    diagonal_columns: np.ndarray  # [n - |k|] their columns: diagonal_rows - k
    rank: int | None  # r, or None where no low-rank part is drawn
    row: InterpolatedRow | None  # i between its inducing points (None without r)
    column: InterpolatedRow | None  # j between its inducing points (None without r)


def _interpolated(position: int, index: np.ndarray, weight: np.ndarray, points: np.ndarray
                  ) -> InterpolatedRow:
    left = int(index[position])
    return InterpolatedRow(position=position, columns=(left, left + 1),
                           points=(float(points[left]), float(points[left + 1])),
                           weights=(float(weight[position, 0]), float(weight[position, 1])))


def linked_cell(n: int, rank: int | None, i: int, j: int) -> LinkedCell:
    """The diagonal and lag of cell (i, j) of an n × n T and, for rank r in [2, n], the two
    inducing points (with their weights, row i of W) of i and of j."""
    n = check_int("n", n, 1)
    i = check_int("row i", i, 0, n - 1, "[0, n-1]")
    j = check_int("column j", j, 0, n - 1, "[0, n-1]")
    lag = i - j
    rows = np.arange(max(0, lag), min(n, n + lag))  # (n - |k|,)
    row = column = None
    if rank is not None:
        rank = check_int("rank", rank, 2, max(n, 2), "[2, n]")
        interp = interpolation(n, rank)
        index = interp.index.numpy()  # (n,) left inducing point of each position
        weight = interp.weight.double().numpy()  # (n, 2)
        points = inducing_points(n, rank).numpy()  # (r,)
        row, column = (_interpolated(p, index, weight, points) for p in (i, j))
    return LinkedCell(n=n, i=i, j=j, lag=lag, diagonal_rows=rows, diagonal_columns=rows - lag,
                      rank=rank, row=row, column=column)


def low_rank_entry(cell: LinkedCell, A_coeffs: np.ndarray) -> float:
    """(W A Wᵀ)_ij = Σ_ab W_ia a_{a-b} W_jb over the two inducing points a of i and b of j;
    A_coeffs [2r-1] holds a_{-(r-1)} .. a_{r-1}."""
    if cell.row is None or cell.column is None:
        raise ValueError("low_rank_entry needs a cell made with a rank r")
    r = cell.rank
    return float(sum(wa * wb * A_coeffs[r - 1 + a - b]
                     for a, wa in zip(cell.row.columns, cell.row.weights, strict=True)
                     for b, wb in zip(cell.column.columns, cell.column.weights, strict=True)))


@dataclass(frozen=True)
class CellPicker:
    """T at every ``step``-th row and column: the cells a chart offers to click."""

    indices: np.ndarray  # [s] rows (and columns) drawn
    step: int  # a drawn cell (i, j) covers rows i .. i + step - 1, columns j .. j + step - 1
    rows: np.ndarray  # [s*s] i of each drawn cell, row-major
    columns: np.ndarray  # [s*s] j of each drawn cell
    values: np.ndarray  # [s*s] T_ij = t_{i-j}


def cell_picker(coeffs: np.ndarray, max_cells: int = PICK_CELLS) -> CellPicker:
    """The clickable T of kernel coeffs [2n-1], at most ``max_cells`` a side."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (len(coeffs) + 1) // 2
    indices = display_indices(n, max_cells)  # (s,)
    step = int(indices[1] - indices[0]) if len(indices) > 1 else 1
    rows, columns = np.meshgrid(indices, indices, indexing="ij")  # (s, s) each
    return CellPicker(indices=indices, step=step, rows=rows.ravel(), columns=columns.ravel(),
                      values=dense_toeplitz(coeffs, indices).ravel())


def cell_from_selection(event: Mapping | None, n: int) -> tuple[int, int] | None:
    """(i, j) of the cell a chart's selection holds, or None when nothing is selected.

    ``event`` is what Streamlit returns for a chart drawn with ``on_select``:
    ``{"selection": {SELECTION: [{"i": i, "j": j}]}}``. The picker's cells carry their
    real row and column, so a selected cell needs no mapping back from the grid; a value
    outside [0, n-1] (a stale selection from a larger n) raises ValueError."""
    points = ((event or {}).get("selection") or {}).get(SELECTION) or []
    if not points:
        return None
    point = points[0]
    i = check_int("row i", int(point["i"]), 0, n - 1, "[0, n-1]")
    j = check_int("column j", int(point["j"]), 0, n - 1, "[0, n-1]")
    return i, j
