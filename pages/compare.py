"""Page "Compare A/B": two settings of one decomposition side by side, and B − A."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from tnn_core.analysis.dense import display_line
from tnn_core.analysis.presets import PRESETS
from tnn_core.lab import compare as lab
from tnn_core.lab.heatmap_image import colorbar_image, heatmap_image

_ui.ensure_app_frame()

SIDES = ("a", "b")
DEFAULT_METHOD = {"a": "sample", "b": "fit"}  # the page opens on a comparison worth seeing
METHOD_WORDS = {"sample": "A sampled from the kernel", "fit": "A fitted (least squares)"}


@st.cache_data(max_entries=32, show_spinner="Decomposing…")
def side_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
              decay: float) -> lab.SideView:
    return lab.compare_side(coeffs, band, rank, causal, method, decay)


def shared_control(key: str, widget, label: str, default, parse, url, **kwargs):
    """One of the controls both columns share (kernel, n, causal), in the URL under ``key``
    but kept under this page's own session key ``compare_KEY``.

    Other pages have controls named source, n and causal. Streamlit 1.67 keeps a URL-bound
    widget's value under its key when the widget unmounts and gives it to the next widget
    of that key, on any page, so bound they carried Basics' and Decomposition's settings
    into this page (n = 167, causal) and this page's into theirs. Here the link seeds the
    value once per visit, checked as ``_ui.from_link`` checks a bound widget's (a value it
    cannot use is named in the page's notice); the widget keeps it while the page is open,
    and the page writes it back to the URL (``url``: the value as the link spells it)."""
    own = f"compare_{key}"
    raw = st.query_params.get_all(key)
    if own not in st.session_state:
        st.session_state[own] = default
        spec = {"options": kwargs.get("options"), "format_func": kwargs.get("format_func"),
                "index": 0, "min_value": kwargs.get("min_value"),
                "max_value": kwargs.get("max_value"), "value": default}
        problem = _ui.link_value_problem(widget.__name__, spec, raw) if raw else None
        if raw and problem is None:
            st.session_state[own] = parse(raw[-1])
        elif problem is not None:
            _ui.note_link_value(key, problem[0], default, url(default))
    value = widget(label, key=own, disabled=_ui.locked(key), **kwargs)
    _ui.note_link_value(key, None, value, url(value))
    return value


st.title("Compare A/B")
st.markdown(
    "**Where does each setting miss T?** Each column draws its residual "
    "$T - (\\text{band} + W A W^\\top)$ on one colour scale shared by both: the paler picture "
    "is the better approximation, and the numbers beside it say by how much. Try sample "
    "against fit, $m = 1$ against $m = 9$, or $r = 8$ against $r = 32$.")

left, mid, right = st.columns([2, 2, 1])
with left:
    source = shared_control(
        "source", st.selectbox, "Kernel (shared)", "spike_smooth",
        lambda label: next(o for o in PRESETS if _ui.SOURCE_LABELS[o] == label),
        _ui.SOURCE_LABELS.get, options=list(PRESETS), format_func=_ui.SOURCE_LABELS.get,
        help="The kernel both columns decompose: a synthetic shape, or channel 0 of a "
             "freshly initialised operator (seeded from the sidebar). Each column builds it "
             "at its own λ.")
with mid:
    n = shared_control("n", st.slider, "Length n (shared)", 256, lambda text: int(float(text)),
                       str, min_value=1, max_value=4096,
                       help="T is n × n on both sides. Errors are exact at this n; pictures "
                            "show every k-th row and column when n is large.")
with right:
    causal = shared_control("causal", st.toggle, "Causal (shared)", False,
                            lambda text: text.lower() == "true", lambda v: str(v).lower(),
                            help="A causal kernel is zero at negative lags; the band then "
                                 "holds lags 0 ≤ k < m.")
st.query_params["source"] = _ui.SOURCE_LABELS[source]  # as a bound select box writes it
st.query_params["n"] = str(n)
st.query_params["causal"] = str(causal).lower()


def side_controls(side: str):
    """m, r, method and λ of one column, bound to the URL as a_band, b_rank, …"""
    name = side.upper()
    c1, c2 = st.columns(2)
    band = _ui.from_link(c1.slider, f"{name}: band m", 1, 512, 9, key=f"{side}_band",
                         disabled=_ui.locked(f"{side}_band"),
                         bind="query-params",
                         help="Diagonals in the sparse part: lags |k| ≤ m//2 (causal: "
                              "0 ≤ k < m), at most 2n − 2.")
    rank = _ui.from_link(c2.slider, f"{name}: inducing points r", 2, 512, 32, key=f"{side}_rank",
                         disabled=_ui.locked(f"{side}_rank"),
                         bind="query-params",
                         help="Rank of W A Wᵀ: r points evenly spaced on [0, n − 1]; at most n.")
    c3, c4 = st.columns(2)
    method = _ui.from_link(c3.radio, f"{name}: low-rank A", ["sample", "fit"],
                           index=["sample", "fit"].index(DEFAULT_METHOD[side]),
                           key=f"{side}_method", disabled=_ui.locked(f"{side}_method"),
                           horizontal=True,
                           bind="query-params",
                           help="sample: A_ij = k̃(p_i − p_j), the kernel continued across the "
                                "band. fit: the Toeplitz A with the least Frobenius error.")
    decay = _ui.from_link(c4.slider, f"{name}: decay λ", 0.50, 1.00, 0.99, step=0.005,
                          key=f"{side}_decay",
                          disabled=_ui.locked(f"{side}_decay") or (source == "fd"),
                          bind="query-params",
                          help="The kernel's decay λ^|k| (FD-TNN has no decay bias). λ = 1: no "
                               "decay. A different λ changes the kernel itself, not only its "
                               "decomposition.")
    return band, rank, method, decay


def compute(band: int, rank: int, method: str, decay: float):
    """This column's view, or None after an st.error sentence saying why not."""
    try:
        coeffs = _ui.preset_kernel(source, n, decay, causal, _ui.seed(), 0)
        return side_view(coeffs, band, rank, causal, method, decay)
    except ValueError as err:
        _ui.show_error(err)
        return None


def error_metrics(side: str, view: lab.SideView) -> None:
    """The three errors of one column, stacked beside its residual."""
    name = side.upper()
    st.metric(f"{name}: spectral error", _ui.fmt(view.relative_spectral, ".2e"),
              help="‖T − (band + W A Wᵀ)‖₂ / ‖T‖₂ for this column's setting.")
    st.metric(f"{name}: Frobenius error", _ui.fmt(view.relative_frobenius, ".2e"),
              help="‖T − (band + W A Wᵀ)‖_F / ‖T‖_F for this column's setting.")
    st.metric(f"{name}: SVD optimum", _ui.fmt(view.relative_optimal_frobenius, ".2e"),
              help="The best relative Frobenius error of any rank-r part with this column's "
                   "band (Eckart–Young): what r and m allow at best.")


def setting_caption(side: str, view: lab.SideView) -> None:
    st.caption(f"{side.upper()}: n = {view.n}, m = {view.band}, r = {view.rank}, "
               f"{METHOD_WORDS[view.method]}, λ = {view.decay:g}. Errors relative to T: "
               f"spectral ‖T − approx‖₂ / ‖T‖₂, Frobenius ‖T − approx‖_F / ‖T‖_F, and the "
               f"best Frobenius error any rank-r part with this band reaches.")
    if view.note:
        st.warning(view.note, icon=":material/info:")


def kernel_figure(side: str, view: lab.SideView, y_range: tuple[float, float]) -> go.Figure:
    lags, values = display_line(view.lags, view.coeffs)
    fig = go.Figure(go.Scatter(x=lags, y=values, name="t_k", mode="lines"))
    fig.update_layout(title=f"{side.upper()}: kernel t_k at λ = {view.decay:g}", height=280,
                      xaxis_title="lag k = i − j", yaxis_title="t_k",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(range=y_range)
    return fig


def residual_image(side: str, view: lab.SideView, limit: float, shared: bool) -> None:
    pixels = max(1, 256 // len(view.idx))
    step = int(view.idx[1] - view.idx[0]) if len(view.idx) > 1 else 1
    sampled = f"; 1 row and column in {step}" if step > 1 else ""
    st.image(heatmap_image(view.residual, limit, _ui.colour_table("PuOr"), pixels),
             width="stretch",
             caption=f"{side.upper()}: residual T − band − W A Wᵀ, row 0 on top{sampled}; "
                     f"−{limit:.2g} (orange) … 0 (white) … +{limit:.2g} (purple)"
                     + (", one scale for A and B" if shared else ""))


def curve_figure(side: str, view: lab.SideView) -> go.Figure:
    curve = _ui.rank_curve(view.coeffs, view.band, causal)
    fig = go.Figure()
    own = curve.sample if view.method == "sample" else curve.fit
    fig.add_scatter(x=curve.ranks, y=own, name=f"SKI, {view.method}", mode="lines+markers")
    fig.add_scatter(x=curve.ranks, y=curve.optimal, name="optimal rank r (SVD)",
                    mode="lines+markers", line=dict(dash="dot"))
    _ui.vline(fig, view.rank, f"r = {view.rank}", log_x=True, line_dash="dash")
    fig.update_xaxes(type="log", title="inducing points r")
    fig.update_yaxes(type="log", title="relative Frobenius error", exponentformat="power")
    fig.update_layout(title=f"{side.upper()}: error against r at m = {view.band}", height=300,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h",
                                                                      y=-0.3))
    return fig


columns = dict(zip(SIDES, st.columns(2, border=True), strict=True))
views, places = {}, {}
for side, column in columns.items():
    with column:
        st.markdown(f"**Setting {side.upper()}**")
        places[side] = st.container()  # the residual and the errors, drawn once both are known
        views[side] = compute(*side_controls(side))

shown = [v for v in views.values() if v is not None]
residual_limit = max((float(np.abs(v.residual).max(initial=0.0)) for v in shown),
                     default=0.0) or 1.0
for side, view in views.items():
    if view is None:
        continue
    with places[side]:
        picture, numbers = st.columns([3, 2])
        with picture:
            residual_image(side, view, residual_limit, shared=len(shown) == 2)
        with numbers:
            error_metrics(side, view)

low = min((float(v.coeffs.min()) for v in shown), default=0.0)
high = max((float(v.coeffs.max()) for v in shown), default=0.0)
margin = 0.05 * (high - low) or 1.0
y_range = (min(low, 0.0) - margin, high + margin)  # one y-axis for both kernels
for side, column in columns.items():
    view = views[side]
    if view is None:
        continue
    with column:
        setting_caption(side, view)
        st.plotly_chart(kernel_figure(side, view, y_range), key=f"chart-kernel-{side}")
        st.plotly_chart(curve_figure(side, view), key=f"chart-curve-{side}")

st.subheader("Difference: B − A")
if len(shown) < 2:
    st.info("The difference needs both settings to work: change the one with the error.",
            icon=":material/info:")
    st.stop()
diff = lab.difference(views["a"], views["b"])
for column, number in zip(st.columns(len(diff.numbers)), diff.numbers, strict=True):
    column.metric(f"{number.label}, B vs A", number.words,
                  help="Relative errors: smaller is better.")
    column.caption(f"B − A = {_ui.fmt(number.delta, '+.2e')} (A = {_ui.fmt(number.a, '.2e')}, "
                   f"B = {_ui.fmt(number.b, '.2e')}); negative: B's error is smaller.")
image, words = st.columns([1, 2])
pixels = max(1, 256 // len(diff.idx))
image.image(heatmap_image(diff.approximation, diff.limit, _ui.colour_table("RdBu"), pixels),
            width="stretch", caption="(band + W A Wᵀ) of B − (band + W A Wᵀ) of A")
image.image(colorbar_image(_ui.colour_table("RdBu")), width="stretch",
            caption=f"−{diff.limit:.2g} (red: B lower) … 0 (white: the same) … "
                    f"+{diff.limit:.2g} (blue: B higher)")
step = int(diff.idx[1] - diff.idx[0]) if len(diff.idx) > 1 else 1
sampled = (f"1 row and column in {step} of the {n} × {n} matrices" if step > 1 else
           f"all {n} × {n} entries")
kernels = ("The two kernels are the same (same λ), so this is the difference of the two "
           "approximations of one matrix T." if diff.kernel_gap == 0 else
           f"The two kernels differ too (λ differs): max |t_k of B − t_k of A| = "
           f"{diff.kernel_gap:.3g}, so part of this picture is T itself changing.")
words.markdown(
    f"**Where the two approximations differ.** Each cell is entry (i, j) of B's "
    f"band + W A Wᵀ minus A's, on one colour scale (±{diff.limit:.2g}, the largest "
    f"difference drawn). White cells: the settings agree there. {kernels} Row 0 at the top, "
    f"column 0 at the left; {sampled}.")
