"""Places for heavy work on one server (tnn_core/lab/common/work_slots.py): a kind's places
and a session's share both hold, a refusal says when a place frees up, and a background
thread gives its place back however its work ends."""

from __future__ import annotations

import threading

import pytest

from tnn_core.lab.common.background import BackgroundJob
from tnn_core.lab.common.work_slots import NoPlace, WorkSlots, default_places


def test_a_kind_takes_at_most_its_places_and_frees_them_on_release():
    slots = WorkSlots({"training": 2, "heavy": 1}, per_session=5)
    first = slots.claim("training", "a", "a training run")
    slots.claim("training", "b", "a training run")
    with pytest.raises(NoPlace, match="all 2 places for training runs are taken"):
        slots.claim("training", "c", "a training run")
    slots.claim("heavy", "c", "a band ablation")  # another kind has its own places
    first.release()
    first.release()  # a second release gives back nothing more
    assert slots.held("training") == 1
    slots.claim("training", "c", "a training run")
    with pytest.raises(NoPlace):
        slots.claim("training", "d", "a training run")


def test_one_session_cannot_take_every_place():
    slots = WorkSlots({"training": 9, "heavy": 9}, per_session=2)
    slots.claim("training", "a", "a training run")
    slots.claim("heavy", "a", "a plan search")
    with pytest.raises(NoPlace, match="already runs a training run and a plan search"):
        slots.claim("heavy", "a", "a band ablation")
    slots.claim("heavy", "b", "a band ablation")  # another session still may


def test_a_refusal_says_when_the_first_place_frees_up():
    slots = WorkSlots({"training": 2, "heavy": 1})
    slots.claim("training", "a", "a training run", seconds_left=lambda: 400.0)
    slots.claim("training", "b", "a training run", seconds_left=lambda: 42.0)
    with pytest.raises(NoPlace, match="first frees up in about 40 s"):
        slots.claim("training", "c", "a training run")
    slots.claim("heavy", "a", "a sweep")  # one that cannot tell: no time is promised
    with pytest.raises(NoPlace, match="as soon as one of them ends"):
        slots.claim("heavy", "c", "a sweep")


def test_an_estimate_that_fails_or_means_nothing_is_left_out():
    slots = WorkSlots({"training": 1, "heavy": 1})
    slots.claim("training", "a", "a run", seconds_left=lambda: 1 / 0)
    with pytest.raises(NoPlace, match="as soon as one of them ends"):
        slots.claim("training", "b", "a run")


@pytest.mark.parametrize("fails", [False, True])
def test_a_background_job_releases_its_place_when_it_ends(fails):
    slots = WorkSlots({"training": 1, "heavy": 1})
    go = threading.Event()

    def work(on_progress, stop_event):
        go.wait(10)
        if fails:
            raise RuntimeError("the work failed")
        return 1

    job = BackgroundJob(work)
    job.hold(slots.claim("heavy", "a", "a job"))
    job.start()
    assert slots.held("heavy") == 1
    go.set()
    job.join(10)
    assert job.snapshot()[2]  # done
    assert slots.held("heavy") == 0


@pytest.mark.parametrize("places", [{"training": 0, "heavy": 1}, {"training": 1.5}])
def test_places_must_be_whole_and_positive(places):
    with pytest.raises(ValueError, match=r"places\['training'\] must be an integer ≥ 1"):
        WorkSlots(places)


def test_the_defaults_give_at_least_two_places_and_follow_the_environment(monkeypatch):
    assert default_places(1) == {"training": 2, "heavy": 2}
    assert default_places(8) == {"training": 8, "heavy": 8}
    monkeypatch.setenv("TOEPLITZ_LAB_TRAINING_PLACES", "3")
    assert default_places(8)["training"] == 3
    monkeypatch.setenv("TOEPLITZ_LAB_TRAINING_PLACES", "0")
    with pytest.raises(ValueError, match="at least 1"):
        default_places(8)
