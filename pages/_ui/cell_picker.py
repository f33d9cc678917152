"""Linked views: follow one cell of T (Basics and Decomposition).

Altair, not Plotly: Streamlit 1.67 returns an Altair point selection on a mark_rect chart
(on_select), while a click on a Plotly heatmap selects nothing. The picker is small (at most
32 × 32 cells), so it adds little to a slider move; the four big heatmaps stay images.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from pages._ui import controls, session_keys
from pages._ui.controls import fields
from tnn_core.lab.common.linked_cell import SELECTION, cell_from_selection, cell_picker, linked_cell


def pick_cell(chart_key: str, n: int) -> None:
    """on_select: the clicked cell becomes the "cell i, j" inputs (the state that is kept)."""
    try:
        cell = cell_from_selection(st.session_state[chart_key], n)
    except ValueError:  # a selection left from a larger n
        return
    if cell is not None:
        st.session_state[session_keys.CELL_I], st.session_state[session_keys.CELL_J] = cell


def picker_chart(picker, cell, limit: float) -> alt.LayerChart:
    """T's picker (every step-th cell, each covering step × step entries) with the picked
    cell's diagonal drawn through the true cell centres and the cell ringed."""
    n, step = cell.n, picker.step
    cells = pd.DataFrame({"i": picker.rows, "j": picker.columns, "t": picker.values,
                          "i_end": picker.rows + step, "j_end": picker.columns + step})
    x = alt.X("j:Q", scale=alt.Scale(domain=[0, n], nice=False), title="column j")
    y = alt.Y("i:Q", scale=alt.Scale(domain=[0, n], nice=False, reverse=True), title="row i")
    select = alt.selection_point(name=SELECTION, fields=["i", "j"], on="click")
    rect = alt.Chart(cells).mark_rect().encode(
        x=x, x2="j_end", y=y, y2="i_end",
        color=alt.Color("t:Q", scale=alt.Scale(scheme="redblue", domain=[-limit, limit]),
                        legend=None),
        tooltip=["i", "j", alt.Tooltip("t:Q", format=".4g", title="T_ij")]).add_params(select)
    ends = [cell.diagonal_rows[0], cell.diagonal_rows[-1]]
    diagonal = alt.Chart(pd.DataFrame({"i": np.add(ends, 0.5),
                                       "j": np.add(ends, 0.5) - cell.lag})).mark_line(
        color="black", strokeDash=[4, 3], strokeWidth=2).encode(x=x, y=y)
    ring = alt.Chart(pd.DataFrame({"i": [cell.i + 0.5], "j": [cell.j + 0.5]})).mark_point(
        shape="square", size=160, color="black", strokeWidth=2).encode(x=x, y=y)
    return (rect + diagonal + ring).properties(width=300, height=300)


CELL = (48, 16)  # the cell followed at first, clamped to n: a default that n does not move,
# so a link that leaves it out opens on the same cell


def cell_inputs(n: int):
    """The "cell i, j" inputs, in the URL; clamped to n first (a cell kept from a larger n)."""
    a, b = st.columns(2)
    for key in ("cell_i", "cell_j"):
        if st.session_state.get(key, 0) > n - 1:
            st.session_state[key] = n - 1
    i = controls.control(a.number_input, fields.CELL_I, high=n - 1, value=min(n - 1, CELL[0]))
    j = controls.control(b.number_input, fields.CELL_J, high=n - 1, value=min(n - 1, CELL[1]))
    return int(i), int(j)


def follow_cell(coeffs: np.ndarray, rank: int | None, limit: float):
    """The "follow one cell of T" control of Basics and Decomposition: the inputs, a
    clickable picker of T with the cell's diagonal, and a caption. Returns the
    ``LinkedCell`` (with W's rows for ``rank`` inducing points, or none)."""
    n = (len(coeffs) + 1) // 2
    i, j = cell_inputs(n)
    cell = linked_cell(n, rank, i, j)
    chart_key, picker = "pick-cell", cell_picker(coeffs)
    st.altair_chart(picker_chart(picker, cell, limit), key=chart_key,
                    on_select=lambda: pick_cell(chart_key, n), selection_mode=SELECTION)
    step = picker.step
    st.caption("Click a cell: the inputs take its row and column. "
               + (f"Each square is T at its top-left entry (i, j) and covers {step} × {step} "
                  f"entries; type i and j for the others. " if step > 1 else "")
               + "Dashed: the cell's diagonal, every entry t_k.")
    return cell
