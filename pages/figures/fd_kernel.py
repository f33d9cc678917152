"""The FD kernel figure (fd_kernel.js) and the decay figure of its three activations
(profiles.js), mounted by the Frequency page and by lesson steps: their controls and the
server's side of their data contracts."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from pages import figures
from pages._ui import controls, frame
from pages._ui.memo import memo
from tnn_core.lab import frequency as lab

__all__ = ["ACTIVATIONS", "WIDTH", "KEPT", "STATE", "Setting", "mount", "settled_view",
           "show_decay"]

ACTIVATIONS = tuple(lab.THEOREMS)  # gelu, silu, relu: the first is the default
WIDTH = lab.WIDTH  # declared once: lab.common.figure_controls
CONTROLS = (WIDTH,)  # its slider, in the URL under its name
STATE = ("activation", "width", "smooth", "causal")  # the figure's own controls, lockable
# the controls it keeps in the link with no slider of their own (CONTROLS), as it opens
KEPT = {"activation": ACTIVATIONS[0], "smooth": False, "causal": True}


@memo(max_entries=16)
def mlp_weights(depth: int, seed: int) -> dict[str, str]:
    """Every offered width's RPE weights as the kernel figure reads them: base64 float32
    (each weight is a float32, so nothing is lost)."""
    packed = {}
    for width in lab.WIDTHS:
        parameters = lab.rpe_weights(width, depth, seed).parameters
        single = parameters.astype("<f4")
        if not np.array_equal(single.astype(np.float64), parameters):
            raise ValueError(f"the width-{width} weights are not float32 values")
        packed[str(width)] = base64.b64encode(single.tobytes()).decode("ascii")
    return packed


@memo(max_entries=64)
def settled_view(activation: str, width: int, depth: int, n: int, seed: int, fd_input: str,
                 causal: bool) -> lab.FrequencyView:
    return lab.frequency_view(activation, width, depth, n, seed, fd_input, causal)


def float64_text(values: np.ndarray) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


def is_bool(value) -> bool:
    return isinstance(value, bool)


@dataclass(frozen=True)
class Setting:
    """What the kernel figure settled on: the decay figure and the theorems follow it."""

    activation: str
    width: int  # one of lab.WIDTHS
    smooth: bool  # the MLP reads cos ω
    causal: bool
    n: int
    depth: int
    seed: int

    @property
    def fd_input(self) -> str:
        return "cosine" if self.smooth else "omega"

    @property
    def drawn(self) -> list[list]:
        """The decay figure's data-drawn parameters (its contract)."""
        return [["activation", self.activation], ["width", self.width],
                ["smooth", str(self.smooth).lower()], ["causal", str(self.causal).lower()],
                ["n", self.n], ["depth", self.depth], ["seed", self.seed]]


def mount(n: int, depth: int, key: str, link: bool = True, settings: Mapping | None = None,
          locked: tuple[str, ...] = ()) -> Setting:
    """The FD kernel figure at length n and MLP depth, its state under ``key``: activation,
    width, smooth and causal from the browser, else the link (``link``), else ``settings``,
    else the defaults. ValueError when the weights cannot be sent."""
    settings = settings or {}
    activation = figures.value(key, "activation", "selectbox",
                               {"options": ACTIVATIONS, "format_func": str, "index": 0},
                               settings.get("activation", KEPT["activation"]),
                               lambda v: v in ACTIVATIONS, str, link)
    smooth = figures.value(key, "smooth", "toggle", {}, settings.get("smooth", KEPT["smooth"]),
                           is_bool, lambda text: text.lower() == "true", link)
    causal = figures.value(key, "causal", "toggle", {}, settings.get("causal", KEPT["causal"]),
                           is_bool, lambda text: text.lower() == "true", link)
    if link:
        refuse_unoffered_width()
    seed = frame.seed()
    weights = mlp_weights(depth, seed)
    width_control = replace(WIDTH, default=settings.get("width", WIDTH.default))
    values = figures.show("fd_kernel", {
        "n": n, "N": lab.fft_size(n), "depth": depth, "widths": list(lab.WIDTHS),
        "weights": weights, "activations": list(ACTIVATIONS), "activation": activation,
        "smooth": smooth, "causal": causal, "locked": list(locked),
        "drawn": [["n", n], ["depth", depth], ["seed", seed]]}, (width_control,), key=key,
        link=link)
    width = min(lab.WIDTHS, key=lambda w: abs(w - values[WIDTH.name]))  # as the figure draws it
    if link:
        figures.keep_in_link({"width": width, "activation": activation, "smooth": smooth,
                              "causal": causal})
    return Setting(activation, width, smooth, causal, n, depth, seed)


def refuse_unoffered_width() -> None:
    """A link's width in range but not offered (the weights are sent for WIDTHS only) is
    named in the notice and left out, so the figure opens at the default width."""
    raw = st.query_params.get_all(WIDTH.name)
    try:
        width = float(raw[-1]) if raw else None
    except ValueError:
        return  # figures.show names what is wrong with it
    if width is not None and WIDTH.low <= width <= WIDTH.high and width not in lab.WIDTHS:
        controls.note_link_value(WIDTH.name, f"= {raw[-1]} is not one of the widths offered "
                                 f"({', '.join(map(str, lab.WIDTHS))})", WIDTH.default,
                                 str(WIDTH.default))
        del st.query_params[WIDTH.name]


def show_decay(setting: Setting, view: lab.FrequencyView, key: str) -> None:
    """The decay of the three activations' kernels (profiles.js) at ``setting``, greyed
    while the kernel figure shows another."""
    figures.show("profiles", {
        "kernels": [{"label": name, "coeffs": float64_text(kernel)}
                    for name, kernel in view.kernels],
        "causal": setting.causal,
        "fit": {"start": lab.FIT_START, "end": view.fit_end, "floor": lab.FIT_FLOOR},
        "floor": lab.FIT_FLOOR, "envelope": None, "response": False, "follows": "fd_kernel",
        "drawn": setting.drawn}, (), key=key, link=False)
