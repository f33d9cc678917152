"""Nothing lost in an app training run: it autosaves like the CLI (every checkpoint_every
steps, when stopped and at the end), a stopped run resumes to the weights it would have
reached uninterrupted, and a reloaded Train page finds its run running or lists it to
resume; a name the app refuses is reported, never changed."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoints
from tnn_core.lab import train as lab
from tnn_core.lab.common import background
from tnn_core.lab.common.background import BackgroundJob
from tnn_core.lab.common.work_slots import WorkSlots
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import read_info
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.resume import pending_path, read_state, resume_path
from tnn_core.training.tasks import get_task

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TASK = get_task("recall", {"seq_len": 16, "num_pairs": 2, "num_queries": 2})


def tiny_config(steps: int, checkpoint_every: int = 2) -> TrainConfig:
    model = ModelConfig(dim=8, layers=1, operator=OperatorConfig(kind="tno", causal=True))
    return TrainConfig(task="recall", steps=steps, batch_size=4, warmup=2, eval_every=5,
                       eval_batches=1, eval_batch_size=4, device="cpu", dtype="float64",
                       checkpoint_every=checkpoint_every, model=model_for_task(model, TASK))


def wait_for_step(run, step: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while run.snapshot().step < step and time.monotonic() < deadline:
        time.sleep(0.005)
    return run.snapshot().step


# -- the library -----------------------------------------------------------------------------
def test_autosaves_every_checkpoint_every_steps_and_at_the_end(tmp_path, monkeypatch):
    saved = []

    def recording_save_run(out, model, task, history, state):
        saved.append((history["status"], history["steps"], state is not None))
        return real_save_run(out, model, task, history, state)

    real_save_run = background.save_run
    monkeypatch.setattr(background, "save_run", recording_save_run)
    run_id, run = lab.new_run(tiny_config(6), TASK, None, tmp_path)
    run.start()
    run.join(timeout=120)
    assert saved == [("checkpoint", 2, True), ("checkpoint", 4, True), ("completed", 6, True)]
    path = lab.autosave_path(tmp_path, run_id)
    assert read_info(path).history["steps"] == read_state(resume_path(path)).step == 6
    assert run.snapshot().saved_step == 6


def test_a_stopped_run_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path):
    config = tiny_config(60, checkpoint_every=7)
    _, straight = lab.new_run(config, TASK, None, tmp_path / "straight")
    straight.start()  # alone: two models built at once share torch's global seed
    straight.join(timeout=120)
    run_id, stopped = lab.new_run(config, TASK, None, tmp_path)
    stopped.start()
    step = wait_for_step(stopped, 3)
    stopped.stop()
    stopped.join(timeout=120)
    progress = stopped.snapshot()
    assert progress.status == "stopped" and 3 <= progress.step < 60, progress.message
    assert progress.saved_step == progress.step >= step  # Stop saves

    [listed] = lab.autosaves(tmp_path)
    assert (listed.run_id, listed.status, listed.step, listed.steps, listed.resumable) == (
        run_id, "stopped", progress.step, 60, True)

    resumed = lab.resumed_run(tmp_path, run_id, "cpu")
    assert resumed.snapshot().step == progress.step  # the charts start with the run so far
    resumed.start()
    resumed.join(timeout=120)
    result = resumed.result
    assert result.status == "completed" and result.history["steps"] == 60
    assert result.history["resumed_at"] == [progress.step]
    expected = straight.result.model.state_dict()
    for name, tensor in result.model.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert result.history["train_loss"] == straight.result.history["train_loss"]


def test_a_failed_autosave_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(background, "save_run", full_disk)
    _, run = lab.new_run(tiny_config(4), TASK, None, tmp_path)
    run.start()
    run.join(timeout=120)
    progress = run.snapshot()
    assert progress.status == "completed" and run.result is not None
    assert "No space left on device" in progress.autosave_error
    assert str(tmp_path) not in progress.autosave_error  # the page shows it: no server path
    assert progress.saved_step is None


def test_an_autosave_without_its_resume_file_is_refused_with_a_sentence(tmp_path):
    run_id, run = lab.new_run(tiny_config(2), TASK, None, tmp_path)
    run.start()
    run.join(timeout=120)
    resume_path(lab.autosave_path(tmp_path, run_id)).unlink()
    assert not lab.autosaves(tmp_path)[0].resumable
    with pytest.raises(ValueError, match="resume file is missing") as refused:
        lab.resumed_run(tmp_path, run_id, "cpu")
    assert str(tmp_path) not in str(refused.value) and run_id in str(refused.value)
    with pytest.raises(ValueError, match="run must be an id"):
        lab.autosave_path(tmp_path, "../../etc/passwd")


# what a server killed during an autosave leaves: (the checkpoint's step, the resume
# file's, the pending resume file's; None: absent) and the step the run resumes from
KILLED_SAVES = {"before the checkpoint": ((4, 4, 6), 4),
                "before the rename": ((6, 4, 6), 6),
                "before the first rename": ((6, None, 6), 6),
                "after the rename": ((6, 6, None), 6)}


@pytest.mark.parametrize("point", KILLED_SAVES)
def test_a_server_killed_during_an_autosave_leaves_a_run_that_resumes(tmp_path, monkeypatch,
                                                                      point):
    saved: dict[int, tuple[bytes, bytes]] = {}

    def keeping_save_run(out, model, task, history, state):
        real_save_run(out, model, task, history, state)
        saved[history["steps"]] = (out.read_bytes(), resume_path(out).read_bytes())

    real_save_run = background.save_run
    monkeypatch.setattr(background, "save_run", keeping_save_run)
    run_id, run = lab.new_run(tiny_config(8), TASK, None, tmp_path)
    run.start()
    run.join(timeout=120)
    path = lab.autosave_path(tmp_path, run_id)
    (checkpoint, resume, pending), step = KILLED_SAVES[point]
    for file, at in ((path, checkpoint), (resume_path(path), resume),
                     (pending_path(path), pending)):
        file.unlink(missing_ok=True)
        if at is not None:
            file.write_bytes(saved[at][0 if file == path else 1])
    (path.parent / f".{path.name}.999999.abc.tmp").write_bytes(b"a write cut off")

    [listed] = lab.autosaves(tmp_path)
    assert listed.resumable and listed.step == checkpoint
    resumed = lab.resumed_run(tmp_path, run_id, "cpu")
    assert resumed.snapshot().step == step
    resumed.start()
    resumed.join(timeout=120)
    assert resumed.result.history["resumed_at"] == [step]
    assert resumed.result.history["steps"] == 8


def test_live_runs_never_start_a_second_run_of_one_id(tmp_path):
    live, places = lab.LiveRuns(), WorkSlots({"training": 2})
    run_id, first = lab.new_run(tiny_config(100_000), TASK, None, tmp_path)
    try:
        assert live.start(run_id, first, "key", places.claim("training", "a", "a run")) is first
        duplicate = background.BackgroundRun(tiny_config(1), TASK)  # a second Resume
        second = places.claim("training", "b", "a run")
        assert live.start(run_id, duplicate, "other", second) is first
        assert duplicate.snapshot().status == "idle"  # never started
        assert places.held("training") == 1  # the duplicate's place is given back
        assert live.get(run_id) is first and live.running() == {run_id}
        assert live.owns(run_id, "key") and not live.owns(run_id, "other")
        assert not live.owns(run_id, None) and not live.owns(run_id, "")
    finally:
        first.stop()
        first.join(timeout=120)
    assert live.running() == set() and places.held() == 0


class Session:
    """Stands in for a browser session's token."""


def test_a_new_owner_replaces_the_old_one():
    job = BackgroundJob(lambda progress, stop: stop.wait(120))
    old_session, new_session = Session(), Session()
    job.stop_when_collected(old_session)
    job.stop_when_collected(new_session)  # a reloaded page adopts the run
    job.start()
    del old_session
    gc.collect()
    assert not job.stopped
    del new_session
    gc.collect()
    assert job.stopped
    job.join(timeout=10)


# -- the page --------------------------------------------------------------------------------
@pytest.fixture
def user_dir(monkeypatch, tmp_path) -> Path:
    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    return tmp_path


@pytest.fixture
def sessions(user_dir):
    """New Train page sessions of one server (as a reload makes); their runs end after."""
    opened: list[AppTest] = []

    def open_session(run_id: str | None = None, owner: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
        if run_id is not None:
            at.query_params["run"] = run_id
        if owner is not None:
            at.query_params["owner"] = owner
        at.switch_page("pages/train.py").run()
        assert not at.exception, at.exception
        opened.append(at)
        return at

    yield open_session
    for at in opened:
        run = at.session_state["train_run"] if "train_run" in at.session_state else None
        if run is not None:
            run.stop()
            run.join(timeout=120)


def start_run(at: AppTest, steps: int) -> None:
    at.selectbox(key="task").set_value("recall")
    at.radio(key="operator").set_value("fd")
    at.radio(key="size").set_value("tiny")
    at.slider(key="steps").set_value(steps)
    at.button[0].click()  # the form's Start button
    at.run()
    assert not at.exception and not at.error


def test_a_reloaded_page_finds_its_run_still_running(sessions):
    first = sessions()
    start_run(first, 5000)
    run_id = first.session_state["train_run_id"]
    assert first.query_params["run"] == run_id

    # a reload keeps the address, with its owner key; the session state is new
    reloaded = sessions(run_id, first.query_params["owner"])
    assert reloaded.session_state["train_run"] is first.session_state["train_run"]
    assert not reloaded.session_state["train_run"].snapshot().finished
    assert reloaded.slider(key="steps").value == 5000
    assert reloaded.radio(key="operator").value == "fd"
    assert reloaded.button(key="stop")  # watched live, with its Stop button


def test_an_address_of_a_run_gone_or_malformed_is_said_so(sessions):
    gone = sessions("recall-fd-20250101-120000-abcd")  # e.g. the server restarted since
    assert any("no longer running" in info.value for info in gone.info)
    assert "train_run" not in gone.session_state
    malformed = sessions("../secret")
    assert len(malformed.error) == 1 and "run must be an id" in malformed.error[0].value


def test_stop_saves_and_a_new_session_resumes_the_run_to_its_steps(sessions, user_dir):
    first = sessions()
    start_run(first, 60)
    run = first.session_state["train_run"]
    wait_for_step(run, 3)
    run.stop()  # as the Stop button does
    run.join(timeout=120)
    stopped_at = run.snapshot().step
    assert run.snapshot().status == "stopped" and stopped_at < 60

    later = sessions()  # the tab was closed: no address, no session state
    run_id = first.session_state["train_run_id"]
    listed = [m.value for m in later.markdown if run_id in m.value]
    assert listed and f"step {stopped_at} of 60" in listed[0]
    assert "· stopped ·" in listed[0]
    later.button(key=f"resume-{run_id}").click().run()
    assert not later.exception and not later.error
    resumed = later.session_state["train_run"]
    assert later.slider(key="steps").value == 60  # the form shows the resumed settings
    resumed.join(timeout=120)
    assert resumed.result.status == "completed"
    assert resumed.result.history["steps"] == 60
    assert resumed.result.history["resumed_at"] == [stopped_at]


@pytest.mark.parametrize("name", ["my run", "run!", "a" * 65, " leading-space"])
def test_a_refused_save_name_is_reported_and_nothing_is_saved(sessions, user_dir, name):
    at = sessions()
    start_run(at, 10)
    at.session_state["train_run"].join(timeout=120)
    at.run()
    at.text_input(key="save_name").set_value(name)
    at.button(key="save").click().run()
    assert not at.exception
    assert len(at.error) == 1 and "name must be 1 to 64 letters" in at.error[0].value
    assert repr(name) in at.error[0].value  # the name as typed, not a cleaned-up one
    assert list(user_dir.glob("*.safetensors")) == []  # nothing saved under any name


def test_saving_under_a_name_keeps_it_exactly_and_drops_the_autosave(sessions, user_dir):
    at = sessions()
    start_run(at, 10)
    at.session_state["train_run"].join(timeout=120)
    at.run()
    run_id = at.session_state["train_run_id"]
    assert at.text_input(key="save_name").value == run_id
    at.text_input(key="save_name").set_value("My_Run-1")
    at.button(key="save").click().run()
    assert not at.exception
    assert [p.name for p in user_dir.glob("*.safetensors")] == ["My_Run-1.safetensors"]
    assert lab.autosaves(user_dir) == []


def test_discard_deletes_the_autosave(sessions, user_dir):
    at = sessions()
    start_run(at, 10)
    at.session_state["train_run"].join(timeout=120)
    at.run()
    run_id = at.session_state["train_run_id"]
    assert [save.run_id for save in lab.autosaves(user_dir)] == [run_id]
    at.button(key=f"discard-{run_id}").click().run()
    assert not at.exception
    assert lab.autosaves(user_dir) == []
    assert list((user_dir / lab.AUTOSAVE_FOLDER).iterdir()) == []

