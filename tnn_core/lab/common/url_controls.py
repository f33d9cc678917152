"""The controls each page binds to its URL, derived from where each is declared.

A page's widget bound to the URL is declared in ``page_controls`` (drawn by
``pages/_ui/controls.control``), a figure's slider in ``figure_controls``, and a value a
figure keeps in the link without a widget (``pages/figures.keep_in_link``) in ``_KEPT``
below. A key outside a page's entry raises on the page's first run: a link the lab does not
know about cannot drift from the page. Lessons may set a view's controls from the same
table (``lab.lesson.VIEW_PAGES``: every page here but the Lessons page itself).
"""

from __future__ import annotations

from tnn_core.lab.common import figure_controls as figure
from tnn_core.lab.common.decomposition_figures import SIDES
from tnn_core.lab.common.page_controls import PAGE_FIELDS, names
from tnn_core.lab.common.page_controls import SIDEBAR as SIDEBAR_FIELDS

__all__ = ["URL_CONTROLS", "SIDEBAR", "check_declared"]

# the sidebar's, on every page
SIDEBAR = names(SIDEBAR_FIELDS)
# page url_path -> values a figure keeps in the link that no declared widget or slider draws
# (pages/figures.keep_in_link, a prediction's note_link_value)
_KEPT = {
    "basics": ("causal", "coefficients"),
    "frequency": ("activation", "causal", "smooth"),
    "lessons": ("guess", "sketch"),
}
# page url_path -> the figure sliders it mounts (declared once, in figure_controls)
_SLIDERS = {
    "basics": figure.TOEPLITZ,
    "decomposition": (*figure.DECOMPOSITION, figure.MODES),
    "frequency": (figure.WIDTH,),
    "compare": tuple(c for side in SIDES for c in figure.side_controls(side, True)),
}
# page url_path -> the controls it binds to its URL: its widgets' (page_controls), its
# figures' sliders and what its figures keep in the link
URL_CONTROLS: dict[str, tuple[str, ...]] = {
    page: (*names(fields), *_KEPT.get(page, ()), *figure.names(_SLIDERS.get(page, ())))
    for page, fields in PAGE_FIELDS.items()}


def check_declared(page: str, key: str) -> None:
    """LookupError unless ``page`` declares ``key`` (or it is the sidebar's)."""
    if key not in URL_CONTROLS.get(page, ()) and key not in SIDEBAR:
        raise LookupError(f"the {page!r} page binds {key!r} to its URL, but "
                          f"tnn_core/lab/common/url_controls.py does not declare it for that "
                          f"page: add it to URL_CONTROLS[{page!r}]")
