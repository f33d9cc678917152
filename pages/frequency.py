"""Page "Frequency and causality": FD-TNN's kernel built in the frequency domain."""

import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from tnn_core.analysis.fd_response import THEOREMS

_ui.ensure_app_frame()

st.title("Frequency and causality")
st.markdown(
    "FD-TNN (Algorithm 2 of *SKI to go Faster*) never writes down the kernel in time. "
    "An MLP gives the **real part** $R(\\omega)$ of its frequency response; the "
    "**imaginary part** is fixed by the discrete Hilbert transform, and the result is a "
    "kernel that is **exactly causal**: zero at every negative lag."
)
st.latex(r"\hat k_{\mathrm{causal}}(\omega) = R(\omega) - i\,\mathcal{H}\{R\}(\omega), "
         r"\qquad \omega_j = \tfrac{2\pi j}{N},\ j = 0,\dots,N/2,\ N = 2n")

c1, c2, c3, c4 = st.columns(4)
activation = c1.selectbox("Activation", list(THEOREMS), key="activation", bind="query-params",
                          help="The MLP's activation. Theorems 2-4 tie its smoothness to how "
                               "fast the kernel decays in time.")
width = c2.slider("MLP width", 1, 128, 32, key="width", bind="query-params",
                  help="Hidden units per layer of the RPE MLP.")
depth = c2.slider("MLP depth", 0, 4, 1, key="depth", bind="query-params",
                  help="Hidden layers between the input and output layers.")
n = c3.slider("Sequence length n", 1, 4096, 512, key="n", bind="query-params",
              help="The kernel is built on the grid N = 2n, so it covers lags 0 .. n.")
smooth = c4.toggle("Feed the MLP cos ω", key="smooth", bind="query-params",
                   help="The MLP sees ω in [0, π] and the response is extended evenly; a "
                        "nonzero slope at ω = 0 or π is a kink, and a kink limits the decay "
                        "to about 1/t². Feeding cos ω makes the extension smooth.")

try:
    view = _ui.frequency_view(activation, width, depth, n, _ui.seed(), smooth)
except ValueError as err:
    _ui.show_error(err)
    st.stop()

left, right = st.columns(2)
pair = go.Figure()
pair.add_scatter(x=view.omega, y=view.real, name="R(ω), from the MLP")
pair.add_scatter(x=view.omega, y=view.imag, name="−H{R}(ω), from the Hilbert transform")
pair.update_layout(title="The Hilbert pair: real and imaginary parts of the response",
                   xaxis_title="ω (0 … π)", height=360, margin=dict(l=10, r=10, t=40, b=10),
                   legend=dict(orientation="h", y=-0.25))
left.plotly_chart(pair, key="chart-pair")

time_plot = go.Figure(go.Scatter(x=view.lags, y=view.kernel, mode="lines", name="k[t]"))
time_plot.add_vrect(x0=view.negative_span[0], x1=view.negative_span[1], fillcolor="gray",
                    opacity=0.12, line_width=0, annotation_text="negative lags: exactly 0",
                    annotation_position="top left")
time_plot.update_layout(title="The causal kernel k[t] in time", xaxis_title="lag t",
                        height=360, margin=dict(l=10, r=10, t=40, b=10))
right.plotly_chart(time_plot, key="chart-kernel")

fit = view.fit
m1, m2, m3, m4 = st.columns(4)
m1.metric("max |k[t]| at t < 0", f"{view.max_negative:.1e}",
          help="The largest kernel value at a negative lag: causality, measured.")
m2.metric("Effective λ (exponential fit)", _ui.fmt(fit.rate, ".3f"),
          help="ρ in |k[t]| ≈ c ρ^t, fitted on the tail above round-off.")
m3.metric("Power-law exponent", _ui.fmt(fit.exponent, ".2f"),
          help="p in |k[t]| ≈ c t^(-p), fitted on the same lags.")
m4.metric("Better fit", fit.better_law or "—",
          help="Which of the two laws leaves the smaller residual in log|k|.")

st.subheader("Decay against the theorems")
st.info(f"**{view.theorem}** ({activation}): {view.statement}.", icon=":material/functions:")
semilog, loglog = st.columns(2)
for column, log_x, title in ((semilog, False, "semilog: straight line = exponential"),
                             (loglog, True, "log-log: straight line = power law")):
    fig = go.Figure()
    for curve in view.decay_curves:
        fig.add_scatter(x=view.decay_t, y=curve.magnitude, name=curve.activation, mode="lines",
                        line=dict(width=3 if curve.activation == activation else 1))
    fig.update_layout(title=f"|k[t]|, {title}", height=380, xaxis_title="lag t",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(type="log", exponentformat="power")
    if log_x:
        fig.update_xaxes(type="log")
    column.plotly_chart(fig, key=f"chart-decay-{log_x}")

st.markdown(
    "**What to notice.** The negative lags are zero to round-off for every activation: "
    "causality comes from the construction, not from training. With $\\omega$ fed "
    "directly, all three activations decay like about $1/t^2$: the even extension of "
    "$R$ has kinks at $\\omega = 0$ and $\\pi$. Switch on *Feed the MLP cos ω* and SiLU "
    "and GeLU fall to round-off within a few dozen lags (faster than any polynomial), "
    "while ReLU, piecewise linear, keeps its kinks and its $1/t^2$ tail: square "
    "summable, as Theorem 4 says, but no more. Values below about $10^{-16}$ are "
    "floating-point round-off."
)
