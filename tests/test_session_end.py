"""A session that ends drops the timings it asked for and nobody took yet (pages/_ui/timing):
a closed tab must not leave the server timing its settings."""

from __future__ import annotations

import gc

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
