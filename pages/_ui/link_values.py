"""What Streamlit does with a link's value for a control bound to the URL (``controls``)."""

from __future__ import annotations

import math
import re

from pages._ui.streamlit_internals import parse_url_param

LINK_SHOWN_CHARS = 40  # a longer value is shown as its start and its length


def link_value_problem(widget: str, spec: dict, raw: list[str]) -> tuple[str, bool] | None:
    """What Streamlit 1.67 does not take from the link's ``raw`` values (``get_all(key)``) for
    ``widget`` (its name) called with the arguments ``spec``, as words after the key, and
    whether it would raise on them; None when it takes them as they are."""
    clearable = {"number_input": spec.get("value") is None, "text_input": True,
                 "selectbox": spec.get("index") is None, "radio": spec.get("index") is None}
    if all(part == "" for part in raw) and not clearable.get(widget, False):
        return "is empty", False
    if widget in ("slider", "number_input"):
        return _number_problem(widget, spec, raw)
    last = quoted(raw[-1])
    if widget in ("selectbox", "radio"):
        labels = [spec["format_func"](option) for option in spec["options"]]
        if raw[-1] in labels:
            return None
        named = ", ".join(map(quoted, labels)) if len(labels) <= 4 else ""
        return f"= {last} is not one of the {len(labels)} choices{named and ': ' + named}", False
    if widget in ("toggle", "checkbox"):
        return None if raw[-1].lower() in ("true", "false") else (
            f"= {last} is not true or false", False)
    if widget == "text_input":
        limit = spec["max_chars"]
        return None if limit is None or len(raw[-1]) <= limit else (
            f"= {last} is longer than {limit} characters", False)
    raise TypeError(f"a control cannot be st.{widget}")


def _number_problem(widget: str, spec: dict, raw: list[str]) -> tuple[str, bool] | None:
    """``link_value_problem`` for a slider or a number input."""
    last = quoted(raw[-1])
    if widget == "slider":
        if isinstance(spec["value"], (list, tuple)):
            raise TypeError("a control takes sliders of one value")
        parts = parse_url_param(raw, "double_array_value")
        if len(parts) != 1:
            return f"is given {len(parts)} times ({quoted(', '.join(raw))})", False
        number = parts[0]
    else:
        try:
            number = parse_url_param(raw, "double_value")
        except ValueError:
            return f"= {last} is not a number", False
    default = spec["min_value"] if spec["value"] in (None, "min") else spec["value"]
    whole = isinstance(default, int)
    if not isinstance(number, float) or math.isnan(number):
        return f"= {last} is not a number", False
    if math.isinf(number):  # int(inf) raises in Streamlit's number_input
        return f"= {last} is not a finite number", widget == "number_input" and whole
    low, high = spec["min_value"], spec["max_value"]
    # a whole-number input truncates before its range check; a slider after it
    if not low <= (int(number) if whole and widget == "number_input" else number) <= high:
        return f"= {last} is outside [{_number(low)}, {_number(high)}]", False
    if whole and number != int(number):
        return f"= {last} is not a whole number", False
    return None


def link_display(widget: str, spec: dict, value) -> str:
    """``value`` of ``widget`` as the notice shows it: as the link would write it."""
    if widget in ("selectbox", "radio"):
        return quoted(spec["format_func"](value))
    if widget == "text_input" and spec["max_chars"] is not None:
        return f"its first {spec['max_chars']} characters"
    if isinstance(value, bool):
        return quoted(str(value).lower())
    return quoted(_number(value) if isinstance(value, (int, float)) else str(value))


def _number(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def quoted(text: str) -> str:
    """``text`` as inline code that nothing in it can break out of, cut to
    LINK_SHOWN_CHARS characters and its length."""
    cut = text[:LINK_SHOWN_CHARS]
    cut = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    fence = "`" * (max(map(len, re.findall("`+", cut)), default=0) + 1)
    more = f"… ({len(text)} characters)" if len(text) > LINK_SHOWN_CHARS else ""
    return f"{fence} {cut} {fence}{more}"
