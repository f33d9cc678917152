"""Shared fixtures."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from streamlit.runtime.pages_manager import PagesManager

from tnn_core.analysis.norms import single_threaded_blas

ROOT = Path(__file__).resolve().parents[1]


# Slow cases marked here, by node id, where a marker in the file cannot go: a file at
# test_layout's 400 lines, one case of a parametrized test whose other cases are quick.
SLOW_CASES = {
    "tests/test_compress.py::test_cli_search_prints_what_it_measured",  # a search, timed
    "tests/test_compress.py::test_cli_search_saves_the_chosen_plan",  # a search
    "tests/test_lessons.py::test_every_step_renders_and_reveals[2-tnn-rpe-and-decay]",  # Table 10
    "tests/test_lessons.py::test_every_step_renders_and_reveals[5-reading-a-trained-model]",
    "tests/test_lesson_answers.py::test_the_stated_answer_is_the_computed_one"
    "[5-reading-a-trained-model:4]",  # scores a converted model
    # over 1.5 s each in the quick tier (pytest --durations, 2026-11-25)
    "tests/test_train_autosave.py::test_a_stopped_run_resumes_to_the_weights_of_an_"
    "uninterrupted_one",
    "tests/test_compress.py::test_cli_plans_by_an_error_budget",
    "tests/test_compress_recurrent_page.py::test_per_layer_recurrent_has_its_own_s",
    "tests/test_compress_page.py::test_converting_digits_tno_shows_the_metrics_and_saves",
    "tests/test_run_comparison.py::test_runs_of_different_metrics_share_only_the_loss_axis",
    "tests/test_compress.py::test_cli_output_round_trips_through_the_saved_checkpoint",
    "tests/test_inspect_truth.py::test_each_checkpoint_opens_at_its_own_training_length",
    "tests/test_lesson_answers.py::test_the_stated_answer_is_the_computed_one"
    "[5-reading-a-trained-model:2]",
    "tests/test_operator_contract.py::test_huge_sizes_are_refused_before_allocating",
    "tests/test_report.py::test_a_non_ski_model_gets_the_defaults_or_the_given_band_and_rank",
}


# The test files that use the Streamlit server (conftest's streamlit_server), in the order
# they run. pytest_xdist_make_scheduler hands them to one worker as one unit, so the run
# starts one server: each server's warm-up prepares the ten shipped checkpoints, about a
# minute of one core, and a second one repeated it. test_browser.py leads: its first test
# is the server's first view.
SERVER_FILES = (
    "tests/test_browser.py",  # 100 (wall seconds in the whole suite; docs/benchmarks.md)
    "tests/test_lessons_browser.py",  # 130
    "tests/test_figure_fd.py",  # 50
    "tests/test_figure_toeplitz.py",  # 40
    "tests/test_url_values.py",  # 25
    "tests/test_figure_decomposition_app.py",  # 12
    "tests/test_compare_browser.py",  # 9
)
# The other files that take longest, about longest first. pyproject's --no-loadscope-reorder
# makes pytest-xdist hand out files in the order collected, so the server's unit and these
# start first and the short files fill in around them. By default it hands out the files
# with most tests first, and a long file of few tests (the lesson walk) ran alone at the end.
LONG_FILES = SERVER_FILES + (
    "tests/test_budget.py",  # 75
    "tests/test_figure_decomposition.py",  # 70
    "tests/test_lessons.py",  # 40
    "tests/test_compress.py",  # 40
    "tests/test_ddp.py",  # 35
    "tests/test_hostile_corpus.py",  # 30
)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items):
    """Every browser test is in the slow tier too (``make quick``: ``-m "not slow"``): they
    start a Streamlit server and Chromium. So are SLOW_CASES. LONG_FILES run first, each
    file's tests in their own order. A file that uses the server is in SERVER_FILES."""
    for item in items:
        if item.get_closest_marker("browser") is not None or item.nodeid in SLOW_CASES:
            item.add_marker(pytest.mark.slow)
    unlisted = {_file(item.nodeid) for item in items if "streamlit_server" in
                getattr(item, "fixturenames", ())} - set(SERVER_FILES)
    if unlisted:
        raise pytest.UsageError(f"{sorted(unlisted)} use streamlit_server: add them to "
                                "conftest's SERVER_FILES, so that the run starts one server")
    rank = {path: place for place, path in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(_file(item.nodeid), len(LONG_FILES)))


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's --dist=loadfile (a file's tests on one worker, so its module fixtures
    are set up once), with SERVER_FILES one unit: one worker, one server."""
    from xdist.scheduler import LoadFileScheduling

    class ServerFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = _file(nodeid)
            return "the Streamlit server's files" if path in SERVER_FILES else path

    return ServerFilesTogether(config, log)


@pytest.fixture(scope="session")
def streamlit_server():
    """``streamlit run app.py`` on a free port, one per test process (``test_browser.server``
    hands it to each browser module; SERVER_FILES all run in one process): its URL. Its
    first visit starts the app's warm-up, about a minute of one core for the ten shipped
    checkpoints; a server per module paid that again for each. Train's saves go to a
    temporary folder. At the end it gets 3 s to exit, then SIGKILL: its exit waits for a
    warm-up step under way, up to a minute."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    user_dir = tempfile.mkdtemp(prefix="toeplitz-lab-user-")
    env = dict(os.environ, STREAMLIT_SERVER_FILE_WATCHER_TYPE="none",
               TOEPLITZ_LAB_USER_CHECKPOINTS=user_dir)
    shots = ROOT / "tests" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one log per process under pytest -n
    log = open(shots / f"streamlit-server{'-' + worker if worker else ''}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail("streamlit server did not answer /_stcore/health within 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()
        shutil.rmtree(user_dir, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def one_thread_per_worker():
    """Under ``pytest -n`` (xdist: pyproject's addopts) the workers already keep every core
    busy: a second torch or BLAS thread in a worker only spins and waits. Alone (``-n 0``),
    torch and BLAS keep their threads."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with single_threaded_blas():
        yield
    torch.set_num_threads(threads)


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
