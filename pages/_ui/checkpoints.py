"""This session's checkpoints: shipped, saved on this server, and uploaded; each loaded once
per version of its file for the whole server (``memo``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import streamlit as st

from pages._ui import controls, session_keys
from pages._ui.controls import fields
from pages._ui.memo import VIEW_THREADS, memo
from tnn_core.lab.common import checkpoints as lab
from tnn_core.lab.common import saving, uploads
from tnn_core.lab.common.kernel_sources import learned_kernel
from tnn_core.lab.common.page_controls import Field

USER_CHECKPOINTS = Path(os.environ.get("TOEPLITZ_LAB_USER_CHECKPOINTS",
                                       Path(__file__).resolve().parents[2] / "checkpoints"
                                       / "user"))
UPLOAD_LIMIT_MB = 200  # MiB: admits checkpoint_header.MAX_BYTES (a paper-size model is 79 MB)
SERVER_UPLOADS = uploads.UploadStore()  # every session's, within uploads.SERVER_BUDGET bytes


def _session_uploads() -> uploads.SessionUploads:
    return st.session_state.setdefault(session_keys.UPLOADS, uploads.SessionUploads())


def checkpoint_choices() -> dict[str, str]:
    """Checkpoints a page can open, key -> label: on disk, then this session's uploads."""
    return lab.saved_checkpoints(USER_CHECKPOINTS) | {
        key: f"{name} (uploaded)" for key, name in _session_uploads().names().items()}


def checkpoint_select(none_yet: str, field: Field = fields.CHECKPOINT) -> str:
    """The pages' checkpoint select box (in the URL); its key. A checkpoint the session
    chose that is no longer there (another session's upload, a dropped one) gives way to
    the first. Where there is no checkpoint at all, ``none_yet`` is shown and the page
    stops."""
    choices = checkpoint_choices()
    if not choices:
        st.info(none_yet, icon=":material/info:")
        st.stop()
    if st.session_state.get(session_keys.CHECKPOINT, next(iter(choices))) not in choices:
        # e.g. another session's upload
        st.session_state[session_keys.CHECKPOINT] = next(iter(choices))
    return controls.control(st.selectbox, field, options=list(choices),
                            format_func=choices.get)


@memo(max_entries=16, spinner="Loading checkpoint…", threads=VIEW_THREADS)
def open_file(path: str, mtime_ns: int) -> lab.Opened:
    return lab.open_file(Path(path))


@memo(max_entries=4, spinner="Loading checkpoint…", threads=VIEW_THREADS)
def _open_upload(key: str, name: str, _data: bytes) -> lab.Opened:
    return lab.open_bytes(_data, name)


def opened(key: str) -> lab.Opened:
    """The checkpoint of ``key``, loaded once per version of its file for the whole server;
    CheckpointError / ValueError say what is wrong. Its model is for inference only."""
    if key.startswith("upload:"):
        names = _session_uploads().names()
        if key not in names:
            raise ValueError("that uploaded checkpoint belongs to another browser session or "
                             "was dropped; upload it again on the Inspect page")
        data = SERVER_UPLOADS.get(key)
        if data is None:
            raise ValueError(f"the upload {names[key]!r} was dropped to keep the server's "
                             "memory bounded; upload it again on the Inspect page")
        return _open_upload(key, names[key], _data=data)
    path = lab.checkpoint_path(key, USER_CHECKPOINTS)
    if not path.is_file():
        raise ValueError(f"checkpoint {key!r} does not exist; choose one from the list")
    return open_file(str(path), path.stat().st_mtime_ns)


def remember_upload(name: str, data: bytes) -> tuple[str, list[str]]:
    """Validate an uploaded checkpoint and keep it for this browser session.

    Returns its key and the names of older uploads this session dropped to stay within
    ``uploads.SESSION_BUDGET``; a file that is not a valid checkpoint raises
    CheckpointError and is not kept."""
    key = uploads.upload_key(data)
    _open_upload(key, name, _data=data)
    SERVER_UPLOADS.put(key, data)
    return key, _session_uploads().add(key, name, len(data))


def checkpoint_kernel(key: str, n: int, layer: int, channel: int) -> np.ndarray:
    """One learned channel's kernel [2n-1] at any n."""
    found = opened(key)
    return _checkpoint_kernel(found.digest, n, layer, channel, _model=found.model)


@memo(max_entries=64)
def _checkpoint_kernel(digest: str, n: int, layer: int, channel: int, _model) -> np.ndarray:
    return learned_kernel(_model, n, layer, channel)


@memo(max_entries=8, spinner="Building the task's data…", threads=VIEW_THREADS)
def load_task(task_key: str, _record: dict):
    return lab.task_from_info(_record)


def checkpoint_task(key: str):
    """The task a checkpoint was trained on, with its validation data; ValueError when the
    file's task cannot be rebuilt here. Shared between sessions: it is only read."""
    found = opened(key)
    return load_task(found.task_key, _record=found.info.task)


def save_as(result, name: str) -> str:
    """Save a finished run under USER_CHECKPOINTS/NAME.safetensors; returns its key."""
    return saving.save_as(result, name, USER_CHECKPOINTS)


def load_checkpoint(key: str):
    """(model, info) of ``opened(key)``."""
    found = opened(key)
    return found.model, found.info
