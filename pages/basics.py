"""Page "Toeplitz basics": a kernel and its matrix in one figure drawn in the browser, then
the exact O(n log n) product and why it works (the circulant embedding, drawn here)."""

import hashlib
import math

import numpy as np
import streamlit as st

from pages._ui import circulant, controls, frame, timing
from pages._ui.controls import fields
from pages._ui.memo import memo
from pages.figures import toeplitz
from tnn_core.lab import basics as lab

FIGURE = "basics-figure"  # the figure's state: its values, this page's alone (never shared)
TIMED = ("FFT product", "Dense matmul", "Dense time ÷ FFT time")


@memo(max_entries=16)
def exact_difference(coeffs: np.ndarray, seed: int, device: str) -> float:
    return lab.fft_difference(coeffs, seed, device)


def main() -> None:
    """The page: the kernel and its matrix, the exact FFT product and its timings, the
    circulant embedding."""
    frame.ensure_app_frame()
    st.title("Toeplitz basics")
    say, choose = st.columns([3, 1], vertical_alignment="bottom")
    preset = controls.control(choose.selectbox, fields.PRESET, options=list(toeplitz.LABELS),
                              format_func=toeplitz.LABELS.get)
    say.markdown(
        "**Each diagonal of T is one colour**, because $T_{ij} = t_{i-j}$: drag λ and watch the "
        "colour fade away from the main diagonal exactly as $t_k$ falls off on the right; switch "
        "on *causal* and the upper triangle goes white. Click a cell of T to follow its diagonal "
        "to its lag $k$.")

    drawn = toeplitz.mount(preset, FIGURE,
                           locked=tuple(key for key in toeplitz.STATE if controls.locked(key)))
    kernel = drawn.kernel
    if kernel is None:
        frame.show_error(drawn.problem)
        st.stop()
    if preset == "ski":
        st.caption("For SKI this is the Toeplitz kernel band + k(t) that the operator's "
                   "band + W A Wᵀ approximates.")
    coeffs = kernel.coeffs
    limit = float(np.abs(coeffs).max()) or 1.0
    fft_product(coeffs, limit)
    circulant_embedding(coeffs, limit)
    timing.page_activity()  # the page script ends: the quiet that timings wait for starts now


def fft_product(coeffs: np.ndarray, limit: float) -> None:
    """The FFT product against the dense one on a random input, and both timed in the
    background; ``coeffs`` (2n-1,) are t_0 … t_{n-1}, t_{-(n-1)} … t_{-1}."""
    n_drawn = (len(coeffs) + 1) // 2
    st.subheader("The FFT product is exact; it pays off at large n")
    difference = exact_difference(coeffs, frame.seed(), frame.device())
    finite = math.isfinite(difference)
    if not finite:
        st.error(f"T x overflows float64 with these coefficients (|t_k| up to {limit:.3g}; "
                 "float64 ends near 1.8e308): both products hold inf or NaN, so their difference "
                 "means nothing. Scale the coefficients down.", icon=":material/error:")
    left, right = st.columns([1, 3])
    left.metric("max |FFT − dense|", f"{difference:.1e}" if finite else "—",
                help="Largest difference between the two products on one random input "
                     "(float64): round-off, as the FFT product is exact.")
    seed, device = frame.seed(), frame.device()
    setting = (hashlib.sha256(coeffs.tobytes()).hexdigest(), seed, device)
    with right:
        timing.when_measured(timing.measurement("fft_check", setting,
                                                lambda: lab.fft_check(coeffs, seed, device)),
                             timings, lambda: timings_waiting(n_drawn))
    if n_drawn == 1:
        st.info("At n = 1, T is the single number t₀ and both products are one multiplication "
                "per input: the timings are per-call overhead, nothing else.")


def circulant_embedding(coeffs: np.ndarray, limit: float) -> None:
    """Why the product is exact: T as the top-left block of a circulant, drawn."""
    st.markdown("**Why it works: circulant embedding.** Put the $2n-1$ coefficients in the "
                "first column of a circulant matrix of size $N \\ge 2n$:")
    st.latex(r"c = (t_0, t_1, \dots, t_{n-1}, \underbrace{0, \dots, 0}_{N - 2n + 1}, "
             r"t_{-(n-1)}, \dots, t_{-1}), \qquad C = \mathrm{circ}(c) \in \mathbb{R}^{N\times N}")
    circulant.show(coeffs, limit)
    st.markdown("$T$ is the top-left $n \\times n$ block of $C$, and the DFT diagonalises every "
                "circulant, so")
    st.latex(r"T x = \Big[\, \mathcal{F}^{-1}\big(\mathcal{F}(c) \odot \mathcal{F}"
             r"([x;\,0])\big) \Big]_{0:n} \quad\text{in } O(N \log N) = O(n \log n)")
    st.markdown("instead of $O(n^2)$ for the dense product. Nothing is approximated: the "
                "difference above is floating-point round-off. Try a large $n$ to see the gap in "
                "flops and time grow, and switch on *causal* to see the upper triangle vanish.")


def timings_waiting(n_drawn: int) -> None:
    """The timings' place while they are taken: three empty metrics and what is coming."""
    for column, label in zip(st.columns(3), TIMED, strict=True):
        column.metric(label, "…", help="Timed in the background once the page is idle.")
    st.caption(f"Timing both products at n = {n_drawn} once the page is idle, so the "
               "measurement does not compete with drawing it.")


def timings(found: timing.Measurement) -> None:
    """The FFT and dense products' times, their spread and flops, once measured."""
    if found.error is not None:
        frame.show_error(found.error)
        return
    check = found.result
    m2, m3, m4 = st.columns(3)
    rounds = (f"Median of {check.repeats} interleaved rounds after {check.warmup} warm-up "
              f"runs each, batch of {check.batch}, taken in the background while the page "
              f"was idle")
    m2.metric(TIMED[0], lab.format_ms(check.fft_ms),
              help=f"{rounds}; the kernel's FFT included.")
    m2.caption(f"IQR {lab.format_ms(check.fft_iqr[1] - check.fft_iqr[0])} · "
               f"{lab.format_flops(check.fft_flops)}")
    m3.metric(TIMED[1], lab.format_ms(check.dense_ms),
              help=f"{rounds}; building the n × n matrix included.")
    m3.caption(f"IQR {lab.format_ms(check.dense_iqr[1] - check.dense_iqr[0])} · "
               f"{lab.format_flops(check.dense_flops)}")
    m4.metric(TIMED[2], lab.format_ratio(check.speedup),
              help="Above 1: the FFT product was faster on this machine just now.")
    m4.caption(f"flops: dense ÷ FFT = {lab.format_ratio(check.flop_ratio)}")
    busy = (" These times were taken while other work ran on the server: read them with "
            "care." if found.disturbed else "")
    st.markdown(f"{check.flop_sentence} {check.time_sentence}{busy}")


main()
