"""The private Streamlit API the app relies on, in one place (written against 1.67).

An upgrade may move or change any of these without a deprecation; tests/test_streamlit_
internals.py checks each against the installed Streamlit, so a break fails there, by name,
instead of silently on a page.
"""

from __future__ import annotations

import threading

from streamlit.errors import StreamlitInvalidLayoutContextError
from streamlit.runtime import Runtime
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state.query_params import parse_url_param

__all__ = ["LayoutContextError", "SCRIPT_THREAD", "leave_pages_directory_mode",
           "in_script_run", "is_script_thread", "parse_url_param", "current_session_id",
           "session_connected", "close_session"]

# Raised when a fragment's rerun writes to a place outside the fragment.
LayoutContextError = StreamlitInvalidLayoutContextError

# Streamlit runs every page script, and every fragment rerun, on a thread of this name that
# ends with the run (streamlit.runtime.scriptrunner.ScriptRunner).
SCRIPT_THREAD = "ScriptRunner.scriptThread"


def leave_pages_directory_mode() -> bool:
    """Streamlit treats a `pages/` folder beside the main script as "MPA v1" until the main
    script has called st.navigation once; switch the server to st.navigation. True when it
    was in the old mode (the caller reruns so that app.py draws the page).

    In that mode a fresh server's first view finds a page by its file's name, so app.py
    serves each page at its file's name (tests/test_streamlit_internals.py): an address
    found nowhere there runs the main script under a "Page not found" dialog."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        return True
    return False


def in_script_run() -> bool:
    """Whether the calling thread runs a page script (st.* calls draw), not a worker."""
    return get_script_run_ctx(suppress_warning=True) is not None


def is_script_thread(thread: threading.Thread) -> bool:
    """Whether ``thread`` is one of Streamlit's script-run threads."""
    return thread.name == SCRIPT_THREAD


def current_session_id() -> str | None:
    """The id Streamlit gave the browser session whose script calls this; None elsewhere."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def session_connected(session_id: str) -> bool | None:
    """Whether browser session ``session_id`` is connected now; None without a server
    (AppTest). Safe from any thread. Streamlit keeps a disconnected session for a
    reconnect, 2 min, but drops it only when another visit touches its store: with no
    visitor, never, so what is tied to the session's end would never end."""
    if not Runtime.exists():
        return None
    return Runtime.instance().is_active_session(session_id)


def close_session(session_id: str, timeout: float = 10.0) -> None:
    """Close the disconnected session ``session_id`` as Streamlit's store does when it
    expires, and let go of what its state holds (closing alone left it referenced, so
    what was tied to its end never ended); return once done (or after ``timeout`` s).
    From any thread but the server's event loop, on which the close runs; a session that
    has connected again is left alone."""
    runtime = Runtime.instance()
    closed = threading.Event()

    def close_if_disconnected() -> None:
        try:
            if runtime.is_active_session(session_id):
                return
            stored = runtime._session_mgr.get_session_info(session_id)
            runtime.close_session(session_id)
            if stored is not None:
                stored.session.session_state.clear()
        finally:
            closed.set()

    runtime._get_async_objs().eventloop.call_soon_threadsafe(close_if_disconnected)
    closed.wait(timeout)
