"""Background timings (tnn_core.lab.common.quiet_timing): taken once the server is quiet, taken
again when a page script disturbed them, never when cancelled."""

import threading
import time

import pytest

from tnn_core.lab.common.quiet_timing import MAX_ATTEMPTS, QuietTimer

WAIT = 10.0  # seconds a test waits for the worker before it fails


def test_a_measurement_is_taken_and_keeps_its_result():
    timer = QuietTimer(quiet_s=0.0)
    m = timer.submit(lambda: 42)
    assert timer.wait_idle(WAIT)
    assert m.ready and m.result == 42 and m.error is None and not m.disturbed


def test_it_starts_only_after_the_quiet_period_following_the_last_activity():
    """Each start (a start the activity disturbed is taken again) comes at least 0.2 s after
    the last activity before it. On a loaded machine the loop may sleep past 0.2 s, and then
    a start between two activities is right: so each start is checked against the
    activities before it, with their times read just before they were reported."""
    timer = QuietTimer(quiet_s=0.2)
    started = []
    activity = [time.monotonic()]
    timer.activity()
    m = timer.submit(lambda: started.append(time.monotonic()))
    for _ in range(5):  # a student moving a slider: activity every 50 ms for 0.25 s
        time.sleep(0.05)
        activity.append(time.monotonic())
        timer.activity()
    assert timer.wait_idle(WAIT) and m.ready and started
    for start in started:
        assert start >= max(a for a in activity if a < start) + 0.2


def test_a_page_script_during_the_measurement_makes_it_taken_again():
    timer = QuietTimer(quiet_s=0.0)
    calls = []

    def run():
        calls.append(1)
        if len(calls) == 1:
            timer.activity()  # a rerun started while this was being timed
        return len(calls)

    m = timer.submit(run)
    assert timer.wait_idle(WAIT)
    assert m.result == 2 and not m.disturbed


def test_one_disturbed_every_time_is_kept_after_max_attempts_and_says_so():
    timer = QuietTimer(quiet_s=0.0)
    calls = []

    def run():
        calls.append(1)
        timer.activity()
        return len(calls)

    m = timer.submit(run)
    assert timer.wait_idle(WAIT)
    assert len(calls) == MAX_ATTEMPTS and m.result == MAX_ATTEMPTS and m.disturbed


def test_a_cancelled_measurement_never_runs_and_the_next_one_does():
    timer = QuietTimer(quiet_s=0.3)
    ran = []
    timer.activity()
    old = timer.submit(lambda: ran.append("old"))
    old.cancel()
    new = timer.submit(lambda: ran.append("new"))
    assert timer.wait_idle(WAIT)
    assert ran == ["new"] and new.ready and not old.ready


def test_an_error_is_handed_over_not_raised_in_the_worker():
    timer = QuietTimer(quiet_s=0.0)

    def run():
        raise ValueError("n must be at least 1")

    m = timer.submit(run)
    after = timer.submit(lambda: "still working")
    assert timer.wait_idle(WAIT)
    assert isinstance(m.error, ValueError) and m.result is None
    assert after.result == "still working"


def test_measurements_run_one_at_a_time():
    timer = QuietTimer(quiet_s=0.0)
    inside, most = [0], [0]
    lock = threading.Lock()

    def run():
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with lock:
            inside[0] -= 1

    for _ in range(5):
        timer.submit(run)
    assert timer.wait_idle(WAIT)
    assert most[0] == 1


@pytest.mark.parametrize("quiet_s", [-1.0, float("nan"), float("inf")])
def test_a_bad_quiet_period_is_refused(quiet_s):
    with pytest.raises(ValueError, match="quiet_s"):
        QuietTimer(quiet_s)


def test_close_waits_for_the_measurement_being_taken_and_drops_the_rest():
    timer = QuietTimer(quiet_s=0.0)
    started, ran = threading.Event(), []

    def slow():
        started.set()
        time.sleep(0.2)
        ran.append("slow")

    timer.submit(slow)
    queued = timer.submit(lambda: ran.append("queued"))
    assert started.wait(WAIT)
    timer.close()
    assert ran == ["slow"] and not queued.ready
