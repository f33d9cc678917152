"""When the app in a Playwright page is idle: ``follow_socket`` watches the page's websocket
to the Streamlit server, ``wait_idle`` waits until no script runs and no request is on its
way. Every browser test waits with these."""

from __future__ import annotations

import time
import weakref

__all__ = ["IDLE", "follow_socket", "wait_idle"]

IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
# The page's websocket to the server: when (time.monotonic) it last sent a frame (a rerun
# request: a widget's value, a fragment's poll) and last received one, per page that
# follow_socket was given.
_FRAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
SENT_QUIET_S = 0.2  # wait_idle: nothing sent for this long, counted from its call too
RECEIVED_QUIET_S = 0.1  # ... and nothing received for this long
UNANSWERED_S = 5.0  # a frame the server never answers stops holding wait_idle after this


def follow_socket(page):
    """Let ``wait_idle`` follow ``page``'s websocket to the server; call it before the
    page's first ``goto`` (a socket opened earlier goes unseen). Returns the page."""
    frames = _FRAMES[page] = {"sent": 0.0, "received": 0.0}

    def on_socket(socket) -> None:
        socket.on("framesent", lambda _: frames.update(sent=time.monotonic()))
        socket.on("framereceived", lambda _: frames.update(received=time.monotonic()))

    page.on("websocket", on_socket)
    return page


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the app is idle: its script state is notRunning, the last frame the page
    sent has had an answer, nothing was sent for SENT_QUIET_S (counted from this call too:
    a component sends its first value just after it is drawn; a rerun request takes a
    moment to be answered) and nothing received for RECEIVED_QUIET_S (between two runs of
    a rerun the server starts itself). A fragment polling every 0.5 s leaves such gaps;
    one streaming every 0.2 s holds this until it stops. It replaced two fixed 500 ms
    waits, a second a call. Most calls end at the quiet floor, so it is kept short
    (docs/benchmarks.md, the test suite)."""
    frames = _FRAMES.get(page)
    if frames is None:
        raise RuntimeError("wait_idle needs the page's socket: follow_socket(page) first")
    start, idle = time.monotonic(), page.locator(IDLE)
    page.wait_for_selector("[data-testid='stMain']", timeout=timeout_ms)
    while True:
        page.wait_for_timeout(50)  # Playwright hands over the socket's events meanwhile
        now = time.monotonic()
        sent, received = frames["sent"], frames["received"]
        if ((received >= sent or now - sent > UNANSWERED_S)
                and now - max(start, sent) >= SENT_QUIET_S
                and now - received >= RECEIVED_QUIET_S and idle.count() == 1):
            return
        if now - start > timeout_ms / 1000:
            raise TimeoutError(f"the app was not idle within {timeout_ms} ms")
