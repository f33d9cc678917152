"""Inspect's upload box: a .safetensors file is checked before it joins this session's
checkpoints (``checkpoints.remember_upload``) and then opened; a bad file changes nothing
else and says why. Inspect calls ``show()``."""

from __future__ import annotations

import streamlit as st

from pages._ui import checkpoints, frame, session_keys
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]


def show() -> None:
    """The expander "Upload a checkpoint"; each file is read once, not on every rerun."""
    with st.expander("Upload a checkpoint (.safetensors)", icon=":material/upload:"):
        upload = st.file_uploader("Checkpoint file", type=["safetensors"], key="upload",
                                  max_upload_size=checkpoints.UPLOAD_LIMIT_MB,
                                  help="A .safetensors file written by Toeplitz Lab. Files are "
                                       "checked before use and never unpickled. A model "
                                       "trained with the authors' code (tnn-pytorch, ski-tnn) "
                                       "opens through the import below.")
        if upload is not None and st.session_state.get(session_keys.LAST_UPLOAD) != upload.file_id:
            # read each file once, not per rerun
            st.session_state[session_keys.LAST_UPLOAD] = upload.file_id
            _remember(upload)
        if upload is not None and session_keys.UPLOAD_ERROR in st.session_state:
            frame.show_error(inspect_lab.CheckpointError(st.session_state[session_keys.UPLOAD_ERROR]))


def _remember(upload) -> None:
    """Validate ``upload`` before it joins the list; a file that passes becomes the page's
    checkpoint, one that does not leaves its reason in the session."""
    try:
        uploaded_key, dropped = checkpoints.remember_upload(upload.name, upload.getvalue())
    except (inspect_lab.CheckpointError, ValueError) as err:
        st.session_state[session_keys.UPLOAD_ERROR] = str(err)
    else:
        st.session_state.pop(session_keys.UPLOAD_ERROR, None)
        st.session_state[session_keys.CHECKPOINT] = uploaded_key  # a new file: open it
        if dropped:
            st.toast(f"Dropped {', '.join(dropped)} from this session's uploads: a "
                     f"session keeps {inspect_lab.SESSION_BUDGET // 2**20} MB of them.",
                     icon=":material/info:")
