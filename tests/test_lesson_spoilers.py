"""No spoilers (issue 38): walked with AppTest, every question of every shipped lesson keeps
its answer off the page until Reveal, and shows it after.

Before Reveal, the page's text (markdown, captions, alerts, metrics, tables, and the words
and control values of the figures' payloads: what AppTest can see of them) holds neither
the explanation nor the answer: the right choice's text where it is specific (a number, a
formula) and a typed answer as a number standing alone. The step's own prose, its
formulas and its question are written to set the question up, so a number in them (the
"1" of N − 2n + 1) is not an answer; the right choice is looked for there too, as a
phrase. What a step withholds (``View.withheld``) is checked for directly: a withheld
figure is not drawn, a withheld switch is drawn at its other value, locked. After Reveal,
the verdict names the answer and the withheld figures are drawn. The browser walk
(tests/test_lessons_browser.py) checks what the figures' own scripts write."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.lesson import LessonError, load_lessons, parse_lesson

APP = "../app.py"
SHIPPED, _ = load_lessons()
SKETCH = [[2.0, 0.5], [16.0, 0.03], [128.0, 0.001]]  # a sketch, as the browser sends it
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")  # a choice that is a number: as a typed answer
SPECIFIC = re.compile(r"[0-9=<>≤≥|]")  # a choice that names a number or a formula
SLOW_LESSONS = {"5-reading-a-trained-model",  # scores digits-tno, converted and ablated
                "6-ssm-is-toeplitz"}  # fits recurrences at three λ
WITHHELD_NOTE = "appears with the answer"  # pages/lessons/steps.py, in place of them
SKETCH_VERDICT = "The answer is the lab's curve"  # pages/lessons.py, after Reveal
VERDICT = re.compile(r"[Tt]he answer is \*\*(.+?)\*\*")


def _payload_words(value) -> list[str]:
    """The human text of a figure's payload: strings with a space in them (not a packed
    array) but the controls' fixed help, and each control's label with its value."""
    if isinstance(value, dict):
        if {"label", "value"} <= set(value):
            return [f"{value['label']} {value['value']}"]
        return [word for key, item in value.items() if not key.endswith("help")
                for word in _payload_words(item)]  # help: a control's fixed tooltip
    if isinstance(value, list):
        return [word for item in value for word in _payload_words(item)]
    return [value] if isinstance(value, str) and " " in value else []


def payloads(at: AppTest) -> list[dict]:
    return [json.loads(figure.proto.json) for figure in at.get("bidi_component")]


def page_text(at: AppTest, authored: set[str]) -> tuple[str, str]:
    """(all the page's text, the part the step's file did not write): ``authored`` are the
    step's header, prose, formulas and prompt as the page shows them."""
    texts = [e.value for kind in ("markdown", "caption", "latex", "info", "success",
                                  "warning", "error", "header") for e in at.get(kind)]
    texts += [f"{m.label} {m.value}" for m in at.get("metric")]
    texts += [frame.value.to_csv() for kind in ("arrow_data_frame", "table")
              for frame in at.get(kind)]
    texts += [word for data in payloads(at) for word in _payload_words(data)]
    computed = [text for text in texts if not any(mine in text for mine in authored)]
    return "\n".join(texts), "\n".join(computed)


def standing_alone(number: float) -> re.Pattern:
    """``number`` as a page writes it ("16", "16.0", "16.00"), not part of another."""
    whole = f"{number:g}"
    return re.compile(rf"(?<![\w.]){re.escape(whole)}(?:\.0+)?(?![\w.])")


def spoilers(step: lesson_lab.Step, every: str, computed: str, answer: str | None) -> list[str]:
    """What of ``step``'s answer the page gives away before Reveal (``every``: the page's
    text; ``computed``: the part the step's file did not write); ``answer``: the answer as
    the verdict names it after Reveal (None for a sketch)."""
    question, found = step.question, []
    if question.explain in every:
        found.append("the explanation")
    if answer is None:
        return found
    if question.choices and not NUMBER.fullmatch(answer):
        prose = every.replace("\\lambda", "λ").replace("$", "")
        if SPECIFIC.search(answer) and re.search(rf"(?<![\w.]){re.escape(answer)}(?![\w.])",
                                                 prose.replace(step.title, "")):
            found.append(f"the right choice {answer!r}")
    elif standing_alone(float(answer)).search(computed):
        found.append(f"the number {answer}")
    return found


def switches_shown(step: lesson_lab.Step, at: AppTest) -> list[str]:
    """The switches ``step`` withholds that a figure draws before Reveal as its view sets
    them, or free to change."""
    found = []
    offered = lesson_lab.WITHHELD_SWITCHES.get(step.view.path, ())
    for name in set(step.view.withheld) & set(offered):
        value = dict(step.view.params)[name].lower() == "true"
        if any(data[name] == value or name not in data["locked"]
               for data in payloads(at) if name in data):
            found.append(f"the switch {name} as the view sets it, or free")
    return found


def figures_drawn(at: AppTest) -> int:
    """Figures on the page: the lab's (components), plotly charts and tables."""
    return sum(len(at.get(kind)) for kind in ("bidi_component", "plotly_chart",
                                              "arrow_data_frame", "table"))


def predict(at: AppTest, lesson: lesson_lab.Lesson, number: int) -> None:
    """A prediction (the first choice, the answer typed, a sketch); then Reveal."""
    question, key = lesson.steps[number - 1].question, f"{lesson.slug}:{number}"
    if question.sketch:
        at.session_state[f"sketch:{key}"] = {"guess": SKETCH}
        at.run()
    elif question.choices:
        at.radio(key=f"predict:{key}").set_value(question.choices[0]).run()
    else:
        at.number_input(key=f"predict:{key}").set_value(question.answer).run()


def walk(at: AppTest, lesson: lesson_lab.Lesson, number: int) -> dict[str, list[str]]:
    """Step ``number`` of ``lesson`` opened, predicted and revealed: what gave the answer
    away before Reveal, and what is missing after."""
    step = lesson.steps[number - 1]
    at.number_input(key="step").set_value(number).run()
    assert not at.exception, (lesson.slug, number, at.exception)
    authored = {f"{number}. {step.title}", step.text, *step.latex,
                f"step {number} of {len(lesson.steps)}",  # the lesson's line
                f"**Predict first.** {step.question.prompt}"}
    before = page_text(at, authored)
    withheld = [name for name in step.view.withheld if name in step.drawn] if step.view else []
    shown_early = switches_shown(step, at) if step.view and step.view.withheld else []
    drawn_before = figures_drawn(at)
    if withheld and set(withheld) == set(step.drawn) and (
            drawn_before or WITHHELD_NOTE not in before[0]):
        shown_early.append(f"{drawn_before} figures, all withheld")
    predict(at, lesson, number)
    at.button(key=f"reveal:{lesson.slug}:{number}").click().run()
    assert not at.exception, (lesson.slug, number, at.exception)
    after, _ = page_text(at, authored)
    named = [SKETCH_VERDICT] if step.question.sketch and SKETCH_VERDICT in after else \
        VERDICT.findall(after)
    answer = named[0] if named and not step.question.sketch else None
    missing = [] if named else ["the verdict"]
    if withheld and (WITHHELD_NOTE in after or set(withheld) != set(step.drawn)
                     and figures_drawn(at) <= drawn_before):
        missing.append(f"the withheld figures {withheld}")
    return {"before": spoilers(step, *before, answer) + shown_early, "after": missing}


def questions(lesson: lesson_lab.Lesson) -> list[int]:
    return [number for number, step in enumerate(lesson.steps, start=1) if step.question]


@pytest.fixture
def lessons_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/lessons.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("lesson", [
    pytest.param(lesson, marks=[pytest.mark.slow] if lesson.slug in SLOW_LESSONS else [])
    for lesson in SHIPPED], ids=[lesson.slug for lesson in SHIPPED])
def test_no_answer_before_reveal_and_the_answer_after(lessons_page, lesson):
    at = lessons_page
    at.selectbox(key="lesson").set_value(lesson.title).run()
    found = {f"{lesson.number}.{number}": walk(at, lesson, number)
             for number in questions(lesson)}
    assert not {step: seen for step, seen in found.items() if seen["before"] or seen["after"]}


PLANTED = '''
title = "9. Planted"
summary = "A step whose figure shows its answer."
[[steps]]
title = "Circulant"
text = "Count the padding."
view = "basics?preset=Spike plus smooth&n=8&decay=0.9&causal=false"
figures = ["circulant"]
WITHHOLD
[steps.question]
prompt = "With n = 8 and N = 16, how many zeros?"
answer = 1
explain = "16 - 15."
'''


@pytest.mark.parametrize("withhold", ["", 'withhold = ["circulant"]'])
def test_a_planted_spoiler_is_caught(monkeypatch, tmp_path, withhold):
    """Step 1.3 without its ``withhold``: the circulant caption says "1 zero of padding",
    and the walk says so; with it, the walk finds nothing."""
    (tmp_path / "9-planted.toml").write_text(PLANTED.replace("WITHHOLD", withhold))
    monkeypatch.setattr(lesson_lab, "LESSON_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/lessons.py").run()
    found = walk(at, load_lessons(tmp_path)[0][0], 1)
    assert found == {"before": [] if withhold else ["the number 1"], "after": []}


def test_a_withheld_switch_is_drawn_the_other_way_and_locked_until_reveal():
    view = lesson_lab.View("basics", (("n", "8"), ("causal", "true")), ("n",), ("causal",))
    before = view.before_reveal()
    assert before.params == (("n", "8"), ("causal", "false"))
    assert before.locked == ("n", "causal") and before.url == "basics?n=8&causal=false"
    figures_only = lesson_lab.View("basics", (("n", "8"),), (), ("toeplitz",))
    assert figures_only.before_reveal() == figures_only


@pytest.mark.parametrize("withhold, message", [
    ('["circulant"]', "withhold must list some of the step's figures and the switches its "
                      "view sets, ['toeplitz', 'causal']; got ['circulant']"),
    ('["decay"]', "got ['decay']"),  # a control, not a switch
    ("[]", "withhold must list"),
    ('"toeplitz"', "withhold must list"),
])
def test_a_withhold_names_the_steps_figures_or_switches(withhold, message):
    text = PLANTED.replace('figures = ["circulant"]\n', "").replace(
        "WITHHOLD", f"withhold = {withhold}")
    with pytest.raises(LessonError, match=re.escape(message)):
        parse_lesson(text, "9-planted.toml")


def test_a_withhold_needs_a_question():
    text = PLANTED.replace("WITHHOLD", 'withhold = ["circulant"]').split("[steps.question]")[0]
    with pytest.raises(LessonError, match="withhold needs a question"):
        parse_lesson(text, "9-planted.toml")
    step = parse_lesson(PLANTED.replace("WITHHOLD", 'withhold = ["circulant"]'),
                        "9-planted.toml").steps[0]
    assert step.view.withheld == ("circulant",) and step.view.url.endswith("causal=false")
