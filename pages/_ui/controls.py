"""Controls bound to the URL: a teacher's link opens exactly the view.

``control(st.slider, page_controls.LENGTH)`` draws the Streamlit widget declared there (its
key, label, help, range and default) bound to the URL under its name (``bind="query-params"``)
and disabled while a lesson's view locks it
(the URL's ``lock``). A widget bound to the URL takes its value from the link on its first
run; Streamlit drops a value it cannot use without a word, cuts a text to max_chars, and
crashes on an infinite value for a whole-number input. ``control`` checks the value first
(``link_values``) and says so, one line per value in one notice at the top of the page, kept
there until one of the page's linked controls moves. A key the page has not declared
(``tnn_core.lab.common.page_controls``, from which ``url_controls`` takes each page's names)
raises (LookupError) before anything is drawn.
"""

from __future__ import annotations

import dataclasses
import inspect

import streamlit as st

from pages._ui import session_keys, streamlit_internals
from pages._ui.link_values import link_display, link_value_problem, quoted
from tnn_core.lab.common import page_controls as fields
from tnn_core.lab.common import url_controls
from tnn_core.lab.common.page_controls import Field

_NUMBERS = ("slider", "number_input")  # widgets with a range
_CHOICES = ("selectbox", "radio")  # widgets with options


@dataclasses.dataclass
class _LinkNotice:
    page: str
    lines: dict[str, list]  # key -> [what was wrong with the link's value, the value used]
    values: dict[str, object]  # the page's linked controls as the notice stood


@dataclasses.dataclass
class _LinkRun:  # one script run, from app.py's ``link_notice`` on
    page: str
    place: object  # st.empty() at the top of the page
    seen: dict[str, object]  # the linked controls drawn so far in this run


def locked(key: str) -> bool:
    """Whether the control ``key`` is locked: a lesson's view lists the controls it fixes in
    the URL's ``lock`` (comma separated); they are shown, disabled, at the view's values."""
    return key in st.query_params.get("lock", "").split(",")


def link_notice(page: str) -> None:
    """Call in app.py before any control: the place at the top of ``page`` where ``control``
    lists the link's values it could not use (those still standing)."""
    st.session_state[session_keys.LINK_RUN] = _LinkRun(page, st.empty(), {})
    notice = st.session_state.get(session_keys.LINK_NOTICE)
    if notice is not None and notice.page != page:
        del st.session_state[session_keys.LINK_NOTICE]
    _draw_link_notice()


def control(widget, field: Field, *, high=None, options=None, value=None,
            says: dict | None = None, **kwargs):
    """The Streamlit ``widget`` (a slider, number_input, selectbox, radio, toggle, checkbox
    or text_input) declared as ``field``, bound to the URL under its name and disabled while
    a lesson locks it. What depends on what is open is given here: the range's ``high`` end,
    the ``options``, the ``value`` it opens at, the numbers ``says`` fills into its help.
    A link value it would drop or change goes into the page's notice; one that would crash
    the page is taken out of the link first, and the page runs again without it."""
    page = st.session_state[session_keys.LINK_RUN].page
    if field not in fields.PAGE_FIELDS.get(page, ()) + fields.SIDEBAR:
        raise LookupError(f"the {page!r} page draws the control {field.name!r} "
                          f"({field.label!r}), but tnn_core/lab/common/page_controls.py does "
                          f"not declare it for that page: add it to PAGE_FIELDS[{page!r}]")
    kind, key = widget.__name__, field.name
    opening = field.default if value is None else value
    args: tuple = (field.label,)
    if kind in _NUMBERS:
        args += (field.low, field.high if high is None else high)
        args += () if opening is None else (opening,)  # None: the range's low end
    elif kind in _CHOICES:
        listed = list(field.options if options is None else options)
        args += (listed,)
        if opening is not None:
            kwargs.setdefault("index", listed.index(opening))
    elif opening is not None:  # toggle, checkbox: value; text_input: value
        kwargs.setdefault("value", opening)
    if field.help:
        kwargs.setdefault("help", field.help.format(**(says or {})))
    return _bound(widget, args, key, kwargs)


def _bound(widget, args: tuple, key: str, kwargs: dict):
    """``widget(*args, **kwargs)`` under ``key``, bound to the URL and checked (``control``)."""
    run = st.session_state[session_keys.LINK_RUN]
    url_controls.check_declared(run.page, key)
    kwargs = dict(kwargs, key=key, bind="query-params")
    kwargs["disabled"] = kwargs.get("disabled", False) or locked(key)
    call = inspect.signature(widget).bind(*args, **kwargs)
    call.apply_defaults()
    raw = st.query_params.get_all(key)
    problem = link_value_problem(widget.__name__, call.arguments, raw) if raw else None
    notice = st.session_state.get(session_keys.LINK_NOTICE)
    if problem is not None:
        if notice is None:
            notice = st.session_state[session_keys.LINK_NOTICE] = _LinkNotice(run.page, {},
                                                                              dict(run.seen))
        notice.lines[key] = [f"The link's `{key}` {problem[0]}", None]
        if problem[1]:  # Streamlit would raise: the next run reads the link without it
            del st.query_params[key]
            st.rerun()
    value = widget(*args, **kwargs)
    run.seen[key] = value
    if notice is not None:
        if key in notice.lines and notice.lines[key][1] is None:
            notice.lines[key][1] = link_display(widget.__name__, call.arguments, value)
            notice.values[key] = value
        elif notice.values.setdefault(key, value) != value:  # the user moved on
            del st.session_state[session_keys.LINK_NOTICE]
        # drawn by every linked control while it stands: a fragment may write to a place
        # outside it on its own reruns only if it wrote there on the last full run
        _draw_link_notice()
    return value


def note_link_value(key: str, problem: str | None, used, display: str) -> None:
    """``control``'s notice for a control that is not a Streamlit widget (a figure's
    slider, ``pages/figures``): ``problem`` (words after the key, from
    ``link_value_problem``) or None, and the value ``used`` (shown as ``display``)."""
    run = st.session_state[session_keys.LINK_RUN]
    url_controls.check_declared(run.page, key)
    notice = st.session_state.get(session_keys.LINK_NOTICE)
    if problem is not None:
        if notice is None:
            notice = st.session_state[session_keys.LINK_NOTICE] = _LinkNotice(run.page, {},
                                                                              dict(run.seen))
        if key not in notice.lines:
            notice.lines[key] = [f"The link's `{key}` {problem}", quoted(display)]
            notice.values[key] = used
    run.seen[key] = used
    if notice is not None:
        if key not in notice.lines and notice.values.setdefault(key, used) != used:
            del st.session_state[session_keys.LINK_NOTICE]  # the user moved on
        elif key in notice.lines and notice.values[key] != used:
            del st.session_state[session_keys.LINK_NOTICE]
        _draw_link_notice()


def _draw_link_notice() -> None:
    place = st.session_state[session_keys.LINK_RUN].place
    notice = st.session_state.get(session_keys.LINK_NOTICE)
    lines = [] if notice is None else [f"{said}; using {used}." if used else f"{said}."
                                       for said, used in notice.lines.values()]
    try:
        if lines:
            place.warning("  \n".join(lines), icon=":material/link_off:")
        else:
            place.empty()
    except streamlit_internals.LayoutContextError:  # a fragment's rerun: the next full run
        pass  # draws it
