"""The controls each page binds to its URL: the one declaration of a page's link.

A page's control bound to the URL (``pages/_ui/controls.control``) or a figure's value kept
in the link (``pages/figures.keep_in_link``) must be declared here for that page, or the
page raises on its first run: a link the lab does not know about cannot drift from the
page. Lessons may set a view's controls from the same table (``lab.lesson.VIEW_PAGES``:
every page here but the Lessons page itself).
"""

from __future__ import annotations

__all__ = ["URL_CONTROLS", "SIDEBAR", "check_declared"]

# the sidebar's, on every page
SIDEBAR = ("seed", "device")
# page url_path -> the controls it binds to its URL (its own, its figures', and those of the
# pages/_ui helpers it draws)
URL_CONTROLS: dict[str, tuple[str, ...]] = {
    "basics": ("preset", "n", "decay", "causal", "channel", "coefficients", "cell_i", "cell_j"),
    "decomposition": ("source", "channel", "coefficients", "checkpoint", "layer", "n", "decay",
                      "causal", "band", "rank", "method", "cell_i", "cell_j", "modes"),
    "frequency": ("activation", "width", "depth", "n", "causal", "smooth"),
    "speed": (),
    "train": (),
    "inspect": ("checkpoint", "layer", "channel"),
    "compress": ("checkpoint", "band", "rank", "method"),
    "compare": ("source", "n", "causal") + tuple(f"{side}_{name}" for side in "ab" for name in
                                               ("band", "rank", "method", "decay")),
    "lessons": ("lesson", "step", "present", "guess", "sketch"),
}


def check_declared(page: str, key: str) -> None:
    """LookupError unless ``page`` declares ``key`` (or it is the sidebar's)."""
    if key not in URL_CONTROLS.get(page, ()) and key not in SIDEBAR:
        raise LookupError(f"the {page!r} page binds {key!r} to its URL, but "
                          f"tnn_core/lab/common/url_controls.py does not declare it for that "
                          f"page: add it to URL_CONTROLS[{page!r}]")
