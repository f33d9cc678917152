"""Landing page: what the lab is and where to start."""

import streamlit as st

from pages._ui import frame
from tnn_core.lab import lesson as lesson_lab

INTRODUCTION = """
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


def main() -> None:
    """The page: what the lab is, then its three ways in, side by side."""
    frame.ensure_app_frame()
    st.title("Toeplitz Lab")
    st.markdown(INTRODUCTION)
    teach, explore, inspect = st.columns(3, border=True)
    with teach:
        teach_a_class()
    with explore:
        explore_figures()
    with inspect:
        inspect_a_model()
    st.caption("The sidebar's device and seed apply to every page, and every page's address "
               "holds its settings: copy it to share exactly what you see.")


def teach_a_class() -> None:
    """The lessons: how many, and the links that open the first one."""
    st.subheader("Teach a class")
    shipped = lesson_lab.load_lessons(lesson_lab.LESSON_DIR)[0]
    st.markdown(f"{len(shipped)} lessons, {sum(len(lesson.steps) for lesson in shipped)} "
                "steps, each a figure on one screen with a question to "
                "predict before its answer is revealed. Presenter mode hides the sidebar, "
                "enlarges the type and moves through the steps with the arrow keys; every "
                "step has a link that opens it.")
    st.page_link("pages/lessons.py", label="Start lesson 1", icon=":material/school:")
    st.page_link("pages/lessons.py", label="Start lesson 1 in presenter mode",
                 icon=":material/co_present:", query_params={"present": "true"})


def explore_figures() -> None:
    """The pages whose figures follow the pointer."""
    st.subheader("Explore")
    st.markdown("Drag n, λ, r and m and watch the figures follow the pointer, computed in "
                "your browser: the kernel and its matrix, band + W A Wᵀ against the SVD "
                "optimum, FD-TNN's kernel from its frequency response, and the timings.")
    for path, label, icon, what in (
            ("basics", "Toeplitz basics", "grid_on",
             "One number per diagonal, and the exact FFT product"),
            ("decomposition", "Decomposition", "splitscreen",
             "Band + W A Wᵀ against the SVD optimum"),
            ("frequency", "Frequency and causality", "waves",
             "FD-TNN, the Hilbert transform, decay against Theorems 2–4"),
            ("speed", "Speed", "speed", "Every operator timed on this machine")):
        st.page_link(f"pages/{path}.py", label=label, help=what, icon=f":material/{icon}:")


def inspect_a_model() -> None:
    """The pages about a trained model."""
    st.subheader("Inspect a model")
    st.markdown("Open a shipped checkpoint or upload your own (safetensors, checked before "
                "anything is loaded), see what each layer learned, how it does beyond its "
                "training length, and what compressing it costs; or train one.")
    for path, label, icon, what in (
            ("inspect", "Inspect checkpoint", "search",
             "The kernel atlas, the band ablation, beyond the training length"),
            ("compress", "Compress", "compress", "Every layer as band + low rank, measured"),
            ("train", "Train", "model_training", "A small TNN, SKI-TNN or FD-TNN on a real "
                                                 "task")):
        st.page_link(f"pages/{path}.py", label=label, help=what, icon=f":material/{icon}:")


main()
