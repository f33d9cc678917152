"""Start-up warm-up, and the server-wide memo it shares with the pages.

A server's first visitor should not pay for what every visitor needs: the imports that
drawing a table or a chart pulls in, and Inspect's opening view of every shipped
checkpoint (its model, task, atlas, channel matrix, length sweep). ``start`` prepares
them once per process on one background thread, one small step at a time, and only
while the server is quiet: for ``QUIET_S`` seconds no page script (nor fragment) has run
nor a view a page started, and the background timer (``tnn_core.lab.quiet_timing``) has
nothing to time. After each step it tells that timer, so a timing it overlapped is taken
again. The thread calls no Streamlit API.

``shared`` is the memo those steps fill and the pages read: one value per key for the
whole server, computed once even when a page asks for it while the warm-up is computing
it (the page then waits for that result instead of computing it a second time).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import inspect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future

import torch

from tnn_core.lab.quiet_timing import QuietTimer

__all__ = ["QUIET_S", "IMPORTS", "VIEW_THREADS", "Shared", "shared", "start"]

_LOG = logging.getLogger(__name__)

QUIET_S = 1.0  # seconds without page work before a step: outlasts the browser drawing a page
# torch threads a view is computed on: while a page loads, the browser holds a core of this
# 2-core machine, and a second OpenMP thread mostly waits for it (docs/benchmarks.md).
VIEW_THREADS = 1
POLL_S = 0.05  # how often the warm-up looks for a running page script
# Modules the first table or chart of a page imports, heaviest first.
IMPORTS = ("pyarrow", "pandas", "plotly.graph_objects", "plotly.io")
# Streamlit runs every page script, and every fragment rerun, on a thread of this name that
# ends with the run (streamlit.runtime.scriptrunner.ScriptRunner).
SCRIPT_THREAD = "ScriptRunner.scriptThread"
_STARTED_PREFIX = "shared-"  # the threads ``Shared.start`` computes on


class Shared:
    """``function``'s results for the whole server, computed on ``VIEW_THREADS`` torch
    threads: at most ``max_entries`` keys, the least recently used dropped first. The key is
    the arguments (bound to their names) except those whose name starts with "_", like
    Streamlit's caches: plain hashable values. A ValueError is kept like a value: these
    arguments fail the same way again. Thread-safe; the values are shared, so callers must
    not change them."""

    def __init__(self, function: Callable, max_entries: int):
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1; got {max_entries}")
        self.function, self.max_entries = function, max_entries
        self._signature = inspect.signature(function)
        self._entries: OrderedDict[tuple, Future] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, args: tuple, kwargs: dict) -> tuple:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple((name, value) for name, value in bound.arguments.items()
                     if not name.startswith("_"))

    def has(self, *args, **kwargs) -> bool:
        """Whether the value for these arguments is computed (a call returns at once)."""
        with self._lock:
            found = self._entries.get(self.key(args, kwargs))
        return found is not None and found.done()

    def __call__(self, *args, **kwargs):
        """The value, computed here unless it is computed or being computed elsewhere."""
        future, mine = self._entry(args, kwargs)
        if mine:
            self._compute(future, args, kwargs)
        return future.result()

    def start(self, *args, **kwargs) -> Future:
        """The value's future, computed on a new daemon thread unless it is computed or being
        computed elsewhere."""
        future, mine = self._entry(args, kwargs)
        if mine:
            threading.Thread(target=self._compute, args=(future, args, kwargs),
                             name=_STARTED_PREFIX + self.function.__name__,
                             daemon=True).start()
        return future

    def _entry(self, args: tuple, kwargs: dict) -> tuple[Future, bool]:
        """(the key's future, whether the caller must compute it)."""
        key = self.key(args, kwargs)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found, False
            future = self._entries[key] = Future()
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return future, True

    def _compute(self, future: Future, args: tuple, kwargs: dict) -> None:
        """Set ``future`` to the value or to the exception. A ValueError (a setting or file
        that cannot be used) is kept like a value, without its traceback (whose frames may
        hold an upload's bytes); any other exception is raised here and not kept."""
        try:
            with _torch_threads(VIEW_THREADS):
                future.set_result(self.function(*args, **kwargs))
        except ValueError as err:
            future.set_exception(err.with_traceback(None))
        except BaseException as err:
            key = self.key(args, kwargs)
            with self._lock:
                if self._entries.get(key) is future:
                    del self._entries[key]
            future.set_exception(err)
            raise


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """The calling thread's torch threads set to ``count`` for the block (an OpenMP
    setting of this thread only: other sessions and the timer keep theirs)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def shared(max_entries: int) -> Callable[[Callable], Shared]:
    """Decorator: ``Shared(function, max_entries)``."""
    return lambda function: Shared(function, max_entries)


def _page_working() -> bool:
    """Whether a page script runs, or a view a page started (``Shared.start``)."""
    return any(thread.name == SCRIPT_THREAD or thread.name.startswith(_STARTED_PREFIX)
               for thread in threading.enumerate())


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
    for job in (_imports(), *jobs()):
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
    """On a daemon thread, once per process (later calls do nothing): the imports, then
    the iterators ``jobs()`` returns, whose every ``next`` is one step."""
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
        if thread.name == "warm-up" or thread.name.startswith(_STARTED_PREFIX):
            thread.join(timeout_s)
