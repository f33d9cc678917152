"""The app's one cache of computed views: ``memo``, a server-wide memo.

One value per key for the whole server, computed once even when a page asks for it while
another session or the warm-up (``warmup``) is computing it: the caller then waits for that
result instead of computing it a second time. The key is the arguments bound to their names,
except those whose name starts with "_" (a model, a task: keyed by the digest passed beside
them, in an argument named as KEYED_BY says; a function that leaves arguments out without one
is refused when it is decorated); arrays are keyed by their bytes. A ValueError is kept like
a value: these arguments fail the same way again; a TimeLimitError (work stopped at its time
limit, a busy moment's failure) is not kept: the next call computes again.

The values are shared, not copied: nobody may change one. Every numpy array in a value is
made read-only to hold everyone to that, all the way down through dataclasses, tuples, lists
and dicts' values. What stays writable, and must not be written: torch tensors (which have
no read-only flag), the lists and dicts themselves, and objects of other classes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future

import numpy as np
import streamlit as st
import torch

from pages._ui import streamlit_internals
from tnn_core.lab.common.evaluation import TimeLimitError

__all__ = ["VIEW_THREADS", "STARTED_PREFIX", "Memo", "memo"]

# torch threads a checkpoint's view is computed on (``Memo(threads=...)``): while a page
# loads, the browser holds a core of this 2-core machine, and a second OpenMP thread mostly
# waits for it (docs/benchmarks.md).
VIEW_THREADS = 1
STARTED_PREFIX = "memo-"  # the threads ``Memo.start`` computes on
# the arguments that may stand for those left out of the key ("_" ones): the digest of the
# file a model came from, an upload's key (its digest), a task's key
KEYED_BY = ("digest", "digests", "key", "task_key")


class Memo:
    """``function``'s results for the whole server, at most ``max_entries`` keys (the least
    recently used dropped first). ``spinner``: what a page shows while it waits for a value
    not computed yet; ``threads``: the torch threads it is computed on (None: as the caller
    has them). Thread-safe."""

    def __init__(self, function: Callable, max_entries: int, spinner: str | None = None,
                 threads: int | None = None):
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1; got {max_entries}")
        self.function, self.max_entries = function, max_entries
        self.spinner, self.threads = spinner, threads
        self._signature = inspect.signature(function)
        _check_keyed(function, self._signature)
        self._entries: OrderedDict[tuple, Future] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, args: tuple, kwargs: dict) -> tuple:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple((name, _hashable(value)) for name, value in bound.arguments.items()
                     if not name.startswith("_"))

    def has(self, *args, **kwargs) -> bool:
        """Whether the value for these arguments is computed (a call returns at once)."""
        with self._lock:
            found = self._entries.get(self.key(args, kwargs))
        return found is not None and found.done()

    def __call__(self, *args, **kwargs):
        """The value, computed here unless it is computed or being computed elsewhere; a page
        waiting for it shows the spinner."""
        future, mine = self._entry(args, kwargs)
        if future.done() or self.spinner is None or not streamlit_internals.in_script_run():
            if mine:
                self._compute(future, args, kwargs)
            return future.result()
        with st.spinner(self.spinner):
            if mine:
                self._compute(future, args, kwargs)
            return future.result()

    def start(self, *args, **kwargs) -> Future:
        """The value's future, computed on a new daemon thread unless it is computed or being
        computed elsewhere."""
        future, mine = self._entry(args, kwargs)
        if mine:
            threading.Thread(target=self._compute, args=(future, args, kwargs),
                             name=STARTED_PREFIX + self.function.__name__,
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
        hold an upload's bytes), except a TimeLimitError, which its waiters get and the
        next call computes again; any other exception is raised here and not kept."""
        try:
            with _torch_threads(self.threads):
                future.set_result(_read_only(self.function(*args, **kwargs)))
        except TimeLimitError as err:
            self._forget(future, args, kwargs)
            future.set_exception(err.with_traceback(None))
        except ValueError as err:
            future.set_exception(err.with_traceback(None))
        except BaseException as err:
            self._forget(future, args, kwargs)
            future.set_exception(err)
            raise

    def _forget(self, future: Future, args: tuple, kwargs: dict) -> None:
        """Drop ``future``'s entry, so that the next call computes the value again."""
        key = self.key(args, kwargs)
        with self._lock:
            if self._entries.get(key) is future:
                del self._entries[key]


_MEMOS: dict[tuple[str, str], Memo] = {}  # (file, qualified name) -> its memo
_MEMOS_LOCK = threading.Lock()


def memo(max_entries: int, spinner: str | None = None,
         threads: int | None = None) -> Callable[[Callable], Memo]:
    """Decorator: ``Memo(function, max_entries, spinner, threads)``, one per function of one file. A
    page script runs again on every interaction; the function it decorates again finds its
    memo, values and all, as Streamlit's own caches do."""

    def decorate(function: Callable) -> Memo:
        where = (function.__code__.co_filename, function.__qualname__)
        with _MEMOS_LOCK:
            found = _MEMOS.get(where)
            if found is None:
                found = _MEMOS[where] = Memo(function, max_entries, spinner, threads)
            found.function = function  # the same code, defined again by the page's new run
        return found

    return decorate


def _check_keyed(function: Callable, signature: inspect.Signature) -> None:
    """ValueError when ``function`` leaves arguments out of the key and none of KEYED_BY
    stands for them (two calls with other models would share one value)."""
    names = list(signature.parameters)
    left_out = [name for name in names if name.startswith("_")]
    if left_out and not any(name in KEYED_BY for name in names):
        raise ValueError(f"memo of {function.__qualname__}: {', '.join(left_out)} left out of "
                         f"the key, but no argument named one of {', '.join(KEYED_BY)} keys "
                         "them")


def _hashable(value):
    """``value`` as a key: arrays by dtype, shape and a digest of their bytes."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return ("array", data.dtype.str, data.shape, hashlib.blake2b(data.tobytes()).digest())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *map(_hashable, value))
    if isinstance(value, dict):
        return ("dict", *sorted((k, _hashable(v)) for k, v in value.items()))
    hash(value)  # TypeError: a value that cannot be a key (pass it as an "_" argument)
    return value


def _read_only(value):
    """``value`` with every numpy array in it made read-only, through dataclasses, tuples,
    lists and dicts' values, however deep."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _read_only(getattr(value, field.name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            _read_only(item)
    elif isinstance(value, dict):
        for item in value.values():
            _read_only(item)
    return value


@contextlib.contextmanager
def _torch_threads(count: int | None) -> Iterator[None]:
    """The calling thread's torch threads set to ``count`` for the block (an OpenMP
    setting of this thread only: other sessions and the timer keep theirs); None: left."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
