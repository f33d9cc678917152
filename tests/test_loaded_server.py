"""A loaded server still evaluates its own models: the app's evaluation limit counts the
evaluating thread's CPU time, which other processes' load does not use up; a stop at the
limit is not kept by the memo (the next try computes again) and Inspect shows its reason
beside the number."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._ui.memo import Memo
from tnn_core.training import evaluate
from tnn_core.training.budget import TimeLimitError
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.tasks import task_from_info

APP = str(Path(__file__).resolve().parents[1] / "app.py")
HOGS, HOG_SECONDS = 1, 240  # busy-looping processes beside the server, and their longest life


def test_a_wall_clock_stretched_by_load_does_not_stop_the_length_sweep(monkeypatch):
    """Every reading of the wall clock jumps 100 s: a machine so busy that each batch takes
    that long. The sweep's limit is on its own CPU time, so it still ends."""
    model, info = load(SHIPPED_DIR / "digits-tno.safetensors")
    task = task_from_info(info.task)
    ticks = itertools.count()
    monkeypatch.setattr(evaluate.time, "monotonic", lambda: 100.0 * next(ticks))
    rows = evaluate.length_sweep(model, task)
    assert rows[0]["scores"].sequences == evaluate.evaluation_size(task)


def test_the_work_limit_counts_this_threads_cpu_time_only():
    deadline = evaluate.work_deadline_after(0.05)
    time.sleep(0.2)  # wall time passes, no work done
    assert not deadline.passed()
    end = time.monotonic() + 5
    while not deadline.passed() and time.monotonic() < end:
        pass  # work
    assert deadline.passed()


def test_a_stop_at_the_time_limit_is_not_kept_but_a_refusal_is():
    calls = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise TimeLimitError("the evaluation at n = 64 passed its time limit")
        if x < 0:
            raise ValueError("x must be at least 0")
        return 2 * x

    memo = Memo(flaky, max_entries=4)
    with pytest.raises(TimeLimitError):
        memo(3)
    assert memo(3) == 6 and len(calls) == 2  # computed again
    with pytest.raises(ValueError):
        memo(-1)
    with pytest.raises(ValueError):
        memo(-1)
    assert len(calls) == 3  # the refusal was kept


@pytest.fixture
def cpu_hogs():
    """HOGS processes that busy-loop for at most HOG_SECONDS, killed when the test ends."""
    hogs = [subprocess.Popen([sys.executable, "-c",
                              f"import time\nend = time.time() + {HOG_SECONDS}\n"
                              "while time.time() < end: pass"]) for _ in range(HOGS)]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(10)


@pytest.mark.slow
def test_inspect_shows_the_evaluation_beside_a_cpu_hog(cpu_hogs):
    """charlm-tno, the heaviest shipped sweep (about 8 s of one core's CPU at 1×, 2× and 4×
    the training length), opened while a busy loop keeps a core (of this 2-core machine's,
    the other busy with the suite's other workers) taken."""
    at = AppTest.from_file(APP, default_timeout=HOG_SECONDS)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.selectbox(key="checkpoint").set_value("charlm-tno").run()
    end = time.monotonic() + HOG_SECONDS - 30
    while _evaluation(at) == "…" and time.monotonic() < end:
        time.sleep(2)
        at.run()
    assert all(hog.poll() is None for hog in cpu_hogs), "the load ended before the evaluation"
    assert not at.exception, at.exception
    value = _evaluation(at)
    assert value not in ("—", "…"), [c.value for c in at.caption][:5]
    assert value.endswith(" bpc") and 0 < float(value.split()[0]) < 8


def _evaluation(at: AppTest) -> str:
    return next(m.value for m in at.metric if m.label.startswith("Evaluation"))
