"""Shared UI helpers for the pages: cached calls into tnn_core and figure builders.

Pages import this module, never each other. Cached functions take plain values
and return numpy, so Streamlit can hash their arguments and pickle results.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from streamlit.runtime.pages_manager import PagesManager

from tnn_core import analysis, bench
from tnn_core.analysis import atlas as atlas_
from tnn_core.analysis import fd_kernels
from tnn_core.analysis import presets as kernels
from tnn_core.bench import ski_study, timing
from tnn_core.lab import decomposition as views
from tnn_core.training import checkpoint, evaluate

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
    note = f" (1 row/column in {step} shown)" if step > 1 else ""
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


@dataclass(frozen=True)
class KernelSource:
    """What the Source selector chose; ``kernel(n, decay, causal)`` gives its coefficients."""

    name: str
    channel: int = 0
    text: str = ""  # custom coefficients t_{-(n-1)} .. t_{n-1}
    checkpoint: str = ""  # checkpoint key (see checkpoint_choices)
    layer: int = 0

    @property
    def is_operator(self) -> bool:
        return self.name in ("tno", "ski", "fd")

    def kernel(self, n: int, decay: float, causal: bool) -> tuple[np.ndarray, str]:
        """(coeffs [2n-1], a one-line description). Custom coefficients fix their own n."""
        if self.name == "custom":
            coeffs = custom_kernel(self.text, causal)
            return coeffs, f"your {len(coeffs)} coefficients (n = {(len(coeffs) + 1) // 2})"
        if self.name == "checkpoint":
            coeffs = checkpoint_kernel(self.checkpoint, n, self.layer, self.channel)
            return coeffs, (f"checkpoint {self.checkpoint}, layer {self.layer}, channel "
                            f"{self.channel} (λ does not apply: the kernel is learned)")
        coeffs = preset_kernel(self.name, n, decay, causal, seed(), self.channel)
        label = SOURCE_LABELS[self.name]
        return coeffs, label + (f", channel {self.channel}" if self.is_operator else "")


def kernel_source_picker() -> KernelSource:
    """The Source selector: a synthetic preset, or one channel of a fresh operator.

    New kinds of source (learned kernels from checkpoints) plug in here as
    further options with their own KernelSource.
    """
    left, right = st.columns([3, 1])
    name = left.selectbox("Source", list(SOURCE_LABELS), format_func=SOURCE_LABELS.get,
                          key="source", bind="query-params",
                          help="Which Toeplitz kernel to decompose: synthetic shapes, or one "
                               "channel of a freshly initialised operator (seeded from the "
                               "sidebar).")
    if name == "checkpoint":
        return _checkpoint_source_picker(right)
    channel = right.number_input("Channel", 0, kernels.OPERATOR_CHANNELS - 1, 0,
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


def _checkpoint_source_picker(column) -> KernelSource:
    choices = checkpoint_choices()
    if not choices:
        raise ValueError("there are no checkpoints yet: train one on the Train page")
    key = st.selectbox("Checkpoint", list(choices), format_func=choices.get, key="checkpoint",
                       bind="query-params", help="Shipped examples, your saved runs, uploads.")
    model, _ = load_checkpoint(key)
    layers, channels = len(model.operators()), model.operators()[0].dim
    a, b = column.columns(2)
    layer = a.number_input("Layer", 0, layers - 1, 0, key="layer", bind="query-params",
                           help=f"Which of the model's {layers} layers.")
    channel = b.number_input("Channel", 0, channels - 1, 0, key="channel", bind="query-params",
                             help=f"Which of the layer's {channels} channels.")
    return KernelSource("checkpoint", int(channel), checkpoint=key, layer=int(layer))


@st.cache_data(max_entries=32, show_spinner="Decomposing…")
def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool,
                       method: str) -> dict:
    return views.decomposition_view(coeffs, band, rank, causal, method)


@st.cache_data(max_entries=32, show_spinner="Error against r…")
def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> dict:
    return views.rank_curve(coeffs, band, causal)


# -- checkpoints and training ----------------------------------------------------------------
USER_CHECKPOINTS = Path(os.environ.get("TOEPLITZ_LAB_USER_CHECKPOINTS",
                                       Path(__file__).resolve().parents[1] / "checkpoints"
                                       / "user"))
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
UPLOAD_LIMIT_MB = 50


def checkpoint_choices() -> dict[str, str]:
    """Checkpoints a page can open: key -> label. Keys: "NAME" (shipped), "user/NAME"
    (saved from the Train page), "upload:SHA" (uploaded in this browser session)."""
    out = {info_path.stem: f"{info_path.stem} (shipped)"
           for info_path in sorted(checkpoint.SHIPPED_DIR.glob("*.safetensors"))}
    if USER_CHECKPOINTS.is_dir():
        out |= {f"user/{p.stem}": f"{p.stem} (saved by you)"
                for p in sorted(USER_CHECKPOINTS.glob("*.safetensors"))}
    out |= {key: f"{name} (uploaded)" for key, (name, _) in
            st.session_state.get("uploads", {}).items()}
    return out


def _checkpoint_path(key: str) -> Path:
    if key.startswith("user/"):
        name = key.removeprefix("user/")
        folder = USER_CHECKPOINTS
    else:
        name, folder = key, checkpoint.SHIPPED_DIR
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"checkpoint must be a plain name (letters, digits, _ and -); "
                         f"got {key!r}")
    return folder / f"{name}.safetensors"


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
    path = _checkpoint_path(key)
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
    if not 0 <= layer < len(ops):
        raise ValueError(f"layer must be in [0, {len(ops) - 1}]; got {layer}")
    return analysis.channel_kernel(ops[layer], n, channel).numpy()


def save_run(result, name: str) -> str:
    """Save a finished run under checkpoints/user/NAME.safetensors; returns its key."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError("name must be 1 to 64 letters, digits, _ or -, starting with a letter "
                         f"or digit (no paths); got {name!r}")
    USER_CHECKPOINTS.mkdir(parents=True, exist_ok=True)
    checkpoint.save(USER_CHECKPOINTS / f"{name}.safetensors", result.model, result.task.info(),
                    result.history, result.model_config)
    return f"user/{name}"


@st.cache_data(max_entries=16, show_spinner="Measuring every channel…")
def atlas(key: str, model_id: int, n: int, band: int, rank: int, channels: int,
          _model) -> list[dict]:
    kernels_ = evaluate.layer_kernels(_model, n).double()  # (L, D, 2n-1)
    causal = _model.config.operator.causal
    return atlas_.kernel_atlas(kernels_, band, rank, causal, channels)


@st.cache_data(max_entries=16, show_spinner="Evaluating at 1×, 2× and 4× the length…")
def length_sweep(key: str, model_id: int, _model, _task) -> list[dict]:
    return evaluate.length_sweep(_model, _task, (1, 2, 4), batches=4, batch_size=16)


def layer_kernels(model, n: int) -> np.ndarray:
    return evaluate.layer_kernels(model, n).numpy()  # (L, D, 2n-1)


PARETO_SETTINGS = [(r, m) for r in (8, 16, 32, 64, 128) for m in (1, 5, 9, 17)]


def ski_pareto(n: int, device: str) -> list[dict]:
    """SKI's (r, m) settings on the spike-plus-smooth kernel: error against speed-up."""
    coeffs = kernels.synthetic_kernel("spike_smooth", n, 0.99)
    return bench.ski_pareto(coeffs, PARETO_SETTINGS, device=device)


@st.cache_data(max_entries=8, show_spinner=False)
def band_crossover(ns: tuple[int, ...], device: str) -> tuple[list[dict], list[dict]]:
    """SKI (m = 4…64) against TNO, forward+backward, B = 8, D = 64, r = 64, per n."""
    return ski_study.band_crossover(ns=ns, repeats=5, device=device)


def band_crossings_table(records: list[dict], crossings: list[dict]) -> list[dict]:
    """One plain row per n for the page: where SKI stops (or starts) winning."""
    rows = []
    for c in crossings:
        speedups = [r["speedup"] for r in records if r["n"] == c["n"]]
        if c["band"] is None:
            winner = "SKI" if min(speedups) > 1 else "TNO"
            verdict = f"{winner} faster at every m measured ({min(speedups):.2f}–" \
                      f"{max(speedups):.2f}×)"
        elif c["faster_below"]:
            verdict = f"SKI faster below m ≈ {c['band']:.0f}"
        else:
            verdict = f"SKI faster above m ≈ {c['band']:.0f}"
        rows.append({"n": c["n"], "crossing": verdict})
    return rows


@st.cache_data(max_entries=64, show_spinner="Timing band + low rank…")
def live_speed(n: int, rank: int, band: int, device: str) -> dict:
    """The Decomposition page's speed readout, cached per setting (a measurement)."""
    return bench.live_speed(n, rank, band, device=device)
