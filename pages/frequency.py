"""Page "Frequency and causality": FD-TNN's kernel built in the frequency domain, drawn in the
browser as its controls move (pages/figures/fd_kernel.js), then its decay against Theorems 2-4
(pages/figures/profiles.js) once a setting settles."""

import streamlit as st

from pages._ui import controls, frame
from pages._ui.controls import fields
from pages.figures import fd_kernel
from tnn_core.lab import frequency as lab

KERNEL_FIGURE = "frequency-kernel"  # the kernel figure's state: this page's alone
DECAY_FIGURE = "frequency-decay"


def main() -> None:
    """The page: the kernel figure and its controls, its decay against the theorems, how
    the response is built."""
    frame.ensure_app_frame()
    st.title("Frequency and causality")
    st.markdown(
        "FD-TNN (*SKI to go Faster*) never writes its kernel down in time: an MLP of the "
        "frequency makes the response (left), and the inverse FFT makes the kernel (right). "
        "**Look at the kernel left of t = 0, and at how fast it dies out to the right,** as you "
        "switch the MLP's activation, its input and *Causal*.")

    figure_place = st.container()
    left, right = st.columns(2)
    n = controls.control(left.slider, fields.FREQUENCY_LENGTH)
    depth = controls.control(right.slider, fields.DEPTH)
    try:
        with figure_place:
            setting = fd_kernel.mount(n, depth, KERNEL_FIGURE, locked=tuple(
                key for key in fd_kernel.STATE if controls.locked(key)))
        view = fd_kernel.settled_view(setting.activation, setting.width, depth, n, setting.seed,
                                      setting.fd_input, setting.causal)
    except ValueError as err:
        frame.show_error(err)
        st.stop()
    decay(setting, view, depth)
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
    how_the_response_is_built(view, n, setting.smooth, setting.causal)


def decay(setting: fd_kernel.Setting, view: lab.FrequencyView, depth: int) -> None:
    """The settled kernel's decay against Theorems 2-4, and the fit it was read from."""
    activation, width, seed = setting.activation, setting.width, setting.seed
    st.subheader("Decay against the theorems")
    st.info(f"**{view.theorem}** ({activation}): {view.conclusion}.  \n"
            f"**Premise:** {view.premise}.  \n"
            f"**This setting:** {view.regime}.", icon=":material/functions:")
    fd_kernel.show_decay(setting, view, DECAY_FIGURE)
    st.caption(f"The three activations share one MLP's weights (width {width}, depth {depth}, "
               f"seed {seed}); the fit of {activation} uses lags {lab.FIT_START} … "
               f"{view.fit_end} "
               f"(t ≤ N/{lab.FIT_SHARE}: beyond, the size-N grid bends the tail).")


def how_the_response_is_built(view: lab.FrequencyView, n: int, smooth: bool, causal: bool) -> None:
    """The response's formula for this setting (causal or not, fed ω or cos ω) and its
    grid."""
    with st.expander("How the response is built"):
        x = r"\cos\omega_j" if smooth else r"\omega_j"
        grid = rf"\qquad \omega_j = \tfrac{{2\pi j}}{{N}},\ j = 0,\dots,N/2,\ N = {view.N}"
        if causal:
            st.latex(rf"\hat k(\omega_j) = R(\omega_j) - i\,\mathcal{{H}}\{{R\}}(\omega_j), "
                     rf"\quad R(\omega_j) = \mathrm{{MLP}}({x}), " + grid)
        else:
            weight = r"\sin\omega_j\," if smooth else ""
            st.latex(rf"\hat k(\omega_j) = \mathrm{{MLP}}_{{\mathrm{{re}}}}({x}) + i\,{weight}"
                     rf"\mathrm{{MLP}}_{{\mathrm{{im}}}}({x}), " + grid)
        st.caption(
            f"N = {view.N} = fft_size({n}), the smallest even 5-smooth FFT size ≥ 2n = "
            f"{2 * n}: the grid the operator uses at this length. Causal (Algorithm 2): irfft "
            "of R is an even sequence h[t]; keeping t = 0 and N/2 at weight 1, doubling t = 1 "
            "… N/2 − 1 and zeroing the negative times makes a causal kernel whose spectrum has "
            "real part R and imaginary part −H{R}. Bidirectional (§3.3.2): the MLP gives both "
            "parts, the imaginary one set to 0 at ω = 0 and π, where the response of a real "
            "kernel is real. The figure computes all of it in the browser, in float64, from "
            "the MLP's weights; tests hold it to the library's own FD operator within 1e-9.")


main()
