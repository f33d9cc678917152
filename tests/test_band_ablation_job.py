"""Inspect's band ablation as a background job (``common.band_ablation``): it scores what
the synchronous ablation scored, reports batches scored over the total, holds a place for
heavy work, and stops when its session's token is collected (the tab closed)."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.ablation import band_restricted
from tnn_core.lab.common.background import BackgroundJob, start_in_place
from tnn_core.lab.common.band_ablation import band_ablation
from tnn_core.lab.common.work_slots import WORK_SLOTS
from tnn_core.training import evaluate
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.tasks import task_from_info

APP = str(Path(__file__).resolve().parents[1] / "app.py")
BAND = 9


@pytest.fixture(scope="module")
def digits_tno():
    model, info = load(SHIPPED_DIR / "digits-tno.safetensors")
    return model, task_from_info(info.task)


@pytest.mark.slow
def test_the_ablation_scores_what_the_synchronous_one_scored(digits_tno):
    """The reference is the ablation as it was computed before it became a job: each variant
    scored by ``evaluate.score`` at the training length."""
    model, task = digits_tno
    n, layers = task.seq_len, range(len(model.operators()))
    reference = [evaluate.score(model, task, n),
                 evaluate.score(band_restricted(model, n, BAND, layers), task, n)] + [
        evaluate.score(band_restricted(model, n, BAND, [layer]), task, n) for layer in layers]
    progress = []
    ablation = band_ablation(model, task, BAND, lambda f, item: progress.append(item))
    for ours, theirs in zip([ablation.full, ablation.restricted, *ablation.per_layer],
                            reference, strict=True):
        np.testing.assert_array_equal(ours.loss, theirs.loss)
        np.testing.assert_array_equal(ours.correct, theirs.correct)
        assert ours.metric == theirs.metric
    total = progress[-1][1]
    assert progress == [(k, total) for k in range(1, total + 1)]
    assert total % len(reference) == 0  # every variant scores the same batches


def test_an_ablation_stops_when_its_session_token_is_collected(digits_tno):
    model, task = digits_tno
    first_batch, go_on = threading.Event(), threading.Event()

    def run(on_progress, stop_event):
        def progress(fraction, item):
            on_progress(fraction, item)
            first_batch.set()
            go_on.wait(30)  # hold the job at its first batch until the token is gone

        return band_ablation(model, task, BAND, progress, stop_event)

    class Token:  # a session's token; collected when the session ends
        pass

    held_before = WORK_SLOTS.held("heavy")
    job, token = BackgroundJob(run), Token()
    job.stop_when_collected(token)
    start_in_place(job, "a session", "a band ablation")
    assert WORK_SLOTS.held("heavy") == held_before + 1
    assert first_batch.wait(60)
    del token
    gc.collect()
    go_on.set()
    job.join(60)
    fraction, items, done, error = job.snapshot()
    assert done and job.stopped and error is not None  # ended by its stop, not finished
    assert items[-1][0] == 1 and fraction < 0.5  # stopped at its next batch
    assert WORK_SLOTS.held("heavy") == held_before  # its place given back


@pytest.mark.slow
def test_inspect_runs_the_ablation_in_the_background_and_keeps_its_result():
    """digits-fd (not digits-tno, which other tests ablate at the same band in this process):
    the toggle starts the job, the page shows batches scored of the total while it runs, and
    once it ends the metrics; a second session finds the kept result at once."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.selectbox(key="checkpoint").set_value("digits-fd").run()
    at.toggle(key="atlas_ablation").set_value(True).run()
    assert not at.exception, at.exception
    running = [b for b in at.button if b.key == "ablation_stop"]
    assert running or _ablation_metrics(at), "neither running nor done"
    end = time.monotonic() + 240
    while not _ablation_metrics(at) and time.monotonic() < end:
        time.sleep(1)
        at.run()
    assert len(_ablation_metrics(at)) == 2 + 2  # full, all layers, each of its 2 layers
    again = AppTest.from_file(APP, default_timeout=300)
    again.run()
    again.switch_page("pages/inspect.py").run()
    again.selectbox(key="checkpoint").set_value("digits-fd").run()
    again.toggle(key="atlas_ablation").set_value(True).run()
    assert _ablation_metrics(again) == _ablation_metrics(at)  # kept, not computed again


def _ablation_metrics(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric
            if m.label.startswith(("Full kernels", "Every layer", "Only layer"))]
