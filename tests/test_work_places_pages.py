"""The Compress and Speed pages' heavy work (a conversion, a plan search, a timing sweep,
the error-against-speed and band-crossover timings) in places of the server's heavy work
(tnn_core/lab/common/work_slots.py), in AppTest: each shows a fraction done and a Stop
button while it runs, holds a place until it ends, stops when its session ends, and when
every place is taken the page says so in a sentence and starts nothing."""

from __future__ import annotations

import gc

import pytest
from streamlit.testing.v1 import AppTest

from tests.compress_fixtures import APP, JOB_TIMEOUT_S
from tnn_core.lab.common.work_slots import WORK_SLOTS

SPEED_JOBS = ("bench_job", "pareto_job", "band_job")


@pytest.fixture
def places_taken():
    """Every heavy place held by other sessions, each ending in about 40 s."""
    taken = [WORK_SLOTS.claim("heavy", f"another session {i}", "a plan search",
                              seconds_left=lambda: 42.0)
             for i in range(WORK_SLOTS.places["heavy"])]
    yield
    for slot in taken:
        slot.release()


def page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def busy_sentence(at: AppTest, label: str) -> None:
    warnings = [w.value for w in at.warning]
    busy = [w for w in warnings if w.startswith("The server is busy")]
    assert len(busy) == 1, warnings
    warning = busy[0]
    assert warning == (f"The server is busy: all {WORK_SLOTS.places['heavy']} places for "
                       f"heavy computations are taken, so {label} cannot start now; the first "
                       "frees up in about 40 s. Try again then.")
    assert not at.exception and not at.error


def progress_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def ended(job) -> None:
    job.stop()
    job.join(timeout=JOB_TIMEOUT_S)
    assert job.snapshot()[2], "the job did not end in time"


def test_compress_starts_nothing_while_every_place_is_taken(places_taken):
    at = page("pages/compress.py")
    at.button(key="convert").click().run()
    busy_sentence(at, "a conversion")
    assert "compress_job" not in at.session_state
    at.button(key="search").click().run()
    busy_sentence(at, "a plan search")
    assert "compress_search" not in at.session_state
    assert WORK_SLOTS.held("heavy") == WORK_SLOTS.places["heavy"]  # none taken, none freed


def test_speed_starts_nothing_while_every_place_is_taken(places_taken):
    for button, label in ((0, "a timing sweep"), ("pareto_run", "an error-against-speed timing"),
                          ("band_run", "a band-crossover timing")):
        at = page("pages/speed.py")
        (at.button[button] if button == 0 else at.button(key=button)).click().run()
        busy_sentence(at, label)
        assert not any(name in at.session_state for name in SPEED_JOBS)
        assert not progress_texts(at)


def test_a_conversion_holds_a_place_shows_its_fraction_and_stops_with_its_session():
    held = WORK_SLOTS.held("heavy")
    at = page("pages/compress.py")
    at.button(key="convert").click().run()
    job = at.session_state["compress_job"]
    assert WORK_SLOTS.held("heavy") == held + 1
    if not job.snapshot()[2]:  # still running: its fraction and its Stop
        assert progress_texts(at) and at.button(key="compress_stop")
    del at  # the session ends: its state goes, and with it its token
    gc.collect()
    assert job.stopped
    job.join(timeout=JOB_TIMEOUT_S)
    assert job.snapshot()[2] and WORK_SLOTS.held("heavy") == held  # its place given back


@pytest.mark.parametrize("button, name, setting", [
    ("pareto_run", "pareto_job", ("pareto_n", 1024)),
    ("band_run", "band_job", ("band_max_n", 16384)),
    (0, "bench_job", ("bench_ns", (256, 16384)))])
def test_a_speed_timing_shows_its_fraction_has_stop_and_stops_with_its_session(
        button, name, setting):
    """Before: the error-against-speed and band timings ran inside the page's script under
    a spinner, with no fraction, no Stop, and on after the tab closed."""
    held = WORK_SLOTS.held("heavy")
    at = page("pages/speed.py")
    at.select_slider(key=setting[0]).set_value(setting[1]).run()
    (at.button[button] if isinstance(button, int) else at.button(key=button)).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = at.session_state[name]
    assert WORK_SLOTS.held("heavy") == held + 1
    (text,) = progress_texts(at)
    assert text.endswith("%)"), text  # the fraction done, in words
    assert at.button(key=f"{name}_stop")
    assert at.button(key="pareto_run").disabled and at.button(key="band_run").disabled
    del at
    gc.collect()
    assert job.stopped
    ended(job)
    assert WORK_SLOTS.held("heavy") == held


@pytest.mark.slow  # times one band of the error-against-speed chart
def test_a_stopped_timing_keeps_what_it_measured():
    at = page("pages/speed.py")
    at.select_slider(key="pareto_n").set_value(1024).run()
    at.button(key="pareto_run").click().run()
    job = at.session_state["pareto_job"]
    while job.snapshot()[0] == 0 and not job.snapshot()[2]:
        job.join(timeout=0.2)  # until the first band is measured
    at.button(key="pareto_job_stop").click().run()  # what a person presses
    job.join(timeout=JOB_TIMEOUT_S)
    at.run()
    assert not at.exception and not at.error
    view = at.session_state["pareto"]
    assert 1 <= len(view.by_band) < 4  # the bands measured before the stop, not all four
    assert any("was stopped: only what was measured is shown" in w.value for w in at.warning)
    assert "pareto_job" not in at.session_state
