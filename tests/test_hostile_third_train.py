"""Issue 35 on the Train page, in AppTest sessions of one server: a run belongs to the
session that started it (another session with its link only watches, and its end stops
nothing), and runs start only in the server's training places (the others are told why,
and the other pages still open while the allowed runs train)."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoints
from tnn_core.lab import train as lab
from tnn_core.lab.common.work_slots import WorkSlots
from tnn_core.training.checkpoint import read_info

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PLACES = 2


@pytest.fixture
def user_dir(monkeypatch, tmp_path) -> Path:
    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    return tmp_path


@pytest.fixture
def places(monkeypatch) -> WorkSlots:
    """The server's training places, PLACES of them (per session: the lead's default)."""
    slots = WorkSlots({"training": PLACES, "heavy": 2})
    monkeypatch.setattr(lab, "WORK_SLOTS", slots)
    return slots


def open_train(run_id: str | None = None, owner: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if run_id is not None:
        at.query_params["run"] = run_id
    if owner is not None:
        at.query_params["owner"] = owner
    at.switch_page("pages/train.py").run()
    assert not at.exception, at.exception
    return at


def press_start(at: AppTest, steps: int = 5000) -> None:
    at.selectbox(key="task").set_value("recall")
    at.radio(key="operator").set_value("fd")
    at.radio(key="size").set_value("tiny")
    at.slider(key="steps").set_value(steps)
    at.button[0].click()  # the form's Start button
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)


def the_run(at: AppTest):
    return at.session_state["train_run"] if "train_run" in at.session_state else None


def has_stop(at: AppTest) -> bool:
    return any(button.key == "stop" for button in at.button)


def end_session(at: AppTest) -> None:
    """The browser session ends: its state is let go."""
    del at
    gc.collect()


def stop_all(*runs) -> None:
    for run in runs:
        if run is not None:
            run.stop()
            run.join(timeout=120)


def test_another_session_with_the_link_only_watches_and_its_end_stops_nothing(user_dir,
                                                                              places):
    owner = open_train()
    press_start(owner)
    run, run_id = the_run(owner), owner.session_state["train_run_id"]
    try:
        for key in (None, "a-guessed-key"):
            watcher = open_train(run_id, key)
            assert the_run(watcher) is run and not run.snapshot().finished
            assert not has_stop(watcher)  # no Stop: it cannot end the run
            assert "owner" not in watcher.query_params
            assert any("belongs to another browser session" in i.value for i in watcher.info)
            assert not watcher.error, [e.value for e in watcher.error]  # it runs: no failure
            start = next(b for b in watcher.button if b.label == "Start")
            assert not start.disabled  # "Start a run of your own with the form above"
            end_session(watcher)
            time.sleep(0.2)
            assert not run.stopped, "a watcher's end stopped the owner's run"
        assert has_stop(open_train(run_id, owner.query_params["owner"]))  # the owner's reload
        end_session(owner)  # the owner (and its reload, collected above) ends: the run stops
        run.join(timeout=120)
        assert run.snapshot().status == "stopped"
        assert read_info(lab.autosave_path(user_dir, run_id)).history["status"] == "stopped"
    finally:
        stop_all(run)


@pytest.mark.slow  # several sessions, two runs training while a page opens
def test_only_the_places_train_and_other_pages_still_open(user_dir, places):
    open_basics()  # the first view pays the imports and caches
    started = time.perf_counter()
    open_basics()
    quiet_s = time.perf_counter() - started
    sessions = [open_train() for _ in range(PLACES + 3)]
    runs = []
    try:
        for at in sessions:
            press_start(at)
            runs.append(the_run(at))
        training = [run for run in runs if run is not None]
        assert len(training) == PLACES == places.held("training")
        assert all(not run.snapshot().finished for run in training)
        for at, run in zip(sessions, runs, strict=True):
            if run is not None:
                continue
            assert len(at.warning) == 1 and "server is busy" in at.warning[0].value
            assert at.slider(key="steps").value == 5000  # the form is kept
            assert at.button[0].disabled is False  # Start again once a place frees
        started = time.perf_counter()
        open_basics()
        busy_s = time.perf_counter() - started
        print(f"\n/basics opened in {quiet_s:.2f} s quiet, {busy_s:.2f} s with {PLACES} "
              "runs training")
        assert busy_s < max(3 * quiet_s, quiet_s + 5), (quiet_s, busy_s)
    finally:
        stop_all(*runs)
    assert places.held() == 0


def open_basics() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/basics.py").run()
    assert not at.exception, at.exception
