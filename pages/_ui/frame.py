"""app.py's frame around every page: the first call of a page, hand-offs between pages,
the sidebar's choices, and errors said as sentences."""

from __future__ import annotations

import streamlit as st
import torch

from pages._ui import session_keys, streamlit_internals, timing
from tnn_core.lab.common.checkpoints import CheckpointError


def ensure_app_frame() -> None:
    """Call first on every page: make sure the page runs inside app.py's frame.

    On a fresh server the first visit to a deep link (a teacher's shared /basics?n=200)
    would run the page alone (found by its file's name, which is its address), without
    app.py's sidebar and page list (``streamlit_internals.leave_pages_directory_mode``):
    rerun it through app.py; the URL, and with it the page and its query params, is kept.

    It also tells the background timer that a page script runs (``timing.page_activity``).
    """
    timing.page_activity()
    if streamlit_internals.leave_pages_directory_mode():
        st.rerun()


def open_page(page: str, values: dict) -> None:
    """Switch to ``page`` with its controls set to ``values`` (widget key -> value).

    Controls bound to the URL cannot be set through ``st.switch_page(query_params=...)``, so
    the values travel in session state and the target page applies them with
    ``receive_values`` before it draws its controls. An empty ``query_params`` leaves the old
    page's URL behind without Streamlit's check for bound widgets, which refuses to clear the
    URL while one of them is off its default.
    """
    st.session_state[session_keys.HANDOFF] = (page, dict(values))
    st.switch_page(page, query_params={})


def receive_values(page: str) -> None:
    """Call on ``page`` before its controls: apply the values ``open_page`` sent it, once."""
    handoff = st.session_state.get(session_keys.HANDOFF)
    if handoff is not None and handoff[0] == page:
        del st.session_state[session_keys.HANDOFF]
        for key, value in handoff[1].items():
            st.session_state[key] = value


def device() -> str:
    """The device chosen in the sidebar, with 'auto' resolved."""
    choice = st.session_state.get(session_keys.DEVICE, "auto")
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def seed() -> int:
    """The seed chosen in the sidebar."""
    return int(st.session_state.get(session_keys.SEED, 0))


def show_error(err: Exception) -> None:
    """A sentence a person can act on, never a traceback."""
    what = "file" if isinstance(err, CheckpointError) else "setting"
    st.error(f"That {what} cannot be used: {err}", icon=":material/error:")
