"""The controls each page binds to its URL: the one declaration of a page's link.

A page's control bound to the URL (``pages/_ui/controls.control``) or a figure's value kept
in the link (``pages/figures.keep_in_link``) must be declared here for that page, or the
page raises on its first run: a link the lab does not know about cannot drift from the
page. Lessons may set a view's controls from the same table (``lab.lesson.VIEW_PAGES``:
every page here but the Lessons page itself).
"""

from __future__ import annotations

from tnn_core.lab.common.decomposition_figures import SIDES
from tnn_core.lab.common.figure_controls import (
    DECOMPOSITION,
    MODES,
    TOEPLITZ,
    WIDTH,
    names,
    side_controls,
)

__all__ = ["URL_CONTROLS", "SIDEBAR", "check_declared"]

# the sidebar's, on every page
SIDEBAR = ("seed", "device")
# page url_path -> the controls it binds to its URL: its own widgets', those of the pages/_ui
# helpers it draws, and its figures' sliders (declared once, in figure_controls)
URL_CONTROLS: dict[str, tuple[str, ...]] = {
    "basics": ("preset", "causal", "coefficients", "cell_i", "cell_j", *names(TOEPLITZ)),
    "decomposition": ("source", "channel", "coefficients", "checkpoint", "layer", "n", "causal",
                      "method", "cell_i", "cell_j", *names((*DECOMPOSITION, MODES))),
    "frequency": ("activation", "depth", "n", "causal", "smooth", WIDTH.name),
    "speed": (),
    "train": (),
    "inspect": ("checkpoint", "layer", "channel"),
    "compress": ("checkpoint", "band", "rank", "method"),
    "compare": ("source", "n", "causal", *(f"{side}_method" for side in SIDES),
                *(name for side in SIDES for name in names(side_controls(side, True)))),
    "lessons": ("lesson", "step", "present", "guess", "sketch"),
}


def check_declared(page: str, key: str) -> None:
    """LookupError unless ``page`` declares ``key`` (or it is the sidebar's)."""
    if key not in URL_CONTROLS.get(page, ()) and key not in SIDEBAR:
        raise LookupError(f"the {page!r} page binds {key!r} to its URL, but "
                          f"tnn_core/lab/common/url_controls.py does not declare it for that "
                          f"page: add it to URL_CONTROLS[{page!r}]")
