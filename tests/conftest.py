"""Shared fixtures."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest, app_test, local_script_runner

from pages._ui import checkpoints as ui_checkpoints
from tests import app_server, compress_fixtures
from tnn_core.analysis.norms import single_threaded_blas

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# CI (.ci/run) sets this: a browser test that cannot run fails instead of skipping
BROWSER_REQUIRED = (os.environ.get("TOEPLITZ_LAB_REQUIRE_BROWSER") == "1"
                    or os.environ.get("CI") == "true")


# The tests of the slow tier that a marker in their file cannot reach (a file at
# test_layout's 400 lines, one case of a parametrized test whose other cases are quick, a test
# of a quick file that takes over half a second), by node id: tests/slow_cases.txt.
SLOW_CASES = frozenset(
    line.split("#", 1)[0].strip()
    for line in (ROOT / "tests" / "slow_cases.txt").read_text().splitlines()
    if line.split("#", 1)[0].strip())


# The test files that use the Streamlit server (conftest's streamlit_server), in the order
# they run (wall seconds of each in the whole suite, 13bf2f2: docs/benchmarks.md).
# pytest_xdist_make_scheduler hands them to one worker as one unit, which starts one server
# (and pays its start and digits-tno's warm-up once), mostly waits on it and Chromium, and
# stops it after the last of them. test_browser.py leads: its first test is the server's
# first view.
SERVER_FILES = (
    "tests/test_browser.py",  # 106
    "tests/test_lessons_browser.py",  # 83
    "tests/test_figure_toeplitz.py",  # 31
    "tests/test_figure_fd.py",  # 30
    "tests/test_url_values.py",  # 24
    "tests/test_figure_decomposition_app.py",  # 11
    "tests/test_compare_browser.py",  # 10
    "tests/test_lessons_screens_browser.py",
)
# The other files that take longest, about longest first. pyproject's --no-loadscope-reorder
# makes pytest-xdist hand out files in the order collected, so the server's unit and these
# start first and the short files fill in around them. By default it hands out the files
# with most tests first, and a long file of few tests (the lesson walk) ran alone at the end.
LONG_FILES = SERVER_FILES + (
    "tests/test_every_kind_opens.py",  # 100
    "tests/test_fresh_server_browser.py",  # 93, three servers of its own
    "tests/test_loaded_server.py",  # 90, beside a busy loop
    "tests/test_budget.py",  # 75
    "tests/test_hostile_third_commands.py",  # 75
    "tests/test_train_ownership_browser.py",  # 65, a server of its own
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


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core (at most 4), plus one for the server's files: their
    worker mostly waits for the server and Chromium. Not for ``-m "not slow"`` (make
    quick), which leaves them out: the browser tests are all in the slow tier."""
    cores = min(len(os.sched_getaffinity(0)), 4)
    return cores if "not slow" in (config.getoption("markexpr") or "") else cores + 1


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's --dist=loadfile (a file's tests on one worker, so its module fixtures
    are set up once), with SERVER_FILES one unit: one worker, one server."""
    from xdist.scheduler import LoadFileScheduling

    class ServerFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = _file(nodeid)
            return "the Streamlit server's files" if path in SERVER_FILES else path

    return ServerFilesTogether(config, log)


_SERVERS: list[subprocess.Popen] = []  # the server streamlit_server started, while it runs


def pytest_runtest_teardown(item, nextitem):
    """After the last test of SERVER_FILES (they run one after another: collection sorts
    them first), the server stops: left to the process's end it kept a tenth of a core
    busy while the worker ran other files."""
    if _SERVERS and _file(item.nodeid) in SERVER_FILES and (
            nextitem is None or _file(nextitem.nodeid) not in SERVER_FILES):
        app_server.stop(_SERVERS.pop())


@pytest.fixture(scope="session")
def streamlit_server():
    """``streamlit run app.py`` on a free port, one per test process (``test_browser.server``
    hands it to each browser module; SERVER_FILES all run in one process): its URL. Its
    first visit starts the app's warm-up, for digits-tno only (``TOEPLITZ_LAB_WARM_UP``):
    the opening view of all ten shipped checkpoints is about a minute of one core, and
    the tests open few of them. Train's saves go to a temporary folder. It stops after the
    last of SERVER_FILES (pytest_runtest_teardown)."""
    user_dir = tempfile.mkdtemp(prefix="toeplitz-lab-user-")
    env = {"TOEPLITZ_LAB_USER_CHECKPOINTS": user_dir, "TOEPLITZ_LAB_WARM_UP": "digits-tno"}
    shots = ROOT / "tests" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one log per process under pytest -n
    log = shots / f"streamlit-server{'-' + worker if worker else ''}.log"
    try:
        with app_server.app_server(env, log) as (url, proc):
            _SERVERS.append(proc)
            yield url
            if proc in _SERVERS:  # not stopped after the last of SERVER_FILES
                _SERVERS.remove(proc)
    finally:
        shutil.rmtree(user_dir, ignore_errors=True)


def browser_unavailable(reason: str):
    """Skip a browser test that cannot run here; fail it where BROWSER_REQUIRED."""
    if BROWSER_REQUIRED:
        pytest.fail(f"browser test required here but cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, headless, one per test process for every browser module (each
    opens its own pages and contexts): a launch costs about a second and a half."""
    if not Path(CHROMIUM).exists():
        browser_unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        browser_unavailable(f"playwright is not installed: {err}")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                      "--disable-background-networking", "--disable-component-update",
                      "--no-first-run", "--disable-sync"])
        except Exception as err:  # noqa: BLE001 - any launch failure means no browser
            browser_unavailable(f"Chromium did not start: {err}")
        yield browser
        browser.close()


@pytest.fixture
def compress_page(monkeypatch, tmp_path):
    """The Compress page in AppTest, saving to ``tmp_path``, its jobs timed in
    ``compress_fixtures.TIMING_ROUNDS``; afterwards every job it left is stopped and
    joined."""
    monkeypatch.setattr(ui_checkpoints, "USER_CHECKPOINTS", tmp_path)
    compress_fixtures.time_in_few_rounds(monkeypatch)
    at = AppTest.from_file(compress_fixtures.APP, default_timeout=300)
    at.run()
    at.switch_page("pages/compress.py").run()
    assert not at.exception, at.exception
    yield at
    for name in compress_fixtures.JOBS:
        found = at.session_state[name] if name in at.session_state else None
        for job in (found.values() if isinstance(found, dict) else [found]):
            if job is not None:
                job.stop()
                job.join(timeout=compress_fixtures.JOB_TIMEOUT_S)


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


@pytest.fixture(scope="session", autouse=True)
def installed_components_scanned_once():
    """Every AppTest's first run scans the installed distributions for Streamlit component
    manifests (``discover_and_register_components``): about 60 ms of CPU each here, for a
    list that cannot change during the run. The first scan's result serves them all."""
    scan = manifest_scanner.scan_component_manifests
    found = scan()
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(found)
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(scope="session", autouse=True)
def page_scripts_compiled_once():
    """AppTest compiles app.py and the page it runs again at every run (a new
    ``ScriptCache`` each time); a server compiles each once. One cache serves every
    AppTest of the process, as it does every session of a server."""
    shared = app_test.ScriptCache()
    make = app_test.ScriptCache
    for module in (app_test, local_script_runner):  # the pages' cache, the runner's
        module.ScriptCache = lambda: shared
    yield
    for module in (app_test, local_script_runner):
        module.ScriptCache = make


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
