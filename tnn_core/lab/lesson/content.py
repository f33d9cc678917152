"""What a lesson is made of: steps of text and formulas, each with an optional view of a lab
page (its controls set, some locked) and an optional question; which pages a view may open
and which of their figures a step may draw.
"""

from __future__ import annotations

import re
import reprlib
import urllib.parse
from dataclasses import dataclass, replace

from tnn_core.lab.common.url_controls import SIDEBAR, URL_CONTROLS

__all__ = ["VIEW_PAGES", "VIEW_FIGURES", "MEASUREMENTS", "DEFAULT_FIGURES", "SIDEBAR",
           "WITHHELD_SWITCHES", "LessonError", "View", "Question", "Step", "Lesson", "quoted",
           "file_number"]

# page url_path -> the controls a view may set: the pages' URL controls (lab.common), every
# page's but the Lessons page's own
VIEW_PAGES: dict[str, tuple[str, ...]] = {page: keys for page, keys in URL_CONTROLS.items()
                                          if page != "lessons"}


# pages whose figures a step draws (pages/lessons/steps.py), and which: those of
# DEFAULT_FIGURES unless the step names others; a view of a page with no default figures
# (Inspect's atlas, Compress) opens the page itself, embedded
VIEW_FIGURES: dict[str, tuple[str, ...]] = {
    "basics": ("toeplitz", "circulant"),  # circulant: the embedding, step by step
    "decomposition": ("decomposition", "factors", "error_curve", "recurrent_fit",
                      "modes_against_decay"),  # factors: W · A · Wᵀ open; recurrent_fit:
    # the kernel as an SSM; modes_against_decay: the s it needs at three λ
    "frequency": ("fd_kernel", "decay"),
    "compare": ("compare",),
    "inspect": ("channel", "ablation", "atlas", "table10"),  # a layer's channel on the
    # Toeplitz figure; the band ablation's numbers; the atlas's medians per layer; TNN's
    # Table 10 with the shipped pair
    "compress": ("conversion",),  # every layer converted, the metric before and after
}
# figures that are a question's answer: shown with it
MEASUREMENTS = ("ablation", "conversion", "modes_against_decay")
DEFAULT_FIGURES: dict[str, tuple[str, ...]] = {
    "basics": ("toeplitz",), "decomposition": ("decomposition",), "frequency": ("fd_kernel",),
    "compare": ("compare",)}
# switches a step may withhold until its question is revealed: drawn at their other value,
# locked, until then (a step's ``withhold``; pages/lessons/steps.py)
WITHHELD_SWITCHES: dict[str, tuple[str, ...]] = {"basics": ("causal",),
                                                 "frequency": ("causal",)}


class LessonError(ValueError):
    """A lesson file that cannot be used; the message names the file, step and field."""


_SHORT = reprlib.Repr()  # values quoted in errors: one line, however large or deep the value
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlevel = 80, 80, 3


def quoted(value) -> str:
    """``value`` as an error quotes it: short, and safe for integers Python will not print
    (over 4300 digits: a TOML hex literal can make one)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"an integer of {value.bit_length()} bits"
    return _SHORT.repr(value)


def file_number(name: str) -> int | None:
    """The number a lesson file's name starts with: 3 for "3-ski.toml"; None for "ski.toml"."""
    match = re.match(r"([0-9]+)-", name)
    return int(match[1]) if match else None


@dataclass(frozen=True)
class View:
    """A lab page with its controls set: ``path`` "basics", ``params`` {"n": "8"}, the
    controls ``locked`` (shown disabled at those values: the page reads ``lock``), and what
    a step's figures keep back until its question is revealed (``withheld``, a step's
    ``withhold``): figures of the step, drawn only then, and switches of
    ``WITHHELD_SWITCHES``, drawn at their other value and locked until then."""

    path: str
    params: tuple[tuple[str, str], ...]
    locked: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """Relative URL of the view, free to explore: PATH?QUERY."""
        query = urllib.parse.urlencode(self.params)
        return f"{self.path}?{query}" if query else self.path

    def before_reveal(self) -> View:
        """The view as its step draws it until its question is revealed: its withheld
        switches at their other value and locked (its withheld figures left out by the
        step: pages/lessons/steps.py)."""
        switches = set(self.withheld) & {name for name, _ in self.params}
        params = tuple((name, ("false" if value.lower() == "true" else "true")
                        if name in switches else value) for name, value in self.params)
        return replace(self, params=params,
                       locked=tuple(dict.fromkeys(self.locked + tuple(sorted(switches)))))

    @property
    def embed_url(self) -> str:
        """Relative URL of the view as a lesson shows it: Streamlit's embed mode (no app
        frame) and its locked controls."""
        extra = [("embed", "true")] + ([("lock", ",".join(self.locked))] if self.locked else [])
        return f"{self.path}?{urllib.parse.urlencode(self.params + tuple(extra))}"


@dataclass(frozen=True)
class Question:
    """Predict, then reveal: a choice among ``choices``, a typed number, or a curve drawn
    by hand (``sketch``: one of ``sketch.SKETCHES``, compared, not marked)."""

    prompt: str
    answer: str | float | None  # None for a sketch
    explain: str
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0  # typed numbers: |prediction - answer| <= tolerance is right
    sketch: str = ""
    computed: str = ""  # one of ``answers.COMPUTED``: the right choice is computed

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
        return file_number(self.slug)
