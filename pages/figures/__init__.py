"""Figures that draw in the browser: one picture, its one to three controls, one caption.

A figure is a Streamlit custom component v2 (``st.components.v2``: mounted in the page,
no iframe) whose JavaScript computes and redraws on every ``input`` event of its own
sliders, so a drag is followed frame by frame with no server round trip. On release
(``change``) the slider's value goes back to Python as component state: the page reruns
and computes what the browser cannot (spectral norms, least squares at large n, timings).

Each figure NAME has ``NAME.js`` beside this file (a figure only one page draws keeps it
in that page's folder, which it passes as ``folder``), appended to the shared ``fft.js`` and
``common.js`` in one module that ends with its ``export default function (component)``.
Its header documents its data contract: what the server sends once per kernel
(``data``) and what the browser computes per frame. A figure too large for one file (the
house rules hold the JavaScript too: a file at most 400 lines, a function at most 60,
tests/test_layout.py) declares its other files in ``PARTS``, named ``NAME_<part>.js``; they
come between the shared files and ``NAME.js`` (``script``), so they hold plain functions
and constants that ``NAME.js`` calls.

The contract that tests and benchmarks rely on (keep it stable):
- the figure's root element has ``data-testid="figure"`` and ``data-figure="NAME"``;
- each time it has finished drawing, ``data-drawn`` holds the parameters it drew as a URL
  query string, e.g. ``n=1024&band=9&rank=33&decay=0.99&method=sample``;
- a numbers panel that waits for the server has ``data-stale="true"`` until it shows the
  server's values for the current setting.

Every control of a figure lives in the URL under its name, like the pages' widgets: a
link value the figure cannot use is named in the page's link notice (``_ui.controls``). A lesson
mounts a figure with ``link=False``: its settings come from the step (``defaults``), its
state stays under the step's own key, and the URL (the lesson's) is neither read nor
written.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from pages._ui import controls, link_values
from tnn_core.lab.common.figure_controls import Control

__all__ = ["show", "values", "value", "keep_in_link", "is_number", "url_text",
           "script"]

FOLDER = Path(__file__).resolve().parent
SHARED = ("fft.js", "common.js")  # before the figure's own file, in this order
# A figure's files besides NAME.js, after SHARED and before NAME.js, in this order.
PARTS = {"decomposition": ("decomposition_maths.js",)}


def script(name: str, folder: Path = FOLDER) -> str:
    """The module a figure runs: the shared files, the figure's ``PARTS``, then ``NAME.js``
    (its parts and ``NAME.js`` in ``folder``: the library's, or the one page's that draws it)."""
    return "\n".join([*((FOLDER / part).read_text(encoding="utf-8") for part in SHARED),
                      *((folder / part).read_text(encoding="utf-8")
                        for part in (*PARTS.get(name, ()), f"{name}.js"))])


@functools.cache
def _component(name: str, folder: Path):
    """Registered once per server process (the same name again would replace it)."""
    return st.components.v2.component(f"toeplitz_lab_{name}", js=script(name, folder),
                                      css=(FOLDER / "figure.css").read_text(encoding="utf-8"))


def value(key: str, name: str, widget: str, spec: dict, default, valid, parse,
          link: bool = True):
    """The figure ``key``'s value ``name``: the browser's settled one (if ``valid``), else the
    link's (checked as Streamlit's ``widget`` with ``spec`` would take it, then ``parse``d
    from its text; a refused one is named in the page's link notice; not read when
    ``link`` is False), else ``default``. Pages call it before mounting: the server's data
    depends on the values."""
    state = st.session_state.get(key)  # the browser's settled values: a dict by state name
    settled = state.get(name) if isinstance(state, Mapping) else None
    if valid(settled):
        return settled
    raw = st.query_params.get_all(name) if link else []
    if not raw:
        return default
    problem = link_values.link_value_problem(widget, spec, raw)
    if problem is None:
        return parse(raw[-1])
    if widget == "text_input" and raw[-1]:  # a text box keeps what fits
        cut = raw[-1][:spec["max_chars"]]
        controls.note_link_value(name, problem[0], cut, cut)
        return cut
    controls.note_link_value(name, problem[0], default, url_text(default))
    return default


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def values(controls: tuple[Control, ...], key: str, link: bool = True) -> dict:
    """The sliders' values ``show(..., controls, key)`` returns, known before it is called."""
    out = {}
    for control in controls:
        spec = {"min_value": control.typed(control.low),
                "max_value": control.typed(control.high), "value": control.typed(control.default)}
        found = value(key, control.name, "slider", spec, control.default, is_number, float,
                      link)
        out[control.name] = control.typed(min(max(found, control.low), control.high))
    return out


def url_text(value) -> str:
    """``value`` as the URL holds it (a bound widget's way: true/false for a toggle)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def keep_in_link(settled: dict) -> None:
    """Write a figure's values into the URL, as Streamlit writes a bound widget's; a value
    that moved away from what a link asked for ends the link's notice."""
    for name, current in settled.items():
        st.query_params[name] = url_text(current)
        controls.note_link_value(name, None, current, url_text(current))


def show(name: str, data: dict, controls: tuple[Control, ...], key: str,
         link: bool = True, folder: Path = FOLDER) -> dict:
    """Mount figure ``name`` (its ``NAME.js`` in ``folder``) with the server's ``data``;
    returns the sliders' values (``values``), which go back into the URL (when ``link``),
    so a link opens exactly this view."""
    current = values(controls, key, link)
    callbacks = {f"on_{c.name}_change": (lambda: None) for c in controls}
    specs = [c.spec(current[c.name]) for c in controls]
    _component(name, folder)(key=key, data={**data, "controls": specs},
                             default=dict(current), **callbacks)
    if link:
        keep_in_link(current)
    return current
