"""Timings taken in the background (``tnn_core.lab.common.quiet_timing``), and pages that wait for
background work without blocking: a fragment looks again every POLL_S seconds."""

from __future__ import annotations

import streamlit as st

from pages._ui import session, session_keys
from tnn_core.lab.common.quiet_timing import Measurement, QuietTimer

MEASUREMENTS_KEPT = 64  # settings remembered per session and kind
POLL_S = 0.5  # how often a page waiting for background work looks again

TIMER = QuietTimer()  # the server's one background timer


def page_activity() -> None:
    """A page script (or a fragment of one) starts or ends: timings wait for the quiet
    after it. Pages with timings call it at both ends; ``frame.ensure_app_frame`` at the
    start."""
    TIMER.activity()


def measurement(kind: str, setting: tuple, run) -> Measurement:
    """This session's timing of ``setting``, submitted once and taken in the background.

    A timing is a measurement of this machine now, so it is not shared between sessions:
    one noisy measurement must not stick for everyone. Submitting a new setting drops
    this session's timings of ``kind`` not taken yet (a slider dragged through ten values
    is timed at the last), and a session that ends drops those it leaves."""
    taken = st.session_state.get(session_keys.measured(kind))
    if taken is None:  # the session's timings of this kind; those not taken end with it
        taken = st.session_state[session_keys.measured(kind)] = {}
        session.when_session_ends(_cancel_all, taken)
    found = taken.get(setting)
    if found is None or (found.cancelled and not found.ready):
        for older in taken.values():
            older.cancel()
        found = taken[setting] = TIMER.submit(run)
        while len(taken) > MEASUREMENTS_KEPT:
            del taken[next(iter(taken))]  # the oldest setting
    return found


def _cancel_all(taken: dict[tuple, Measurement]) -> None:
    for found in taken.values():
        found.cancel()


def poll_until(ready, waiting, every: float = POLL_S) -> None:
    """``waiting()`` in a fragment that looks again every ``every`` seconds and reruns the
    page once ``ready()`` (which also stops the looking): for work done off the request
    path."""

    @st.fragment(run_every=every)
    def poll():
        if ready():
            st.rerun()
        waiting()

    poll()


def when_measured(found: Measurement, draw, waiting) -> None:
    """``draw(found)`` if it has been taken; else ``waiting()`` until it is (``poll_until``)."""
    if found.ready:
        draw(found)
    else:
        poll_until(lambda: found.ready, waiting)
