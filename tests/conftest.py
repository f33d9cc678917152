"""Shared fixtures."""

import pytest
import torch
from streamlit.runtime.pages_manager import PagesManager

from tnn_core.analysis.norms import single_threaded_blas


def pytest_collection_modifyitems(items):
    """Every browser test is in the slow tier too (``make quick``: ``-m "not slow"``): each
    module of them starts a Streamlit server and Chromium."""
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def one_thread():
    """Tiny tensors: on a busy 2-core machine a second OpenMP thread only adds waiting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def one_blas_thread():
    """Dense reference SVDs single-threaded (see test_analysis.py)."""
    with single_threaded_blas():
        yield


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch):
    """Run every AppTest run as the server runs after its first page view.

    Streamlit treats a `pages/` folder as "MPA v1" until app.py first calls
    st.navigation; a real server does so once, and `_ui.frame.ensure_app_frame` reruns that
    first view through app.py. AppTest resets the flag before every run, which would
    make every run a first view and drop button clicks in the rerun. The first view of
    a deep link is covered by the browser test instead."""
    init = PagesManager.__init__

    def patched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", patched)
