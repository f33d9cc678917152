"""The sketch figure (sketch.js): a lesson question's prediction drawn by hand (mouse, pen,
finger or keyboard), then the lab's curve over it (``tnn_core.lab.lesson.sketch``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from pages import figures
from tnn_core.lab.lesson import Curve, distance

__all__ = ["INSTRUCTIONS", "distance_words", "guess", "show"]

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
    truth = ({"x": curve.x.tolist(), "label": curve.label, "dashed": curve.dashed,
              "y": [y if math.isfinite(y) else None for y in curve.y.tolist()]}
             if revealed else None)
    figures.show("sketch", {
        "axes": {"x": list(curve.x_range), "y": list(curve.y_range), "logX": curve.log_x,
                 "logY": curve.log_y, "xLabel": curve.x_label, "yLabel": curve.y_label},
        "guess": points, "truth": truth, "title": title}, (), key=key, link=False,
        folder=Path(__file__).resolve().parent)


def distance_words(points: list[list[float]], curve: Curve) -> str:
    """How far the sketch ``points`` lies from ``curve`` (``lesson.distance``), in words:
    on a log y axis a factor at the median of its points, else a share of the axis."""
    apart = distance(points, curve)
    if not math.isfinite(apart):
        return "none of your sketch lies inside the curve's range"
    if curve.log_y:
        return f"your sketch is a factor {factor_text(apart)} from it, at the median of its points"
    return f"your sketch is {apart:.0%} of the axis from it"


def factor_text(decades: float) -> str:
    """The ratio 10^``decades`` in words: two significant figures, written out from 100 on
    ("1.3", "240", "12,000"), and from a million on a power of ten ("10^7", "10^323"),
    which no float overflows."""
    if decades >= 6:
        return f"10^{decades:.0f}"
    factor = 10**decades
    return f"{factor:.2g}" if factor < 100 else f"{float(f'{factor:.2g}'):,.0f}"
