"""Page "Decomposition": T ≈ band + W A Wᵀ, with exact errors, live."""

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from pages import _ui
from tnn_core.analysis.presets import OPERATOR_CHANNELS

_ui.ensure_app_frame()


@dataclass(frozen=True)
class KernelSource:
    """What the Source selector chose; ``kernel(n, decay, causal)`` gives its coefficients."""

    name: str
    channel: int = 0
    text: str = ""  # custom coefficients t_{-(n-1)} .. t_{n-1}
    checkpoint: str = ""  # checkpoint key (see _ui.checkpoint_choices)
    layer: int = 0

    @property
    def is_operator(self) -> bool:
        return self.name in ("tno", "ski", "fd")

    def kernel(self, n: int, decay: float, causal: bool) -> tuple[np.ndarray, str]:
        """(coeffs [2n-1], a one-line description). Custom coefficients fix their own n."""
        if self.name == "custom":
            coeffs = _ui.custom_kernel(self.text, causal)
            return coeffs, f"your {len(coeffs)} coefficients (n = {(len(coeffs) + 1) // 2})"
        if self.name == "checkpoint":
            coeffs = _ui.checkpoint_kernel(self.checkpoint, n, self.layer, self.channel)
            return coeffs, (f"checkpoint {self.checkpoint}, layer {self.layer}, channel "
                            f"{self.channel} (λ does not apply: the kernel is learned)")
        coeffs = _ui.preset_kernel(self.name, n, decay, causal, _ui.seed(), self.channel)
        label = _ui.SOURCE_LABELS[self.name]
        return coeffs, label + (f", channel {self.channel}" if self.is_operator else "")


def kernel_source_picker() -> KernelSource:
    """The Source selector: a synthetic preset, or one channel of a fresh operator.

    New kinds of source (learned kernels from checkpoints) plug in here as
    further options with their own KernelSource.
    """
    left, right = st.columns([3, 1])
    name = left.selectbox("Source", list(_ui.SOURCE_LABELS), format_func=_ui.SOURCE_LABELS.get,
                          key="source", bind="query-params",
                          help="Which Toeplitz kernel to decompose: synthetic shapes, or one "
                               "channel of a freshly initialised operator (seeded from the "
                               "sidebar).")
    if name == "checkpoint":
        return checkpoint_source_picker(right)
    channel = right.number_input("Channel", 0, OPERATOR_CHANNELS - 1, 0,
                                 key="channel", bind="query-params",
                                 disabled=name not in ("tno", "ski", "fd"),
                                 help="Which channel of the operator (each channel has its "
                                      "own Toeplitz matrix).")
    text = ""
    if name == "custom":
        text = st.text_input("Coefficients t_{-(n-1)}, …, t_{n-1}",
                             "0 0.1 0.2 0.4 3 0.4 0.2 0.1 0", key="coefficients",
                             bind="query-params",
                             help="An odd number 2n - 1 of numbers, comma or space separated: "
                                  "the middle one is t_0. The length slider is ignored.")
    return KernelSource(name, int(channel), text)


def checkpoint_source_picker(column) -> KernelSource:
    choices = _ui.checkpoint_choices()
    if not choices:
        raise ValueError("there are no checkpoints yet: train one on the Train page")
    key = st.selectbox("Checkpoint", list(choices), format_func=choices.get, key="checkpoint",
                       bind="query-params", help="Shipped examples, your saved runs, uploads.")
    model, _ = _ui.load_checkpoint(key)
    layers, channels = len(model.operators()), model.operators()[0].dim
    a, b = column.columns(2)
    layer = a.number_input("Layer", 0, layers - 1, 0, key="layer", bind="query-params",
                           help=f"Which of the model's {layers} layers.")
    channel = b.number_input("Channel", 0, channels - 1, 0, key="channel", bind="query-params",
                             help=f"Which of the layer's {channels} channels.")
    return KernelSource("checkpoint", int(channel), checkpoint=key, layer=int(layer))


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
n = c1.slider("Length n", 1, 4096, 512, key="n", bind="query-params",
              help="T is n × n. Everything on this page is exact at this n; heatmaps show "
                   "every k-th row and column when n is large.")
decay = c1.slider("Decay λ", 0.50, 1.00, 0.99, step=0.005, key="decay", bind="query-params",
                  help="The kernel's decay λ^|k| (synthetic kernels and TNN/SKI operators). "
                       "λ = 1: no decay.")
band = c2.slider("Band m", 1, 512, 9, key="band", bind="query-params",
                 help="Diagonals in the sparse part: lags |k| ≤ m//2 (causal: 0 ≤ k < m). "
                      "Its taps are the best convolution given the low-rank part.")
rank = c2.slider("Inducing points r", 2, 512, 32, key="rank", bind="query-params",
                 help="Rank of W A Wᵀ: r points evenly spaced on [0, n-1], spacing "
                      "h = (n-1)/(r-1). Must be ≤ n.")
method = c3.radio("Low-rank A", ["sample", "fit"], key="method", bind="query-params",
                  horizontal=True,
                  help="sample: A_ij = k̃(p_i - p_j), the kernel continued across the band "
                       "(as SKI-TNN does). fit: the Toeplitz A that minimises the Frobenius "
                       "error (least squares).")
causal = c3.toggle("Causal", key="causal", bind="query-params",
                   help="A causal kernel is zero at negative lags. Watch what that does to "
                        "the low-rank part.")
try:
    coeffs, source_label = source.kernel(n, decay, causal)
    view = _ui.decomposition_view(coeffs, band, rank, causal, method, decay)
except ValueError as err:
    _ui.show_error(err)
    st.stop()

if view.note:
    st.warning(view.note, icon=":material/info:")

# -- error metrics --------------------------------------------------------------------------
m = st.columns(5)
m[0].metric("Relative spectral error", _ui.fmt(view.relative_spectral, ".2e"),
            delta=f"optimum {_ui.fmt(view.relative_optimal_spectral, '.2e')}", delta_color="off",
            help="‖T − approx‖₂ / ‖T‖₂. The optimum is σ_{r+1}(T − band)/‖T‖₂: no rank-r "
                 "matrix does better (Eckart–Young).")
m[1].metric("Relative Frobenius error", _ui.fmt(view.relative_frobenius, ".2e"),
            delta=f"optimum {_ui.fmt(view.relative_optimal_frobenius, '.2e')}",
            delta_color="off",
            help="‖T − approx‖_F / ‖T‖_F, and the best any rank-r matrix can do.")
m[2].metric("Spectral gap to optimum", _ui.fmt(view.gap, ".2f"),
            help="SKI's spectral error divided by the Eckart–Young optimum (1 = optimal).")
m[3].metric("Theorem 1 factor h²/8", _ui.fmt(view.theorem1_factor, ".3g"),
            help="Linear interpolation's error factor in Theorem 1 of SKI to go Faster, "
                 f"h = spacing of the inducing points = {view.spacing:.3g}.")
m[4].metric("Causality leakage", _ui.fmt(view.leakage, ".2%"),
            help="Σ_{k<0}|t_k| / Σ|t_k|: how much of the kernel looks into the future.")
speed = _ui.live_speed(view.n, rank, band, _ui.device())
s = st.columns(5)
s[0].metric("SKI: band + W A Wᵀ", f"{speed['ski_ms']:.3f} ms",
            help=f"Forward time at this n, r and m: {speed['batch']} sequences × {speed['dim']} "
                 f"channels, median of {speed['repeats']} interleaved runs on "
                 f"{speed['device']}. Measured once per setting.")
s[1].metric("FFT product (TNO)", f"{speed['fft_ms']:.3f} ms",
            delta=f"SKI {speed['speedup_vs_fft']:.2f}× faster" if speed["speedup_vs_fft"] >= 1
            else f"SKI {1 / speed['speedup_vs_fft']:.2f}× slower", delta_color="off",
            help="The exact Toeplitz product by FFT, O(n log n).")
dense_note = ("not timed above n = 4096" if not speed["dense_channels"] else
              "all channels timed" if speed["dense_channels"] == speed["dim"] else
              f"timed on {speed['dense_channels']} of the {speed['dim']} channels (their n × n "
              f"matrices fit 64 MB), scaled to {speed['dim']}: the channels are equal, "
              f"independent products")
s[2].metric("Dense product", f"{speed['dense_ms']:.3f} ms" if speed["dense_ms"] else "—",
            delta=f"SKI {speed['speedup_vs_dense']:.1f}× faster" if speed["dense_ms"] else None,
            delta_color="off", help=f"The n × n matrix times the input, O(n²); {dense_note}.")
s[3].caption("The trade-off: more inducing points or a wider band lower the error above "
             "and cost time here. The band's cost grows with m, the low-rank part's with "
             "n, not with r; the FFT product grows as n log n (see the Speed page).")
st.caption(f"Source: {source_label}. Spectral norms by {view.spectral_method} "
           f"(exact to 1e-3 or better).")

# -- the four matrices ----------------------------------------------------------------------
maps = view.heatmaps
parts = make_subplots(rows=1, cols=3, horizontal_spacing=0.05,
                      subplot_titles=("T", "= band", "+ low rank W A Wᵀ"))
for col, matrix in enumerate((maps.T, maps.band, maps.low_rank), start=1):
    parts.add_trace(go.Heatmap(z=matrix, x=maps.idx, y=maps.idx, zmin=-maps.limit,
                               zmax=maps.limit, zmid=0, colorscale="RdBu", showscale=col == 3,
                               hovertemplate="row %{y}, col %{x}: %{z:.3g}<extra></extra>"),
                    row=1, col=col)
    parts.update_yaxes(autorange="reversed", row=1, col=col)
parts.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10))
residual = go.Figure(go.Heatmap(z=maps.residual, x=maps.idx, y=maps.idx,
                                zmin=-maps.residual_limit, zmax=maps.residual_limit, zmid=0,
                                colorscale="PuOr",
                                hovertemplate="row %{y}, col %{x}: %{z:.3g}<extra></extra>"))
residual.update_yaxes(autorange="reversed")
residual.update_layout(title=f"+ residual (own scale, ±{maps.residual_limit:.2g})", height=340,
                       margin=dict(l=10, r=10, t=40, b=10))
hl, hr = st.columns([3, 1])
hl.plotly_chart(parts, key="chart-parts")
hr.plotly_chart(residual, key="chart-residual")
if maps.step > 1:
    st.caption(f"Heatmaps show 1 row and column in {maps.step} of the {view.n} × "
               f"{view.n} matrices; the errors above are exact.")

# -- kernel and singular values ---------------------------------------------------------------
left, right = st.columns(2)
kfig = go.Figure()
kfig.add_scatter(x=view.lags, y=view.coeffs, name="t_k", mode="lines")
kfig.add_scatter(x=view.inducing_lags, y=view.inducing_values, mode="markers",
                 name="A's lags (p_i − p_j)", marker=dict(size=6, symbol="circle-open"))
kfig.add_vrect(x0=view.band_span[0], x1=view.band_span[1], fillcolor="orange", opacity=0.25,
               line_width=0, annotation_text="band", annotation_position="top left")
kfig.update_layout(title="Kernel against lag: band shaded, inducing lags marked", height=360,
                   xaxis_title="lag k", margin=dict(l=10, r=10, t=40, b=10),
                   legend=dict(orientation="h", y=-0.25))
left.plotly_chart(kfig, key="chart-kernel")

sfig = go.Figure(go.Scatter(x=view.singular_index, y=view.singular_values,
                            mode="lines+markers", marker=dict(size=3), name="σ_i(T − band)"))
sfig.add_vline(x=view.rank_marker, line_dash="dash", annotation_text=f"r = {rank}")
sfig.update_yaxes(type="log", exponentformat="power")
sfig.update_layout(title="Singular values of T − band (top ones for large n)", height=360,
                   xaxis_title="i", margin=dict(l=10, r=10, t=40, b=10))
right.plotly_chart(sfig, key="chart-singular-values")

# -- error against r ----------------------------------------------------------------------------
curve = _ui.rank_curve(coeffs, band, causal)
cfig = go.Figure()
for errors, name in ((curve.sample, "SKI, sampled A"), (curve.fit, "SKI, fitted A"),
                     (curve.optimal, "optimal rank r (SVD)")):
    cfig.add_scatter(x=curve.ranks, y=errors, name=name, mode="lines+markers")
cfig.add_vline(x=np.log10(rank), line_dash="dash",  # shapes on a log axis take log10
               annotation_text="current r")
cfig.update_xaxes(type="log", title="inducing points r")
cfig.update_yaxes(type="log", title="relative Frobenius error", exponentformat="power")
cfig.update_layout(title=f"Error against r at m = {band}", height=380,
                   margin=dict(l=10, r=10, t=40, b=10))
st.plotly_chart(cfig, key="chart-rank-curve")

# -- decay and frequency ------------------------------------------------------------------------
d, f = view.decay, view.frequency
left, right = st.columns(2)
dfig = go.Figure()
dfig.add_scatter(x=d.lags, y=d.magnitude, name="|t_k|", mode="lines")
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

ffig = make_subplots(specs=[[{"secondary_y": True}]])
ffig.add_scatter(x=f.omega, y=f.magnitude, name="magnitude", secondary_y=False)
ffig.add_scatter(x=f.omega, y=f.phase, name="phase (rad)", secondary_y=True,
                 line=dict(dash="dot"))
ffig.update_layout(title="Frequency response of the kernel", height=360, xaxis_title="ω",
                   margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
right.plotly_chart(ffig, key="chart-frequency")

st.markdown(
    "**What to notice.** Move *r* and watch the error curve: SKI tracks the optimum "
    "while the inducing points are dense enough to follow the smooth part, and Theorem 1's "
    "factor $h^2/8$ shrinks as $1/r^2$. Shrink the band to $m = 1$ on *spike plus smooth* "
    "and the low-rank part must swallow the spike: the error jumps. Switch on *causal*: "
    "the jump at the diagonal is not smooth, no interpolation can follow it, and the error "
    "stays high. That is why FD-TNN, not SKI, handles causal models. With $\\lambda$ near 1 "
    "the kernel decays slowly and the smooth part carries more of the matrix."
)
