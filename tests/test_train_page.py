"""AppTest journeys of the Train page: the form keeps the running settings, and "Save and
inspect" opens the model just saved."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoints
from tnn_core.lab.common import saving

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture
def train_page(monkeypatch, tmp_path):
    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/train.py").run()
    assert not at.exception
    yield at
    run = at.session_state["train_run"] if "train_run" in at.session_state else None
    if run is not None:
        run.stop()
        run.join(timeout=120)


def start_tiny_run(at: AppTest) -> None:
    at.selectbox(key="task").set_value("recall")
    at.radio(key="operator").set_value("fd")
    at.radio(key="size").set_value("tiny")
    at.slider(key="steps").set_value(2000)
    at.select_slider(key="lr").set_value(1e-2)
    at.button[0].click()  # the form's Start button
    at.run()
    assert not at.exception and not at.error


def test_the_form_shows_the_running_settings_after_another_page(train_page):
    at = train_page
    start_tiny_run(at)
    at.switch_page("pages/basics.py").run()
    at.switch_page("pages/train.py").run()
    assert not at.exception
    assert at.selectbox(key="task").value == "recall"
    assert at.radio(key="operator").value == "fd"
    assert at.radio(key="size").value == "tiny"
    assert at.slider(key="steps").value == 2000
    assert at.select_slider(key="lr").value == 1e-2


def test_save_and_inspect_opens_the_saved_model(train_page, tmp_path):
    at = train_page
    start_tiny_run(at)
    run = at.session_state["train_run"]
    run.stop()
    run.join(timeout=120)
    at.run()
    at.text_input(key="save_name").set_value("my-recall-run")
    at.button(key="save").click().run()
    assert not at.exception, at.exception
    assert (tmp_path / "my-recall-run.safetensors").is_file()
    assert at.selectbox(key="checkpoint").value == "user/my-recall-run"
    task = next(m.value for m in at.metric if m.label == "Task")
    operator = next(m.value for m in at.metric if m.label == "Operator, causal")
    assert (task, operator) == ("recall", "fd")


def no_space(*_):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_save_on_a_full_disk_is_a_sentence_and_loses_nothing(train_page, tmp_path,
                                                            monkeypatch):
    at = train_page
    start_tiny_run(at)
    run = at.session_state["train_run"]
    run.stop()
    run.join(timeout=120)
    at.run()
    autosaves = sorted(p.name for p in (tmp_path / "autosave").iterdir())
    at.text_input(key="save_name").set_value("full-disk")
    with monkeypatch.context() as full:
        full.setattr(os, "fsync", no_space)  # the temp file is written, then the disk is full
        at.button(key="save").click().run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "disk is full" in at.error[0].value
    assert str(tmp_path) not in at.error[0].value
    assert [p.name for p in tmp_path.iterdir()] == ["autosave"]  # no part of a file
    assert sorted(p.name for p in (tmp_path / "autosave").iterdir()) == autosaves
    at.button(key="save").click().run()  # space again: the same run saves
    assert not at.exception and (tmp_path / "full-disk.safetensors").is_file()


def test_every_save_of_the_user_folder_says_a_full_disk_in_a_sentence(tmp_path):
    def write(path: Path) -> None:
        path.write_bytes(b"part")
        no_space()

    with pytest.raises(ValueError, match="disk is full") as refused:
        saving.save_new("model", tmp_path, write)
    assert str(tmp_path) not in str(refused.value)
    assert list(tmp_path.iterdir()) == []
