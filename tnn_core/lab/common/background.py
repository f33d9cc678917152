"""Long work on a background thread, watched from outside (the Train, Compress and Speed pages).

    run = BackgroundRun(config, task)       # a training run (training.train)
    run = BackgroundRun(config, task, autosave=path)   # ... kept resumable, as the CLI's --out
    job = BackgroundJob(fn)                 # any fn(on_progress, stop_event) -> result
    run.start()
    run.snapshot()        # a consistent copy of the progress, safe from any thread
    run.stop()            # ask the work to end (a training run: after the current step)
    run.result            # the result once finished
    run.hold(slot)        # a place claimed in work_slots, released when the work ends

Both are a ``BackgroundThread``: the thread only does the work and writes progress under
a lock; it never touches the UI. ``stop_when_collected(owner)`` ties the work's life to
an object (the app passes one kept in the browser session's state): when that object is
garbage collected, the session has ended, and the work is stopped. A later owner replaces
the earlier one (a reloaded page that adopts a run).

A run with ``autosave`` writes its checkpoint and resume file there as the CLI writes
``--out`` (``cli.save_run``): every ``config.checkpoint_every`` steps, when it stops and at
the end; ``resume=`` (``resume.load_resume``) continues such a save, exactly as the run
would have gone on.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tnn_core.checks import check_int
from tnn_core.lab.common.work_slots import WORK_SLOTS, Slot
from tnn_core.training.cli import save_run
from tnn_core.training.config import TrainConfig
from tnn_core.training.loop import Callbacks, TrainResult, train
from tnn_core.training.resume import Resume, TrainState
from tnn_core.training.tasks import Task

__all__ = ["JOB_THREADS", "BackgroundThread", "BackgroundJob", "Progress", "BackgroundRun",
           "start_in_place"]

log = logging.getLogger(__name__)

# torch threads of work started from the app (a training run, a conversion, a search): every
# core but one, which stays with the pages and the browser (on 2 cores a run with both took a
# slider move from 1 s to 3-5 s)
JOB_THREADS = max(1, (os.cpu_count() or 1) - 1)


class BackgroundThread:
    """The skeleton: a daemon thread, a stop event, a lock, and the result or the error.

    Subclasses implement ``_work()`` (on the thread; returns the result; should end
    soon after ``self._stop`` is set) and ``_finish(result, error)`` (called under the
    lock when the work ends; ``error`` is "Type: message" if it raised, else None)."""

    def __init__(self, name: str):
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._owner: weakref.finalize | None = None
        self._slot: Slot | None = None
        self.result = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether a stop was asked for (the work may still be finishing)."""
        return self._stop.is_set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def stop_when_collected(self, owner: object) -> None:
        """Stop the work when ``owner`` is garbage collected (its session ended); a new
        owner replaces the previous one, whose end no longer stops the work."""
        if self._owner is not None:
            self._owner.detach()
        self._owner = weakref.finalize(owner, self._stop.set)

    def hold(self, slot: Slot) -> None:
        """Keep ``slot`` (a place of ``work_slots``) while the work runs; it is released
        when the work ends, however it ends. Before ``start()``."""
        self._slot = slot

    def seconds_left(self) -> float | None:
        """About how long the work has to go; None when it cannot tell."""
        return None

    def _work(self):
        raise NotImplementedError

    def _finish(self, result, error: str | None) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            result, error = self._work(), None
        except Exception as err:  # noqa: BLE001 - reported to the watcher, not raised
            log.error("%s failed: %s", self._thread.name, traceback.format_exc())
            result, error = None, _in_words(err)
        with self._lock:
            self.result = result
            self._finish(result, error)
        if self._slot is not None:
            self._slot.release()


def _in_words(err: Exception) -> str:
    """What a watcher shows for ``err``: a ValueError's sentence (the library's refusals),
    a failed file operation's reason with no path, and for anything else no more than that it
    happened: a class name or a server path means nothing to the page's reader."""
    if isinstance(err, ValueError):
        return str(err)
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror} (the server's log has the details)"
    return "an unexpected error; the server's log has the details"


def start_in_place(job: BackgroundThread, owner: str, label: str) -> None:
    """Start ``job`` in a place for heavy work (``work_slots``) claimed for the session
    ``owner``; ``label`` is the work in words ("a band ablation"). It gives the place back
    when it ends. NoPlace, whose sentence says what is busy and when a place frees up (from
    the holders' ``seconds_left``), when none is free: then nothing starts."""
    job.hold(WORK_SLOTS.claim("heavy", owner, label, job.seconds_left))
    job.start()


class BackgroundJob(BackgroundThread):
    """Any long job ``fn(on_progress, stop_event) -> result`` on a daemon thread.

    ``on_progress(fraction, item)`` records the fraction done and appends ``item`` to
    ``items``; the benchmark harness's ``run_grid`` has exactly this shape."""

    def __init__(self, fn):
        super().__init__("tnn-job")
        self._fn = fn
        self.fraction = 0.0
        self.items: list = []
        self.error: str | None = None
        self.done = False
        self._started = 0.0

    def start(self) -> None:
        self._started = time.monotonic()
        super().start()

    def seconds_left(self) -> float | None:
        """About how long the job has to go at its rate so far; None before any progress."""
        with self._lock:
            fraction, done = self.fraction, self.done
        if done or not 0 < fraction <= 1:
            return None
        return (time.monotonic() - self._started) * (1 - fraction) / fraction

    def snapshot(self) -> tuple[float, list, bool, str | None]:
        """(fraction done, items so far, finished, error message or None)."""
        with self._lock:
            return self.fraction, list(self.items), self.done, self.error

    def _progress(self, fraction: float, item=None) -> None:
        with self._lock:
            self.fraction = fraction
            if item is not None:
                self.items.append(item)

    def _work(self):
        return self._fn(self._progress, self._stop)

    def _finish(self, result, error: str | None) -> None:
        self.error, self.done = error, True


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
    # the kernel snapshots' record (training/snapshots.py); None before the first or for a
    # model without kernels. Each is a fresh dict, never changed once made
    kernel_snapshots: dict | None = None
    saved_step: int | None = None  # the step of the newest autosave; None before the first
    autosave_error: str | None = None  # why the newest autosave failed (no path); None if not

    @property
    def finished(self) -> bool:
        return self.status not in ("idle", "running")


class BackgroundRun(BackgroundThread):
    """One training run on a daemon thread, with a thread-safe progress record."""

    def __init__(self, config: TrainConfig, task: Task | None = None, command: str = "app",
                 threads: int | None = None, nice: int = 0, autosave: Path | None = None,
                 resume: Resume | None = None):
        """threads: torch CPU threads for this run (``torch.set_num_threads`` on its own
        thread, which leaves other threads' setting alone); None keeps torch's default.
        nice: added to the run thread's scheduling niceness (Linux, where niceness is per
        thread; ignored elsewhere), so it yields the CPU to the page scripts when both want
        it and takes all it is given otherwise.
        autosave: the checkpoint to keep resumable (it needs ``task``); a failed save is
        reported in ``Progress.autosave_error`` and the run goes on.
        resume: continue this save; the progress starts with its history."""
        super().__init__("tnn-train")
        if threads is not None:
            check_int("threads", threads, 1)
        if autosave is not None and task is None:
            raise ValueError("autosave needs the task, to write it into the checkpoint")
        self.threads = threads
        self.nice = check_int("nice", nice, 0, 19)
        self.config = config
        self.task = task
        self.command = command
        self.autosave = autosave
        self.resume = resume
        self.result: TrainResult | None = None
        self._progress = _progress_before(config.steps, resume)
        self._first_step = self._progress.step  # a resumed run's pace counts from here
        self._started = 0.0

    def start(self) -> None:
        with self._lock:
            self._progress.status = "running"
            self._started = time.perf_counter()
        super().start()

    def snapshot(self) -> Progress:
        with self._lock:
            p = self._progress
            elapsed = (time.perf_counter() - self._started) if p.status == "running" \
                else p.elapsed_s
            return Progress(p.status, p.message, p.step, p.steps, list(p.losses),
                            [dict(e) for e in p.evals], p.tokens_per_s, elapsed,
                            p.kernel_snapshots, p.saved_step, p.autosave_error)

    def seconds_left(self) -> float | None:
        """About how long the run has to go, at its pace so far; None before a step."""
        with self._lock:
            p = self._progress
            if p.status != "running" or p.step <= self._first_step:
                return None
            pace = (time.perf_counter() - self._started) / (p.step - self._first_step)
            return pace * (p.steps - p.step)

    def _on_step(self, step: int, loss: float, rate: float, lr: float) -> None:
        with self._lock:
            self._progress.step = step
            self._progress.losses.append((step, loss))
            self._progress.tokens_per_s = rate

    def _on_eval(self, step: int, metrics: dict) -> None:
        with self._lock:
            self._progress.evals.append(metrics)

    def _on_snapshot(self, record: dict) -> None:
        with self._lock:
            self._progress.kernel_snapshots = record

    def _save(self, model: nn.Module, history: dict, state: TrainState | None) -> None:
        """The autosave (``cli.save_run``); a full or unwritable disk is reported, and the
        previous save stays whole."""
        try:
            save_run(self.autosave, model, self.task, history, state)
        except OSError as err:
            log.error("autosave to %s failed: %s", self.autosave, err)
            with self._lock:
                self._progress.autosave_error = err.strerror or type(err).__name__  # no path
            return
        with self._lock:
            self._progress.saved_step, self._progress.autosave_error = history["steps"], None

    def _work(self) -> TrainResult:
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        if self.nice and sys.platform.startswith("linux"):
            tid = threading.get_native_id()
            niceness = min(19, os.getpriority(os.PRIO_PROCESS, tid) + self.nice)
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
        callbacks = Callbacks(self._on_step, self._on_eval, on_snapshot=self._on_snapshot)
        if self.autosave is not None:
            callbacks.on_checkpoint = self._save
        result = train(self.config, self.task, callbacks, stop_event=self._stop,
                       command=self.command, resume=self.resume)
        if self.autosave is not None:
            self._save(result.model, result.history, result.state)
        return result

    def _finish(self, result: TrainResult | None, error: str | None) -> None:
        p = self._progress
        p.status = "failed" if result is None else result.status
        p.message = error if result is None else result.message
        p.elapsed_s = time.perf_counter() - self._started
        if result is not None and result.history.get("tokens_per_s"):
            p.tokens_per_s = result.history["tokens_per_s"]


def _progress_before(steps: int, resume: Resume | None) -> Progress:
    """The progress before the first update: empty, or what ``resume`` holds so far."""
    if resume is None:
        return Progress(steps=steps)
    step, history = resume.state.step, resume.history
    losses = list(enumerate(history.get("train_loss", [])[:step], start=1))  # (step, loss)
    evals = [dict(e) for e in history.get("evals", []) if e["step"] <= step]
    return Progress(step=step, steps=steps, losses=losses, evals=evals,
                    kernel_snapshots=history.get("kernel_snapshots"), saved_step=step)
