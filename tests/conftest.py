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
    "tests/test_train_autosave.py::test_stop_saves_and_a_new_session_resumes_the_run_to_its_"
    "steps",  # 3.8 s (2026-11-25)
    # over 3 s each in the quick tier (pytest --durations, 2026-11-29; docs/benchmarks.md)
    "tests/test_uploads.py::test_inspect_refuses_issue_21s_uploads_before_allocating",
    "tests/test_compress_cli_sweep.py::test_recurrent_without_state_prints_every_s_of_the_sweep",
    "tests/test_exponential_fit.py::test_every_sum_of_up_to_32_exponentials_is_recovered[real]",
    "tests/test_exponential_fit.py::test_every_sum_of_up_to_32_exponentials_is_recovered[mixed]",
    "tests/test_exponential_fit.py::test_every_sum_of_up_to_32_exponentials_is_recovered[complex]",
    "tests/test_convert_reader.py::test_every_hostile_case_is_refused_in_one_sentence",
    "tests/test_relative_error.py::test_the_atlas_and_the_report_agree_on_charlm_fd_layer_0",
    "tests/test_compress_recurrent.py::test_the_command_line_converts_a_saved_model",
    "tests/test_compress_recurrent.py::test_more_modes_never_fit_worse",
    "tests/test_app_decomposition.py::test_decomposition_share_link_round_trip[settings0]",
    "tests/test_app.py::test_basics_every_preset_at_extreme_lengths[exponential]",
    "tests/test_app.py::test_basics_every_preset_at_extreme_lengths[spike_smooth]",
    "tests/test_snapshots.py::test_train_shows_the_replay_and_inspect_replays_the_saved_run",
    "tests/test_app.py::test_basics_every_preset_at_extreme_lengths[oscillating]",
    "tests/test_lesson_answers.py::test_the_stated_answer_is_the_computed_one[6-ssm-is-toeplitz:4]",
    "tests/test_app.py::test_basics_every_preset_at_extreme_lengths[tno]",
    "tests/test_variable_projection.py::"
    "test_charlm_tno_layers_are_fitted_far_better_than_by_the_pencil[4-0.85]",
    "tests/test_kernels_only_views.py::"
    "test_decomposition_decomposes_a_kernels_only_channel_with_every_section[ko-causal]",
    "tests/test_variable_projection.py::"
    "test_charlm_tno_layers_are_fitted_far_better_than_by_the_pencil[2-0.6]",
    "tests/test_kernels_only_views.py::"
    "test_compress_shows_a_causal_kernels_only_models_errors_and_scores_nothing",
    "tests/test_fit_starts_study.py::"
    "test_the_best_is_never_above_the_labs_fit_which_is_never_above_the_pencils",
    "tests/test_variable_projection.py::"
    "test_scipy_from_the_pencils_start_does_no_better_within_the_residue_bound[1-5-3]",
}


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
