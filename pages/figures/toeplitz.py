"""The Toeplitz matrix and kernel figure (toeplitz.js), mounted by the Basics page and by
lesson steps: its controls and the server's side of its data contract."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import streamlit as st

from pages import figures
from pages._ui import cell_picker, checkpoints, frame
from pages._ui.memo import memo
from tnn_core.lab import basics as lab
from tnn_core.lab.common.checkpoint_summary import summary

__all__ = ["LABELS", "CONTROLS", "KEPT", "STATE", "Mounted", "mount", "mount_learned"]

LABELS = {  # preset key -> the Kernel box's label (what a link holds)
    "exponential": "Exponential decay λ^|k|",
    "spike_smooth": "Spike plus smooth",
    "oscillating": "Oscillating",
    "tno": "Fresh TNN operator (tno)",
    "ski": "Fresh SKI-TNN operator (ski)",
    "fd": "Fresh FD-TNN operator (fd)",
    lab.TYPED: "Type your own coefficients",
}
CONTROLS = lab.TOEPLITZ  # its sliders, declared once: lab.common.figure_controls
TYPED_HELP = ("An odd number 2n − 1 of numbers, comma or space separated: the middle one is "
              f"t_0. At most {2 * lab.MAX_TYPED_LENGTH - 1} numbers (n ≤ {lab.MAX_TYPED_LENGTH}).")
STATE = ("n", "decay", "channel", "causal", "cell_i", "cell_j", "coefficients")  # lockable
KEPT = {"causal": False}  # kept in the link with no slider of its own (CONTROLS), as it opens


@memo(max_entries=64)
def figure_kernel(name: str, n: int, decay: float, causal: bool, seed: int, channel: int,
                  text: str) -> lab.FigureKernel:
    return lab.figure_kernel(name, n, decay, causal, seed, channel, text)


@dataclass(frozen=True)
class Mounted:
    """What the figure drew, for the sections that follow it."""

    kernel: lab.FigureKernel | None  # None: the kernel was refused, ``problem`` says why
    problem: ValueError | None


def is_bool(value) -> bool:
    return isinstance(value, bool)


def mount(preset: str, key: str, link: bool = True, settings: Mapping | None = None,
          locked: tuple[str, ...] = ()) -> Mounted:
    """The figure for kernel ``preset`` (a key of LABELS), its state under ``key``: values
    from the browser, else the link (``link``), else ``settings`` (n, decay, channel,
    causal), else the controls' defaults. ``locked`` controls are drawn disabled."""
    settings = settings or {}
    controls = tuple(replace(c, default=settings.get(c.name, c.default)) for c in CONTROLS)
    n, decay, channel = figures.values(controls, key, link).values()
    causal = figures.value(key, "causal", "toggle", {}, settings.get("causal", KEPT["causal"]),
                           is_bool, lambda text: text.lower() == "true", link)
    text = ""
    if preset == lab.TYPED:
        text = figures.value(key, "coefficients", "text_input", {"max_chars": lab.MAX_TYPED_CHARS},
                             "0.25, 0.5, 1, 0.5, 0.25", lambda v: isinstance(v, str), str, link)
    problem = None
    try:
        kernel = figure_kernel(preset, n, decay, causal, frame.seed(), channel, text)
    except ValueError as err:
        kernel, problem = None, err
    n_drawn = n if kernel is None else (len(kernel.coeffs) + 1) // 2
    cell = [figures.value(key, name, "number_input",
                          {"min_value": 0, "max_value": n_drawn - 1,
                           "value": min(default, n_drawn - 1)},
                          min(default, n_drawn - 1), lambda v: False, int, link)
            for name, default in zip(("cell_i", "cell_j"), cell_picker.CELL, strict=True)]
    state = st.session_state.get(key)
    if isinstance(state, Mapping) and isinstance(state.get("cell"), list) \
            and len(state["cell"]) == 2 and all(figures.is_number(v) for v in state["cell"]):
        cell = [int(v) for v in state["cell"]]
    cell = [min(max(v, 0), n_drawn - 1) for v in cell]
    data = {"name": preset, "kernel": None if kernel is None else kernel.browser,
            "causal": causal, "cell": cell, "cells": lab.FIGURE_CELLS,
            "inactive": list(("n", "decay", "channel") if kernel is None else kernel.inactive),
            "locked": list(locked),
            "coefficients": text if preset == lab.TYPED else None, "typed_help": TYPED_HELP}
    figures.show("toeplitz", data, controls, key=key, link=link)
    if link:
        figures.keep_in_link({"causal": causal, "cell_i": cell[0], "cell_j": cell[1],
                              **({"coefficients": text} if preset == lab.TYPED else {})})
    return Mounted(kernel, problem)


def mount_learned(checkpoint: str, layer: int, channel: int, key: str) -> None:
    """One learned channel of a checkpoint (a key of ``checkpoints.checkpoint_choices``) at its
    training length, every control fixed: the matrix the trained layer applies and its
    kernel (a lesson step's "a trained kernel")."""
    model, info = checkpoints.load_checkpoint(checkpoint)
    n = summary(info).train_n
    coeffs = checkpoints.checkpoint_kernel(checkpoint, n, layer, channel)  # (2n-1,)
    operator = model.config.operator
    kernel = {"coefficients": lab.packed(coeffs), "n": None, "decay": None, "causal": None,
              "channel": None}
    # the readouts say the checkpoint's own settings: its λ, or none where it has no one λ
    # (FD-TNN, a learned λ per channel)
    own = {"n": n, "decay": operator.decay}
    hidden = [] if "decay" in operator.used_fields() else ["decay"]
    figures.show("toeplitz", {
        "name": f"{checkpoint}:{layer}:{channel}", "kernel": kernel,
        "causal": bool(operator.causal), "cell": [min(v, n - 1) for v in cell_picker.CELL],
        "cells": lab.FIGURE_CELLS, "inactive": ["n", "decay", "channel"], "hidden": hidden,
        "locked": list(STATE), "coefficients": None, "typed_help": TYPED_HELP},
        tuple(replace(c, default=own.get(c.name, c.default)) for c in CONTROLS), key=key,
        link=False)
