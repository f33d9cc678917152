"""The private Streamlit API the app relies on (pages/_ui/streamlit_internals.py) still
behaves as the app expects: an upgrade that moves or changes one fails here, by name."""

import ast
import threading
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.source_util import page_icon_and_name
from streamlit.testing.v1 import AppTest

from pages._ui import streamlit_internals

SCRIPT = """
import threading
import streamlit as st
from pages._ui import streamlit_internals

st.session_state["thread"] = threading.current_thread().name
st.session_state["in_run"] = streamlit_internals.in_script_run()
st.session_state["is_script"] = streamlit_internals.is_script_thread(threading.current_thread())
"""


def test_a_page_script_runs_on_the_named_thread_with_a_run_context():
    at = AppTest.from_string(SCRIPT).run()
    assert not at.exception
    assert at.session_state["thread"] == streamlit_internals.SCRIPT_THREAD
    assert at.session_state["in_run"] and at.session_state["is_script"]


def test_outside_a_script_run_there_is_no_run_context():
    seen = {}
    worker = threading.Thread(target=lambda: seen.update(
        in_run=streamlit_internals.in_script_run(),
        is_script=streamlit_internals.is_script_thread(threading.current_thread())))
    worker.start()
    worker.join()
    assert seen == {"in_run": False, "is_script": False}


def test_the_pages_directory_flag_is_a_class_attribute_the_frame_can_clear(monkeypatch):
    assert isinstance(PagesManager.uses_pages_directory, (bool, type(None)))
    monkeypatch.setattr(PagesManager, "uses_pages_directory", True)
    assert streamlit_internals.leave_pages_directory_mode()
    assert PagesManager.uses_pages_directory is False
    assert not streamlit_internals.leave_pages_directory_mode()


def test_pages_directory_mode_finds_every_page_at_its_address():
    """A fresh server's first view runs in pages-directory mode, which finds a page by its
    file's name (Streamlit's ``page_icon_and_name``): an address it does not find there
    opens under a "Page not found" dialog (tests/test_fresh_server_browser.py). So each
    page of app.py is served at its file's name."""
    app = ast.parse((Path(__file__).resolve().parents[1] / "app.py").read_text())
    pages = [call for call in ast.walk(app) if isinstance(call, ast.Call)
             and isinstance(call.func, ast.Attribute) and call.func.attr == "Page"]
    assert len(pages) >= 10
    for call in pages:
        keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        if keywords.get("default"):
            continue  # at /, the main script's in either mode
        path = ast.literal_eval(call.args[0])
        assert page_icon_and_name(Path(path))[1] == keywords["url_path"], path


def test_url_values_parse_as_the_bound_widgets_read_them():
    parse = streamlit_internals.parse_url_param
    assert parse(["12.5"], "double_value") == 12.5
    assert parse(["3"], "double_array_value") == [3.0]
    assert len(parse(["1", "2"], "double_array_value")) == 2


def test_the_layout_error_is_streamlits():
    from streamlit.errors import StreamlitAPIException

    assert issubclass(streamlit_internals.LayoutContextError, StreamlitAPIException)


def test_a_session_has_an_id_and_without_a_server_no_connection_to_tell():
    at = AppTest.from_string(
        "import streamlit as st\nfrom pages._ui import streamlit_internals\n"
        "st.session_state['id'] = streamlit_internals.current_session_id()").run()
    assert not at.exception and isinstance(at.session_state["id"], str)
    assert streamlit_internals.current_session_id() is None  # outside a script run
    assert streamlit_internals.session_connected("any") is None  # AppTest: no Runtime
    # close_session on a server: tests/test_train_ownership_browser.py closes a real tab
