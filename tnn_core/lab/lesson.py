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
    figures = ["toeplitz"]                       # optional: which of the page's figures
    notice = "What to notice ..."                # optional
    [steps.question]                             # optional: predict, then reveal
    prompt = "How many numbers does T hold?"
    choices = ["8", "15", "64"]                  # a choice ...
    answer = "15"
    explain = "One per diagonal: 2n - 1."
    # ... or a typed number: answer = 15, tolerance = 0 (no choices)

``view`` is what the address bar shows on that page (its URL path and query), so a
teacher copies it from the browser. A step draws the view's page's figures (those of
``VIEW_FIGURES``: the first unless ``figures`` names others) in the lesson itself; a view
of another page opens embedded. Its page must be one of ``VIEW_PAGES`` and its
parameters that page's controls; anything else is refused on load.

``load_lessons`` reads a folder, and no file in it can take the others down: each file is
read with ``tnn_core.files.read_bounded`` (regular files only, never past
``MAX_FILE_BYTES``, a FIFO never waited on), and anything wrong with it (invalid TOML or
UTF-8, nesting too deep for tomllib, a number too large for a float, a field out of place,
or an error nobody foresaw) becomes one sentence naming the file, the step and the field.
A lesson's number is the one its file name starts with (``1-toeplitz-fft.toml``); a title
that starts with a number ("1. Toeplitz ...") must start with the file's. Two files with
one title or one number: the first in lesson order loads and the second is refused with
an error naming both. ``folder_listing`` is what a cache of ``load_lessons`` is keyed by.
"""

from __future__ import annotations

import logging
import math
import os
import re
import reprlib
import sys
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from tnn_core.files import FileRefused, read_bounded
from tnn_core.lab.lesson_answers import COMPUTED, OUTCOMES
from tnn_core.lab.lesson_sketch import SKETCHES

__all__ = ["LESSON_DIR", "VIEW_PAGES", "VIEW_FIGURES", "MEASUREMENTS", "DEFAULT_FIGURES",
           "MAX_STEPS", "LessonError", "View", "Question", "Step", "Lesson", "parse_lesson",
           "load_lesson", "load_lessons", "folder_listing"]

logger = logging.getLogger(__name__)

LESSON_DIR = Path(__file__).resolve().parent / "lessons"
MAX_STEPS = 30
MAX_TEXT = 4000  # characters of one text field
MAX_FILE_BYTES = 200_000
MAX_LESSONS = 100  # files read from one folder, in lesson order
MAX_KEY_PARTS = 8  # a.b.c: a lesson needs 2 ("steps.question"); tomllib is quadratic in them
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


# pages whose figures a step draws (pages/figures/steps.py), and which: those of
# DEFAULT_FIGURES unless the step names others; a view of a page with no default figures
# (Inspect's atlas, Compress) opens the page itself, embedded
VIEW_FIGURES: dict[str, tuple[str, ...]] = {
    "basics": ("toeplitz", "circulant"),  # circulant: the embedding, step by step
    "decomposition": ("decomposition", "factors", "error_curve"),  # factors: W · A · Wᵀ open
    "frequency": ("fd_kernel", "decay"),
    "compare": ("compare",),
    "inspect": ("channel", "ablation", "atlas", "table10"),  # a layer's channel on the
    # Toeplitz figure; the band ablation's numbers; the atlas's medians per layer; TNN's
    # Table 10 with the shipped pair
    "compress": ("conversion",),  # every layer converted, the metric before and after
}
MEASUREMENTS = ("ablation", "conversion")  # figures that are a question's answer: shown with it
DEFAULT_FIGURES: dict[str, tuple[str, ...]] = {
    "basics": ("toeplitz",), "decomposition": ("decomposition",), "frequency": ("fd_kernel",),
    "compare": ("compare",)}


class LessonError(ValueError):
    """A lesson file that cannot be used; the message names the file, step and field."""


_SHORT = reprlib.Repr()  # values quoted in errors: one line, however large or deep the value
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlevel = 80, 80, 3


def _shown(value) -> str:
    """``value`` as an error quotes it: short, and safe for integers Python will not print
    (over 4300 digits: a TOML hex literal can make one)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"an integer of {value.bit_length()} bits"
    return _SHORT.repr(value)


def _file_number(name: str) -> int | None:
    """The number a lesson file's name starts with: 3 for "3-ski.toml"; None for "ski.toml"."""
    match = re.match(r"([0-9]+)-", name)
    return int(match[1]) if match else None


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
    """Predict, then reveal: a choice among ``choices``, a typed number, or a curve drawn
    by hand (``sketch``: one of ``lesson_sketch.SKETCHES``, compared, not marked)."""

    prompt: str
    answer: str | float | None  # None for a sketch
    explain: str
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0  # typed numbers: |prediction - answer| <= tolerance is right
    sketch: str = ""
    computed: str = ""  # one of ``lesson_answers.COMPUTED``: the right choice is computed

    def is_right(self, prediction, answer=None) -> bool:
        """Whether ``prediction`` is right: against ``answer`` for a computed question."""
        answer = self.answer if answer is None else answer
        if self.choices:
            return prediction == answer
        return abs(float(prediction) - float(answer)) <= self.tolerance


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    latex: tuple[str, ...] = ()
    view: View | None = None
    notice: str = ""
    question: Question | None = None
    figures: tuple[str, ...] = ()  # of VIEW_FIGURES[view.path]; empty: DEFAULT_FIGURES

    @property
    def drawn(self) -> tuple[str, ...]:
        """The figures the step draws (none: its view's page opens embedded)."""
        if self.view is None:
            return ()
        return self.figures or DEFAULT_FIGURES.get(self.view.path, ())


@dataclass(frozen=True)
class Lesson:
    slug: str  # the file's name without .toml
    title: str
    summary: str
    steps: tuple[Step, ...]

    @property
    def number(self) -> int | None:
        """The number the file's name starts with (1 for "1-toeplitz-fft"), if any."""
        return _file_number(self.slug)


def _text(data: dict, key: str, where: str, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LessonError(f"{where}: {key} must be a non-empty string; got {_shown(value)}")
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
                          f"got {_shown(text)}")
    allowed = set(VIEW_PAGES[path]) | set(_SIDEBAR)
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    unknown = sorted({key for key, _ in params} - allowed)
    if unknown:
        raise LessonError(f"{where}: view sets {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(allowed)}")
    if not isinstance(lock, list) or not all(isinstance(key, str) for key in lock):
        raise LessonError(f"{where}: lock must be a list of control names; got {_shown(lock)}")
    unknown = sorted(set(lock) - set(VIEW_PAGES[path]))
    if unknown:
        raise LessonError(f"{where}: lock names {unknown}, which the {path} page does not have; "
                          f"its controls: {sorted(VIEW_PAGES[path])}")
    return View(path, tuple(params), tuple(lock))


def _question(data, where: str) -> Question:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table with prompt, answer and explain; got "
                          f"{_shown(data)}")
    _known(data, {"prompt", "answer", "explain", "choices", "tolerance", "sketch",
                  "computed"}, where)
    prompt, explain = _text(data, "prompt", where), _text(data, "explain", where)
    if "sketch" in data:
        if data["sketch"] not in SKETCHES:
            raise LessonError(f"{where}: sketch must be one of {list(SKETCHES)}; got "
                              f"{_shown(data['sketch'])}")
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
                              f"{_shown(choices)}")
        if "computed" in data:
            name = data["computed"]
            if name not in COMPUTED or "answer" in data:
                raise LessonError(f"{where}: computed must be one of {list(COMPUTED)}, and "
                                  f"then no answer is typed; got {_shown(name)}")
            if OUTCOMES[name] is not None and len(OUTCOMES[name]) != len(choices):
                raise LessonError(f"{where}: computed {name!r} concludes one of "
                                  f"{list(OUTCOMES[name])}: give one choice for each, in "
                                  f"that order; got {len(choices)} choices")
            return Question(prompt, None, explain, tuple(choices), computed=name)
        if answer not in choices:
            raise LessonError(f"{where}: answer must be one of the choices {_shown(choices)}; got "
                              f"{_shown(answer)}")
        return Question(prompt, answer, explain, tuple(choices))
    answer = _finite(answer, f"{where}: answer must be a finite number (or one of the "
                             f"choices)")
    tolerance = _finite(data.get("tolerance", 0), f"{where}: tolerance must be a number >= 0")
    if tolerance < 0:
        raise LessonError(f"{where}: tolerance must be a number >= 0; got {_shown(tolerance)}")
    return Question(prompt, answer, explain, (), tolerance)


def _finite(value, rule: str) -> float:
    """``value`` as a float, or LessonError("{rule}; got ..."): not a bool, a string or an
    integer too large for a float (a 400-digit answer), nor inf or nan."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LessonError(f"{rule}; got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise LessonError(f"{rule}; got an integer too large for a float, "
                          f"{_shown(value)}") from None
    if not math.isfinite(number):
        raise LessonError(f"{rule}; got {_shown(value)}")
    return number


def _step(data, where: str) -> Step:
    if not isinstance(data, dict):
        raise LessonError(f"{where} must be a table; got {_shown(data)}")
    _known(data, {"title", "text", "latex", "view", "lock", "notice", "question", "figures"},
           where)
    latex = data.get("latex", [])
    if isinstance(latex, str):
        latex = [latex]
    if not isinstance(latex, list) or not all(isinstance(x, str) and x for x in latex):
        raise LessonError(f"{where}: latex must be a string or a list of strings; got "
                          f"{_shown(latex)}")
    view = data.get("view")
    if view is not None and not isinstance(view, str):
        raise LessonError(f"{where}: view must be a string like \"basics?n=8\"; got {_shown(view)}")
    if "lock" in data and view is None:
        raise LessonError(f"{where}: lock needs a view")
    if view is not None:
        view = _view(view, data.get("lock", []), f"{where}.view")
    figures = data.get("figures", [])
    offered = VIEW_FIGURES.get(view.path, ()) if view is not None else ()
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures) or \
            not set(figures) <= set(offered):
        raise LessonError(f"{where}: figures must be a list of the view's figures "
                          f"{list(offered)}; got {_shown(figures)}")
    return Step(title=_text(data, "title", where), text=_text(data, "text", where),
                latex=tuple(latex), view=view, figures=tuple(figures),
                notice=_text(data, "notice", where, required=False),
                question=None if "question" not in data
                else _question(data["question"], f"{where}.question"))


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
                  if "digits" in str(err) else _shown(str(err)))
        raise LessonError(f"{name}: not valid TOML ({reason})") from None
    _known(data, {"title", "summary", "steps"}, name)
    steps = data.get("steps")
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise LessonError(f"{name}: steps must be a list of 1 to {MAX_STEPS} [[steps]] tables; "
                          f"got {0 if not isinstance(steps, list) else len(steps)}")
    title = _text(data, "title", name)
    shown = re.match(r"([0-9]+)\.\s", title)
    if shown and int(shown[1]) != _file_number(name):
        raise LessonError(f"{name}: the title is numbered {_shown(int(shown[1]))} and the file "
                          f"name is not; a lesson's number is the one its file name starts "
                          f"with, as in 1-toeplitz-fft.toml")
    return Lesson(slug, title, _text(data, "summary", name),
                  tuple(_step(s, f"{name}, step {i + 1}") for i, s in enumerate(steps)))


def _file_name(path: Path) -> str:
    name = path.name
    if not name.isprintable():  # a newline, or bytes that are not UTF-8
        raise LessonError(f"{ascii(name)}: a lesson\'s file name must be printable UTF-8 text; "
                          f"rename the file")
    return name


def load_lesson(path: Path) -> Lesson:
    """The lesson in the file at ``path``: a regular file (links followed) of at most
    ``MAX_FILE_BYTES``, read with ``read_bounded`` so that a FIFO, a device or a file
    growing while read is refused rather than waited on or read without end."""
    path = Path(path)
    name = _file_name(path)
    try:
        data = read_bounded(path, MAX_FILE_BYTES, "lesson")
    except FileRefused as err:
        raise LessonError(str(err).replace(os.fspath(path), name)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LessonError(f"{name}: not UTF-8 text") from None
    return parse_lesson(text, name)


def _lesson_files(folder: Path) -> list[Path]:
    """The folder's ``*.toml`` entries, hidden ones left out (".#1-a.toml" is an editor's
    lock), in lesson order: by the number the name starts with, unnumbered ones last, then
    by name. Raises OSError if the folder cannot be listed."""
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries
                 if entry.name.endswith(".toml") and not entry.name.startswith(".")]
    numbers = {name: _file_number(name) for name in names}
    names.sort(key=lambda name: (numbers[name] is None, numbers[name] or 0, name))
    return [folder / name for name in names]


def load_lessons(folder: Path | None = None) -> tuple[list[Lesson], list[str]]:
    """Every lesson in ``folder`` (default ``LESSON_DIR``) in lesson order, and one
    sentence per file refused. Never raises: whatever one file holds (or is), the others
    load. A title or number already taken by an earlier file is refused, naming both."""
    folder = Path(folder or LESSON_DIR)
    try:
        paths = _lesson_files(folder)
    except OSError as err:
        return [], [f"the lesson folder {folder} cannot be read: "
                    f"{err.strerror or type(err).__name__}"]
    lessons, errors = [], []
    if len(paths) > MAX_LESSONS:
        errors.append(f"{len(paths) - MAX_LESSONS} lesson files after {paths[MAX_LESSONS - 1].name}"
                      f" were not read; the limit is {MAX_LESSONS} in one folder")
        paths = paths[:MAX_LESSONS]
    titles: dict[str, str] = {}  # title -> the file that has it
    numbers: dict[int, str] = {}  # number -> the file that has it
    for path in paths:
        try:
            lesson = load_lesson(path)
        except LessonError as err:
            errors.append(str(err))
            continue
        except Exception as err:  # the last safety net: one file never takes the page down
            logger.warning("lesson file %s could not be loaded", path, exc_info=True)
            errors.append(f"{ascii(path.name)}: could not be loaded ({type(err).__name__}); "
                          f"the server log has the details")
            continue
        if lesson.title in titles:
            errors.append(f"{path.name}: its title {_shown(lesson.title)} is already the title "
                          f"of {titles[lesson.title]}, which is loaded; give each lesson its own "
                          f"title")
        elif lesson.number in numbers:
            errors.append(f"{path.name}: its number {_shown(lesson.number)} is already the "
                          f"number of {numbers[lesson.number]}, which is loaded; give each "
                          f"lesson its own number")
        else:
            titles[lesson.title] = path.name
            if lesson.number is not None:
                numbers[lesson.number] = path.name
            lessons.append(lesson)
    return lessons, errors


def _stamp(path: Path) -> tuple[int, int]:
    """Size and modification time of the file (a link's target, else the link itself)."""
    for follow in (True, False):
        try:
            info = os.stat(path, follow_symlinks=follow)
            return info.st_size, info.st_mtime_ns
        except OSError:
            pass
    return -1, -1


def folder_listing(folder: Path | None = None) -> tuple:
    """What ``load_lessons(folder)`` reads, as a cache key: the name, size and modification
    time of each lesson file it would read, and how many there are. A file added, removed,
    renamed or edited changes it. One ``stat`` per file; nothing is opened."""
    folder = Path(folder or LESSON_DIR)
    try:
        paths = _lesson_files(folder)
    except OSError as err:
        return (f"cannot list: {err.errno}",)
    return (len(paths), *((path.name, *_stamp(path)) for path in paths[:MAX_LESSONS]))
