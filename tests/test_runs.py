"""Background runs: progress is recorded, Stop works, and a collected owner stops the run."""

import gc
import threading

import pytest

from tnn_core.training.background import BackgroundJob, BackgroundRun
from tnn_core.training.loop import TrainConfig
from tnn_core.training.tasks import get_task


def tiny_config(steps: int) -> TrainConfig:
    return TrainConfig(task="recall", steps=steps, batch_size=4, dim=16, layers=1,
                       eval_every=5, eval_batches=1, eval_batch_size=4, warmup=1, device="cpu")


def test_run_completes_and_records_progress():
    run = BackgroundRun(tiny_config(6), get_task("recall"))
    assert run.snapshot().status == "idle"
    run.start()
    run.join(timeout=120)
    p = run.snapshot()
    assert p.status == "completed" and p.finished
    assert p.step == 6 and [s for s, _ in p.losses] == [1, 2, 3, 4, 5, 6]
    assert [e["step"] for e in p.evals] == [0, 5, 6]
    assert p.tokens_per_s > 0 and p.elapsed_s > 0
    assert run.result is not None and run.result.status == "completed"


def test_stop_ends_the_run_early():
    run = BackgroundRun(tiny_config(100_000), get_task("recall"))
    run.start()
    run.stop()
    run.join(timeout=120)
    p = run.snapshot()
    assert p.status == "stopped" and p.step < 100_000


class Owner:
    pass


def test_run_stops_when_its_owner_is_collected():
    run = BackgroundRun(tiny_config(100_000), get_task("recall"))
    owner = Owner()
    run.stop_when_collected(owner)
    run.start()
    del owner
    gc.collect()
    run.join(timeout=120)
    assert run.snapshot().status == "stopped"


def test_failure_is_reported_not_raised():
    class Broken:
        name = "recall"

    run = BackgroundRun(tiny_config(3), Broken())  # not a Task: the loop raises inside
    run.start()
    run.join(timeout=60)
    p = run.snapshot()
    assert p.status == "failed" and p.message


def test_job_reports_items_fraction_and_cancel():
    gate = threading.Event()

    def work(progress, stop):
        for i in range(1000):
            if stop.is_set():
                return "cancelled"
            progress((i + 1) / 1000, i)
            if i == 2:
                gate.set()
            stop.wait(0.01)
        return "done"

    job = BackgroundJob(work)
    job.start()
    assert gate.wait(10)
    job.stop()
    job.join(timeout=10)
    fraction, items, done, error = job.snapshot()
    assert done and error is None and job.result == "cancelled"
    assert 3 <= len(items) < 1000 and items[:3] == [0, 1, 2]
    assert fraction == pytest.approx(len(items) / 1000)


def test_job_error_is_kept():
    job = BackgroundJob(lambda progress, stop: 1 / 0)
    job.start()
    job.join(timeout=10)
    assert job.snapshot()[3].startswith("ZeroDivisionError")
