"""A training run in a background thread, watched from outside (the app's Train page).

    run = BackgroundRun(config, task)
    run.start()
    run.snapshot()        # a consistent copy of the progress, safe from any thread
    run.stop()            # ask the loop to end after the current step
    run.result            # TrainResult once finished

The thread only calls ``training.train`` and writes progress under a lock; it never
touches the UI. ``stop_when_collected(owner)`` ties the run's life to an object (the
app passes one kept in the browser session's state): when that object is garbage
collected, the session has ended, and the run is stopped.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field

from tnn_core.training.loop import Callbacks, TrainConfig, TrainResult, train
from tnn_core.training.tasks import Task

__all__ = ["Progress", "BackgroundRun", "BackgroundJob"]

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """What a watcher draws. ``status``: idle, running, completed, stopped, diverged, failed."""

    status: str = "idle"
    message: str = ""
    step: int = 0
    steps: int = 0
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, train loss)
    evals: list[dict] = field(default_factory=list)  # the history's evaluation entries
    tokens_per_s: float = 0.0
    elapsed_s: float = 0.0

    @property
    def finished(self) -> bool:
        return self.status not in ("idle", "running")


class BackgroundRun:
    """One training run on a daemon thread, with a thread-safe progress record."""

    def __init__(self, config: TrainConfig, task: Task | None = None, command: str = "app"):
        self.config = config
        self.task = task
        self.command = command
        self.result: TrainResult | None = None
        self._progress = Progress(steps=config.steps)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tnn-train", daemon=True)
        self._started = 0.0

    # -- control ----------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            self._progress.status = "running"
            self._started = time.perf_counter()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def stop_when_collected(self, owner: object) -> None:
        """Stop this run when ``owner`` is garbage collected (its session ended)."""
        weakref.finalize(owner, self._stop.set)

    # -- watching ---------------------------------------------------------------------------
    def snapshot(self) -> Progress:
        with self._lock:
            p = self._progress
            elapsed = (time.perf_counter() - self._started) if p.status == "running" \
                else p.elapsed_s
            return Progress(p.status, p.message, p.step, p.steps, list(p.losses),
                            [dict(e) for e in p.evals], p.tokens_per_s, elapsed)

    # -- the thread -------------------------------------------------------------------------
    def _on_step(self, step: int, loss: float, rate: float, lr: float) -> None:
        with self._lock:
            self._progress.step = step
            self._progress.losses.append((step, loss))
            self._progress.tokens_per_s = rate

    def _on_eval(self, step: int, metrics: dict) -> None:
        with self._lock:
            self._progress.evals.append(metrics)

    def _run(self) -> None:
        try:
            result = train(self.config, self.task, Callbacks(self._on_step, self._on_eval),
                           stop_event=self._stop, command=self.command)
            status, message = result.status, result.message
            rate = result.history.get("tokens_per_s", 0.0)
        except Exception as err:  # noqa: BLE001 - reported to the watcher, not raised
            log.error("training run failed: %s", traceback.format_exc())
            result, status, message, rate = None, "failed", f"{type(err).__name__}: {err}", 0.0
        with self._lock:
            self.result = result
            self._progress.status = status
            self._progress.message = message
            self._progress.elapsed_s = time.perf_counter() - self._started
            if rate:
                self._progress.tokens_per_s = rate


class BackgroundJob:
    """Any long job ``fn(on_progress, stop_event) -> result`` on a daemon thread.

    ``on_progress(fraction, item)`` records the fraction done and appends ``item`` to
    ``items``; the benchmark harness's ``run_grid`` has exactly this shape."""

    def __init__(self, fn):
        self._fn = fn
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tnn-job", daemon=True)
        self.fraction = 0.0
        self.items: list = []
        self.result = None
        self.error: str | None = None
        self.done = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def stop_when_collected(self, owner: object) -> None:
        weakref.finalize(owner, self._stop.set)

    def snapshot(self) -> tuple[float, list, bool, str | None]:
        """(fraction done, items so far, finished, error message or None)."""
        with self._lock:
            return self.fraction, list(self.items), self.done, self.error

    def _progress(self, fraction: float, item=None) -> None:
        with self._lock:
            self.fraction = fraction
            if item is not None:
                self.items.append(item)

    def _run(self) -> None:
        try:
            result, error = self._fn(self._progress, self._stop), None
        except Exception as err:  # noqa: BLE001 - reported to the watcher, not raised
            log.error("background job failed: %s", traceback.format_exc())
            result, error = None, f"{type(err).__name__}: {err}"
        with self._lock:
            self.result, self.error, self.done = result, error, True
