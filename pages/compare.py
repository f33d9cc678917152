"""Page "Compare A/B": two settings of one decomposition side by side, and B − A.

Each side is the band + W A Wᵀ figure (pages/figures/decomposition.js) mounted with its own
control names (a_rank, a_band, a_decay; b_…), so r, m and λ redraw in the browser; its
residual shares one colour scale with the other side's. What only the server computes
(spectral norms, optima, the fitted A, the difference B − A) follows once a move settles,
marked stale until then (pages/figures/difference.js for the strip).
"""

import streamlit as st

from pages._ui import controls, frame, kernels, link_values
from pages._ui.controls import fields
from pages.figures import difference as figure
from tnn_core.lab import compare as lab


def shared_control(field, widget, parse, url, **kwargs):
    """One of the controls both sides share (kernel, n, causal: ``field``), in the URL under
    its name but kept under this page's own session key ``compare_NAME``.

    Other pages have controls named source, n and causal. Streamlit 1.67 keeps a URL-bound
    widget's value under its key when the widget unmounts and gives it to the next widget
    of that key, on any page, so bound they carried Basics' and Decomposition's settings
    into this page (n = 167, causal) and this page's into theirs. Here the link seeds the
    value once per visit (the unbound widget's state goes when the page is left), checked
    as ``controls.control`` checks a bound widget's (a value it cannot use is named in the
    page's notice); the widget keeps it while the page is open, and the page writes it back
    to the URL (``url``: the value as the link spells it)."""
    key, default = field.name, field.default
    own = f"compare_{key}"
    raw = st.query_params.get_all(key)
    if own not in st.session_state:
        st.session_state[own] = default
        spec = {"options": kwargs.get("options"), "format_func": kwargs.get("format_func"),
                "index": 0, "min_value": kwargs.get("min_value"),
                "max_value": kwargs.get("max_value"), "value": default}
        problem = link_values.link_value_problem(widget.__name__, spec, raw) if raw else None
        if raw and problem is None:
            st.session_state[own] = parse(raw[-1])
        elif problem is not None:
            controls.note_link_value(key, problem[0], default, url(default))
    value = widget(field.label, key=own, disabled=controls.locked(key), help=field.help, **kwargs)
    controls.note_link_value(key, None, value, url(value))
    return value


def main() -> None:
    """The page: the shared controls, the two sides, B − A."""
    frame.ensure_app_frame()
    st.title("Compare A/B")
    st.markdown(
        "**Look at the two residuals, the last picture of each setting:** they share one colour "
        "scale, so the paler one is the better approximation, and where they differ shows what "
        "the other setting fixes. Try sample against fit, $m = 1$ against $m = 9$, or $r = 8$ "
        "against $r = 32$.")
    source, n, causal = shared_controls()
    st.query_params["source"] = kernels.SOURCE_LABELS[source]  # as a bound select box writes it
    st.query_params["n"] = str(n)
    st.query_params["causal"] = str(causal).lower()
    if n < 2:
        st.info("n = 1: T is the 1 × 1 matrix [t₀]; the band holds it exactly and nothing is left "
                "for a low-rank part (r needs two inducing points). Set n ≥ 2 to compare.",
                icon=":material/info:")
        st.stop()
    columns = dict(zip(lab.SIDES, st.columns(2, border=True), strict=True))
    views = {}
    for side, column in columns.items():
        with column:
            views[side] = draw_side(side, source, n, causal)

    st.subheader("Difference: B − A")
    if any(view is None for view in views.values()):
        st.info("The difference needs both settings to work: change the one with the error.",
                icon=":material/info:")
        st.stop()
    figure.show_difference(views, n, source != "fd", "compare_difference_figure")


def shared_controls() -> tuple[str, int, bool]:
    """The kernel, n and causal both sides share, kept in the URL as bound widgets keep
    theirs."""
    left, mid, right = st.columns([2, 2, 1])
    with left:
        source = shared_control(
            fields.SHARED_SOURCE, st.selectbox,
            lambda label: next(o for o in lab.PRESETS if kernels.SOURCE_LABELS[o] == label),
            kernels.SOURCE_LABELS.get, options=list(lab.PRESETS),
            format_func=kernels.SOURCE_LABELS.get)
    with mid:
        length = fields.SHARED_LENGTH
        n = shared_control(length, st.slider, lambda text: int(float(text)), str,
                           min_value=length.low, max_value=length.high)
    with right:
        causal = shared_control(fields.SHARED_CAUSAL, st.toggle,
                                lambda text: text.lower() == "true", lambda v: str(v).lower())
    return source, n, causal


def method_control(side: str) -> str:
    """Side ``side``'s low-rank A: sampled from the kernel, or fitted."""
    return controls.control(st.radio, fields.side_method(side), horizontal=True)


def draw_side(side: str, source: str, n: int, causal: bool) -> lab.SideView | None:
    """One side: its method, its figure, its notes; its view, or None after an st.error
    sentence saying why not."""
    st.markdown(f"**Setting {side.upper()}**")
    method = method_control(side)
    has_decay = source != "fd"  # FD-TNN has no decay bias
    return figure.mount_side(side, source, n, causal, method, f"compare_{side}_figure",
                             locked=tuple(c.name for c in lab.side_controls(side, has_decay)
                                          if controls.locked(c.name)))


main()
