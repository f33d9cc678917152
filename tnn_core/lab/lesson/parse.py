"""A lesson from the text of its TOML file: every field checked, anything out of place one
sentence naming the file, the step and the field (``LessonError``).
"""

from __future__ import annotations

import math
import re
import sys
import tomllib
import urllib.parse
from dataclasses import replace
from pathlib import Path

from tnn_core.lab.lesson.answers import COMPUTED, OUTCOMES
from tnn_core.lab.lesson.content import (
    SIDEBAR,
    VIEW_FIGURES,
    VIEW_PAGES,
    WITHHELD_SWITCHES,
    Lesson,
    LessonError,
    Question,
    Step,
    View,
    file_number,
    quoted,
)
from tnn_core.lab.lesson.sketch import SKETCHES

__all__ = ["MAX_STEPS", "MAX_TEXT", "MAX_KEY_PARTS", "parse_lesson"]

MAX_STEPS = 30
MAX_TEXT = 4000  # characters of one text field
MAX_KEY_PARTS = 8  # a.b.c: a lesson needs 2 ("steps.question"); tomllib is quadratic in them


def _text(data: dict, key: str, where: str, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LessonError(f"{where}: {key} must be a non-empty string; got {quoted(value)}")
    if len(value) > MAX_TEXT:
        raise LessonError(f"{where}: {key} has {len(value)} characters; the limit is {MAX_TEXT}")
    return value.strip()


def _known(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise LessonError(f"{where}: unknown fields {unknown}; allowed: {sorted(allowed)}")


def _view(text: str, lock, where: str) -> View:
    parts = urllib.parse.urlsplit(text.strip())
    path = parts.path.strip("/")
    if parts.scheme or parts.netloc or path not in VIEW_PAGES:
        raise LessonError(f"{where}: view must be a lab page and its controls, e.g. "
                          f"\"basics?n=8\", with the page one of {sorted(VIEW_PAGES)}; "
                          f"got {quoted(text)}")
    allowed = set(VIEW_PAGES[path]) | set(SIDEBAR)
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    unknown = sorted({key for key, _ in params} - allowed)
    if unknown:
        raise LessonError(f"{where}: view sets {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(allowed)}")
    if not isinstance(lock, list) or not all(isinstance(key, str) for key in lock):
        raise LessonError(f"{where}: lock must be a list of control names; got {quoted(lock)}")
    unknown = sorted(set(lock) - set(VIEW_PAGES[path]))
    if unknown:
        raise LessonError(f"{where}: lock names {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(VIEW_PAGES[path])}")
    return View(path, tuple(params), tuple(lock))


def _question(data, where: str) -> Question:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table with prompt, answer and explain; got "
                          f"{quoted(data)}")
    _known(data, {"prompt", "answer", "explain", "choices", "tolerance", "sketch",
                  "computed"}, where)
    prompt, explain = _text(data, "prompt", where), _text(data, "explain", where)
    if "sketch" in data:
        if data["sketch"] not in SKETCHES:
            raise LessonError(f"{where}: sketch must be one of {list(SKETCHES)}; got "
                              f"{quoted(data['sketch'])}")
        if any(field in data for field in ("answer", "choices", "tolerance")):
            raise LessonError(f"{where}: a sketch question has no answer, choices or "
                              f"tolerance: the lab's curve is its answer")
        return Question(prompt, None, explain, sketch=data["sketch"])
    choices = data.get("choices", [])
    answer = data.get("answer")
    if choices:
        if not isinstance(choices, list) or len(choices) < 2 or \
                not all(isinstance(c, str) and c for c in choices):
            raise LessonError(f"{where}: choices must be a list of at least 2 strings; got "
                              f"{quoted(choices)}")
        if "computed" in data:
            name = data["computed"]
            if name not in COMPUTED or "answer" in data:
                raise LessonError(f"{where}: computed must be one of {list(COMPUTED)}, and "
                                  f"then no answer is typed; got {quoted(name)}")
            if OUTCOMES[name] is not None and len(OUTCOMES[name]) != len(choices):
                raise LessonError(f"{where}: computed {name!r} concludes one of "
                                  f"{list(OUTCOMES[name])}: give one choice for each, in "
                                  f"that order; got {len(choices)} choices")
            return Question(prompt, None, explain, tuple(choices), computed=name)
        if answer not in choices:
            raise LessonError(f"{where}: answer must be one of the choices {quoted(choices)}; got "
                              f"{quoted(answer)}")
        return Question(prompt, answer, explain, tuple(choices))
    answer = _finite(answer, f"{where}: answer must be a finite number (or one of the "
                             f"choices)")
    tolerance = _finite(data.get("tolerance", 0), f"{where}: tolerance must be a number >= 0")
    if tolerance < 0:
        raise LessonError(f"{where}: tolerance must be a number >= 0; got {quoted(tolerance)}")
    return Question(prompt, answer, explain, (), tolerance)


def _finite(value, rule: str) -> float:
    """``value`` as a float, or LessonError("{rule}; got ..."): not a bool, a string or an
    integer too large for a float (a 400-digit answer), nor inf or nan."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LessonError(f"{rule}; got {quoted(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise LessonError(f"{rule}; got an integer too large for a float, "
                          f"{quoted(value)}") from None
    if not math.isfinite(number):
        raise LessonError(f"{rule}; got {quoted(value)}")
    return number


def _step(data, where: str) -> Step:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table; got {quoted(data)}")
    _known(data, {"title", "text", "latex", "view", "lock", "notice", "question", "figures",
                  "withhold"}, where)
    latex = data.get("latex", [])
    if isinstance(latex, str):
        latex = [latex]
    if not isinstance(latex, list) or not all(isinstance(x, str) and x for x in latex):
        raise LessonError(f"{where}: latex must be a string or a list of strings; got "
                          f"{quoted(latex)}")
    view = data.get("view")
    if view is not None and not isinstance(view, str):
        raise LessonError(f"{where}: view must be a string like \"basics?n=8\"; got {quoted(view)}")
    if "lock" in data and view is None:
        raise LessonError(f"{where}: lock needs a view")
    if view is not None:
        view = _view(view, data.get("lock", []), f"{where}.view")
    figures = data.get("figures", [])
    offered = VIEW_FIGURES.get(view.path, ()) if view is not None else ()
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures) or \
            not set(figures) <= set(offered):
        raise LessonError(f"{where}: figures must be a list of the view's figures "
                          f"{list(offered)}; got {quoted(figures)}")
    step = Step(title=_text(data, "title", where), text=_text(data, "text", where),
                latex=tuple(latex), view=view, figures=tuple(figures),
                notice=_text(data, "notice", where, required=False),
                question=None if "question" not in data
                else _question(data["question"], f"{where}.question"))
    return _withheld(step, data.get("withhold"), where)


def _withheld(step: Step, withhold, where: str) -> Step:
    """``step`` with its view's ``withheld``: ``withhold`` lists figures the step draws and
    switches of ``WITHHELD_SWITCHES`` its view sets, and needs a question to reveal them."""
    if withhold is None:
        return step
    offered = () if step.view is None else step.drawn + tuple(
        name for name in WITHHELD_SWITCHES.get(step.view.path, ())
        if name in dict(step.view.params))
    if not isinstance(withhold, list) or not withhold or \
            not all(isinstance(name, str) for name in withhold) or \
            not set(withhold) <= set(offered):
        raise LessonError(f"{where}: withhold must list some of the step's figures and the "
                          f"switches its view sets, {list(offered)}; got {quoted(withhold)}")
    if step.question is None:
        raise LessonError(f"{where}: withhold needs a question: what it keeps back is shown "
                          f"at Reveal")
    return replace(step, view=replace(step.view, withheld=tuple(withhold)))


# What a dotted key is made of, outside strings and comments (replaced by "s" first, in
# one linear pass: an unclosed string runs to the end of its line or of the text).
_STRINGS = re.compile(r'"""(?:[^"\\]|\\[\s\S]?|"(?!""))*+(?:"""|\Z)'
                      r"|'''(?:[^']|'(?!''))*+(?:'''|\Z)"
                      r'|"(?:[^"\\\n]|\\[^\n]?)*+"?'
                      r"|'[^'\n]*+'?"
                      r"|#[^\n]*+")
_DEEP_KEY = re.compile(rf"(?<![\w-])(?:[\w-]++[ \t]*+\.[ \t]*+){{{MAX_KEY_PARTS}}}[\w-]")


def parse_lesson(text: str, name: str) -> Lesson:
    """A lesson from TOML text; ``name`` (the file's) names it in errors and is its slug."""
    slug = Path(name).stem
    if _DEEP_KEY.search(_STRINGS.sub("s", text)):
        raise LessonError(f"{name}: a dotted key has more than {MAX_KEY_PARTS} parts; a lesson "
                          f"needs at most 2, as in [steps.question]")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise LessonError(f"{name}: not valid TOML ({err})") from None
    except RecursionError:  # tomllib recurses once per level of [ or {
        raise LessonError(f"{name}: arrays or tables nested too deeply to read; a lesson "
                          f"needs 3 levels") from None
    except ValueError as err:  # int() of more than sys.get_int_max_str_digits() digits
        reason = (f"an integer has more than {sys.get_int_max_str_digits():,} digits"
                  if "digits" in str(err) else quoted(str(err)))
        raise LessonError(f"{name}: not valid TOML ({reason})") from None
    _known(data, {"title", "summary", "steps"}, name)
    steps = data.get("steps")
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise LessonError(f"{name}: steps must be a list of 1 to {MAX_STEPS} [[steps]] tables; "
                          f"got {0 if not isinstance(steps, list) else len(steps)}")
    title = _text(data, "title", name)
    shown = re.match(r"([0-9]+)\.\s", title)
    if shown and int(shown[1]) != file_number(name):
        raise LessonError(f"{name}: the title is numbered {quoted(int(shown[1]))} and the file "
                          f"name is not; a lesson's number is the one its file name starts "
                          f"with, as in 1-toeplitz-fft.toml")
    return Lesson(slug, title, _text(data, "summary", name),
                  tuple(_step(s, f"{name}, step {i + 1}") for i, s in enumerate(steps)))
