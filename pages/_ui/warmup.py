"""Start-up warm-up: what every visitor needs, prepared once while nobody waits.

A server's first visitor should not pay for the imports that drawing a table or a chart
pulls in, nor for decoding the lesson measurements kept beside the shipped checkpoints
(``stored_measurements.preload``: TNN's Table 10 pair, the band ablation, the
conversions, each a lookup afterwards), nor for Inspect's opening view of every shipped
checkpoint (``checkpoint_views.warm_up``). ``start`` prepares them once per process on one
background thread, one small step at a time, and only while the server is quiet: for
``QUIET_S`` seconds no page script (nor fragment) has run nor a view a page started
(``Memo.start``), and the background timer (``timing``) has nothing to time. After each
step it tells that timer, so a timing it overlapped is taken again. The steps fill the memo
(``memo``) the pages read; the thread calls no Streamlit API.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from pages._ui import streamlit_internals
from pages._ui.memo import STARTED_PREFIX
from tnn_core.lab.common import stored_measurements
from tnn_core.lab.common.quiet_timing import QuietTimer

__all__ = ["QUIET_S", "IMPORTS", "start"]

_LOG = logging.getLogger(__name__)

QUIET_S = 1.0  # seconds without page work before a step: outlasts the browser drawing a page
POLL_S = 0.05  # how often the warm-up looks for a running page script
# Modules the first table or chart of a page imports, heaviest first.
IMPORTS = ("pyarrow", "pandas", "plotly.graph_objects", "plotly.io")


def _page_working() -> bool:
    """Whether a page script runs, or a view a page started (``Memo.start``)."""
    return any(streamlit_internals.is_script_thread(thread)
               or thread.name.startswith(STARTED_PREFIX) for thread in threading.enumerate())


class _Quiet:
    """Waits for the quiet: for QUIET_S seconds no page script and no view a page started,
    and nothing for the timer to time."""

    def __init__(self, timer: QuietTimer):
        self.timer = timer
        self.quiet_since: float | None = None  # when it first saw neither, since it last did

    def wait(self) -> bool:
        """True once quiet; False once the process is closing."""
        while not _CLOSING.is_set():
            if _page_working() or not self.timer.wait_idle(0):
                self.quiet_since = None
            elif self.quiet_since is None:
                self.quiet_since = time.monotonic()
            elif time.monotonic() - self.quiet_since >= QUIET_S:
                return True
            _CLOSING.wait(POLL_S)
        return False


def _imports() -> Iterator[str]:
    for name in IMPORTS:
        importlib.import_module(name)
        yield name


def _run(jobs: Callable[[], Iterable[Iterator[object]]], timer: QuietTimer) -> None:
    """Each job's steps in turn, each after the quiet; a job that fails is logged and left."""
    quiet = _Quiet(timer)
    for job in (_imports(), stored_measurements.preload(), *jobs()):
        try:
            while quiet.wait():
                try:
                    next(job)
                finally:
                    timer.activity()  # a timing this step overlapped is taken again
            return  # the process is closing
        except StopIteration:
            continue
        except Exception:  # noqa: BLE001 - a warm-up is an optimisation: log, go on
            _LOG.warning("warm-up job failed; its views are computed on first use",
                         exc_info=True)


_STARTED = threading.Lock()
_CLOSING = threading.Event()
_thread: threading.Thread | None = None


def start(jobs: Callable[[], Iterable[Iterator[object]]], timer: QuietTimer) -> None:
    """On a daemon thread, once per process (later calls do nothing): the imports, the
    stored lesson measurements, then the iterators ``jobs()`` returns, whose every
    ``next`` is one step."""
    global _thread
    with _STARTED:
        if _thread is None:
            _thread = threading.Thread(target=_run, args=(jobs, timer), name="warm-up",
                                       daemon=True)
            _thread.start()


@atexit.register
def _close(timeout_s: float = 90.0) -> None:
    """At exit: no new step, and wait for the steps and computations under way (a daemon
    thread still inside torch when the interpreter exits aborts the process). The longest
    step, a length sweep over the evaluation set, stops at its 60 s deadline."""
    _CLOSING.set()
    for thread in threading.enumerate():
        if thread.name == "warm-up" or thread.name.startswith(STARTED_PREFIX):
            thread.join(timeout_s)
