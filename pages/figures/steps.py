"""A lesson step's figures: the lab page a step's view names, drawn as that page's figures
(no iframe, no page around them) at the step's settings.

A step's settings are its view's controls, as the page's link spells them (select boxes by
their labels, switches as true/false); ``lock`` lists the controls drawn disabled. Each
figure keeps its state under the step's own key and leaves the lesson's URL alone
(``figures.show(..., link=False)``). Pages without figures (Inspect, Compress, Speed, Train)
are not drawn here: ``lesson.VIEW_FIGURES`` lists the pages that are, and their figures
(Inspect's: one learned channel on the Toeplitz figure).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import streamlit as st

from pages import _ui
from pages.figures import circulant, compare, decomposition, fd_kernel, toeplitz
from tnn_core.lab.compare import SIDES
from tnn_core.lab.lesson import View

__all__ = ["show"]

METHODS = {"sample": "A sampled", "fit": "A fitted"}
CURVE_HEIGHT = 170  # CSS pixels of the error curve under the decomposition figure


def _whole(settings: Mapping, name: str, default: int) -> int:
    return int(float(settings.get(name, default)))


def _number(settings: Mapping, name: str, default: float) -> float:
    return float(settings.get(name, default))


def _switch(settings: Mapping, name: str, default: bool) -> bool:
    return str(settings.get(name, str(default))).lower() == "true"


def _key_of(labels: Mapping[str, str], label: str, what: str) -> str:
    found = next((key for key, shown in labels.items() if shown == label), None)
    if found is None:
        raise ValueError(f"the step's {what} {label!r} is none of {sorted(labels.values())}")
    return found


def _sliders(settings: Mapping, names: tuple[str, ...]) -> dict:
    return {name: float(settings[name]) for name in names if name in settings}


def show(view: View, wanted: tuple[str, ...], key: str) -> None:
    """Draw the figures ``wanted`` (of ``lesson.VIEW_FIGURES[view.path]``: a step's
    ``drawn``) of the view's page at its settings, their state under ``key``."""
    settings, locked = dict(view.params), view.locked
    if view.path == "basics":
        preset = _key_of(toeplitz.LABELS, settings.get("preset", toeplitz.LABELS[
            "exponential"]), "kernel")
        chosen = {**_sliders(settings, ("n", "decay", "channel")),
                  "causal": _switch(settings, "causal", False)}
        kernel = None
        if "toeplitz" in wanted:
            drawn = toeplitz.mount(preset, f"{key}:toeplitz", link=False, settings=chosen,
                                   locked=locked)
            if drawn.kernel is None:
                _ui.show_error(drawn.problem)
                return
            kernel = drawn.kernel
        if "circulant" in wanted:
            kernel = kernel or toeplitz.figure_kernel(
                preset, _whole(chosen, "n", 64), _number(chosen, "decay", 0.9),
                chosen["causal"], _ui.seed(), _whole(chosen, "channel", 0), "")
            circulant.show(kernel.coeffs, float(np.abs(kernel.coeffs).max()) or 1.0)
    elif view.path == "frequency":
        n, depth = _whole(settings, "n", 512), _whole(settings, "depth", 1)
        chosen = {"activation": settings.get("activation", fd_kernel.ACTIVATIONS[0]),
                  "width": _whole(settings, "width", fd_kernel.WIDTH.default),
                  "smooth": _switch(settings, "smooth", False),
                  "causal": _switch(settings, "causal", True)}
        if "fd_kernel" in wanted:
            setting = fd_kernel.mount(n, depth, f"{key}:fd_kernel", link=False,
                                      settings=chosen, locked=locked)
        else:
            setting = fd_kernel.Setting(**chosen, n=n, depth=depth, seed=_ui.seed())
        if "decay" in wanted:
            view_now = fd_kernel.settled_view(setting.activation, setting.width, depth, n,
                                              setting.seed, setting.fd_input, setting.causal)
            fd_kernel.show_decay(setting, view_now, f"{key}:decay")
    elif view.path == "decomposition":
        source = _decomposition_source(settings)
        drawn = decomposition.mount(
            source, _whole(settings, "n", 512), _switch(settings, "causal", False),
            settings.get("method", "sample"), f"{key}:decomposition", link=False,
            settings=_sliders(settings, decomposition.STATE), locked=locked,
            factors="factors" in wanted, compact="error_curve" in wanted)
        if drawn is not None and "error_curve" in wanted:  # under it, on the same screen
            decomposition.show_curve(drawn, _switch(settings, "causal", False),
                                     f"{key}:error_curve", height=CURVE_HEIGHT)
    elif view.path == "compare":
        _compare(settings, locked, key)
    elif view.path == "inspect":
        choices = _ui.checkpoint_choices()
        label = settings.get("checkpoint", next(iter(choices.values())))
        toeplitz.mount_learned(_key_of(choices, label, "checkpoint"),
                               _whole(settings, "layer", 0), _whole(settings, "channel", 0),
                               f"{key}:channel")
    else:
        raise ValueError(f"the {view.path} page has no figures to draw in a step")


def _decomposition_source(settings: Mapping) -> decomposition.KernelSource:
    name = _key_of(_ui.SOURCE_LABELS, settings.get("source", _ui.SOURCE_LABELS[
        "spike_smooth"]), "source")
    if name == "checkpoint":
        choices = _ui.checkpoint_choices()
        label = settings.get("checkpoint", next(iter(choices.values())))
        return decomposition.KernelSource(
            "checkpoint", _whole(settings, "channel", 0),
            checkpoint=_key_of(choices, label, "checkpoint"), layer=_whole(settings, "layer", 0))
    return decomposition.KernelSource(name, _whole(settings, "channel", 0),
                                      text=settings.get("coefficients", ""))


def _compare(settings: Mapping, locked: tuple[str, ...], key: str) -> None:
    """The two settings side by side, their residuals on one colour scale (the page's
    strip B − A does not fit a step's screen)."""
    source = _key_of(_ui.SOURCE_LABELS, settings.get("source", _ui.SOURCE_LABELS[
        "spike_smooth"]), "source")
    n, causal = _whole(settings, "n", 256), _switch(settings, "causal", False)
    for side, column in zip(SIDES, st.columns(2, border=True), strict=True):
        with column:
            method = settings.get(f"{side}_method", "sample")
            st.markdown(f"**Setting {side.upper()}** · {METHODS.get(method, method)}")
            names = tuple(f"{side}_{name}" for name in ("rank", "band", "decay"))
            compare.mount_side(side, source, n, causal, method, f"{key}:{side}", link=False,
                               settings=_sliders(settings, names), locked=locked,
                               compact=True)
