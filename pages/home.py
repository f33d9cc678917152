"""Landing page: what the lab is and where to start."""

import streamlit as st

from pages import _ui

_ui.ensure_app_frame()

st.title("Toeplitz Lab")
st.markdown(
    """
An interactive lab for **Toeplitz neural networks**: sequence models whose token
mixing is a Toeplitz matrix, $T_{ij} = t_{i-j}$, one per channel.

- **TNN** (Qin et al., ICLR 2023) learns the coefficients $t_k$ with a small MLP of the
  lag $k$ (the *RPE*) times a decay $\\lambda^{|k|}$, and applies $T$ in
  $O(n \\log n)$ with the FFT.
- **SKI-TNN** ("SKI to go Faster") splits $T$ into a band (a short convolution) plus a
  low-rank part $W A W^\\top$ on $r$ inducing points: $O(n + r \\log r)$.
- **FD-TNN** learns the kernel's frequency response instead, and gets exact
  causality from the Hilbert transform.

Every fast operator here is checked against its dense matrix in the tests.
"""
)
st.subheader("Where to start")
st.page_link("pages/basics.py", label="Toeplitz basics: what a Toeplitz kernel is, and why "
             "the FFT product is exact and fast", icon=":material/grid_on:")
st.page_link("pages/decomposition.py", label="Decomposition: split a kernel into band + low "
             "rank, tune m, r and λ, and read the exact errors against the optimum",
             icon=":material/splitscreen:")
st.page_link("pages/frequency.py", label="Frequency and causality: FD-TNN's kernel from its "
             "frequency response, exact causality by the Hilbert transform, decay vs the theorems",
             icon=":material/waves:")
st.page_link("pages/speed.py", label="Speed: time every operator on this machine, with the "
             "spread of the timings and the flops behind them", icon=":material/speed:")
st.page_link("pages/train.py", label="Train: train a small TNN, SKI-TNN or FD-TNN model on a "
             "real task and watch it learn", icon=":material/model_training:")
st.page_link("pages/inspect.py", label="Inspect checkpoint: what a trained model learned, "
             "layer by layer, and how it does beyond its training length",
             icon=":material/search:")
st.caption("The sidebar's device and seed apply to every page, and every page's address "
           "holds its settings: copy it to share exactly what you see.")
