"""A session that ends drops the timings it asked for and nobody took yet (pages/_ui/timing):
a closed tab must not leave the server timing its settings."""

from __future__ import annotations

import gc
import weakref

from test_app import open_link

TIMINGS = "measured:fft_check"  # the Basics page's FFT-against-dense timings, per setting


def basics_at(n: int):
    """An AppTest session on Basics at n (a link), and the timing it submitted there."""
    at = open_link("pages/basics.py", {"n": str(n)})
    (found,) = at.session_state[TIMINGS].values()
    return at, found


def test_the_timings_of_an_ended_session_are_dropped_and_a_live_ones_kept():
    ended, dropped = basics_at(4000)
    live, kept = basics_at(3999)
    assert not dropped.cancelled and not kept.cancelled
    del ended  # the session's state goes with it
    gc.collect()
    assert dropped.cancelled  # the timer will not take it (unless it had already begun)
    assert not kept.cancelled
    assert live.session_state[TIMINGS]  # still this session's


class _Token:  # a session's token (pages/_ui/session._SessionToken without a script run)
    def __init__(self, sid: str):
        self.session_id = sid


def test_the_reaper_closes_a_session_disconnected_past_its_grace_and_no_other(monkeypatch):
    from pages._ui import session, streamlit_internals

    state = {"live": True, "gone": False, "server-ended": None}  # session id -> connected
    closed = []
    monkeypatch.setattr(streamlit_internals, "session_connected", state.get)
    monkeypatch.setattr(streamlit_internals, "close_session", closed.append)
    reaper, tokens = session._Reaper(), {sid: _Token(sid) for sid in state}
    with reaper._lock:
        reaper._watched = {sid: weakref.ref(token) for sid, token in tokens.items()}
    grace = session.DISCONNECTED_GRACE_S
    assert not reaper.reap(0.0) and closed == []  # "gone" is seen disconnected from now
    assert "server-ended" not in reaper._watched  # no server: nothing to close, ever
    assert not reaper.reap(grace - 1) and closed == []  # a blip within the grace is kept
    assert reaper.reap(grace) and closed == ["gone"]
    assert set(reaper._watched) == {"live"}
