"""Hostile kept predictions: a link to a lesson step may carry any ``guess=STEP:VALUE`` or
``sketch=STEP:x,y;...``. The page never fails on one, and a value it cannot use is named in
the page's one link notice, with what it uses instead. Every hostile value is made here,
each under Streamlit's limit of 524,288 characters of query string (it ignores a longer one
whole)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.lesson import kept_predictions

APP = str(Path(__file__).resolve().parents[1] / "app.py")
FIRST = lesson_lab.load_lessons(lesson_lab.LESSON_DIR)[0][0]  # 1. Toeplitz matrices and the FFT
CHOICE, NUMBER, SKETCH = 1, 3, 5  # its steps asking for a choice, a number and a sketch
DRAWN = [[16.0, 500.0], [256.0, 1.3e5], [4096.0, 3.4e7]]  # a sketch of 2 n², on the axes


def open_step(number: int, **address: str | list[str]) -> AppTest:
    """A fresh session (a shared link) on step ``number`` of the first lesson, its address
    holding ``address`` besides the lesson and step (a list: the key repeated)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/lessons.py")
    at.query_params["lesson"] = FIRST.title
    at.query_params["step"] = str(number)
    for key, value in address.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception[0].message
    return at


def notice(at: AppTest) -> list[str]:
    """The link notice's lines (there is at most one notice)."""
    found = [w.value for w in at.warning if "The link's `" in w.value]
    assert len(found) <= 1, found
    return found[0].split("  \n") if found else []


def kept(at: AppTest, number: int):
    return at.session_state[f"prediction:{FIRST.slug}:{number}"] if (
        f"prediction:{FIRST.slug}:{number}" in at.session_state) else None


def sketch(*points: str) -> str:
    return f"{SKETCH}:" + ";".join(points)


REFUSED_SKETCHES = {
    "not numbers": (sketch("abc"), "two numbers"),
    "one number": (sketch("16"), "two numbers"),
    "three numbers": (sketch("16,1,2"), "two numbers"),
    "empty": (f"{SKETCH}:", "two numbers"),
    "nan": (sketch("16,nan"), "finite"),
    "inf": (sketch("inf,500"), "finite"),
    "overflowing": (sketch("16,1e999"), "finite"),
    "negative zero on a log axis": (sketch("-0,500"), "positive"),
    "negative on a log axis": (sketch("16,-3"), "positive"),
    "too many points": (sketch(*["16,500"] * 30_000), "at most"),
    "a very long number": (sketch("16," + "9" * 200_000), "finite"),
    "another step's": (f"{SKETCH + 1}:16,500", f"step {SKETCH}"),
    "no step": ("16,500", f"step {SKETCH}"),
    "unicode": (sketch("16,５00", "２5６,٣"), None),  # digits Python reads: kept
}


@pytest.mark.parametrize(("raw", "said"), REFUSED_SKETCHES.values(), ids=REFUSED_SKETCHES)
def test_a_kept_sketch_the_page_cannot_use_is_named_and_the_reveal_never_fails(raw, said):
    at = open_step(SKETCH, sketch=raw, revealed=str(SKETCH))
    lines = notice(at)
    if said is None:
        assert lines == [] and kept(at, SKETCH) == [[16.0, 500.0], [256.0, 3.0]]
        assert at.info  # revealed: the curve is drawn over the sketch, how far it is said
        return
    (line,) = lines
    assert line.startswith("The link's `sketch` = ") and said in line, line
    assert raw[:40].replace("`", "") in line and line.endswith("; using ` no sketch `."), line
    assert len(line) < 300 and kept(at, SKETCH) == []
    assert not at.info  # no sketch: nothing revealed
    assert "sketch" not in at.query_params  # the address holds what the page uses


@pytest.mark.parametrize("y", ["1e-300", "1e308", "5e-324", "2.2e-308"])
def test_a_sketch_far_off_the_axes_is_revealed_with_its_distance_in_words(y):
    """A drawn sketch may leave the axes (the pointer is captured); hundreds of decades away
    (5e-324 was an OverflowError) is said as a power of ten."""
    at = open_step(SKETCH, sketch=sketch(f"16,{y}", f"4096,{y}"), revealed=str(SKETCH))
    assert notice(at) == []
    (said,) = [m.value for m in at.info if "your sketch is a factor" in m.value]
    # the curve is 2 n² at n = 16 and 4096: the median of the two gaps, in decades
    decades = statistics.median(abs(math.log10(float(y)) - math.log10(2 * n**2))
                                for n in (16, 4096))
    assert f"a factor 10^{decades:.0f} from it" in said, said


def test_repeated_sketch_keys_use_the_last():
    at = open_step(SKETCH, sketch=[sketch("16,abc"), sketch(*(f"{x},{y}" for x, y in DRAWN))])
    assert notice(at) == [] and kept(at, SKETCH) == DRAWN


REFUSED_GUESSES = {
    "not a number": (NUMBER, f"{NUMBER}:abc", "not a number"),
    "nan": (NUMBER, f"{NUMBER}:nan", "not a finite number"),
    "overflowing": (NUMBER, f"{NUMBER}:1e999", "not a finite number"),
    "inf": (NUMBER, f"{NUMBER}:-inf", "not a finite number"),
    "a very long number": (NUMBER, f"{NUMBER}:" + "9" * 200_000, "not a finite number"),
    "empty": (NUMBER, f"{NUMBER}:", "not a number"),
    "another step's": (NUMBER, f"{NUMBER + 1}:3", f"step {NUMBER}"),
    "no step": (NUMBER, "3", f"step {NUMBER}"),
    "not a choice": (CHOICE, f"{CHOICE}:abc", "not one of the"),
    "a long choice": (CHOICE, f"{CHOICE}:" + "é" * 40_000, "not one of the"),
}


@pytest.mark.parametrize(("number", "raw", "said"), REFUSED_GUESSES.values(),
                         ids=REFUSED_GUESSES)
def test_a_kept_guess_the_page_cannot_use_is_named(number, raw, said):
    at = open_step(number, guess=raw, revealed=str(number))
    (line,) = notice(at)
    assert line.startswith("The link's `guess` = ") and said in line, line
    assert line.endswith("; using ` no prediction `.") and len(line) < 300, line
    assert kept(at, number) is None
    assert not at.success and len(at.warning) == 1  # nothing judged without a prediction


@pytest.mark.parametrize("raw", ["1e308", "-0", "5e-324", "-1.7976931348623157e308", "٣"])
def test_a_kept_guess_of_any_finite_number_is_taken_and_judged(raw):
    at = open_step(NUMBER, guess=f"{NUMBER}:{raw}", revealed=str(NUMBER))
    assert notice(at) == []
    assert kept(at, NUMBER) == float(raw)
    assert len(at.success) + len(at.warning) == 1  # revealed: right or not quite


def test_the_readers_take_back_what_the_page_writes():
    question = FIRST.steps[NUMBER - 1].question
    for value in (15.0, -0.0, 5e-324, 1.7976931348623157e308, 0.1 + 0.2):
        text = kept_predictions.guess_text(NUMBER, value)
        assert kept_predictions.read_guess(text, NUMBER, question) == value  # to the last bit
    curve = lesson_lab.sketch.dense_cost_against_n()
    text = kept_predictions.sketch_text(SKETCH, DRAWN)
    assert kept_predictions.read_sketch(text, SKETCH, curve) == [
        [float(f"{x:.3g}"), float(f"{y:.3g}")] for x, y in DRAWN]
