"""Timings taken off the request path, while the server is quiet.

A page that shows a live timing (the Decomposition page's speed readout, the Basics page's
FFT-against-dense race) must not make a slider move wait for it, and must not time while
its own rerun, or the browser drawing it, holds the cores: on a 2-core machine that
measures the page, not the operator. So a page submits the measurement and draws at once;
one worker thread (one measurement at a time, server-wide) takes it once the server has
been quiet for ``quiet_s``, and takes it again if a page script started while it ran.
"""

from __future__ import annotations

import atexit
import math
import threading
import time
from collections.abc import Callable

MAX_ATTEMPTS = 3  # a measurement disturbed this often is kept, marked as disturbed


class Measurement:
    """One submitted timing. ``result`` and ``error`` stay None until it has been taken."""

    def __init__(self, run: Callable[[], object]):
        self._run = run
        self.result: object | None = None
        self.error: Exception | None = None
        self.disturbed = False  # a page script ran during every attempt
        self.cancelled = False
        self.done = threading.Event()

    @property
    def ready(self) -> bool:
        return self.done.is_set()

    def cancel(self) -> None:
        """Drop it if it has not been taken yet (a newer setting replaced it)."""
        self.cancelled = True


class QuietTimer:
    """Runs submitted measurements one at a time on a daemon thread, each only after
    ``quiet_s`` seconds without ``activity()``; one disturbed by activity is taken again,
    up to ``MAX_ATTEMPTS`` times. Thread-safe: shared by every session of a server."""

    def __init__(self, quiet_s: float = 0.5):
        if not (math.isfinite(quiet_s) and quiet_s >= 0):
            raise ValueError(f"quiet_s must be a finite number of seconds >= 0, got {quiet_s}")
        self.quiet_s = quiet_s
        self._changed = threading.Condition()
        self._queue: list[tuple[Measurement, int]] = []  # (measurement, attempts so far)
        self._last_activity = -math.inf
        self._activity_count = 0
        self._running = 0  # measurements being taken now (0 or 1)
        self._closed = False
        self._worker: threading.Thread | None = None
        # A daemon thread still inside torch when the interpreter exits aborts the process.
        atexit.register(self.close)

    def activity(self) -> None:
        """A page script started: measurements wait for the quiet after it."""
        with self._changed:
            self._last_activity = time.monotonic()
            self._activity_count += 1
            self._changed.notify_all()

    def submit(self, run: Callable[[], object]) -> Measurement:
        """Queue ``run()``; its return value becomes the measurement's ``result``."""
        measurement = Measurement(run)
        with self._changed:
            self._queue.append((measurement, 0))
            if self._worker is None and not self._closed:
                self._worker = threading.Thread(target=self._work, name="quiet-timer",
                                                daemon=True)
                self._worker.start()
            self._changed.notify_all()
        return measurement

    def close(self, timeout: float = 30.0) -> None:
        """Drop what is queued and wait for the measurement being taken, if any."""
        with self._changed:
            self._closed = True
            self._queue.clear()
            self._changed.notify_all()
        if self._worker is not None:
            self._worker.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running (for tests and benchmarks); False on
        timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._queue or self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def _next(self) -> tuple[Measurement, int, int] | None:
        """The next measurement to take, once the server is quiet; None once closed."""
        with self._changed:
            while True:
                if self._closed:
                    return None
                self._queue = [(m, a) for m, a in self._queue if not m.cancelled]
                if not self._queue:
                    self._changed.notify_all()  # wait_idle
                    self._changed.wait()
                    continue
                quiet_for = time.monotonic() - self._last_activity
                if quiet_for < self.quiet_s:
                    self._changed.wait(self.quiet_s - quiet_for)
                    continue
                measurement, attempts = self._queue.pop(0)
                self._running = 1
                return measurement, attempts, self._activity_count

    def _work(self) -> None:
        while (job := self._next()) is not None:
            measurement, attempts, activity_before = job
            try:
                result, error = measurement._run(), None
            except Exception as err:  # noqa: BLE001 - handed to the page, which says it
                result, error = None, err
            with self._changed:
                self._running = 0
                disturbed = self._activity_count != activity_before
                if error is None and disturbed and attempts + 1 < MAX_ATTEMPTS:
                    self._queue.insert(0, (measurement, attempts + 1))
                else:
                    measurement.result, measurement.error = result, error
                    measurement.disturbed = disturbed and error is None
                    measurement.done.set()
                self._changed.notify_all()
