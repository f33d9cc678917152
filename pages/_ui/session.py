"""One browser session's lifetime: a token kept in its state and collected when the session
ends, to which background work (a job, a timing not yet taken) is tied.

A session ends when its tab closes. Streamlit keeps a disconnected session for a reconnect
and lets it go only when another visit touches its store, so on a server nobody else
visits it would never end (issue 35: a closed tab's run still trained 900 s later). The
reaper closes a session disconnected for ``DISCONNECTED_GRACE_S`` and collects it, so its
token ends at most ``DISCONNECTED_GRACE_S + REAP_EVERY_S`` after the tab closed.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable

import streamlit as st

from pages._ui import session_keys, streamlit_internals

_LOG = logging.getLogger(__name__)

GRACE_VARIABLE = "TOEPLITZ_LAB_SESSION_GRACE_S"  # a server's own setting of the grace below


def _grace() -> float:
    """Seconds a disconnected session is kept for a reconnect (a network blip, a laptop
    lid): 60, or what GRACE_VARIABLE says (at least 1, at most a day)."""
    text = os.environ.get(GRACE_VARIABLE, "60")
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 1 <= seconds <= 86_400:
        raise ValueError(f"{GRACE_VARIABLE} must be a number of seconds in [1, 86400]; "
                         f"got {text[:60]!r}")
    return seconds


DISCONNECTED_GRACE_S = _grace()
REAP_EVERY_S = min(10.0, DISCONNECTED_GRACE_S / 2)  # how often the reaper looks


class _SessionToken:
    """Lives in one browser session's state; when the session ends it is collected."""

    def __init__(self, session_id: str | None):
        self.session_id = session_id  # Streamlit's id of the session; None outside a run


def session_token() -> object:
    """This browser session's token: a background job tied to it stops once it is collected."""
    token = st.session_state.get(session_keys.SESSION_TOKEN)
    if token is None:
        token = _SessionToken(streamlit_internals.current_session_id())
        st.session_state[session_keys.SESSION_TOKEN] = token
        _REAPER.watch(token)
    return token


def session_id() -> str:
    """This browser session's id, for the server's bookkeeping (work places); never shown.
    (Not Streamlit's id: AppTest gives every session the same one.)"""
    return str(id(session_token()))


def when_session_ends(callback: Callable, *args) -> None:
    """Call ``callback(*args)`` once this session has ended (its token collected)."""
    weakref.finalize(session_token(), callback, *args)


class _Reaper:
    """Closes the watched sessions that stay disconnected, on a daemon thread of its own
    (started with the first session of a server; AppTest has no server, and its sessions
    end when their state is collected)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[str, weakref.ref] = {}  # session id -> its token
        self._disconnected_since: dict[str, float] = {}  # session id -> time.monotonic()
        self._thread: threading.Thread | None = None

    def watch(self, token: _SessionToken) -> None:
        sid = token.session_id
        if sid is None or streamlit_internals.session_connected(sid) is None:
            return
        with self._lock:
            self._watched[sid] = weakref.ref(token)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="tnn-session-reaper",
                                                daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(REAP_EVERY_S)
            try:
                if self.reap(time.monotonic()):
                    gc.collect()  # a session's state is in reference cycles: end its token
            except Exception:  # noqa: BLE001 - the reaper outlives one bad look
                _LOG.exception("the session reaper failed; it looks again in %s s",
                               REAP_EVERY_S)

    def reap(self, now: float) -> bool:
        """Close the sessions disconnected for DISCONNECTED_GRACE_S by ``now``; True if any."""
        with self._lock:
            watched = list(self._watched.items())
        closed = False
        for sid, token in watched:
            connected = streamlit_internals.session_connected(sid)
            if connected is None:  # the server has gone (a test's): nothing left to close
                with self._lock:
                    self._watched.pop(sid, None)
                self._disconnected_since.pop(sid, None)
                continue
            if token() is not None and connected:
                self._disconnected_since.pop(sid, None)
                continue
            since = self._disconnected_since.setdefault(sid, now)
            if token() is None or now - since >= DISCONNECTED_GRACE_S:
                if token() is not None:
                    streamlit_internals.close_session(sid)
                    closed = True
                with self._lock:
                    self._watched.pop(sid, None)
                self._disconnected_since.pop(sid, None)
        return closed


_REAPER = _Reaper()
