"""Lessons: guided steps over the lab's pages, stored as data (one TOML file per lesson).

A lesson file (``tnn_core/lab/lessons/NAME.toml``; the format, with a complete example, is
in docs/lessons.md):

    title = "Toeplitz matrices and the FFT product"
    summary = "One line for the lesson list."

    [[steps]]
    title = "One number per diagonal"
    text = "Markdown ..."                        # required
    latex = ["T_{ij} = t_{i-j}"]                 # optional, shown with st.latex
    view = "basics?preset=Exponential+decay&n=8" # optional: a lab page and its controls
    lock = ["n"]                                 # optional: controls of the view kept fixed
    notice = "What to notice ..."                # optional
    [steps.question]                             # optional: predict, then reveal
    prompt = "How many numbers does T hold?"
    choices = ["8", "15", "64"]                  # a choice ...
    answer = "15"
    explain = "One per diagonal: 2n - 1."
    # ... or a typed number: answer = 15, tolerance = 0 (no choices)

``view`` is what the address bar shows on that page (its URL path and query), so a
teacher copies it from the browser. Its page must be one of ``VIEW_PAGES`` and its
parameters that page's controls; anything else is refused on load. ``load_lessons``
reads a folder: a malformed file becomes one error naming the file, the step and the
field, and the other lessons still load.
"""

from __future__ import annotations

import math
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LESSON_DIR", "VIEW_PAGES", "MAX_STEPS", "LessonError", "View", "Question", "Step",
           "Lesson", "parse_lesson", "load_lesson", "load_lessons"]

LESSON_DIR = Path(__file__).resolve().parent / "lessons"
MAX_STEPS = 30
MAX_TEXT = 4000  # characters of one text field
MAX_FILE_BYTES = 200_000
# page url_path -> the controls a view may set (the pages' widgets bound to the URL) and the
# sidebar's, which every page has
_SIDEBAR = ("seed", "device")
VIEW_PAGES: dict[str, tuple[str, ...]] = {
    "basics": ("preset", "n", "decay", "causal", "channel", "coefficients", "cell_i", "cell_j"),
    "decomposition": ("source", "channel", "coefficients", "checkpoint", "layer", "n", "decay",
                      "causal", "band", "rank", "method", "cell_i", "cell_j"),
    "frequency": ("activation", "width", "depth", "n", "causal", "smooth"),
    "speed": (),
    "train": (),
    "inspect": ("checkpoint", "layer", "channel"),
    "compress": ("checkpoint", "band", "rank", "method"),
    "compare": ("source", "n", "causal") + tuple(f"{side}_{name}" for side in "ab" for name in
                                               ("band", "rank", "method", "decay")),
}


class LessonError(ValueError):
    """A lesson file that cannot be used; the message names the file, step and field."""


@dataclass(frozen=True)
class View:
    """A lab page with its controls set: ``path`` "basics", ``params`` {"n": "8"}, and the
    controls ``locked`` (shown disabled at those values: the page reads ``lock``)."""

    path: str
    params: tuple[tuple[str, str], ...]
    locked: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """Relative URL of the view, free to explore: PATH?QUERY."""
        query = urllib.parse.urlencode(self.params)
        return f"{self.path}?{query}" if query else self.path

    @property
    def embed_url(self) -> str:
        """Relative URL of the view as a lesson shows it: Streamlit's embed mode (no app
        frame) and its locked controls."""
        extra = [("embed", "true")] + ([("lock", ",".join(self.locked))] if self.locked else [])
        return f"{self.path}?{urllib.parse.urlencode(self.params + tuple(extra))}"


@dataclass(frozen=True)
class Question:
    """Predict, then reveal: a choice among ``choices``, or a typed number."""

    prompt: str
    answer: str | float
    explain: str
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0  # typed numbers: |prediction - answer| <= tolerance is right

    def is_right(self, prediction) -> bool:
        if self.choices:
            return prediction == self.answer
        return abs(float(prediction) - float(self.answer)) <= self.tolerance


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    latex: tuple[str, ...] = ()
    view: View | None = None
    notice: str = ""
    question: Question | None = None


@dataclass(frozen=True)
class Lesson:
    slug: str  # the file's name without .toml
    title: str
    summary: str
    steps: tuple[Step, ...]


def _text(data: dict, key: str, where: str, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LessonError(f"{where}: {key} must be a non-empty string; got {value!r}")
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
                          f"got {text!r}")
    allowed = set(VIEW_PAGES[path]) | set(_SIDEBAR)
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    unknown = sorted({key for key, _ in params} - allowed)
    if unknown:
        raise LessonError(f"{where}: view sets {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(allowed)}")
    if not isinstance(lock, list) or not all(isinstance(key, str) for key in lock):
        raise LessonError(f"{where}: lock must be a list of control names; got {lock!r}")
    unknown = sorted(set(lock) - set(VIEW_PAGES[path]))
    if unknown:
        raise LessonError(f"{where}: lock names {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(VIEW_PAGES[path])}")
    return View(path, tuple(params), tuple(lock))


def _question(data, where: str) -> Question:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table with prompt, answer and explain; got "
                          f"{data!r}")
    _known(data, {"prompt", "answer", "explain", "choices", "tolerance"}, where)
    prompt, explain = _text(data, "prompt", where), _text(data, "explain", where)
    choices = data.get("choices", [])
    answer = data.get("answer")
    if choices:
        if not isinstance(choices, list) or len(choices) < 2 or \
                not all(isinstance(c, str) and c for c in choices):
            raise LessonError(f"{where}: choices must be a list of at least 2 strings; got "
                              f"{choices!r}")
        if answer not in choices:
            raise LessonError(f"{where}: answer must be one of the choices {choices}; got "
                              f"{answer!r}")
        return Question(prompt, answer, explain, tuple(choices))
    if isinstance(answer, bool) or not isinstance(answer, int | float) or \
            not math.isfinite(answer):
        raise LessonError(f"{where}: answer must be a finite number (or one of the choices); "
                          f"got {answer!r}")
    tolerance = data.get("tolerance", 0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or \
            not 0 <= tolerance < math.inf:
        raise LessonError(f"{where}: tolerance must be a number >= 0; got {tolerance!r}")
    return Question(prompt, float(answer), explain, (), float(tolerance))


def _step(data, where: str) -> Step:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table; got {data!r}")
    _known(data, {"title", "text", "latex", "view", "lock", "notice", "question"}, where)
    latex = data.get("latex", [])
    if isinstance(latex, str):
        latex = [latex]
    if not isinstance(latex, list) or not all(isinstance(x, str) and x for x in latex):
        raise LessonError(f"{where}: latex must be a string or a list of strings; got {latex!r}")
    view = data.get("view")
    if view is not None and not isinstance(view, str):
        raise LessonError(f"{where}: view must be a string like \"basics?n=8\"; got {view!r}")
    if "lock" in data and view is None:
        raise LessonError(f"{where}: lock needs a view")
    if view is not None:
        view = _view(view, data.get("lock", []), f"{where}.view")
    return Step(title=_text(data, "title", where), text=_text(data, "text", where),
                latex=tuple(latex), view=view,
                notice=_text(data, "notice", where, required=False),
                question=None if "question" not in data
                else _question(data["question"], f"{where}.question"))


def parse_lesson(text: str, name: str) -> Lesson:
    """A lesson from TOML text; ``name`` (the file's) names it in errors and is its slug."""
    slug = Path(name).stem
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise LessonError(f"{name}: not valid TOML ({err})") from None
    _known(data, {"title", "summary", "steps"}, name)
    steps = data.get("steps")
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise LessonError(f"{name}: steps must be a list of 1 to {MAX_STEPS} [[steps]] tables; "
                          f"got {0 if not isinstance(steps, list) else len(steps)}")
    return Lesson(slug, _text(data, "title", name), _text(data, "summary", name),
                  tuple(_step(s, f"{name}, step {i + 1}") for i, s in enumerate(steps)))


def load_lesson(path: Path) -> Lesson:
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise LessonError(f"{path.name}: {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LessonError(f"{path.name}: not UTF-8 text") from None
    return parse_lesson(text, path.name)


def load_lessons(folder: Path | None = None) -> tuple[list[Lesson], list[str]]:
    """Every ``*.toml`` lesson in ``folder`` (default ``LESSON_DIR``) by file name, and one
    message per bad file."""
    lessons, errors = [], []
    for path in sorted(Path(folder or LESSON_DIR).glob("*.toml")):
        try:
            lessons.append(load_lesson(path))
        except LessonError as err:
            errors.append(str(err))
    return lessons, errors
