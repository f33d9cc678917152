"""The private Streamlit API the app relies on, in one place (written against 1.67).

An upgrade may move or change any of these without a deprecation; tests/test_streamlit_
internals.py checks each against the installed Streamlit, so a break fails there, by name,
instead of silently on a page.
"""

from __future__ import annotations

import threading

from streamlit.errors import StreamlitInvalidLayoutContextError
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state.query_params import parse_url_param

__all__ = ["LayoutContextError", "SCRIPT_THREAD", "leave_pages_directory_mode",
           "in_script_run", "is_script_thread", "parse_url_param"]

# Raised when a fragment's rerun writes to a place outside the fragment.
LayoutContextError = StreamlitInvalidLayoutContextError

# Streamlit runs every page script, and every fragment rerun, on a thread of this name that
# ends with the run (streamlit.runtime.scriptrunner.ScriptRunner).
SCRIPT_THREAD = "ScriptRunner.scriptThread"


def leave_pages_directory_mode() -> bool:
    """Streamlit treats a `pages/` folder beside the main script as "MPA v1" until the main
    script has called st.navigation once; switch the server to st.navigation. True when it
    was in the old mode (the caller reruns so that app.py draws the page)."""
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
