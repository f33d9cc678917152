"""Page "Frequency and causality": FD-TNN's kernel built in the frequency domain, drawn in the
browser as its controls move (pages/figures/fd_kernel.js), then its decay against Theorems 2-4
(pages/figures/profiles.js) once a setting settles."""

import base64

import numpy as np
import streamlit as st

from pages import _ui, figures
from tnn_core.analysis.fd_response import THEOREMS
from tnn_core.core.toeplitz import fft_size
from tnn_core.lab import frequency as lab

_ui.ensure_app_frame()

KERNEL_FIGURE = "frequency-kernel"  # the kernel figure's state: this page's alone
DECAY_FIGURE = "frequency-decay"
ACTIVATIONS = tuple(THEOREMS)  # gelu, silu, relu: the first is the default
WIDTH = figures.Control("width", "MLP width", lab.WIDTHS[0], lab.WIDTHS[-1], 1, 32,
                        "Hidden units per layer of the RPE MLP (OperatorConfig.rpe_dim), "
                        f"one of {', '.join(map(str, lab.WIDTHS))}: the weights of each are "
                        "sent once, so a drag redraws in the browser.")


@st.cache_data(max_entries=16, show_spinner=False)
def mlp_weights(depth: int, seed: int) -> dict[str, str]:
    """Every offered width's RPE weights as the kernel figure reads them: base64 float32
    (each weight is a float32, so nothing is lost)."""
    packed = {}
    for width in lab.WIDTHS:
        parameters = lab.rpe_weights(width, depth, seed).parameters
        single = parameters.astype("<f4")
        if not np.array_equal(single.astype(np.float64), parameters):
            raise ValueError(f"the width-{width} weights are not float32 values")
        packed[str(width)] = base64.b64encode(single.tobytes()).decode("ascii")
    return packed


@st.cache_data(max_entries=64, show_spinner=False)
def settled_view(activation: str, width: int, depth: int, n: int, seed: int, fd_input: str,
                 causal: bool) -> lab.FrequencyView:
    return lab.frequency_view(activation, width, depth, n, seed, fd_input, causal)


def float64_text(values: np.ndarray) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


def refuse_unoffered_width() -> None:
    """A link's width in range but not offered (the weights are sent for WIDTHS only) is
    named in the notice and left out, so the figure opens at the default width."""
    raw = st.query_params.get_all(WIDTH.name)
    try:
        width = float(raw[-1]) if raw else None
    except ValueError:
        return  # figures.show names what is wrong with it
    if width is not None and WIDTH.low <= width <= WIDTH.high and width not in lab.WIDTHS:
        _ui.note_link_value(WIDTH.name, f"= {raw[-1]} is not one of the widths offered "
                            f"({', '.join(map(str, lab.WIDTHS))})", WIDTH.default,
                            str(WIDTH.default))
        del st.query_params[WIDTH.name]


def is_bool(value) -> bool:
    return isinstance(value, bool)


st.title("Frequency and causality")
st.markdown(
    "FD-TNN (*SKI to go Faster*) never writes its kernel down in time: an MLP of the frequency "
    "makes the response (left), and the inverse FFT makes the kernel (right). **Look at the "
    "kernel left of t = 0, and at how fast it dies out to the right,** as you switch the "
    "MLP's activation, its input and *Causal*.")

figure_place = st.container()
left, right = st.columns(2)
n = _ui.from_link(left.slider, "Sequence length n", 1, 4096, 512, key="n",
                  disabled=_ui.locked("n"), bind="query-params",
                  help="The operator builds the response on N = fft_size(n) frequencies, the "
                       "smallest even 5-smooth FFT size ≥ 2n, and applies lags −(n−1) … n−1. "
                       "The figure redraws on the new grid once you let go.")
depth = _ui.from_link(right.slider, "MLP depth", 0, 4, 1, key="depth",
                      disabled=_ui.locked("depth"), bind="query-params",
                      help="Hidden layers between the input and output layers "
                           "(OperatorConfig.rpe_layers); the server sends the weights of this "
                           "depth for every width.")
activation = figures.value(KERNEL_FIGURE, "activation", "selectbox",
                           {"options": ACTIVATIONS, "format_func": str, "index": 0},
                           ACTIVATIONS[0], lambda v: v in ACTIVATIONS, str)
smooth = figures.value(KERNEL_FIGURE, "smooth", "toggle", {}, False, is_bool,
                       lambda text: text.lower() == "true")
causal = figures.value(KERNEL_FIGURE, "causal", "toggle", {}, True, is_bool,
                       lambda text: text.lower() == "true")
refuse_unoffered_width()
seed = _ui.seed()
try:
    weights = mlp_weights(depth, seed)
except ValueError as err:
    _ui.show_error(err)
    st.stop()
with figure_place:
    values = figures.show("fd_kernel", {
        "n": n, "N": fft_size(n), "depth": depth, "widths": list(lab.WIDTHS),
        "weights": weights, "activations": list(ACTIVATIONS), "activation": activation,
        "smooth": smooth, "causal": causal,
        "locked": [key for key in ("activation", "width", "smooth", "causal")
                   if _ui.locked(key)],
        "drawn": [["n", n], ["depth", depth], ["seed", seed]]}, (WIDTH,), key=KERNEL_FIGURE)
width = min(lab.WIDTHS, key=lambda w: abs(w - values[WIDTH.name]))  # as the figure draws it
figures.keep_in_link({"width": width, "activation": activation, "smooth": smooth,
                      "causal": causal})
fd_input = "cosine" if smooth else "omega"

try:
    view = settled_view(activation, width, depth, n, seed, fd_input, causal)
except ValueError as err:
    _ui.show_error(err)
    st.stop()

st.subheader("Decay against the theorems")
st.info(f"**{view.theorem}** ({activation}): {view.conclusion}.  \n"
        f"**Premise:** {view.premise}.  \n"
        f"**This setting:** {view.regime}.", icon=":material/functions:")
figures.show("profiles", {
    "kernels": [{"label": name, "coeffs": float64_text(kernel)} for name, kernel in view.kernels],
    "causal": causal,
    "fit": {"start": lab.FIT_START, "end": view.fit_end, "floor": lab.FIT_FLOOR},
    "floor": lab.FIT_FLOOR, "envelope": None, "response": False, "follows": "fd_kernel",
    "drawn": [["activation", activation], ["width", width], ["smooth", str(smooth).lower()],
              ["causal", str(causal).lower()], ["n", n], ["depth", depth], ["seed", seed]]},
    (), key=DECAY_FIGURE)
st.caption(f"The three activations share one MLP's weights (width {width}, depth {depth}, "
           f"seed {seed}); the fit of {activation} uses lags {lab.FIT_START} … {view.fit_end} "
           f"(t ≤ N/{lab.FIT_SHARE}: beyond, the size-N grid bends the tail).")

st.markdown(
    "**What to notice.** Fed $\\omega$ (Algorithm 2, as the operator does by default), all "
    "three activations decay like a power of $t$: the response, extended to the whole "
    "circle, has kinks at $\\omega = 0$ and $\\pi$ (causal, about $1/t^2$) or jumps there "
    "(bidirectional, about $1/t$). Theorems 2 and 3 do not apply. Switch on *Feed the MLP "
    "cos ω*: SiLU and GeLU then fall to round-off (the numbers above say from which lag), "
    "faster than any power (Theorem 3's conclusion; the RMS norms between the MLP's layers "
    "keep GeLU's response from being entire, so Theorem 2's every-exponential rate is not "
    "promised, and GeLU need not win), while ReLU, piecewise smooth, keeps a $1/t^2$ tail: "
    "square summable, as Theorem 4 says, but no more. Train with `--fd-input cosine` to get "
    "this operator."
)

with st.expander("How the response is built"):
    x = r"\cos\omega_j" if smooth else r"\omega_j"
    grid = rf"\qquad \omega_j = \tfrac{{2\pi j}}{{N}},\ j = 0,\dots,N/2,\ N = {view.N}"
    if causal:
        st.latex(rf"\hat k(\omega_j) = R(\omega_j) - i\,\mathcal{{H}}\{{R\}}(\omega_j), \quad "
                 rf"R(\omega_j) = \mathrm{{MLP}}({x}), " + grid)
    else:
        weight = r"\sin\omega_j\," if smooth else ""
        st.latex(rf"\hat k(\omega_j) = \mathrm{{MLP}}_{{\mathrm{{re}}}}({x}) + i\,{weight}"
                 rf"\mathrm{{MLP}}_{{\mathrm{{im}}}}({x}), " + grid)
    st.caption(
        f"N = {view.N} = fft_size({n}), the smallest even 5-smooth FFT size ≥ 2n = {2 * n}: "
        "the grid the operator uses at this length. Causal (Algorithm 2): irfft of R is an "
        "even sequence h[t]; keeping t = 0 and N/2 at weight 1, doubling t = 1 … N/2 − 1 and "
        "zeroing the negative times makes a causal kernel whose spectrum has real part R and "
        "imaginary part −H{R}. Bidirectional (§3.3.2): the MLP gives both parts, the "
        "imaginary one set to 0 at ω = 0 and π, where the response of a real kernel is real. "
        "The figure computes all of it in the browser, in float64, from the MLP's weights; "
        "tests hold it to the library's own FD operator within 1e-9.")
