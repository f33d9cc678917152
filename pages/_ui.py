"""Streamlit concerns shared by the pages: sidebar state, errors, cache wrappers around
``tnn_core.lab``, this session's checkpoints, and figures drawn on two or more pages.

Pages import this module, never each other. Cached functions take plain values and return
numpy or the lab's frozen dataclasses, so Streamlit can hash their arguments and pickle
their results.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from streamlit.runtime.pages_manager import PagesManager

from tnn_core import analysis, bench
from tnn_core.analysis import presets as kernels
from tnn_core.checks import check_int
from tnn_core.lab import decomposition as decomposition_lab
from tnn_core.lab import frequency as frequency_lab
from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab import speed as speed_lab
from tnn_core.lab.basics import KernelView
from tnn_core.training import checkpoint


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


class _SessionToken:
    """Lives in one browser session's state; when the session ends it is collected."""


def session_token() -> object:
    """This browser session's token: a background job tied to it stops once it is collected."""
    return st.session_state.setdefault("session_token", _SessionToken())


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


def heatmap(view: KernelView, title: str, zrange: tuple[float, float] | None = None
            ) -> go.Figure:
    """T at the rows/columns ``view`` samples, row 0 on top; the title says when 1 in k shows."""
    fig = go.Figure(go.Heatmap(z=view.matrix, x=view.indices, y=view.indices, colorscale="RdBu",
                               zmid=0.0, zmin=None if zrange is None else zrange[0],
                               zmax=None if zrange is None else zrange[1],
                               hovertemplate="row %{y}, col %{x}: %{z:.4g}<extra></extra>"))
    note = f" (1 row/column in {view.step} shown)" if view.step > 1 else ""
    fig.update_layout(title=title + note, height=420, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(autorange="reversed", title="row i", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain", title="column j")
    return fig


def kernel_plot(view: KernelView, title: str = "Kernel t_k against lag k") -> go.Figure:
    fig = go.Figure(go.Scatter(x=view.lags, y=view.coeffs, name="t_k",
                               mode="lines+markers" if view.n <= 64 else "lines"))
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="lag k = i - j", yaxis_title="t_k")
    return fig


@st.cache_data(max_entries=64, show_spinner=False)
def frequency_view(activation: str, width: int, depth: int, n: int, seed: int,
                   smooth_extension: bool) -> frequency_lab.FrequencyView:
    return frequency_lab.frequency_view(activation, width, depth, n, seed, smooth_extension)


SOURCE_LABELS = {
    "spike_smooth": "Spike plus smooth",
    "exponential": "Exponential decay λ^|k|",
    "oscillating": "Oscillating",
    "tno": "Fresh TNN operator (tno)",
    "ski": "Fresh SKI-TNN operator (ski)",
    "fd": "Fresh FD-TNN operator (fd)",
    "custom": "Type your own coefficients",
    "checkpoint": "Learned kernel from a checkpoint",
}


@st.cache_data(max_entries=32, show_spinner="Decomposing…")
def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                       decay: float) -> decomposition_lab.DecompositionView:
    return decomposition_lab.decomposition_view(coeffs, band, rank, causal, method, decay)


@st.cache_data(max_entries=32, show_spinner="Error against r…")
def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> decomposition_lab.RankCurve:
    return decomposition_lab.rank_curve(coeffs, band, causal)


# -- checkpoints and training ----------------------------------------------------------------
USER_CHECKPOINTS = Path(os.environ.get("TOEPLITZ_LAB_USER_CHECKPOINTS",
                                       Path(__file__).resolve().parents[1] / "checkpoints"
                                       / "user"))
UPLOAD_LIMIT_MB = 50


def checkpoint_choices() -> dict[str, str]:
    """Checkpoints a page can open, key -> label: on disk, then this session's uploads."""
    return inspect_lab.saved_checkpoints(USER_CHECKPOINTS) | {
        key: f"{name} (uploaded)" for key, (name, _) in st.session_state.get("uploads", {}).items()}


@st.cache_resource(max_entries=16, show_spinner="Loading checkpoint…")
def _load_file(path: str, mtime: float):
    return checkpoint.load(path)


@st.cache_resource(max_entries=8, show_spinner="Loading checkpoint…")
def _load_upload(data: bytes, name: str):
    return checkpoint.load_bytes(data, name)


def load_checkpoint(key: str):
    """(model, info) for a checkpoint key; CheckpointError / ValueError say what is wrong.
    The model is shared between sessions: use it for inference only."""
    if key.startswith("upload:"):
        uploads = st.session_state.get("uploads", {})
        if key not in uploads:
            raise ValueError("that uploaded checkpoint belongs to another browser session; "
                             "upload it again on the Inspect page")
        name, data = uploads[key]
        return _load_upload(data, name)
    path = inspect_lab.checkpoint_path(key, USER_CHECKPOINTS)
    if not path.is_file():
        raise ValueError(f"checkpoint {key!r} does not exist; choose one from the list")
    return _load_file(str(path), path.stat().st_mtime)


def remember_upload(name: str, data: bytes) -> str:
    """Validate an uploaded checkpoint and keep its bytes for this browser session.

    Returns its key; a file that is not a valid checkpoint raises CheckpointError."""
    _load_upload(data, name)
    key = "upload:" + hashlib.sha256(data).hexdigest()[:12]
    st.session_state.setdefault("uploads", {})[key] = (name, data)
    return key


def checkpoint_kernel(key: str, n: int, layer: int, channel: int) -> np.ndarray:
    """One learned channel's kernel [2n-1] at any n."""
    model, _ = load_checkpoint(key)
    return _checkpoint_kernel(key, id(model), n, layer, channel, _model=model)


@st.cache_data(max_entries=64, show_spinner=False)
def _checkpoint_kernel(key: str, model_id: int, n: int, layer: int, channel: int,
                       _model) -> np.ndarray:
    ops = _model.operators()
    layer = check_int("layer", layer, 0, len(ops) - 1)
    return analysis.channel_kernel(ops[layer], n, channel).numpy()


def save_run(result, name: str) -> str:
    """Save a finished run under USER_CHECKPOINTS/NAME.safetensors; returns its key."""
    return inspect_lab.save_run(result, name, USER_CHECKPOINTS)


@st.cache_data(max_entries=16, show_spinner="Measuring every channel…")
def atlas(key: str, model_id: int, n: int, band: int, rank: int, channels: int,
          _model) -> inspect_lab.AtlasView:
    return inspect_lab.atlas_view(_model, n, band, rank, channels)


@st.cache_data(max_entries=16, show_spinner="Evaluating at 1×, 2× and 4× the length…")
def length_sweep(key: str, model_id: int, _model, _task) -> inspect_lab.LengthSweep:
    return inspect_lab.length_sweep(_model, _task)


@st.cache_data(max_entries=8, show_spinner=False)
def band_crossover(ns: tuple[int, ...], device: str) -> speed_lab.BandView:
    return speed_lab.measure_band_crossover(ns, device)


@st.cache_data(max_entries=64, show_spinner="Timing band + low rank…")
def live_speed(n: int, rank: int, band: int, device: str) -> dict:
    """The Decomposition page's speed readout, cached per setting (a measurement)."""
    return bench.live_speed(n, rank, band, device=device)
