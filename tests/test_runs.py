"""Background work: progress is recorded, Stop works, and a collected owner stops it."""

import gc
import threading

import pytest

from tnn_core.lab.common.background import BackgroundJob, BackgroundRun, Progress
from tnn_core.lab.train import progress_view
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.tasks import get_task


def tiny_config(steps: int) -> TrainConfig:
    model = ModelConfig(dim=16, layers=1, operator=OperatorConfig(causal=True))
    return TrainConfig(task="recall", steps=steps, batch_size=4, eval_every=5, eval_batches=1,
                       eval_batch_size=4, warmup=1, device="cpu",
                       model=model_for_task(model, get_task("recall")))


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
    assert run.stopped
    run.join(timeout=120)
    p = run.snapshot()
    assert p.status == "stopped" and p.step < 100_000


def test_progress_view_is_what_the_charts_draw():
    p = Progress(status="running", step=3, steps=2, losses=[(1, 2.5), (2, 2.0), (3, 1.5)],
                 evals=[{"step": 0, "loss": 3.0, "metric": 0.1},
                        {"step": 2, "loss": 2.2, "metric": 0.4}])
    view = progress_view(p)
    assert view.fraction == 1.0  # at most 1
    assert view.loss_steps.tolist() == [1, 2, 3] and view.losses.tolist() == [2.5, 2.0, 1.5]
    assert view.eval_steps.tolist() == [0, 2] and view.eval_losses.tolist() == [3.0, 2.2]
    assert view.eval_metrics.tolist() == [0.1, 0.4]
    assert (view.last_loss, view.last_metric) == (1.5, 0.4)
    empty = progress_view(Progress(steps=10))
    assert empty.fraction == 0 and empty.last_loss is None and empty.last_metric is None
    assert len(empty.loss_steps) == 0 and len(empty.eval_steps) == 0


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
    assert p.status == "failed" and p.message == UNEXPECTED  # no class name, no path
    assert run.result is None


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
    assert not job.stopped
    job.stop()
    assert job.stopped
    job.join(timeout=10)
    fraction, items, done, error = job.snapshot()
    assert done and error is None and job.result == "cancelled"
    assert 3 <= len(items) < 1000 and items[:3] == [0, 1, 2]
    assert fraction == pytest.approx(len(items) / 1000)


def test_job_stops_when_its_owner_is_collected():
    job = BackgroundJob(lambda progress, stop: stop.wait(60))
    owner = Owner()
    job.stop_when_collected(owner)
    job.start()
    del owner
    gc.collect()
    job.join(timeout=10)
    assert job.snapshot()[2] and job.result is True  # the wait ended by the stop event


UNEXPECTED = "an unexpected error; the server's log has the details"


def _raises(err: Exception):
    def work(progress, stop):
        raise err
    return work


@pytest.mark.parametrize("err, shown", [
    (ZeroDivisionError("division by zero"), UNEXPECTED),
    (ValueError("rank must be an integer in [2, 16]; got 32"),
     "rank must be an integer in [2, 16]; got 32"),  # the library's sentence, as it is
    (OSError(28, "No space left on device", "/srv/lab/user/x.safetensors"),
     "No space left on device (the server's log has the details)"),  # the path left out
])
def test_a_job_error_is_kept_in_words(err, shown):
    job = BackgroundJob(_raises(err))
    job.start()
    job.join(timeout=10)
    assert job.snapshot()[3] == shown


def test_a_run_sets_torch_threads_and_niceness_on_its_own_thread_only(monkeypatch):
    """The app's runs leave the CPU to the pages: threads and niceness hold inside the run,
    and the thread that started it keeps its own settings."""
    import os
    import sys

    import torch

    from tnn_core.lab.common import background

    seen = []

    def fake_train(config, task, callbacks, stop_event, command, resume):
        seen.append(torch.get_num_threads())
        if sys.platform.startswith("linux"):  # niceness is per thread there
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    monkeypatch.setattr(background, "train", fake_train)
    before = torch.get_num_threads()
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    run = BackgroundRun(tiny_config(1), get_task("recall"), threads=1, nice=5)
    run.start()
    run.join(timeout=60)
    assert seen[0] == 1 and torch.get_num_threads() == before
    if sys.platform.startswith("linux"):
        assert seen[1] == min(19, mine + 5) and os.getpriority(os.PRIO_PROCESS, 0) == mine
    with pytest.raises(ValueError, match="threads"):
        BackgroundRun(tiny_config(1), get_task("recall"), threads=0)
    with pytest.raises(ValueError, match="nice"):
        BackgroundRun(tiny_config(1), get_task("recall"), nice=20)
