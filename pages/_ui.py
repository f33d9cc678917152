"""Shared UI helpers for the pages: cached calls into tnn_core and figure builders.

Pages import this module, never each other. Cached functions take plain values
and return numpy, so Streamlit can hash their arguments and pickle results.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from streamlit.runtime.pages_manager import PagesManager

from tnn_core import fd_kernels, kernels, timing

HEATMAP_MAX = 256  # largest heatmap drawn cell by cell; bigger matrices are subsampled


def ensure_app_frame() -> None:
    """Call first on every page: make sure the page runs inside app.py's frame.

    Streamlit treats a `pages/` folder beside the main script as "MPA v1" until
    app.py has called st.navigation once. So the first visit of a fresh server to
    a deep link (a teacher's shared /basics?n=200) would run the page alone,
    without app.py's sidebar and page list. Switch to st.navigation and rerun
    through app.py; the URL, and with it the page and its query params, is kept.
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def device() -> str:
    """The device chosen in the sidebar, with 'auto' resolved."""
    choice = st.session_state.get("device", "auto")
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def seed() -> int:
    return int(st.session_state.get("seed", 0))


def fmt(value: float, spec: str) -> str:
    """Format a number for st.metric; undefined values (NaN) show as a dash."""
    return format(value, spec) if np.isfinite(value) else "—"


def show_error(err: Exception) -> None:
    """A sentence a person can act on, never a traceback."""
    st.error(f"That setting cannot be used: {err}", icon=":material/error:")


@st.cache_data(max_entries=64, show_spinner=False)
def preset_kernel(name: str, n: int, decay: float, causal: bool, seed: int,
                  channel: int) -> np.ndarray:
    return kernels.preset_kernel(name, n, decay, causal, seed, channel).numpy()


@st.cache_data(max_entries=64, show_spinner=False)
def custom_kernel(text: str, causal: bool) -> np.ndarray:
    return kernels.parse_coefficients(text, causal).numpy()


def fft_vs_dense(coeffs: np.ndarray, seed: int, device: str) -> dict:
    """Live timing (not cached: it is a measurement of this machine, now)."""
    return timing.fft_vs_dense(torch.from_numpy(coeffs), seed=seed, device=device)


def dense_matrix(coeffs: np.ndarray) -> np.ndarray:
    n = (coeffs.shape[-1] + 1) // 2
    i = np.arange(n)
    return coeffs[(n - 1) + i[:, None] - i[None, :]]


def heatmap(matrix: np.ndarray, title: str, colorscale: str = "RdBu", zmid: float | None = 0.0,
            zrange: tuple[float, float] | None = None) -> go.Figure:
    """Heatmap with row 0 on top; matrices above HEATMAP_MAX are subsampled for drawing."""
    n = matrix.shape[0]
    step = max(1, int(np.ceil(n / HEATMAP_MAX)))
    idx = np.arange(0, n, step)
    shown = matrix[np.ix_(idx, idx)]
    fig = go.Figure(go.Heatmap(z=shown, x=idx, y=idx, colorscale=colorscale, zmid=zmid,
                               zmin=None if zrange is None else zrange[0],
                               zmax=None if zrange is None else zrange[1],
                               hovertemplate="row %{y}, col %{x}: %{z:.4g}<extra></extra>"))
    note = f" (every {step}th row/column shown)" if step > 1 else ""
    fig.update_layout(title=title + note, height=420, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(autorange="reversed", title="row i", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain")
    fig.update_xaxes(title="column j")
    return fig


def kernel_plot(coeffs: np.ndarray, title: str = "Kernel t_k against lag k") -> go.Figure:
    n = (coeffs.shape[-1] + 1) // 2
    k = np.arange(-(n - 1), n)
    fig = go.Figure(go.Scatter(x=k, y=coeffs, mode="lines+markers" if n <= 64 else "lines",
                               name="t_k"))
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="lag k = i - j", yaxis_title="t_k")
    return fig


@st.cache_data(max_entries=64, show_spinner=False)
def fd_response(activation: str, width: int, depth: int, n: int, seed: int,
                smooth_extension: bool) -> dict:
    return fd_kernels.fd_response(activation, width, depth, n, seed, smooth_extension)


def decay_fit(kernel: np.ndarray) -> dict:
    return fd_kernels.decay_fit(kernel)
