"""One browser session's lifetime: a token kept in its state and collected when the session
ends, to which background work (a job, a timing not yet taken) is tied."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import streamlit as st


class _SessionToken:
    """Lives in one browser session's state; when the session ends it is collected."""


def session_token() -> object:
    """This browser session's token: a background job tied to it stops once it is collected."""
    return st.session_state.setdefault("session_token", _SessionToken())


def when_session_ends(callback: Callable, *args) -> None:
    """Call ``callback(*args)`` once this session has ended (its token collected)."""
    weakref.finalize(session_token(), callback, *args)
