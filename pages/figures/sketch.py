"""The sketch figure (sketch.js): a lesson question's prediction drawn by hand (mouse, pen,
finger or keyboard), then the lab's curve over it (``tnn_core.lab.lesson.sketch``)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import streamlit as st

from pages import figures
from tnn_core.lab.lesson import Curve

__all__ = ["INSTRUCTIONS", "guess", "show"]

# how to draw, for the figure's title: every hand and device sketch.js takes
INSTRUCTIONS = ("Draw with the mouse or a finger: press, drag, release. Or Tab to the axes: "
                "arrow keys move the cursor, Enter places a point, Backspace removes the last.")


def guess(key: str) -> list[list[float]]:
    """The sketch the browser sent back for the figure ``key`` ([] before the first)."""
    state = st.session_state.get(key)
    points = state.get("guess") if isinstance(state, Mapping) else None
    if not isinstance(points, list):
        return []
    return [[float(x), float(y)] for x, y in (p for p in points if isinstance(p, list)
                                                and len(p) == 2)
            if figures.is_number(x) and figures.is_number(y) and math.isfinite(x + y)]


def show(curve: Curve, title: str, revealed: bool, points: list[list[float]],
         key: str) -> None:
    """The axes of ``curve`` with the sketch ``points``; the curve itself once revealed."""
    truth = ({"x": curve.x.tolist(), "label": curve.label,
              "y": [y if math.isfinite(y) else None for y in curve.y.tolist()]}
             if revealed else None)
    figures.show("sketch", {
        "axes": {"x": list(curve.x_range), "y": list(curve.y_range), "logX": curve.log_x,
                 "logY": curve.log_y, "xLabel": curve.x_label, "yLabel": curve.y_label},
        "guess": points, "truth": truth, "title": title}, (), key=key, link=False)
