"""Page "Decomposition": T ≈ band + W A Wᵀ, drawn in the browser while r, m and λ move.

The page is two figures (``pages/figures``): band + W A Wᵀ (T, band, W A Wᵀ and the
residual, with W and A) and the error against r. They compute SKI's sampled
decomposition in the browser on every move; the server sends the kernel once and, when a
move settles, what only it computes (spectral norms, optima, the fitted A, the curve).
Theorem 1, the timings and the kernel's own profiles follow, the costly ones computed
only while their expander is open.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from pages import figures
from pages._ui import (
    cell_picker,
    checkpoints,
    controls,
    frame,
    kernels,
    numbers,
    session_keys,
    timing,
)
from pages._ui.controls import fields
from pages._ui.memo import memo
from pages.decomposition import notes, speed_at_setting
from pages.figures import decomposition as figure
from pages.figures import recurrent_fit
from pages.figures.decomposition import KernelSource
from tnn_core.lab import decomposition as lab

FIGURE_KEY = "decomposition_figure"  # the band + W A Wᵀ figure's state (its r, m, λ)


@memo(max_entries=16, spinner="Singular values of the smooth part…")
def smooth_spectrum(coeffs: np.ndarray, band: int, rank: int,
                    causal: bool) -> lab.SmoothSpectrum:
    return lab.smooth_spectrum(coeffs, band, rank, causal)

@memo(max_entries=16, spinner="Theorem 1's terms…")
def theorem1_panel(coeffs: np.ndarray, band: int, rank: int, causal: bool,
                   method: str) -> lab.Theorem1Panel:
    return lab.theorem1_panel(coeffs, band, rank, causal, method)


def bounded_input(column, field, top: int | None = None, says: dict | None = None) -> int:
    """The number input ``field``, 0..top (the field's declared high end unless given: a
    model's layers or channels), bound to the URL; a value carried in from elsewhere
    (another source, a link, Inspect) is clamped first."""
    top = int(field.high) if top is None else top
    if st.session_state.get(field.name, 0) > top:
        st.session_state[field.name] = top
    return int(controls.control(column.number_input, field, high=top, value=0, says=says))


def kernel_source_picker(left, right) -> KernelSource:
    """The Source selector (in column ``left``, a channel in ``right``): a synthetic preset,
    one channel of a fresh operator, typed coefficients, or a learned channel."""
    name = controls.control(left.selectbox, fields.SOURCE, options=list(kernels.SOURCE_LABELS),
                            format_func=kernels.SOURCE_LABELS.get)
    if name == "checkpoint":
        return checkpoint_source_picker(right)
    if name in ("tno", "ski", "fd"):
        channel = bounded_input(right, fields.OPERATOR_CHANNEL)
    else:
        channel = 0
    text = ""
    if name == "custom":
        text = controls.control(st.text_input, fields.COEFFICIENTS, max_chars=lab.MAX_TYPED_CHARS)
    return KernelSource(name, channel, text)


def checkpoint_source_picker(column) -> KernelSource:
    key = checkpoints.checkpoint_select("There are no checkpoints yet: train one on the Train "
                                        "page.")
    model, _ = checkpoints.load_checkpoint(key)
    layers, channels = len(model.operators()), model.operators()[0].dim
    a, b = column.columns(2)
    layer = bounded_input(a, fields.LAYER, layers - 1, {"layers": layers})
    channel = bounded_input(b, fields.CHANNEL, channels - 1, {"channels": channels})
    if model.config.operator.kind == "togeipi":
        st.caption(lab.TOGEIPI_PART)
    return KernelSource("checkpoint", channel, checkpoint=key, layer=layer)


def colour_limit(coeffs: np.ndarray) -> float:
    """T's colour scale ±max|t_k| (1 for an all-zero kernel), as in the figure."""
    return float(np.abs(coeffs).max(initial=0.0)) or 1.0


def main() -> None:
    """The page: its controls, then the figures and the sections below them (a fragment)."""
    frame.ensure_app_frame()
    frame.receive_values("pages/decomposition.py")
    st.title("Decomposition: band + low rank")
    st.markdown("**Drag r and m and watch the residual, the fourth picture:** it is what band + W "
                "A Wᵀ misses, and it gathers where the smooth part bends faster than the inducing "
                "points, h apart, can follow.")
    decomposition(*page_controls())
    timing.page_activity()  # the page script ends: the quiet that timings wait for starts now


def page_controls() -> tuple[KernelSource, int, bool, str]:
    """The row of controls above the figures: (source, n, causal, method)."""
    top = st.columns([2.2, 1, 2.2, 2.1, 1.3, 1.6])
    try:
        source = kernel_source_picker(top[0], top[1])
    except ValueError as err:
        frame.show_error(err)
        st.stop()
    if source.name not in ("tno", "ski", "fd", "checkpoint"):
        top[1].caption("One channel only.")
    n = controls.control(top[2].slider, fields.LENGTH, disabled=source.name == "custom")
    if source.has_decay:
        top[3].caption("Decay λ: a slider of the figure below.")
    else:
        top[3].caption("Decay λ: none here; " + ("the kernel is learned." if source.name ==
                                                "checkpoint" else "FD-TNN has no decay bias."
                                                if source.name == "fd" else
                                                "typed coefficients have their own."))
    causal = controls.control(top[4].toggle, fields.CAUSAL)
    method = controls.control(top[5].radio, fields.METHOD, horizontal=True)
    return source, n, causal, method


@st.fragment
def decomposition(source: KernelSource, n: int, causal: bool, method: str) -> None:
    """Everything that depends on m, r and λ: a settled move of those reruns only this."""
    timing.page_activity()
    drawn = figure.mount(source, n, causal, method, FIGURE_KEY, locked=tuple(
        key for key in figure.STATE if controls.locked(key)))
    if drawn is None:
        return
    view = drawn.view
    st.caption(f"Source: {drawn.label}; n = {drawn.length}.")
    if view.note:
        st.warning(view.note, icon=":material/info:")
    for warning in notes.warnings(view, method):
        st.warning(warning, icon=":material/warning:")
    curve_column, words = st.columns([3, 2])
    with curve_column:
        figure.show_curve(drawn, causal, "error_curve_figure")
    words.markdown(WHAT_TO_NOTICE)
    recurrent_fit.section(drawn.coeffs, drawn.band, causal, "recurrent_fit_figure")
    st.markdown(INTRODUCTION)
    st.latex(r"T \;\approx\; T_{\mathrm{sparse}} + W A W^\top, \qquad "
             r"W \in \mathbb{R}^{n\times r}\ \text{(2 nonzeros per row)},\quad "
             r"A_{ij} = \tilde k(p_i - p_j), \qquad \text{cost } O(n + r\log r)")
    if source.name == "checkpoint":
        compress_button(source.checkpoint, drawn, method)
    sections_below(source, drawn, causal, method)
    timing.page_activity()  # and ended: the quiet that timings wait for starts now


def compress_button(key: str, drawn: figure.Mounted, method: str) -> None:
    """Compress with this m, r and method on every layer, for a model that can be converted:
    a trained model is converted and scored there; a kernels-only one (no task) gets each
    layer's error."""
    model, info = checkpoints.load_checkpoint(key)
    if not lab.convertible(model.config):
        return
    setting = f"m = {drawn.band}, r = {drawn.rank}"
    kernels_only = lab.is_kernels_only(info.task)
    if st.button(f"Each layer's error with {setting}" if kernels_only
                 else f"Compress this model with {setting}", icon=":material/compress:",
                 key="open_compress",
                 help="Open the Compress page with this checkpoint and this band, rank and "
                      "method for every layer" + (": it shows how much of each layer's "
                      "kernels they miss (this model has no task to score)." if kernels_only
                      else ".")):
        frame.open_page("pages/compress.py", {
            session_keys.CHECKPOINT: key, session_keys.BAND: drawn.band,
            session_keys.RANK: drawn.rank, session_keys.METHOD: method,
            session_keys.PER_LAYER: False})


def sections_below(source: KernelSource, drawn: figure.Mounted, causal: bool,
                   method: str) -> None:
    """The expanders under the figures, each computed only while it is open: one cell of T,
    Theorem 1, the speed at this setting, the kernel's decay and frequency response."""
    coeffs, length, band, rank, view = (drawn.coeffs, drawn.length, drawn.band, drawn.rank,
                                        drawn.view)
    if any(key in st.query_params for key in ("cell_i", "cell_j")):
        st.session_state[session_keys.CELL_OPEN] = True  # a link naming a cell opens its section
    cell_box = st.expander("One cell of T, followed everywhere: its diagonal, its lag on the "
                           "kernel, the inducing points it is interpolated from",
                           key="cell_open", on_change="rerun")
    if cell_box.open:
        with cell_box:
            cell = linked_views(coeffs, view)
            left, right = st.columns(2)
            left.plotly_chart(kernel_figure(view, cell, source.name == "ski"),
                              key="chart-kernel")
            left.caption("Dominant period of the smooth part: "
                         + ("none (largest at ω = 0)" if view.dominant_period == float("inf")
                            else f"{view.dominant_period:.3g} lags; SKI needs h = "
                                 f"{view.spacing:.3g} below half of it"))
            singular_values(smooth_spectrum(coeffs, band, rank, causal), view.rank,
                            view.n, right)
    theorem = st.expander("Theorem 1, term by term", key="theorem1_open", on_change="rerun")
    if theorem.open:
        with theorem:
            theorem1(theorem1_panel(coeffs, band, rank, causal, method), method)
    speed = st.expander("Speed at this setting: SKI against the FFT and dense products",
                        key="speed_open", on_change="rerun")
    if speed.open:
        with speed:
            speed_at_setting.show(length, rank, band)
    profiles = st.expander("The kernel's decay and frequency response", key="profiles_open",
                           on_change="rerun")
    if profiles.open:
        with profiles:
            decay_and_frequency(coeffs, length, causal, drawn.decay)


INTRODUCTION = (
    "Learned TNN kernels are **spiky near the diagonal and smooth elsewhere** "
    "(*SKI to go Faster*, §3.2). So split the Toeplitz matrix in two: a **band** of "
    "$m$ diagonals, applied as a short convolution, and a **low-rank** part "
    "$W A W^\\top$ that interpolates the smooth rest from $r$ inducing points.")
WHAT_TO_NOTICE = (
    "**What to notice.** Move *r* and watch the error curve: SKI tracks the optimum "
    "while the inducing points are dense enough to follow the smooth part, and Theorem 1's "
    "interpolation term $h^2/8 \\cdot \\max|\\tilde k''|$ shrinks as $1/r^2$. Shrink the band "
    "to $m = 1$ on *spike plus smooth* and the low-rank part must swallow the spike: the "
    "error jumps. Switch on *causal*: the kernel jumps from 0 to $t_0$ at the diagonal, the "
    "band's straight line turns that jump into a ramp no wider than the band, and "
    "interpolation over $h$ wider than the ramp cannot follow it: the error, and even the "
    "optimum, stay about ten times higher. That is why FD-TNN, not SKI, handles causal "
    "models. With $\\lambda$ near 1 the kernel decays slowly and the smooth "
    "part carries more of the matrix."
)


# -- the sections below the figures --------------------------------------------------------------
def theorem1(panel: lab.Theorem1Panel, method: str) -> None:
    th = panel.terms
    st.latex(r"\|E_{SKI}\|_2 \le \sqrt{nr}\,\frac{h^2}{8}\,L\left(2\sqrt n + "
             r"\frac{\min(\sigma_1(F), \sigma_1(B))}{\sigma_r(A)}\right) + \|E_{nyst}\|_2,"
             r"\quad E_{SKI} = WAW^\top - T_{r,opt}")
    t = st.columns(4)
    t[0].metric("h²/8 · max|k̃''|", numbers.fmt(th.interpolation_error, ".3g"),
                help=f"Theorem 1's interpolation error for one interpolated index: h = "
                     f"{th.spacing:.3g}, L = max|k̃''| = {th.curvature:.3g}, by second "
                     f"differences k̃(k+1) − 2k̃(k) + k̃(k−1) of the kernel continued across "
                     f"the band, over the off-band lags (largest at lag {th.curvature_lag}).")
    t[1].metric("Max entry error off the band", numbers.fmt(th.entry_error, ".3g"),
                delta=f"bound 2·h²/8·L = {2 * th.interpolation_error:.3g}", delta_color="off",
                help="max |W A Wᵀ − T| over the entries whose lag is not in the band, with A "
                     "sampled. W A Wᵀ interpolates rows and columns, so the per-index term "
                     "counts twice.")
    t[2].metric("Theorem 1 right-hand side", numbers.fmt(th.right_hand_side, ".3g"),
                help=f"The whole bound for the smooth part T_s = Toeplitz(k̃): σ_r(A) = "
                     f"{th.a_extreme[1]:.3g}, ‖E_nyst‖₂ = {numbers.fmt(th.nystrom_error, '.3g')}.")
    t[3].metric("Measured ‖E_SKI‖₂", numbers.fmt(th.ski_error, ".3g"),
                help="‖W A Wᵀ − T_{r,opt}‖₂, T_{r,opt} the best rank-r approximation of T_s "
                     "(SVD).")
    st.caption(" ".join(notes.theorem1_caveats(panel, method)))

def positions_figure(cell) -> go.Figure:
    """The positions 0..n-1 with the inducing points; i and j each joined to their two
    neighbours p_l, p_{l+1}, labelled with their weights in W."""
    fig = go.Figure()
    points = np.linspace(0, cell.n - 1, cell.rank)  # where the inducing points sit
    for y, (name, row) in enumerate((("j", cell.column), ("i", cell.row))):
        fig.add_scatter(x=points, y=[y] * cell.rank, mode="markers", showlegend=False,
                        marker=dict(size=6, color="lightgrey", symbol="line-ns-open"),
                        hoverinfo="skip")
        for point, column, weight in zip(row.points, row.columns, row.weights, strict=True):
            fig.add_scatter(x=[row.position, point], y=[y, y], mode="lines",
                            line=dict(color="steelblue", width=1 + 4 * weight),
                            showlegend=False, hoverinfo="skip")
            fig.add_scatter(x=[point], y=[y], mode="markers+text", showlegend=False,
                            text=[f"p<sub>{column}</sub>={point:.4g}<br>w={weight:.3g}"],
                            textposition="top center",
                            marker=dict(size=8 + 10 * weight, color="steelblue"))
        fig.add_scatter(x=[row.position], y=[y], mode="markers", showlegend=False,
                        marker=dict(size=12, color="black", symbol="x"),
                        hovertemplate=f"{name} = {row.position}<extra></extra>")
    fig.update_yaxes(tickvals=[0, 1], ticktext=[f"column j = {cell.j}", f"row i = {cell.i}"],
                     range=[-0.6, 1.9], showgrid=False)
    fig.update_xaxes(title="position (inducing points as grey ticks)", range=[
        -0.03 * cell.n, 1.07 * (cell.n - 1) + 0.5])
    fig.update_layout(height=230, margin=dict(l=10, r=10, t=10, b=10))
    return fig


def linked_views(coeffs, view):
    """Pick a cell (i, j) of T: its diagonal there, its lag on the kernel plot below, and the
    inducing points i and j interpolate from. Returns the ``LinkedCell``."""
    left, right = st.columns([2, 3])
    with left:
        cell = cell_picker.follow_cell(coeffs, view.rank, colour_limit(coeffs))
    i, j = cell.i, cell.j
    k, row, col = cell.lag, cell.row, cell.column
    wawt = lab.low_rank_entry(cell, view.inducing_values)
    right.markdown(
        f"**T[{i}, {j}] = t<sub>{k}</sub> = {view.coeffs[view.n - 1 + k]:.4g}**, the same on "
        f"all {len(cell.diagonal_rows)} cells of the diagonal i − j = {k} (marked at lag "
        f"k = {k} on the kernel plot below). In W A Wᵀ, row {i} interpolates from "
        f"p<sub>{row.columns[0]}</sub>, p<sub>{row.columns[1]}</sub> with weights "
        f"{row.weights[0]:.3g}, {row.weights[1]:.3g}, column {j} from "
        f"p<sub>{col.columns[0]}</sub>, p<sub>{col.columns[1]}</sub> with "
        f"{col.weights[0]:.3g}, {col.weights[1]:.3g}: (W A Wᵀ)[{i}, {j}] = "
        f"Σ w<sub>ia</sub> w<sub>jb</sub> a<sub>a−b</sub> = {wawt:.4g}.",
        unsafe_allow_html=True)
    right.plotly_chart(positions_figure(cell), key="chart-positions")
    return cell


def kernel_figure(view, cell, ski: bool) -> go.Figure:
    kfig = go.Figure()
    lags, values = lab.display_line(view.lags, view.coeffs)
    kfig.add_scatter(x=lags, y=values, name="t_k", mode="lines")
    kfig.add_scatter(x=view.inducing_lags, y=view.inducing_values, mode="markers",
                     name="A's lags (p_i − p_j)", marker=dict(size=6, symbol="circle-open"))
    kfig.add_vrect(x0=view.band_span[0], x1=view.band_span[1], fillcolor="orange",
                   opacity=0.25, line_width=0, annotation_text="band",
                   annotation_position="top left")
    k = cell.lag
    kfig.add_vline(x=k, line_dash="dot", line_color="black")
    kfig.add_scatter(x=[k], y=[view.coeffs[view.n - 1 + k]], mode="markers+text",
                     name=f"picked cell's lag k = {k}", text=[f"k = {k}"],
                     textposition="top center",
                     marker=dict(size=11, color="black", symbol="x"))
    kfig.update_layout(title="Kernel against lag: band shaded, inducing lags marked"
                       + (" (SKI's Toeplitz target)" if ski else ""),
                       height=360, xaxis_title="lag k", margin=dict(l=10, r=10, t=40, b=10),
                       legend=dict(orientation="h", y=-0.25))
    return kfig

def singular_values(sm: lab.SmoothSpectrum, rank: int, n: int, column) -> None:
    sfig = go.Figure(go.Scatter(x=sm.index, y=sm.values, mode="lines+markers",
                                marker=dict(size=3), name="σ_i(T_s)"))
    sfig.add_vline(x=rank, line_dash="dash", annotation_text=f"r = {rank}")
    if sm.next_value == sm.next_value:  # not nan: σ_{r+1} is drawn
        sfig.add_scatter(x=[rank + 1], y=[sm.next_value], mode="markers",
                         name="σ_{r+1}(T_s)", marker=dict(size=9, symbol="diamond"))
    sfig.update_yaxes(type="log", exponentformat="power")
    sfig.update_layout(title="Singular values of the smooth part T_s (same for every r)",
                       height=360, xaxis_title="i", margin=dict(l=10, r=10, t=40, b=10),
                       legend=dict(orientation="h", y=-0.25))
    column.plotly_chart(sfig, key="chart-singular-values")
    column.caption("T_s = Toeplitz(k̃): the kernel with its band lags replaced by the straight "
                   "line across them (what sampled A interpolates); it does not depend on r. "
                   "σ_{r+1}(T_s) is the best spectral error of any rank-r approximation of "
                   "T_s. "
                   + (f"{sm.dropped} values below {lab.ROUNDOFF_FLOOR:g} σ₁ (round-off) not "
                      f"drawn. " if sm.dropped else "")
                   + ("Top values only at this n." if n > 512 else ""))

def decay_and_frequency(coeffs, length: int, causal: bool, decay: float | None) -> None:
    """The kernel's decay and frequency response (they do not depend on m or r): the
    decay figure (pages/figures/profiles.js), greyed out while the band + W A Wᵀ figure
    shows a λ its kernel was not made at."""
    drawn = [["n", length]] + ([["decay", lab.js_number(decay)]]
                               if decay is not None else [])
    figures.show("profiles", {
        "kernels": [{"label": "|t_k|", "coeffs": lab.packed(coeffs)}],
        "causal": causal, "fit": {"start": 0, "end": None, "floor": lab.ROUNDOFF_FLOOR},
        "floor": lab.ROUNDOFF_FLOOR, "envelope": decay, "response": True,
        "follows": "decomposition", "drawn": drawn}, (), key="decomposition_profiles")


main()
