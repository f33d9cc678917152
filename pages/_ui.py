"""Streamlit concerns shared by the pages: sidebar state, errors, cache wrappers around
``tnn_core.lab``, this session's checkpoints, and figures drawn on two or more pages.

Pages import this module, never each other. Cached functions take plain values and return
numpy or the lab's frozen dataclasses, so Streamlit can hash their arguments and pickle
their results.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import streamlit as st
import torch
from streamlit.errors import StreamlitInvalidLayoutContextError
from streamlit.runtime.pages_manager import PagesManager

from pages import _warmup
from tnn_core import analysis, bench
from tnn_core.analysis import presets as kernels
from tnn_core.analysis.dense import display_line
from tnn_core.checks import check_int
from tnn_core.lab import decomposition as decomposition_lab
from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab import uploads as uploads_lab
from tnn_core.lab.basics import KernelView
from tnn_core.lab.linked_cell import SELECTION, cell_from_selection, cell_picker, linked_cell
from tnn_core.lab.quiet_timing import Measurement, QuietTimer
from tnn_core.training import checkpoint
from tnn_core.training.tasks import Task, task_from_info


def ensure_app_frame() -> None:
    """Call first on every page: make sure the page runs inside app.py's frame.

    Streamlit treats a `pages/` folder beside the main script as "MPA v1" until
    app.py has called st.navigation once. So the first visit of a fresh server to
    a deep link (a teacher's shared /basics?n=200) would run the page alone,
    without app.py's sidebar and page list. Switch to st.navigation and rerun
    through app.py; the URL, and with it the page and its query params, is kept.

    It also tells the background timer that a page script runs (``page_activity``).
    """
    page_activity()
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def locked(key: str) -> bool:
    """Whether the widget ``key`` is locked: a lesson's view lists the controls it fixes in
    the URL's ``lock`` (comma separated); they are shown, disabled, at the view's values."""
    return key in st.query_params.get("lock", "").split(",")


def open_page(page: str, values: dict) -> None:
    """Switch to ``page`` with its widgets set to ``values`` (widget key -> value).

    Widgets bound to the URL (``bind="query-params"``) cannot be set through
    ``st.switch_page(query_params=...)``, so the values travel in session state and the
    target page applies them with ``receive_values`` before it draws its widgets. An empty
    ``query_params`` leaves the old page's URL behind without Streamlit's check for bound
    widgets, which refuses to clear the URL while one of them is off its default.
    """
    st.session_state["_handoff"] = (page, dict(values))
    st.switch_page(page, query_params={})


def receive_values(page: str) -> None:
    """Call on ``page`` before its widgets: apply the values ``open_page`` sent to it, once."""
    handoff = st.session_state.get("_handoff")
    if handoff is not None and handoff[0] == page:
        del st.session_state["_handoff"]
        for key, value in handoff[1].items():
            st.session_state[key] = value


# -- values from the link ---------------------------------------------------------------------
# A widget bound to the URL (bind="query-params") takes its value from the link on its first
# run. Streamlit 1.67 drops a value it cannot use without a word (a number out of [min, max]
# or not finite, an option not offered, a toggle other than true/false, an empty value, a
# slider's key given twice), cuts a text to max_chars, and crashes on an infinite value for a
# whole-number input. ``from_link`` checks the value first and says so, one line per value in
# one notice at the top of the page, kept there until one of the page's linked controls moves.
LINK_SHOWN_CHARS = 40  # a longer value is shown as its start and its length


@dataclasses.dataclass
class _LinkNotice:
    page: str
    lines: dict[str, list]  # key -> [what was wrong with the link's value, the value used]
    values: dict[str, object]  # the page's linked controls as the notice stood


@dataclasses.dataclass
class _LinkRun:  # one script run, from app.py's ``link_notice`` on
    page: str
    place: object  # st.empty() at the top of the page
    seen: dict[str, object]  # the linked controls drawn so far in this run


def link_notice(page: str) -> None:
    """Call in app.py before any widget: the place at the top of ``page`` where
    ``from_link`` lists the link's values it could not use (those still standing)."""
    st.session_state["_link_run"] = _LinkRun(page, st.empty(), {})
    notice = st.session_state.get("_link_notice")
    if notice is not None and notice.page != page:
        del st.session_state["_link_notice"]
    _draw_link_notice()


def from_link(widget, *args, **kwargs):
    """``widget(*args, **kwargs)``: a Streamlit slider, number_input, selectbox, radio,
    toggle, checkbox or text_input bound to the URL under its key, e.g.
    ``from_link(st.slider, "Length n", 1, 4096, 512, key="n", bind="query-params")`` (the
    binding stays at the call, where it is read). A link value it would drop or change goes
    into the page's notice; one that would crash the page is taken out of the link first,
    and the page runs again without it."""
    if kwargs.get("bind") != "query-params":
        raise ValueError(f"from_link is for controls bound to the URL; {kwargs.get('key')!r} "
                         "has no bind='query-params'")
    call = inspect.signature(widget).bind(*args, **kwargs)
    call.apply_defaults()
    key = call.arguments["key"]
    raw = st.query_params.get_all(key)
    problem = link_value_problem(widget.__name__, call.arguments, raw) if raw else None
    run = st.session_state["_link_run"]
    notice = st.session_state.get("_link_notice")
    if problem is not None:
        if notice is None:
            notice = st.session_state["_link_notice"] = _LinkNotice(run.page, {}, dict(run.seen))
        notice.lines[key] = [f"The link's `{key}` {problem[0]}", None]
        if problem[1]:  # Streamlit would raise: the next run reads the link without it
            del st.query_params[key]
            st.rerun()
    value = widget(*args, **kwargs)
    run.seen[key] = value
    if notice is not None:
        if key in notice.lines and notice.lines[key][1] is None:
            notice.lines[key][1] = _link_display(widget.__name__, call.arguments, value)
            notice.values[key] = value
        elif notice.values.setdefault(key, value) != value:  # the user moved on
            del st.session_state["_link_notice"]
        # drawn by every linked control while it stands: a fragment may write to a place
        # outside it on its own reruns only if it wrote there on the last full run
        _draw_link_notice()
    return value


def note_link_value(key: str, problem: str | None, used, display: str) -> None:
    """``from_link``'s notice for a control that is not a Streamlit widget (a figure's
    slider, ``pages/figures``): ``problem`` (words after the key, from
    ``link_value_problem``) or None, and the value ``used`` (shown as ``display``)."""
    run = st.session_state["_link_run"]
    notice = st.session_state.get("_link_notice")
    if problem is not None:
        if notice is None:
            notice = st.session_state["_link_notice"] = _LinkNotice(run.page, {}, dict(run.seen))
        if key not in notice.lines:
            notice.lines[key] = [f"The link's `{key}` {problem}", _link_code(display)]
            notice.values[key] = used
    run.seen[key] = used
    if notice is not None:
        if key not in notice.lines and notice.values.setdefault(key, used) != used:
            del st.session_state["_link_notice"]  # the user moved on
        elif key in notice.lines and notice.values[key] != used:
            del st.session_state["_link_notice"]
        _draw_link_notice()


def link_value_problem(widget: str, spec: dict, raw: list[str]) -> tuple[str, bool] | None:
    """What Streamlit 1.67 does not take from the link's ``raw`` values (``get_all(key)``) for
    ``widget`` (its name) called with the arguments ``spec``, as words after the key, and
    whether it would raise on them; None when it takes them as they are."""
    # Streamlit's own parser of bound URL values (not public API), so parsing agrees.
    from streamlit.runtime.state.query_params import parse_url_param

    last = _link_code(raw[-1])
    clearable = {"number_input": spec.get("value") is None, "text_input": True,
                 "selectbox": spec.get("index") is None, "radio": spec.get("index") is None}
    if all(part == "" for part in raw) and not clearable.get(widget, False):
        return "is empty", False
    if widget in ("slider", "number_input"):
        if widget == "slider":
            if isinstance(spec["value"], (list, tuple)):
                raise TypeError("from_link takes sliders of one value")
            parts = parse_url_param(raw, "double_array_value")
            if len(parts) != 1:
                return f"is given {len(parts)} times ({_link_code(', '.join(raw))})", False
            number = parts[0]
        else:
            try:
                number = parse_url_param(raw, "double_value")
            except ValueError:
                return f"= {last} is not a number", False
        default = spec["min_value"] if spec["value"] in (None, "min") else spec["value"]
        whole = isinstance(default, int)
        if not isinstance(number, float) or math.isnan(number):
            return f"= {last} is not a number", False
        if math.isinf(number):  # int(inf) raises in Streamlit's number_input
            return f"= {last} is not a finite number", widget == "number_input" and whole
        low, high = spec["min_value"], spec["max_value"]
        # a whole-number input truncates before its range check; a slider after it
        if not low <= (int(number) if whole and widget == "number_input" else number) <= high:
            return f"= {last} is outside [{_link_number(low)}, {_link_number(high)}]", False
        if whole and number != int(number):
            return f"= {last} is not a whole number", False
        return None
    if widget in ("selectbox", "radio"):
        labels = [spec["format_func"](option) for option in spec["options"]]
        if raw[-1] in labels:
            return None
        named = ", ".join(map(_link_code, labels)) if len(labels) <= 4 else ""
        return f"= {last} is not one of the {len(labels)} choices{named and ': ' + named}", False
    if widget in ("toggle", "checkbox"):
        return None if raw[-1].lower() in ("true", "false") else (
            f"= {last} is not true or false", False)
    if widget == "text_input":
        limit = spec["max_chars"]
        return None if limit is None or len(raw[-1]) <= limit else (
            f"= {last} is longer than {limit} characters", False)
    raise TypeError(f"from_link does not know st.{widget}")


def _link_display(widget: str, spec: dict, value) -> str:
    """``value`` of ``widget`` as the notice shows it: as the link would write it."""
    if widget in ("selectbox", "radio"):
        return _link_code(spec["format_func"](value))
    if widget == "text_input" and spec["max_chars"] is not None:
        return f"its first {spec['max_chars']} characters"
    if isinstance(value, bool):
        return _link_code(str(value).lower())
    return _link_code(_link_number(value) if isinstance(value, (int, float)) else str(value))


def _link_number(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _link_code(text: str) -> str:
    """``text`` as inline code that nothing in it can break out of, cut to
    LINK_SHOWN_CHARS characters and its length."""
    cut = text[:LINK_SHOWN_CHARS]
    cut = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    fence = "`" * (max(map(len, re.findall("`+", cut)), default=0) + 1)
    more = f"… ({len(text)} characters)" if len(text) > LINK_SHOWN_CHARS else ""
    return f"{fence} {cut} {fence}{more}"


def _draw_link_notice() -> None:
    place = st.session_state["_link_run"].place
    notice = st.session_state.get("_link_notice")
    lines = [] if notice is None else [f"{said}; using {used}." if used else f"{said}."
                                       for said, used in notice.lines.values()]
    try:
        if lines:
            place.warning("  \n".join(lines), icon=":material/link_off:")
        else:
            place.empty()
    except StreamlitInvalidLayoutContextError:  # a fragment's rerun: the next full run draws it
        pass


def device() -> str:
    """The device chosen in the sidebar, with 'auto' resolved."""
    choice = st.session_state.get("device", "auto")
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def seed() -> int:
    return int(st.session_state.get("seed", 0))


def metric_text(value: float, name: str) -> str:
    """A task metric: an accuracy as a percentage, others with their unit; NaN as a dash."""
    if not np.isfinite(value):
        return "—"
    return f"{100 * value:.1f} %" if name == "accuracy" else f"{value:.3f} {name}"


def interval_text(interval: tuple[float, float], name: str) -> str:
    """A 95 % interval of a task metric: "2.375–2.430 bpc", "55.1–59.4 %"."""
    low, high = (metric_text(end, name).split()[0] for end in interval)
    return f"{low}–{metric_text(interval[1], name)}" if low != "—" else "—"


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
    what = "file" if isinstance(err, checkpoint.CheckpointError) else "setting"
    st.error(f"That {what} cannot be used: {err}", icon=":material/error:")


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
    fits_float32 = np.abs(view.matrix).max(initial=0.0) < np.finfo(np.float32).max
    z = view.matrix.astype(np.float32) if fits_float32 else view.matrix  # half the bytes
    fig = go.Figure(go.Heatmap(z=z, x=view.indices,
                               y=view.indices, colorscale="RdBu",
                               zmid=0.0, zmin=None if zrange is None else zrange[0],
                               zmax=None if zrange is None else zrange[1],
                               hovertemplate="row %{y}, col %{x}: %{z:.4g}<extra></extra>"))
    note = f" (1 row/column in {view.step} shown)" if view.step > 1 else ""
    fig.update_layout(title=title + note, height=420, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(autorange="reversed", title="row i", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain", title="column j")
    return fig


@functools.cache
def colour_table(colorscale: str) -> np.ndarray:
    """[256, 3] uint8: Plotly's ``colorscale`` sampled evenly from its low end to its high
    (for ``lab.heatmap_image``, so images match the Plotly charts)."""
    rgb = plotly.colors.sample_colorscale(colorscale, list(np.linspace(0.0, 1.0, 256)))
    table = np.round([plotly.colors.unlabel_rgb(c) for c in rgb]).astype(np.uint8)
    table.flags.writeable = False
    return table


def vline(fig: go.Figure, x: float, text: str, log_x: bool = False, **line) -> None:
    """A vertical line at x (a data value) with ``text`` at its top.

    On a log axis Plotly 7.1 draws a shape at the data value but places an annotation at
    log10 of its x, so add_vline(annotation_text=...) would put the label at 10^x and
    stretch the axis; the label is therefore added on its own, at log10(x)."""
    fig.add_vline(x=x, **line)
    fig.add_annotation(x=math.log10(x) if log_x else x, y=1, yref="paper", text=text,
                       showarrow=False, xanchor="left", yanchor="top")


def hline(fig: go.Figure, y: float, text: str, log_y: bool = False, **line) -> None:
    """A horizontal line at y (a data value) with ``text`` above its right end (see vline)."""
    fig.add_hline(y=y, **line)
    fig.add_annotation(y=math.log10(y) if log_y else y, x=1, xref="paper", text=text,
                       showarrow=False, xanchor="right", yanchor="bottom")


def kernel_plot(view: KernelView, title: str = "Kernel t_k against lag k") -> go.Figure:
    lags, coeffs = display_line(view.lags, view.coeffs)
    fig = go.Figure(go.Scatter(x=lags, y=coeffs, name="t_k",
                               mode="lines+markers" if view.n <= 64 else "lines"))
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="lag k = i - j", yaxis_title="t_k")
    return fig


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
def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool,
                       method: str) -> decomposition_lab.DecompositionView:
    return decomposition_lab.decomposition_view(coeffs, band, rank, causal, method)


@st.cache_data(max_entries=32, show_spinner="Error against r…")
def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> decomposition_lab.RankCurve:
    return decomposition_lab.rank_curve(coeffs, band, causal)


# -- checkpoints and training ----------------------------------------------------------------
USER_CHECKPOINTS = Path(os.environ.get("TOEPLITZ_LAB_USER_CHECKPOINTS",
                                       Path(__file__).resolve().parents[1] / "checkpoints"
                                       / "user"))
UPLOAD_LIMIT_MB = 50


def _session_uploads() -> uploads_lab.SessionUploads:
    return st.session_state.setdefault("uploads", uploads_lab.SessionUploads())


@st.cache_resource
def _upload_store() -> uploads_lab.UploadStore:
    """The server's uploads (every session's), within ``uploads.SERVER_BUDGET`` bytes."""
    return uploads_lab.UploadStore()


def checkpoint_choices() -> dict[str, str]:
    """Checkpoints a page can open, key -> label: on disk, then this session's uploads."""
    return inspect_lab.saved_checkpoints(USER_CHECKPOINTS) | {
        key: f"{name} (uploaded)" for key, name in _session_uploads().names().items()}


def checkpoint_select(none_yet: str, help: str) -> str:
    """Inspect's and Compress's checkpoint select box (in the URL); its key. Where there is
    no checkpoint at all, ``none_yet`` is shown and the page stops."""
    choices = checkpoint_choices()
    if not choices:
        st.info(none_yet, icon=":material/info:")
        st.stop()
    if st.session_state.get("checkpoint", next(iter(choices))) not in choices:
        st.session_state["checkpoint"] = next(iter(choices))  # e.g. another session's upload
    return from_link(st.selectbox, "Checkpoint", list(choices), format_func=choices.get,
                     key="checkpoint", disabled=locked("checkpoint"), bind="query-params",
                     help=help)


def _computed(spinner: str, memo: _warmup.Shared, *args, **kwargs):
    """``memo(*args, **kwargs)``, under a spinner saying ``spinner`` when not computed yet."""
    if memo.has(*args, **kwargs):
        return memo(*args, **kwargs)
    with st.spinner(spinner):
        return memo(*args, **kwargs)


@_warmup.shared(max_entries=16)
def _open_file(path: str, mtime_ns: int) -> inspect_lab.Opened:
    return inspect_lab.open_file(Path(path))


@_warmup.shared(max_entries=4)
def _open_upload(key: str, name: str, _data: bytes) -> inspect_lab.Opened:
    return inspect_lab.open_bytes(_data, name)


def opened(key: str) -> inspect_lab.Opened:
    """The checkpoint of ``key``, loaded once per version of its file for the whole server;
    CheckpointError / ValueError say what is wrong. Its model is for inference only."""
    if key.startswith("upload:"):
        names = _session_uploads().names()
        if key not in names:
            raise ValueError("that uploaded checkpoint belongs to another browser session or "
                             "was dropped; upload it again on the Inspect page")
        data = _upload_store().get(key)
        if data is None:
            raise ValueError(f"the upload {names[key]!r} was dropped to keep the server's "
                             "memory bounded; upload it again on the Inspect page")
        return _computed("Loading checkpoint…", _open_upload, key, names[key], _data=data)
    path = inspect_lab.checkpoint_path(key, USER_CHECKPOINTS)
    if not path.is_file():
        raise ValueError(f"checkpoint {key!r} does not exist; choose one from the list")
    return _computed("Loading checkpoint…", _open_file, str(path), path.stat().st_mtime_ns)


def load_checkpoint(key: str):
    """(model, info) of ``opened(key)``."""
    found = opened(key)
    return found.model, found.info


def remember_upload(name: str, data: bytes) -> tuple[str, list[str]]:
    """Validate an uploaded checkpoint and keep it for this browser session.

    Returns its key and the names of older uploads this session dropped to stay within
    ``uploads.SESSION_BUDGET``; a file that is not a valid checkpoint raises
    CheckpointError and is not kept."""
    key = uploads_lab.upload_key(data)
    _computed("Loading checkpoint…", _open_upload, key, name, _data=data)
    _upload_store().put(key, data)
    return key, _session_uploads().add(key, name, len(data))


def checkpoint_kernel(key: str, n: int, layer: int, channel: int) -> np.ndarray:
    """One learned channel's kernel [2n-1] at any n."""
    found = opened(key)
    return _checkpoint_kernel(found.digest, n, layer, channel, _model=found.model)


@st.cache_data(max_entries=64, show_spinner=False)
def _checkpoint_kernel(digest: str, n: int, layer: int, channel: int, _model) -> np.ndarray:
    ops = _model.operators()
    layer = check_int("layer", layer, 0, len(ops) - 1)
    return analysis.channel_kernel(ops[layer], n, channel).numpy()


def save_run(result, name: str) -> str:
    """Save a finished run under USER_CHECKPOINTS/NAME.safetensors; returns its key."""
    return inspect_lab.save_run(result, name, USER_CHECKPOINTS)


# Inspect's views of one checkpoint, by its digest (its task by the task's record): shared
# with the warm-up (``warm_up``).
@_warmup.shared(max_entries=8)
def _task(task_key: str, _record: dict) -> Task:
    return task_from_info(_record)


@_warmup.shared(max_entries=32)
def _atlas(digest: str, n: int, band: int, rank: int, channels: int,
           _model) -> inspect_lab.AtlasView:
    return inspect_lab.atlas_view(_model, n, band, rank, channels)


@_warmup.shared(max_entries=32)
def _channel_matrix(digest: str, n: int, layer: int, channel: int,
                    _model) -> inspect_lab.ChannelMatrix:
    return inspect_lab.channel_matrix(_model, n, layer, channel)


@_warmup.shared(max_entries=32)
def _extrapolation(digest: str, train_n: int, layer: int, channel: int,
                   _model) -> inspect_lab.Extrapolation:
    return inspect_lab.extrapolation(_model, train_n, layer, channel)


@_warmup.shared(max_entries=16)
def _length_sweep(digest: str, _model, _task) -> inspect_lab.LengthSweep:
    return inspect_lab.length_sweep(_model, _task)


def checkpoint_task(key: str) -> Task:
    """The task a checkpoint was trained on, with its validation data; ValueError when the
    file's task cannot be rebuilt here. Shared between sessions: it is only read."""
    found = opened(key)
    return _computed("Building the task's data…", _task, found.task_key,
                     _record=found.info.task)


def atlas(key: str, n: int, band: int, rank: int, channels: int) -> inspect_lab.AtlasView:
    found = opened(key)
    return _computed("Measuring every channel…", _atlas, found.digest, n, band, rank,
                     channels, _model=found.model)


def channel_matrix(key: str, n: int, layer: int, channel: int) -> inspect_lab.ChannelMatrix:
    found = opened(key)
    return _computed("Reading the matrix the model applies…", _channel_matrix, found.digest,
                     n, layer, channel, _model=found.model)


def extrapolation(key: str, train_n: int, layer: int,
                  channel: int) -> inspect_lab.Extrapolation:
    found = opened(key)
    return _computed("Evaluating the kernel at 1×, 2× and 4× the length…", _extrapolation,
                     found.digest, train_n, layer, channel, _model=found.model)


def start_length_sweep(key: str):
    """Start the length sweep on a thread of its own (unless it runs or ran): its future.
    ValueError when the checkpoint's task cannot be rebuilt here."""
    found = opened(key)
    return _length_sweep.start(found.digest, _model=found.model, _task=checkpoint_task(key))


def length_sweep(key: str, wait_s: float) -> inspect_lab.LengthSweep | None:
    """The length sweep (``start_length_sweep``), or None if it still runs after ``wait_s``
    seconds; ValueError when the task cannot be rebuilt or evaluated here."""
    try:
        return start_length_sweep(key).result(timeout=wait_s)
    except TimeoutError:
        return None


def evaluation(key: str):
    """The checkpoint's Scores on its task's evaluation set (``inspect_lab.evaluation``),
    cached server-wide; ValueError when its task cannot be rebuilt here."""
    found = opened(key)
    return _evaluation(found.digest, _model=found.model, _task=checkpoint_task(key))


@st.cache_data(max_entries=32, show_spinner="Scoring the evaluation set…")
def _evaluation(digest: str, _model, _task):
    return inspect_lab.evaluation(_model, _task)


def model_report(key: str):
    """The model card and per-layer report of a checkpoint (``inspect_lab.model_report``),
    cached server-wide; ValueError when it cannot be reported."""
    found = opened(key)
    return _model_report(found.digest, _model=found.model, _info=found.info,
                         _task=checkpoint_task(key))


@st.cache_data(max_entries=8, show_spinner=False)
def _model_report(digest: str, _model, _info, _task):
    return inspect_lab.model_report(_model, _info, _task)


def band_ablation(key: str, band: int) -> inspect_lab.BandAblation:
    found = opened(key)
    return _band_ablation(found.digest, band, _model=found.model, _task=checkpoint_task(key))


@st.cache_data(max_entries=16, show_spinner="Restricting every layer to its band…")
def _band_ablation(digest: str, band: int, _model, _task) -> inspect_lab.BandAblation:
    return inspect_lab.band_ablation(_model, _task, band)


def decay_pair(keys: tuple[str, str]) -> inspect_lab.DecayPair:
    """TNN's Table 10 for two checkpoints of one task (the first one's)."""
    found = [opened(key) for key in keys]
    return _decay_pair(keys, tuple(f.digest for f in found),
                       _models=tuple(f.model for f in found), _task=checkpoint_task(keys[0]))


def decay_pair_chart(pair: inspect_lab.DecayPair, height: int = 360) -> go.Figure:
    """The Table 10 pair's metric against × training length (Inspect and a lesson step):
    the last n positions of each window solid, all positions dotted, each point with its
    95 % interval as an error bar, chance dashed."""
    fig = go.Figure()
    for i, (name, lam) in enumerate(zip(pair.names, pair.decays, strict=True)):
        for part, scores, style in (("last", pair.last[i], dict()),
                                    ("all", pair.every[i], dict(dash="dot"))):
            values = np.array([s.metric for s in scores])  # (F,)
            low, high = np.array([s.ci95 for s in scores]).T  # (F,) each
            fig.add_scatter(x=pair.factor, y=values, mode="lines+markers", line=style,
                            error_y=dict(type="data", array=high - values,
                                         arrayminus=values - low),
                            name=f"{name} (λ = {lam:g}), "
                                 + (f"last {pair.train_n} positions" if part == "last"
                                    else "all positions"))
    fig.add_hline(y=pair.chance, line_dash="dash", line_color="grey",
                  annotation_text=f"chance {pair.chance:.3g} {pair.metric_name}")
    fig.update_xaxes(type="log", tickvals=pair.factor.tolist(),
                     title=f"× training length n = {pair.train_n}")
    windows = pair.last[0][0].sequences
    fig.update_layout(height=height, yaxis_title=pair.metric_name,
                      title=f"{pair.metric_name} on the same {windows} windows (95 % intervals)",
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


@st.cache_data(max_entries=2, show_spinner="Scoring both models on the same windows…")
def _decay_pair(keys: tuple[str, str], digests: tuple[str, str], _models,
                _task) -> inspect_lab.DecayPair:
    return inspect_lab.decay_pair(_models, keys, _task)


def warm_up() -> list:
    """Inspect's opening view of every shipped checkpoint, for ``_warmup.start``: one job
    per checkpoint in the list's order, one step per view. No Streamlit calls."""
    return [_opening_view(name) for name, _ in inspect_lab.SHIPPED_ORDER]


def _opening_view(name: str):
    path = checkpoint.SHIPPED_DIR / f"{name}.safetensors"
    if not path.is_file():
        return
    found = _open_file(str(path), path.stat().st_mtime_ns)
    yield "model"
    train_n = inspect_lab.summary(found.info).train_n
    n, band = inspect_lab.opening_atlas(found.model.config, train_n)
    _atlas(found.digest, n, band, inspect_lab.ATLAS_RANK, inspect_lab.ATLAS_CHANNELS,
           _model=found.model)
    yield "atlas"
    _channel_matrix(found.digest, n, 0, 0, _model=found.model)
    yield "channel matrix"
    _extrapolation(found.digest, train_n, 0, 0, _model=found.model)
    yield "extrapolation"
    try:
        task = _task(found.task_key, _record=found.info.task)
    except ValueError:  # the page says why; nothing more to prepare
        return
    yield "task"
    _length_sweep(found.digest, _model=found.model, _task=task)
    yield "length sweep"


# -- timings taken in the background ---------------------------------------------------------
MEASUREMENTS_KEPT = 64  # settings remembered per session and kind
POLL_S = 0.5  # how often a page waiting for background work looks again


@st.cache_resource
def quiet_timer() -> QuietTimer:
    """The server's one background timer (see ``tnn_core.lab.quiet_timing``)."""
    return QuietTimer()


def page_activity() -> None:
    """A page script (or a fragment of one) starts or ends: timings wait for the quiet
    after it. Pages with timings call it at both ends; ``ensure_app_frame`` at the start."""
    quiet_timer().activity()


def measurement(kind: str, setting: tuple, run) -> Measurement:
    """This session's timing of ``setting``, submitted once and taken in the background.

    A timing is a measurement of this machine now, so it is not shared between sessions:
    one noisy measurement must not stick for everyone. Submitting a new setting drops
    this session's timings of ``kind`` not taken yet (a slider dragged through ten values
    is timed at the last)."""
    taken = st.session_state.setdefault(f"measured:{kind}", {})
    found = taken.get(setting)
    if found is None or (found.cancelled and not found.ready):
        for older in taken.values():
            older.cancel()
        found = taken[setting] = quiet_timer().submit(run)
        while len(taken) > MEASUREMENTS_KEPT:
            del taken[next(iter(taken))]  # the oldest setting
    return found


def poll_until(ready, waiting) -> None:
    """``waiting()`` in a fragment that looks again every POLL_S seconds and reruns the page
    once ``ready()`` (which also stops the looking): for work done off the request path."""

    @st.fragment(run_every=POLL_S)
    def poll():
        if ready():
            st.rerun()
        waiting()

    poll()


def when_measured(found: Measurement, draw, waiting) -> None:
    """``draw(found)`` if it has been taken; else ``waiting()`` until it is (``poll_until``)."""
    if found.ready:
        draw(found)
    else:
        poll_until(lambda: found.ready, waiting)


def live_speed(n: int, rank: int, band: int, device: str) -> Measurement:
    """The Decomposition page's speed readout at this setting (``bench.live_speed``)."""
    return measurement("live_speed", (n, rank, band, device),
                       lambda: bench.live_speed(n, rank, band, device=device))


# -- kernels forming during training (Train and Inspect) -------------------------------------
def kernel_replay(view: inspect_lab.SnapshotView, key: str, live: bool = False) -> None:
    """A run's kernel snapshots at one step: a layer choice, a step slider and t_k against k
    on one y-range for every step. ``live`` (a run going on): a toggle pins the slider to
    the newest snapshot; a run that ends while pinned opens at its last step."""
    st.caption(view.caption)
    layer = 0
    if len(view.layers) > 1:
        layer = st.radio("Layer", range(len(view.layers)), horizontal=True,
                         format_func=lambda i: f"layer {view.layers[i]}", key=f"{key}_layer",
                         help="Which of the kept layers to replay.")
    steps = view.steps.tolist()
    step_key, pinned_key = f"{key}_step", f"_{key}_pinned"
    follow = live and st.toggle("Follow the newest snapshot", True, key=f"{key}_follow",
                                help="Off: drag the slider through the snapshots so far.")
    if follow or st.session_state.get(step_key) not in steps \
            or st.session_state.get(step_key) == st.session_state.get(pinned_key):
        st.session_state[step_key] = steps[-1]
    st.session_state[pinned_key] = steps[-1] if follow else None
    step = steps[0] if len(steps) == 1 else st.select_slider(
        "Step", steps, key=step_key, disabled=follow,
        help="The training step of the snapshot shown; drag it to watch the kernels form.")
    index = steps.index(step)
    fig = go.Figure([go.Scatter(x=view.lags, y=view.kernels[index, layer, c],
                                mode="lines+markers", name=f"channel {channel}")
                     for c, channel in enumerate(view.channels)])
    fig.update_layout(title=f"Layer {view.layers[layer]} at step {step}", height=340,
                      xaxis_title="lag k = i − j", yaxis_title="t_k",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(range=view.y_range(layer))
    st.plotly_chart(fig, key=f"{key}_chart")

# -- linked views: one cell of T --------------------------------------------------------
# Altair, not Plotly: Streamlit 1.67 returns an Altair point selection on a mark_rect chart
# (on_select), while a click on a Plotly heatmap selects nothing (RECIPES.md). The picker is
# small (at most 32 × 32 cells), so it adds little to a slider move; the four big heatmaps
# stay images.
def pick_cell(chart_key: str, n: int) -> None:
    """on_select: the clicked cell becomes the "cell i, j" inputs (the state that is kept)."""
    try:
        cell = cell_from_selection(st.session_state[chart_key], n)
    except ValueError:  # a selection left from a larger n
        return
    if cell is not None:
        st.session_state["cell_i"], st.session_state["cell_j"] = cell


def picker_chart(picker, cell, limit: float) -> alt.LayerChart:
    """T's picker (every step-th cell, each covering step × step entries) with the picked
    cell's diagonal drawn through the true cell centres and the cell ringed."""
    n, step = cell.n, picker.step
    cells = pd.DataFrame({"i": picker.rows, "j": picker.columns, "t": picker.values,
                          "i_end": picker.rows + step, "j_end": picker.columns + step})
    x = alt.X("j:Q", scale=alt.Scale(domain=[0, n], nice=False), title="column j")
    y = alt.Y("i:Q", scale=alt.Scale(domain=[0, n], nice=False, reverse=True), title="row i")
    select = alt.selection_point(name=SELECTION, fields=["i", "j"], on="click")
    rect = alt.Chart(cells).mark_rect().encode(
        x=x, x2="j_end", y=y, y2="i_end",
        color=alt.Color("t:Q", scale=alt.Scale(scheme="redblue", domain=[-limit, limit]),
                        legend=None),
        tooltip=["i", "j", alt.Tooltip("t:Q", format=".4g", title="T_ij")]).add_params(select)
    ends = [cell.diagonal_rows[0], cell.diagonal_rows[-1]]
    diagonal = alt.Chart(pd.DataFrame({"i": np.add(ends, 0.5),
                                       "j": np.add(ends, 0.5) - cell.lag})).mark_line(
        color="black", strokeDash=[4, 3], strokeWidth=2).encode(x=x, y=y)
    ring = alt.Chart(pd.DataFrame({"i": [cell.i + 0.5], "j": [cell.j + 0.5]})).mark_point(
        shape="square", size=160, color="black", strokeWidth=2).encode(x=x, y=y)
    return (rect + diagonal + ring).properties(width=300, height=300)


CELL = (48, 16)  # the cell followed at first, clamped to n: a default that n does not move,
# so a link that leaves it out opens on the same cell


def cell_inputs(n: int):
    """The "cell i, j" inputs, in the URL; clamped to n first (a cell kept from a larger n)."""
    a, b = st.columns(2)
    for key in ("cell_i", "cell_j"):
        if st.session_state.get(key, 0) > n - 1:
            st.session_state[key] = n - 1
    i = from_link(a.number_input, "Cell row i", 0, n - 1, min(n - 1, CELL[0]), key="cell_i",
                  disabled=locked("cell_i"),
                  bind="query-params",
                  help="Row of the cell of T to follow; or click a cell of T beside.")
    j = from_link(b.number_input, "Cell column j", 0, n - 1, min(n - 1, CELL[1]), key="cell_j",
                  disabled=locked("cell_j"),
                  bind="query-params",
                  help="Column of the cell of T to follow; or click a cell of T beside.")
    return int(i), int(j)


def follow_cell(coeffs: np.ndarray, rank: int | None, limit: float):
    """The "follow one cell of T" control of Basics and Decomposition: the inputs, a
    clickable picker of T with the cell's diagonal, and a caption. Returns the
    ``LinkedCell`` (with W's rows for ``rank`` inducing points, or none)."""
    n = (len(coeffs) + 1) // 2
    i, j = cell_inputs(n)
    cell = linked_cell(n, rank, i, j)
    chart_key, picker = "pick-cell", cell_picker(coeffs)
    st.altair_chart(picker_chart(picker, cell, limit), key=chart_key,
                    on_select=lambda: pick_cell(chart_key, n), selection_mode=SELECTION)
    step = picker.step
    st.caption("Click a cell: the inputs take its row and column. "
               + (f"Each square is T at its top-left entry (i, j) and covers {step} × {step} "
                  f"entries; type i and j for the others. " if step > 1 else "")
               + "Dashed: the cell's diagonal, every entry t_k.")
    return cell
