"""Page "Decomposition": T ≈ band + W A Wᵀ, with exact errors, live."""

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from pages import _ui
from tnn_core.analysis.dense import display_line
from tnn_core.analysis.presets import MAX_TYPED_CHARS, MAX_TYPED_LENGTH, OPERATOR_CHANNELS
from tnn_core.bench.timing import format_flops
from tnn_core.lab import decomposition as lab
from tnn_core.lab.cells_image import cells_image
from tnn_core.lab.compress import convertible
from tnn_core.lab.heatmap_image import colorbar_image, heatmap_image
from tnn_core.lab.linked_cell import low_rank_entry

_ui.ensure_app_frame()
_ui.receive_values("pages/decomposition.py")

TARGET = ("the Toeplitz target kernel(n) = band + k(t) of SKI; the operator applies band + "
          "W A Wᵀ with its own A, which is not Toeplitz")


@dataclass(frozen=True)
class KernelSource:
    """What the Source selector chose; ``kernel(n, decay, causal)`` gives its coefficients."""

    name: str
    channel: int = 0
    text: str = ""  # custom coefficients t_{-(n-1)} .. t_{n-1}
    checkpoint: str = ""  # checkpoint key (see _ui.checkpoint_choices)
    layer: int = 0

    def kernel(self, n: int, decay: float, causal: bool) -> tuple:
        """(coeffs [2n-1], a one-line description without n). Custom coefficients fix n."""
        if self.name == "custom":
            return _ui.custom_kernel(self.text, causal), "your coefficients"
        if self.name == "checkpoint":
            coeffs = _ui.checkpoint_kernel(self.checkpoint, n, self.layer, self.channel)
            operator = _ui.load_checkpoint(self.checkpoint)[0].config.operator
            applied = ("; this bidirectional SKI layer applies band + W A Wᵀ, which is not "
                       "Toeplitz, so T is its nearest Toeplitz matrix, the means of the applied "
                       "matrix's diagonals" if operator.kind == "ski" and not operator.causal
                       else "")
            return coeffs, (f"checkpoint {self.checkpoint}, layer {self.layer}, channel "
                            f"{self.channel} (λ does not apply: the kernel is learned{applied})")
        coeffs = _ui.preset_kernel(self.name, n, decay, causal, _ui.seed(), self.channel)
        label = _ui.SOURCE_LABELS[self.name]
        if self.name in ("tno", "ski", "fd"):
            label += f", channel {self.channel}"
        return coeffs, label + (f": {TARGET}" if self.name == "ski" else "")


def bounded_input(column, label: str, top: int, key: str, help: str) -> int:
    """A number input 0..top bound to the URL; a value carried in from elsewhere (another
    source, a link, Inspect) is clamped first."""
    if st.session_state.get(key, 0) > top:
        st.session_state[key] = top
    return int(_ui.from_link(column.number_input, label, 0, top, 0, key=key,
                             disabled=_ui.locked(key), bind="query-params", help=help))


def kernel_source_picker() -> KernelSource:
    """The Source selector: a synthetic preset, one channel of a fresh operator, typed
    coefficients, or a learned channel of a checkpoint."""
    left, right = st.columns([3, 1])
    name = _ui.from_link(left.selectbox, "Source", list(_ui.SOURCE_LABELS),
                         format_func=_ui.SOURCE_LABELS.get, key="source",
                         disabled=_ui.locked("source"),
                         bind="query-params",
                         help="Which Toeplitz kernel to decompose: synthetic shapes, one "
                              "channel of a freshly initialised operator (seeded from the "
                              "sidebar), your numbers, or a learned channel.")
    if name == "checkpoint":
        return checkpoint_source_picker(right)
    if name in ("tno", "ski", "fd"):
        channel = bounded_input(right, "Channel", OPERATOR_CHANNELS - 1, "channel",
                                "Which channel of the operator (each has its own Toeplitz "
                                "matrix).")
    else:
        channel = 0
        right.caption("One channel: this source has no others.")
    text = ""
    if name == "custom":
        text = _ui.from_link(st.text_input, "Coefficients t_{-(n-1)}, …, t_{n-1}",
                             "0 0.1 0.2 0.4 3 0.4 0.2 0.1 0", key="coefficients",
                             disabled=_ui.locked("coefficients"),
                             max_chars=MAX_TYPED_CHARS,
                             bind="query-params",
                             help="An odd number 2n - 1 of numbers, comma or space separated: "
                                  "the middle one is t_0. They fix n: the length slider "
                                  "is ignored, and r and m are clamped to that n. At most "
                                  f"{2 * MAX_TYPED_LENGTH - 1} numbers (n ≤ {MAX_TYPED_LENGTH}).")
    return KernelSource(name, channel, text)


def checkpoint_source_picker(column) -> KernelSource:
    choices = _ui.checkpoint_choices()
    if not choices:
        raise ValueError("there are no checkpoints yet: train one on the Train page")
    if st.session_state.get("checkpoint", next(iter(choices))) not in choices:
        st.session_state["checkpoint"] = next(iter(choices))  # e.g. another session's upload
    key = _ui.from_link(st.selectbox, "Checkpoint", list(choices), format_func=choices.get,
                        key="checkpoint", disabled=_ui.locked("checkpoint"),
                        bind="query-params",
                        help="Shipped examples, your saved runs, uploads.")
    model, _ = _ui.load_checkpoint(key)
    layers, channels = len(model.operators()), model.operators()[0].dim
    a, b = column.columns(2)
    layer = bounded_input(a, "Layer", layers - 1, "layer", f"Which of the model's {layers} "
                          "layers.")
    channel = bounded_input(b, "Channel", channels - 1, "channel",
                            f"Which of the layer's {channels} channels.")
    return KernelSource("checkpoint", channel, checkpoint=key, layer=layer)


st.title("Decomposition: band + low rank")
st.markdown(
    "Learned TNN kernels are **spiky near the diagonal and smooth elsewhere** "
    "(*SKI to go Faster*, §3.2). So split the Toeplitz matrix in two: a **band** of "
    "$m$ diagonals, applied as a short convolution, and a **low-rank** part "
    "$W A W^\\top$ that interpolates the smooth rest from $r$ inducing points."
)
st.latex(r"T \;\approx\; T_{\mathrm{sparse}} + W A W^\top, \qquad "
         r"W \in \mathbb{R}^{n\times r}\ \text{(2 nonzeros per row)},\quad "
         r"A_{ij} = \tilde k(p_i - p_j), \qquad \text{cost } O(n + r\log r)")

try:
    source = kernel_source_picker()
except ValueError as err:
    _ui.show_error(err)
    st.stop()
c1, c2, c3 = st.columns(3)
n = _ui.from_link(c1.slider, "Length n", 1, 4096, 512, key="n",
                  disabled=_ui.locked("n") or (source.name == "custom"),
                  bind="query-params",
                  help="T is n × n. Everything on this page is exact at this n; heatmaps show "
                       "every k-th row and column when n is large. Typed coefficients fix n.")
decay = _ui.from_link(c2.slider, "Decay λ", 0.50, 1.00, 0.99, step=0.005, key="decay",
                      disabled=_ui.locked("decay")
                      or (source.name in ("custom", "checkpoint", "fd")),
                      bind="query-params",
                      help="The kernel's decay λ^|k| (synthetic kernels and fresh TNN/SKI "
                           "operators; FD-TNN has no decay bias, and typed and learned kernels "
                           "have their own). λ = 1: no decay.")
causal = _ui.from_link(c3.toggle, "Causal", key="causal", disabled=_ui.locked("causal"),
                       bind="query-params",
                       help="A causal kernel is zero at negative lags. Watch what that does to "
                            "the low-rank part.")
try:
    coeffs, source_label = source.kernel(n, decay, causal)
except ValueError as err:
    _ui.show_error(err)
    st.stop()
length = (len(coeffs) + 1) // 2
st.caption(f"Source: {source_label}; n = {length}.")
if length < 2:
    st.info(f"n = 1: T is the 1 × 1 matrix [t₀] = [{coeffs[0]:.4g}]. The band holds it "
            "exactly and nothing is left for a low-rank part (r needs two inducing points). "
            "Set n ≥ 2, or type three or more coefficients, to decompose.",
            icon=":material/info:")
    st.stop()


@st.fragment
def decomposition(coeffs, causal: bool) -> None:
    """Everything that depends on m, r and the method: a move of those reruns only this."""
    _ui.page_activity()
    c1, c2, c3 = st.columns(3)
    band = _ui.from_link(c1.slider, "Band m", 1, 512, 9, key="band", disabled=_ui.locked("band"),
                         bind="query-params",
                         help="Diagonals in the sparse part: lags |k| ≤ m//2 (causal: 0 ≤ k < m), "
                              "at most 2n − 2. Its taps are the best convolution given the "
                              "low-rank part.")
    rank = _ui.from_link(c2.slider, "Inducing points r", 2, 512, 32, key="rank",
                         disabled=_ui.locked("rank"),
                         bind="query-params",
                         help="Rank of W A Wᵀ: r points evenly spaced on [0, n-1], spacing "
                              "h = (n-1)/(r-1); at most n.")
    method = _ui.from_link(c3.radio, "Low-rank A", ["sample", "fit"], key="method",
                           disabled=_ui.locked("method"), horizontal=True,
                           bind="query-params",
                           help="sample: A_ij = k̃(p_i - p_j), the kernel continued across the "
                                "band (as SKI-TNN does). fit: the Toeplitz A that minimises the "
                                "Frobenius error (least squares). fit is optimal in Frobenius norm "
                                "only: in spectral norm it is worse than sample in about 13 % of "
                                "settings (up to 1.10×).")
    settings = lab.fit_to_length((len(coeffs) + 1) // 2, band, rank)
    if settings.note:
        st.info(settings.note, icon=":material/info:")
    band, rank = settings.band, settings.rank
    try:
        view = _ui.decomposition_view(coeffs, band, rank, causal, method)
    except ValueError as err:
        _ui.show_error(err)
        return
    if view.note:
        st.warning(view.note, icon=":material/info:")
    for warning in view.warnings:
        st.warning(warning, icon=":material/warning:")
    error_metrics(view)
    if source.name == "checkpoint" and convertible(
            _ui.load_checkpoint(source.checkpoint)[0].config) and st.button(
            f"Compress this model with m = {band}, r = {rank}", icon=":material/compress:",
            key="open_compress", help="Open the Compress page with this checkpoint and this "
                                      "band, rank and method for every layer."):
        _ui.open_page("pages/compress.py", {"checkpoint": source.checkpoint, "band": band,
                                            "rank": rank, "method": method, "per_layer": False})
    theorem1(view)
    _ui.when_measured(_ui.live_speed(view.n, rank, band, _ui.device()), speed_readout,
                      lambda: speed_waiting(view.n, rank, band))
    matrices(view)
    factors(view)
    cell = linked_views(coeffs, view)
    left, right = st.columns(2)
    left.plotly_chart(kernel_figure(view, cell), key="chart-kernel")
    left.caption("Dominant period of the smooth part: "
                 + ("none (largest at ω = 0)" if view.dominant_period == float("inf") else
                    f"{view.dominant_period:.3g} lags; SKI needs h = {view.spacing:.3g} below "
                    f"half of it"))
    singular_values(view, right)
    rank_curve(coeffs, band, rank, causal)
    _ui.page_activity()  # and ended: the quiet that timings wait for starts now


# -- the sections the fragment draws ------------------------------------------------------
def error_metrics(view) -> None:
    m = st.columns(3)
    m[0].metric("Relative spectral error", _ui.fmt(view.relative_spectral, ".2e"),
                delta=f"optimum {_ui.fmt(view.relative_optimal_spectral, '.2e')}",
                delta_color="off",
                help="‖T − approx‖₂ / ‖T‖₂. The optimum is σ_{r+1}(T − band)/‖T‖₂: no rank-r "
                     "part with this band does better (Eckart–Young).")
    m[1].metric("Relative Frobenius error", _ui.fmt(view.relative_frobenius, ".2e"),
                delta=f"optimum {_ui.fmt(view.relative_optimal_frobenius, '.2e')}",
                delta_color="off",
                help="‖T − approx‖_F / ‖T‖_F, and the best any rank-r part with this band "
                     "does.")
    m[2].metric("Spectral error / optimum", _ui.fmt(view.gap, ".2f"),
                help="SKI's spectral error divided by the Eckart–Young optimum (1 = optimal).")
    st.caption(f"The optima are for T minus **this method's band**: its taps are fitted given "
               f"the low-rank part, so sample and fit have different optima. fit minimises "
               f"the Frobenius error only; in spectral norm it is worse than sample in about "
               f"13 % of settings (up to 1.10×). Spectral norms by {view.spectral_method} "
               f"(exact to 1e-3 or better).")


def theorem1(view) -> None:
    th = view.theorem1.terms
    st.subheader("Theorem 1, term by term")
    st.latex(r"\|E_{SKI}\|_2 \le \sqrt{nr}\,\frac{h^2}{8}\,L\left(2\sqrt n + "
             r"\frac{\min(\sigma_1(F), \sigma_1(B))}{\sigma_r(A)}\right) + \|E_{nyst}\|_2,"
             r"\quad E_{SKI} = WAW^\top - T_{r,opt}")
    t = st.columns(4)
    t[0].metric("h²/8 · max|k̃''|", _ui.fmt(th.interpolation_error, ".3g"),
                help=f"Theorem 1's interpolation error for one interpolated index: h = "
                     f"{th.spacing:.3g}, L = max|k̃''| = {th.curvature:.3g}, by second "
                     f"differences k̃(k+1) − 2k̃(k) + k̃(k−1) of the kernel continued across "
                     f"the band, over the off-band lags (largest at lag {th.curvature_lag}).")
    t[1].metric("Max entry error off the band", _ui.fmt(th.entry_error, ".3g"),
                delta=f"bound 2·h²/8·L = {2 * th.interpolation_error:.3g}", delta_color="off",
                help="max |W A Wᵀ − T| over the entries whose lag is not in the band, with A "
                     "sampled. W A Wᵀ interpolates rows and columns, so the per-index term "
                     "counts twice.")
    t[2].metric("Theorem 1 right-hand side", _ui.fmt(th.right_hand_side, ".3g"),
                help=f"The whole bound for the smooth part T_s = Toeplitz(k̃): σ_r(A) = "
                     f"{th.a_extreme[1]:.3g}, ‖E_nyst‖₂ = {_ui.fmt(th.nystrom_error, '.3g')}.")
    t[3].metric("Measured ‖E_SKI‖₂", _ui.fmt(th.ski_error, ".3g"),
                help="‖W A Wᵀ − T_{r,opt}‖₂, T_{r,opt} the best rank-r approximation of T_s "
                     "(SVD).")
    st.caption(" ".join(view.theorem1.caveats))


SPEED_LABELS = ("SKI: band + W A Wᵀ", "FFT product (TNO)", "Dense product")
TRADE_OFF = ("The trade-off: more inducing points or a wider band lower the error above and "
             "cost time here. The band's cost grows with m, the low-rank part's with n, not "
             "with r; the FFT product grows as n log n (see the Speed page). Flop counts are "
             "deterministic; times vary with the machine's load.")


def speed_waiting(n: int, rank: int, band: int) -> None:
    """The readout's place while its timing waits for a quiet server."""
    s = st.columns(4)
    for column, label in zip(s[:3], SPEED_LABELS, strict=True):
        column.metric(label, "…", help="Timed in the background once the page is idle.")
    s[3].caption(f"Timing n = {n}, r = {rank}, m = {band} once the page is idle, so the "
                 "measurement does not compete with drawing it. " + TRADE_OFF)


def speed_readout(found) -> None:
    if found.error is not None:
        _ui.show_error(found.error)
        return
    speed = found.result
    ski_span, fft_span, dense_span = (speed[f"{name}_quartiles_ms"]
                                      for name in ("ski", "fft", "dense"))
    s = st.columns(4)
    s[0].metric(SPEED_LABELS[0], f"{speed['ski_ms']:.3g} ms",
                help=f"Forward time at this n, r and m: {speed['batch']} sequences × "
                     f"{speed['dim']} channels, median and interquartile range of "
                     f"{speed['repeats']} interleaved runs on {speed['device']}, measured once "
                     f"per setting in this session, in the background while the page was "
                     f"idle.")
    s[1].metric(SPEED_LABELS[1], f"{speed['fft_ms']:.3g} ms",
                delta=f"SKI {lab.speed_text(ski_span, fft_span)}", delta_color="off",
                help="The exact Toeplitz product by FFT, O(n log n). The comparison says "
                     "'within noise' where the two times' quartile ranges overlap.")
    dense_note = ("not timed above n = 4096" if not speed["dense_channels"] else
                  "all channels timed" if speed["dense_channels"] == speed["dim"] else
                  f"timed on {speed['dense_channels']} of the {speed['dim']} channels (their "
                  f"n × n matrices fit 64 MB), scaled to {speed['dim']}: the channels are "
                  f"equal, independent products")
    s[2].metric(SPEED_LABELS[2], f"{speed['dense_ms']:.3g} ms" if speed["dense_ms"] else "—",
                delta=f"SKI {lab.speed_text(ski_span, dense_span)}"
                if speed["dense_ms"] else None, delta_color="off",
                help=f"The n × n matrix times the input, O(n²); {dense_note}.")
    for column, name in zip(s[:3], ("ski", "fft", "dense"), strict=True):
        quartiles = speed[name + "_quartiles_ms"]
        spread = (f"quartiles {quartiles[0]:.3g}–{quartiles[2]:.3g} ms · " if quartiles
                  else "")
        column.caption(f"{spread}{format_flops(speed[name + '_flops'])} (from the formula)")
    busy = (" These times were taken while other work ran on the server (three attempts "
            "were disturbed): read them with care." if found.disturbed else "")
    s[3].caption(TRADE_OFF + busy)


def matrices(view) -> None:
    """T = band + low rank + residual as four images (a Plotly heatmap each took as long to
    redraw as the rest of the page); the first three share one colour scale."""
    maps = view.heatmaps
    pixels = max(1, 256 // len(maps.idx))  # cells enlarged to about 256 pixels a side
    parts = ((maps.T, "T (SKI's target)" if source.name == "ski" else "T"),
             (maps.band, "= band"), (maps.low_rank, "+ low rank W A Wᵀ"))
    shared, own = _ui.colour_table("RdBu"), _ui.colour_table("PuOr")
    with st.container(key="heatmaps"):
        columns = st.columns(4)
        for column, (matrix, title) in zip(columns[:3], parts, strict=True):
            column.image(heatmap_image(matrix, maps.limit, shared, pixels), caption=title,
                         width="stretch")
        columns[3].image(heatmap_image(maps.residual, maps.residual_limit, own, pixels),
                         caption="+ residual (its own scale)", width="stretch")
        left, right = st.columns([3, 1])
        left.image(colorbar_image(shared), width="stretch",
                   caption=f"T, band and low rank: −{maps.limit:.3g} (red) … 0 (white) … "
                           f"+{maps.limit:.3g} (blue)")
        right.image(colorbar_image(own), width="stretch",
                    caption=f"residual: −{maps.residual_limit:.2g} … +"
                            f"{maps.residual_limit:.2g}")
    shown = (f"1 row and column in {maps.step} of the {view.n} × {view.n} matrices, "
             if maps.step > 1 else f"all {view.n} × {view.n} entries, ")
    st.caption(f"Row 0 at the top, column 0 at the left; {shown}so the errors above are "
               "exact while the pictures are samples.")


PIECE_PIXELS = 256  # the product's side in image pixels; the factors are sized from it
NARROWEST = 0.35  # W's width at least this fraction of its height, so its columns show
A_SIDE = 0.6  # A's side as a fraction of the product's


def factors(view) -> None:
    """W · A · Wᵀ = W A Wᵀ ≈ T − band in a row, then a close-up of W's first rows."""
    pieces, limit = view.pieces, view.heatmaps.limit
    st.subheader("Where W A Wᵀ comes from")
    s, c = len(pieces.rows), pieces.columns
    side = PIECE_PIXELS
    thin, square = round(side * max(c / s, NARROWEST)), round(side * A_SIDE)
    shared = _ui.colour_table("RdBu")
    corner = " (corner)" if c < view.rank else ""
    images = (
        (cells_image(pieces.W, 1.0, shared, side, thin), f"W, {view.n} × {view.rank}{corner}"),
        (cells_image(pieces.A, limit, shared, square, square),
         f"· A, {view.rank} × {view.rank}{corner}"),
        (cells_image(pieces.W.T, 1.0, shared, thin, side), "· Wᵀ"),
        (cells_image(pieces.product, limit, shared, side, side), "= W A Wᵀ"),
        (cells_image(pieces.target, limit, shared, side, side), "≈ T − band"))
    with st.container(key="factors"):
        columns = st.columns([image.shape[1] for image, _ in images],
                             vertical_alignment="center")
        for column, (image, caption) in zip(columns, images, strict=True):
            column.image(image, caption=caption, width="stretch")
        zoom, words = st.columns([1, 8], vertical_alignment="center")
        q = pieces.zoom.shape[1]
        zoom.image(cells_image(pieces.zoom, 1.0, shared, 192, 24 * q), width="stretch",
                   caption=f"W, columns 0 … {q - 1}")
    shown = (f"rows i = 0, {pieces.row_step}, {2 * pieces.row_step}, … (1 in "
             f"{pieces.row_step})" if pieces.row_step > 1 else "every row")
    window = (f"the first {c} of the {view.rank} inducing points and the positions between "
              f"them (the top-left corner), {shown}" if c < view.rank else
              f"all {view.rank} inducing points, {shown}")
    close = (f"rows 0 … {pieces.zoom_rows[-1]}" + (f", 1 in {pieces.zoom_step}"
                                                  if pieces.zoom_step > 1 else ""))
    clipped = (f" A's entries reach ±{pieces.a_max:.3g}, beyond that scale: its darkest cells "
               f"are clipped." if pieces.a_max > limit else "")
    row = pieces.example
    words.markdown(
        f"**W** interpolates each position $i$ linearly from its two neighbouring inducing "
        f"points $p_l \\le i \\le p_{{l+1}}$, $h = {view.spacing:.4g}$ apart: row $i$ holds "
        f"$1 - f$ and $f$ with $f = (i - p_l)/h$. So each row has two nonzeros (one where $i$ "
        f"sits on an inducing point) and sums to 1; the close-up shows them ({close}). "
        f"Row {row.position}, for example: {row.weights[0]:.3g} at column {row.columns[0]} "
        f"($p = {row.points[0]:.4g}$) and {row.weights[1]:.3g} at column {row.columns[1]} "
        f"($p = {row.points[1]:.4g}$). **A** holds the smooth part at the inducing points' "
        f"lags, $A_{{ij}} = a_{{i-j}}$: constant along its diagonals, Toeplitz.")
    st.caption(
        f"W: white 0 … blue 1. A, W A Wᵀ and T − band: the colour scale of T above "
        f"(−{limit:.3g} red … +{limit:.3g} blue).{clipped} Drawn: {window}. W A Wᵀ is the "
        f"low-rank picture above; where it differs from T − band is the residual.")


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
    st.subheader("One cell of T, followed everywhere")
    left, right = st.columns([2, 3])
    with left:
        cell = _ui.follow_cell(coeffs, view.rank, view.heatmaps.limit)
    i, j = cell.i, cell.j
    k, row, col = cell.lag, cell.row, cell.column
    wawt = low_rank_entry(cell, view.inducing_values)
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


def kernel_figure(view, cell) -> go.Figure:
    kfig = go.Figure()
    lags, values = display_line(view.lags, view.coeffs)
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
                       + (" (SKI's Toeplitz target)" if source.name == "ski" else ""),
                       height=360, xaxis_title="lag k", margin=dict(l=10, r=10, t=40, b=10),
                       legend=dict(orientation="h", y=-0.25))
    return kfig


def singular_values(view, column) -> None:
    sm = view.smooth
    sfig = go.Figure(go.Scatter(x=sm.index, y=sm.values, mode="lines+markers",
                                marker=dict(size=3), name="σ_i(T_s)"))
    sfig.add_vline(x=view.rank, line_dash="dash", annotation_text=f"r = {view.rank}")
    if sm.next_value == sm.next_value:  # not nan: σ_{r+1} is drawn
        sfig.add_scatter(x=[view.rank + 1], y=[sm.next_value], mode="markers",
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
                   + ("Top values only at this n." if view.n > 512 else ""))


def rank_curve(coeffs, band: int, rank: int, causal: bool) -> None:
    curve = _ui.rank_curve(coeffs, band, causal)
    cfig = go.Figure()
    for errors, name in ((curve.sample, "SKI, sampled A"), (curve.fit, "SKI, fitted A"),
                         (curve.optimal, "optimal rank r (SVD)")):
        cfig.add_scatter(x=curve.ranks, y=errors, name=name, mode="lines+markers")
    _ui.vline(cfig, rank, f"current r = {rank}", log_x=True, line_dash="dash")
    cfig.update_xaxes(type="log", title="inducing points r")
    cfig.update_yaxes(type="log", title="relative Frobenius error", exponentformat="power")
    cfig.update_layout(title=f"Error against r at m = {band}", height=380,
                       margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(cfig, key="chart-rank-curve")
    exact = ", ".join(str(r) for r in curve.exact)
    st.caption(f"Errors below {lab.CURVE_FLOOR:g} are the formula's round-off (an exact fit "
               "reads about 1e-8) and are not drawn, so the axis stays on the errors that "
               "carry information"
               + (f". Exact up to round-off (some curve below {lab.CURVE_FLOOR:g}): "
                  f"r = {exact}." if len(curve.exact) else "."))


decomposition(coeffs, causal)

# -- decay and frequency ------------------------------------------------------------------------
profiles = _ui.kernel_profiles(coeffs, causal, decay)
d, f = profiles.decay, profiles.frequency
left, right = st.columns(2)
dfig = go.Figure()
lags, magnitude = display_line(d.lags, d.magnitude)
dfig.add_scatter(x=lags, y=magnitude, name="|t_k|", mode="lines")
dfig.add_scatter(x=d.lags, y=d.envelope, name=f"λ^|k|, λ = {decay}", line=dict(dash="dot"))
if d.fit_line is not None:
    dfig.add_scatter(x=d.lags, y=d.fit_line, name=f"fit, λ_eff = {d.fitted_decay:.4f}",
                     line=dict(dash="dash"))
dfig.add_vline(x=d.receptive_field, line_dash="dot",
               annotation_text=f"99% of Σ|t_k| within {d.receptive_field}")
dfig.update_yaxes(type="log", exponentformat="power")
dfig.update_layout(title="Decay: |t_k| against |k|", height=360, xaxis_title="|k|",
                   margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
left.plotly_chart(dfig, key="chart-decay")
if d.dropped:
    left.caption(f"{d.dropped} lags with |t_k| below {lab.ROUNDOFF_FLOOR:g} × max|t| (zeros "
                 f"and round-off) are gaps; the λ lines stop at the smallest |t_k| drawn.")

ffig = make_subplots(specs=[[{"secondary_y": True}]])
omega, magnitude = display_line(f.omega, f.magnitude)
ffig.add_scatter(x=omega, y=magnitude, name="magnitude", secondary_y=False)
omega, phase = display_line(f.omega, f.phase)
ffig.add_scatter(x=omega, y=phase, name="phase (rad)", secondary_y=True,
                 line=dict(dash="dot"))
ffig.update_yaxes(title_text="magnitude |k̂(ω)|", secondary_y=False)
ffig.update_yaxes(title_text="phase (rad)", range=[-math.pi, math.pi], secondary_y=True,
                  tickvals=[-math.pi, -math.pi / 2, 0, math.pi / 2, math.pi],
                  ticktext=["−π", "−π/2", "0", "π/2", "π"], showgrid=False)
ffig.update_layout(title="Frequency response of the kernel", height=360,
                   xaxis_title="ω (radians, 0 … π)",
                   margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
right.plotly_chart(ffig, key="chart-frequency")


st.markdown(
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
_ui.page_activity()  # the page script ends: the quiet that timings wait for starts now
