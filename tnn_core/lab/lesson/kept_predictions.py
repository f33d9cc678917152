"""A step's prediction as the Lessons page keeps it in its address, so that a reload or a
shared link keeps it: ``guess=STEP:VALUE`` (a choice, or a number as its shortest repr) and
``sketch=STEP:x,y;x,y;...`` (three significant digits a number).

A link may carry anything. ``read_guess`` and ``read_sketch`` take a value back for step
``number``, or raise ValueError whose message says why it cannot be used, as words that
follow the value ("is not a number"): the page names the value in its link notice.
"""

from __future__ import annotations

import math

from tnn_core.lab.lesson.content import Question
from tnn_core.lab.lesson.sketch import Curve

__all__ = ["MAX_SKETCH_POINTS", "guess_text", "sketch_text", "read_guess", "read_sketch"]

MAX_SKETCH_POINTS = 200  # points of a sketch the address keeps (a stroke has one a pixel)


def guess_text(number: int, prediction: str | float) -> str:
    """Step ``number``'s prediction as the address keeps it (a float: its shortest repr)."""
    return f"{number}:{prediction}"


def sketch_text(number: int, points: list[list[float]]) -> str:
    """Step ``number``'s sketch [[x, y], ...] as the address keeps it: its first
    MAX_SKETCH_POINTS points, three significant digits a number."""
    return f"{number}:" + ";".join(f"{x:.3g},{y:.3g}" for x, y in points[:MAX_SKETCH_POINTS])


def read_guess(text: str, number: int, question: Question) -> str | float:
    """The prediction ``guess_text`` wrote for step ``number`` with ``question``: one of its
    choices, or any finite number."""
    value = _this_steps(text, number)
    if question.choices:
        if value not in question.choices:
            raise ValueError(f"is not one of the step's {len(question.choices)} choices")
        return value
    try:
        guess = float(value)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(guess):
        raise ValueError("is not a finite number")
    return guess


def read_sketch(text: str, number: int, curve: Curve) -> list[list[float]]:
    """The sketch ``sketch_text`` wrote for step ``number``, drawn on the axes of ``curve``:
    at most MAX_SKETCH_POINTS points of two finite numbers, positive on a logarithmic axis.
    A point off the axes is kept (a stroke may leave them); ``distance`` says how far."""
    value = _this_steps(text, number)
    count = value.count(";") + 1
    if count > MAX_SKETCH_POINTS:
        raise ValueError(f"has {count:,} points; a sketch keeps at most {MAX_SKETCH_POINTS}")
    points = []
    for pair in value.split(";"):
        try:
            x, y = (float(v) for v in pair.split(","))
        except ValueError:
            raise ValueError("has a point that is not two numbers x,y") from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError("has a point that is not finite")
        if (curve.log_x and x <= 0) or (curve.log_y and y <= 0):
            raise ValueError("has a point that is not positive on a logarithmic axis")
        points.append([x, y])
    return points


def _this_steps(text: str, number: int) -> str:
    """The VALUE of ``text``, STEP:VALUE, when STEP is ``number``."""
    step, colon, value = text.partition(":")
    if not colon or step != str(number):
        raise ValueError(f"is not step {number}'s (STEP:VALUE with STEP = {number})")
    return value
