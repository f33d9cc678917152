"""Linked views (tnn_core.lab.common.linked_cell): a picked cell's diagonal, lag and inducing points
against independent numpy, and a chart selection mapped to them."""

from pathlib import Path

import numpy as np
import pytest

from tnn_core.lab.common.linked_cell import (
    SELECTION,
    cell_from_selection,
    cell_picker,
    linked_cell,
    low_rank_entry,
)

SIZES = [(2, 2), (3, 2), (3, 3), (7, 3), (13, 5), (31, 7), (64, 32), (97, 10)]


def reference(n: int, r: int, position: int):
    """Linear interpolation of ``position`` on r points evenly spaced on [0, n-1], in
    numpy: (left point's index, weights (1 - f, f))."""
    points = np.linspace(0.0, n - 1, r)
    left = min(int(np.searchsorted(points, position, side="right")) - 1, r - 2)
    f = (position - points[left]) / (points[left + 1] - points[left])
    return left, (1 - f, f), points


def check_cell(cell, n, r, i, j):
    assert cell.lag == i - j
    dense = np.subtract.outer(np.arange(n), np.arange(n))  # (n, n) i - j
    rows, columns = np.nonzero(dense == i - j)
    np.testing.assert_array_equal(cell.diagonal_rows, rows)
    np.testing.assert_array_equal(cell.diagonal_columns, columns)
    for row, position in ((cell.row, i), (cell.column, j)):
        left, weights, points = reference(n, r, position)
        assert row.position == position
        assert row.columns == (left, left + 1)
        np.testing.assert_allclose(row.points, points[[left, left + 1]], atol=1e-12)
        np.testing.assert_allclose(row.weights, weights, atol=1e-12)
        np.testing.assert_allclose(np.dot(row.weights, row.points), position, atol=1e-9)


@pytest.mark.parametrize("n,r", SIZES)
def test_linked_cell_matches_numpy(n, r):
    rng = np.random.default_rng(n * 100 + r)
    for i, j in [(0, 0), (n - 1, 0), (0, n - 1), (n - 1, n - 1),
                 *rng.integers(0, n, size=(4, 2)).tolist()]:
        check_cell(linked_cell(n, r, i, j), n, r, i, j)


@pytest.mark.parametrize("n,r", SIZES)
def test_low_rank_entry_is_w_a_wt(n, r):
    rng = np.random.default_rng(r)
    a = rng.standard_normal(2 * r - 1)  # a_{-(r-1)} .. a_{r-1}
    points = np.linspace(0.0, n - 1, r)
    W = np.array([np.interp(p, points, np.eye(r)[:, c]) for p in range(n)
                  for c in range(r)]).reshape(n, r)  # (n, r) hat functions at 0..n-1
    A = a[r - 1 + np.subtract.outer(np.arange(r), np.arange(r))]  # (r, r) a_{a-b}
    full = W @ A @ W.T
    for i, j in rng.integers(0, n, size=(5, 2)).tolist():
        assert low_rank_entry(linked_cell(n, r, i, j), a) == pytest.approx(full[i, j])


def test_no_rank_draws_no_inducing_points():
    cell = linked_cell(5, None, 4, 1)
    assert cell.lag == 3 and cell.row is None and cell.column is None
    np.testing.assert_array_equal(cell.diagonal_rows, [3, 4])


@pytest.mark.parametrize("n,i,j,r", [(5, 5, 0, 2), (5, 0, -1, 2), (5, 1, 1, 6), (5, 1, 1, 1)])
def test_bad_cell_raises(n, i, j, r):
    with pytest.raises(ValueError, match="must be an integer in"):
        linked_cell(n, r, i, j)


@pytest.mark.parametrize("n", [2, 3, 31, 64, 97, 1024])
def test_selecting_a_picker_cell_gives_its_diagonal_lag_and_inducing_points(n):
    """A click on any cell of the decimated picker, as the selection Streamlit returns for
    the Altair chart, leads to T at that cell: its lag, its diagonal, its inducing points."""
    r = min(n, 16)
    coeffs = np.random.default_rng(n).standard_normal(2 * n - 1)
    picker = cell_picker(coeffs)
    assert len(picker.indices) <= 32
    dense = coeffs[n - 1 + np.subtract.outer(np.arange(n), np.arange(n))]  # (n, n) t_{i-j}
    for chosen in [0, len(picker.rows) - 1, len(picker.rows) // 3]:
        i, j = int(picker.rows[chosen]), int(picker.columns[chosen])
        assert picker.values[chosen] == dense[i, j]
        event = {"selection": {SELECTION: [{"i": i, "j": j}]}}
        cell = linked_cell(n, r, *cell_from_selection(event, n))
        check_cell(cell, n, r, i, j)
        assert dense[cell.diagonal_rows, cell.diagonal_columns].tolist() == [
            coeffs[n - 1 + cell.lag]] * (n - abs(cell.lag))


def test_empty_or_stale_selection():
    assert cell_from_selection(None, 4) is None
    assert cell_from_selection({"selection": {SELECTION: []}}, 4) is None
    with pytest.raises(ValueError, match="row i"):
        cell_from_selection({"selection": {SELECTION: [{"i": 9, "j": 0}]}}, 4)


def test_basics_follows_the_picked_cell_to_its_lag():
    """On Basics, the cell the figure's browser picks (a click, or its i and j boxes) is kept,
    sent back to the figure, and written to the address. The figure itself draws the cell's
    diagonal, its lag on the kernel plot and the sentence (tests/test_figure_toeplitz.py
    holds its lag and diagonal to linked_cell's)."""
    import json

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"),
                           default_timeout=120)
    at.run()
    at.switch_page("pages/basics.py").run()
    at.session_state["basics-figure"] = {"cell": [10, 3]}  # what a click sends
    at.run()
    assert not at.exception
    assert json.loads(at.get("bidi_component")[0].proto.json)["cell"] == [10, 3]
    assert (at.query_params["cell_i"], at.query_params["cell_j"]) == ("10", "3")
