"""Compare A/B's figures: two band + W A Wᵀ figures (decomposition.js), one per setting,
whose residuals share one colour scale, and the strip B − A (difference.js); mounted by
the Compare page and by lesson steps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import streamlit as st

from pages import figures
from pages._ui import frame, kernels
from pages._ui.memo import memo
from pages.figures.decomposition import DEFAULT_DECAY, synthetic_parts
from tnn_core.lab import compare as lab

__all__ = ["CONTROLS", "mount_side", "show_difference"]

# each side's sliders (the band + W A Wᵀ figure's, renamed), in the URL under their names
CONTROLS = tuple(c for side in lab.SIDES for c in lab.side_controls(side, True))


@memo(max_entries=32, spinner="Decomposing…")
def side_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
              decay: float) -> lab.SideView:
    return lab.compare_side(coeffs, band, rank, causal, method, decay)


def mount_side(side: str, source: str, n: int, causal: bool, method: str, key: str,
               link: bool = True, settings: Mapping | None = None,
               locked: tuple[str, ...] = (), compact: bool = False) -> lab.SideView | None:
    """One side's figure (its r, m and λ under ``key``: from the browser, else the link,
    else ``settings``, else the defaults; ``compact``: "Where W A Wᵀ comes from" folded
    and no sentence on the colours, for a lesson's screen); its view, or None after an
    st.error sentence saying why not."""
    settings = settings or {}
    controls = tuple(replace(c, default=settings.get(c.name, c.default))
                     for c in lab.side_controls(side, source != "fd"))
    values = figures.values(controls, key, link)
    decay = values.get(f"{side}_decay")  # None: this kernel has no λ
    fitted = lab.fit_to_length(n, values[f"{side}_band"], values[f"{side}_rank"])
    try:
        coeffs = kernels.preset_kernel(source, n, DEFAULT_DECAY if decay is None else decay,
                                       causal, frame.seed(), 0)
        view = side_view(coeffs, fitted.band, fitted.rank, causal, method,
                         DEFAULT_DECAY if decay is None else decay)
    except ValueError as err:
        frame.show_error(err)
        return None
    parts = synthetic_parts(source, n, causal) if source in lab.SYNTHETIC else None
    figures.show("decomposition", {**lab.side_figure_data(side, view, causal, decay, parts),
                                   "locked": list(locked), "factors": not compact,
                                   "compact": compact}, controls, key=key, link=link)
    if view.note:
        st.warning(view.note, icon=":material/info:")
    return view


def show_difference(views: Mapping[str, lab.SideView], n: int, has_decay: bool,
                    key: str) -> None:
    """The strip B − A of the two sides' views."""
    diff = lab.difference(views["a"], views["b"])
    drawn = tuple(lab.side_drawn(side, v.n, v.band, v.rank, v.decay if has_decay else None,
                                 v.method) for side, v in views.items())
    figures.show("difference", lab.difference_figure_data(diff, n, drawn), (), key=key,
                 link=False)
