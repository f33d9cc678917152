"""The validators every config and entry point uses, and strict dict -> dataclass configs.

Each check raises ``ValueError`` naming the field, the value and the allowed range, e.g.
``rank must be an integer in [2, n] = [2, 5]; got 32``, and returns the value as a plain
Python number. This module imports nothing from tnn_core and no third-party package, so
every layer, the functional core included, may use it.

Every config in tnn_core is a frozen dataclass without **kwargs; ``config_from_dict``
calls ``check_fields`` so an unknown key is a ValueError naming it, never ignored.

``is_integer`` and ``short_repr`` serve the readers of untrusted data (checkpoint
headers, histories, kernel snapshots, task info): a test that is not fooled by ``True``,
and a value quoted in a message without quoting all of it.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from dataclasses import fields

__all__ = ["check_int", "check_number", "check_fraction", "check_choice", "check_fields",
           "config_from_dict", "is_integer", "is_number", "short_repr"]

SHORT_REPR_CHARS = 60  # the longest value a message quotes


def is_integer(value) -> bool:
    """Whether ``value`` is an integer (numpy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value) -> bool:
    """Whether ``value`` is a real number (numpy's too, inf and NaN included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def short_repr(value) -> str:
    """A repr of an untrusted value for a message, at most SHORT_REPR_CHARS characters
    (``reprlib``: a huge or deeply nested value is never rendered whole)."""
    text = reprlib.repr(value)
    return text if len(text) <= SHORT_REPR_CHARS else f"{text[:SHORT_REPR_CHARS - 3]}..."


def _range(low, high, span: str | None, closed_low: bool = True) -> str:
    upper = "inf)" if high is None else f"{high}]"
    numeric = f"{'[' if closed_low else '('}{low}, {upper}"
    return numeric if span is None else f"{span} = {numeric}"


def check_int(name: str, value, low: int, high: int | None = None,
              span: str | None = None) -> int:
    """``value`` as an int in [low, high] (high None: no upper bound).

    ``span`` names the range symbolically, e.g. "[2, n]", for the message. numpy
    integers are accepted; bools and floats are not.
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < low or (high is not None and value > high)):
        raise ValueError(f"{name} must be an integer in {_range(low, high, span)}; "
                         f"got {short_repr(value)}")
    return int(value)


def check_number(name: str, value, low: float, high: float | None = None,
                 closed_low: bool = True) -> float:
    """``value`` as a finite float in [low, high] ((low, high] with ``closed_low=False``)."""
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real)
          and math.isfinite(value)
          and (value >= low if closed_low else value > low)
          and (high is None or value <= high))
    if not ok:
        raise ValueError(f"{name} must be a number in {_range(low, high, None, closed_low)}; "
                         f"got {short_repr(value)}")
    return float(value)


def check_fraction(name: str, value) -> float:
    """``value`` as a float in (0, 1]: a decay, a density, a share."""
    return check_number(name, value, 0, 1, closed_low=False)


def check_choice(name: str, value, allowed: tuple) -> object:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}; got {short_repr(value)}")
    return value


def check_fields(cls, data: dict) -> dict:
    """Return ``data`` as a new dict, or raise ValueError naming its unknown keys."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__} must be given as a dict; got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {unknown}; allowed: {sorted(known)}")
    return dict(data)


def config_from_dict(cls, data: dict | None):
    """Build the dataclass ``cls`` from a dict (None: all defaults); unknown keys raise."""
    return cls(**check_fields(cls, data or {}))
