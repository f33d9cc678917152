"""Page "Frequency and causality": FD-TNN's kernel built in the frequency domain."""

import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from tnn_core.analysis.dense import display_line
from tnn_core.analysis.fd_response import THEOREMS
from tnn_core.lab import frequency as frequency_lab

_ui.ensure_app_frame()

st.title("Frequency and causality")
st.markdown(
    "FD-TNN (*SKI to go Faster*) never writes down the kernel in time: an RPE MLP gives "
    "its frequency response, and the inverse FFT gives the kernel. **Causal** (Algorithm 2): "
    "the MLP gives the **real part** $R(\\omega)$, the discrete Hilbert transform the "
    "**imaginary part**, and the kernel is zero at every negative lag. **Bidirectional** "
    "(§3.3.2): the MLP gives both parts, the imaginary one forced to 0 at $\\omega = 0$ "
    "and $\\pi$. Everything below is read from one channel of the library's FD operator "
    "(`tnn_core.operators.FD`), on the grid it uses."
)

c1, c2, c3, c4 = st.columns(4)
activation = _ui.from_link(c1.selectbox, "Activation", list(THEOREMS), key="activation",
                           disabled=_ui.locked("activation"),
                           bind="query-params",
                           help="The MLP's activation. Theorems 2-4 tie its smoothness to how "
                                "fast the kernel decays in time.")
width = _ui.from_link(c2.slider, "MLP width", 1, 128, 32, key="width", disabled=_ui.locked("width"),
                      bind="query-params",
                      help="Hidden units per layer of the RPE MLP (OperatorConfig.rpe_dim).")
depth = _ui.from_link(c2.slider, "MLP depth", 0, 4, 1, key="depth", disabled=_ui.locked("depth"),
                      bind="query-params",
                      help="Hidden layers between the input and output layers "
                           "(OperatorConfig.rpe_layers).")
n = _ui.from_link(c3.slider, "Sequence length n", 1, 4096, 512, key="n", disabled=_ui.locked("n"),
                  bind="query-params",
                  help="The operator builds the response on N = fft_size(n) frequencies, the "
                       "smallest even 5-smooth FFT size ≥ 2n, and applies lags −(n−1) … n−1.")
causal = _ui.from_link(c4.toggle, "Causal", value=True, key="causal", disabled=_ui.locked("causal"),
                       bind="query-params",
                       help="On: Algorithm 2, real part from the MLP, imaginary part from the "
                            "Hilbert transform. Off: §3.3.2, the MLP gives both parts.")
smooth = _ui.from_link(c4.toggle, "Feed the MLP cos ω", key="smooth", disabled=_ui.locked("smooth"),
                       bind="query-params",
                       help="OperatorConfig(fd_input='cosine'). Off (fd_input='omega', Algorithm "
                            "2): the MLP reads ω in [0, π]; on the circle the response then has "
                            "kinks (causal) or jumps (bidirectional) at ω = 0 and π. On: it reads "
                            "cos ω, and the imaginary part is weighted by sin ω, so the response "
                            "is as smooth as the MLP.")
fd_input = "cosine" if smooth else "omega"

try:
    view = _ui.frequency_view(activation, width, depth, n, _ui.seed(), fd_input, causal)
except ValueError as err:
    _ui.show_error(err)
    st.stop()

mlp_input = "cos ω" if smooth else "ω"
x = r"\cos\omega_j" if smooth else r"\omega_j"
grid = rf"\qquad \omega_j = \tfrac{{2\pi j}}{{N}},\ j = 0,\dots,N/2,\ N = {view.N}"
if causal:
    st.latex(rf"\hat k(\omega_j) = R(\omega_j) - i\,\mathcal{{H}}\{{R\}}(\omega_j), \quad "
             rf"R(\omega_j) = \mathrm{{MLP}}({x}), " + grid)
else:
    weight = r"\sin\omega_j\," if smooth else ""
    st.latex(rf"\hat k(\omega_j) = \mathrm{{MLP}}_{{\mathrm{{re}}}}({x}) + i\,{weight}"
             rf"\mathrm{{MLP}}_{{\mathrm{{im}}}}({x}), " + grid)
st.caption(f"N = {view.N} = fft_size({n}), the smallest even 5-smooth FFT size ≥ 2n = {2 * n}: "
           f"the grid the operator uses at this length. The MLP reads {mlp_input} "
           f"(fd_input = \"{fd_input}\")."
           + ("" if causal else " The imaginary part is set to 0 at ω = 0 and π, where the "
                                "response of a real kernel is real."))

left, right = st.columns(2)
pair = go.Figure()
if causal:
    names = (f"R(ω), the MLP of {mlp_input}", "−H{R}(ω), from the Hilbert transform")
    pair_title = "The Hilbert pair: real and imaginary parts of the response"
else:
    names = (f"real part, the MLP of {mlp_input}",
             f"imaginary part, {'sin ω · ' if smooth else ''}the MLP of {mlp_input}; 0 at 0 "
             f"and π")
    pair_title = "Real and imaginary parts of the response, both from the MLP"
for part, name in zip((view.real, view.imag), names, strict=True):
    omega, values = display_line(view.omega, part)
    pair.add_scatter(x=omega, y=values, name=name)
pair.update_layout(title=pair_title, xaxis_title="ω (radians, 0 … π)", height=360,
                   margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
left.plotly_chart(pair, key="chart-pair")

lags, kernel = display_line(view.lags, view.kernel)
time_plot = go.Figure(go.Scatter(x=lags, y=kernel, mode="lines", name="k[t]"))
if causal and n > 1:
    time_plot.add_vrect(x0=-(n - 1), x1=-0.5, fillcolor="gray", opacity=0.12, line_width=0,
                        annotation_text="negative lags: exactly 0",
                        annotation_position="top left")
time_plot.update_layout(
    title=f"The operator's kernel k[t] = FD.kernel({n}), {'causal' if causal else 'two-sided'}",
    xaxis_title="lag t", height=360, margin=dict(l=10, r=10, t=40, b=10))
right.plotly_chart(time_plot, key="chart-kernel")

fit = view.fit
metrics = st.columns(4 if causal else 3)
if causal:
    metrics[0].metric(
        "max |k[t]| at t < 0", f"{view.max_negative:.1e}",
        help="The largest value of FD.kernel(n) at a negative lag: causality, measured. Its "
             "lags 0 … n−1 are computed in time and the negative lags are zeros. The forward "
             "pass under no_grad applies the spectrum instead; its inverse FFT leaves "
             f"{view.spectral_leak:.0e} × max|k| there, round-off.")
metrics[-3].metric("Effective λ (exponential fit)", _ui.fmt(fit.rate, ".3f"),
                   help=f"ρ in |k[t]| ≈ c ρ^t, fitted on lags {frequency_lab.FIT_START} … "
                        f"{view.fit_end} (t ≤ N/{frequency_lab.FIT_SHARE}) above "
                        f"{frequency_lab.FIT_FLOOR:.0e} × max|k|.")
metrics[-2].metric("Power-law exponent p", _ui.fmt(fit.exponent, ".2f"),
                   help="p in |k[t]| ≈ c t^(−p), fitted on the same lags: 2 for a kink of "
                        "the response, 1 for a jump.")
metrics[-1].metric("Better fit", fit.better_law or "—",
                   help="Which of the two laws leaves the smaller residual in log|k| "
                        "(— with fewer than three lags to fit).")

st.subheader("Decay against the theorems")
roundoff = {curve.activation: curve.roundoff_from for curve in view.decay_curves}
if roundoff[activation] is not None:
    measured = (f"Measured: |k[t]| is below {frequency_lab.FIT_FLOOR:.0e} × max|k|, "
                f"round-off, from lag {roundoff[activation]} on.")
elif fit.better_law is not None:
    measured = (f"Measured on lags {frequency_lab.FIT_START} … {view.fit_end}: "
                f"|k[t]| ≈ c t^−{fit.exponent:.2f} ({fit.better_law} fits better).")
else:
    measured = "Measured: too few lags to fit at this n."
st.info(f"**{view.theorem}** ({activation}): {view.conclusion}.  \n"
        f"**Premise:** {view.premise}.  \n"
        f"**This setting:** {view.regime}. {measured}", icon=":material/functions:")
semilog, loglog = st.columns(2)
for column, log_x, title in ((semilog, False, "semilog: straight line = exponential"),
                             (loglog, True, "log-log: straight line = power law")):
    fig = go.Figure()
    for curve in view.decay_curves:
        t, magnitude = display_line(curve.t, curve.magnitude)
        fig.add_scatter(x=t, y=magnitude, name=curve.activation, mode="lines",
                        line=dict(width=3 if curve.activation == activation else 1))
    if view.fit_end >= frequency_lab.FIT_START:
        _ui.vline(fig, view.fit_end, f"fit ends, t = {view.fit_end}", log_x=log_x,
                  line_dash="dot", line_color="gray")
    label = "|k[t]|" if causal else "max(|k[t]|, |k[−t]|)"
    fig.update_layout(title=f"{label}, {title}", height=380, xaxis_title="lag t",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(type="log", exponentformat="power")
    if log_x:
        fig.update_xaxes(type="log")
    column.plotly_chart(fig, key=f"chart-decay-{log_x}")
st.caption(f"Each curve stops where it falls below {frequency_lab.FIT_FLOOR:.0e} × its own "
           "max|k|: below that, float64 FFT round-off, not decay. Same MLP shape and seed for "
           "the three activations.")

st.markdown(
    "**What to notice.** Fed $\\omega$ (Algorithm 2, as the operator does by default), all "
    "three activations decay like a power of $t$: the response, extended to the whole "
    "circle, has kinks at $\\omega = 0$ and $\\pi$ (causal, about $1/t^2$) or jumps there "
    "(bidirectional, about $1/t$). Theorems 2 and 3 do not apply. Switch on *Feed the MLP "
    "cos ω*: SiLU and GeLU then fall to round-off (the box above says from which lag), "
    "faster than any power, while ReLU, piecewise linear, keeps a $1/t^2$ tail: square "
    "summable, as Theorem 4 says, but no more. Train with `--fd-input cosine` to get this operator."
)
