"""Lessons: the shipped lesson files load, every step renders, predict-then-reveal hides the
answer and the view until a prediction is made, and a malformed file is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_lesson_view_controls import PAGE_FILES
from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.lesson import LessonError, load_lessons, parse_lesson

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
SHIPPED, PROBLEMS = load_lessons()

GOOD = '''
title = "A lesson"
summary = "One line."
[[steps]]
title = "First"
text = "Some text."
view = "basics?n=8"
[steps.question]
prompt = "How many?"
answer = 15
explain = "Because."
'''


def test_the_shipped_lessons_load_with_five_to_ten_steps_each():
    assert PROBLEMS == []
    assert len(SHIPPED) >= 5
    for lesson in SHIPPED:
        assert 5 <= len(lesson.steps) <= 10, lesson.slug
        for step in lesson.steps:
            if step.question is not None and step.question.choices:
                assert (step.question.answer in step.question.choices) != bool(
                    step.question.computed)  # typed among the choices, or computed


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('title = "First"\n', ""), "bad.toml, step 1: title must be a "
                                                   "non-empty string"),
    (lambda t: t.replace('view = "basics?n=8"', 'view = "nowhere?n=8"'),
     "bad.toml, step 1.view: view must be a lab page"),
    (lambda t: t.replace('view = "basics?n=8"', 'view = "basics?rank=8"'),
     "bad.toml, step 1.view: view sets ['rank'], which the basics page does not have"),
    (lambda t: t.replace("answer = 15", 'answer = "fifteen"'),
     "bad.toml, step 1.question: answer must be a finite number"),
    (lambda t: t.replace("answer = 15", 'answer = "c"\nchoices = ["a", "b"]'),
     "bad.toml, step 1.question: answer must be one of the choices"),
    (lambda t: t.replace('text = "Some text."', 'txt = "Some text."'),
     "bad.toml, step 1: unknown fields ['txt']"),
    (lambda t: t + "\n[[[", "bad.toml: not valid TOML"),
    (lambda t: t.replace('view = "basics?n=8"', 'view = "basics?n=8"\nlock = ["rank"]'),
     "bad.toml, step 1.view: lock names ['rank'], which the basics page does not have"),
    (lambda t: t.replace('view = "basics?n=8"', 'lock = ["n"]'),
     "bad.toml, step 1: lock needs a view"),
    (lambda t: t.split("[[steps]]")[0], "bad.toml: steps must be a list of 1 to 30"),
])
def test_a_malformed_lesson_names_the_file_step_and_field(edit, message):
    assert parse_lesson(GOOD, "good.toml").steps[0].view.url == "basics?n=8"
    with pytest.raises(LessonError) as caught:
        parse_lesson(edit(GOOD), "bad.toml")
    assert message in str(caught.value)


def test_a_locked_view_opens_with_those_controls_disabled():
    lesson = parse_lesson(GOOD.replace('view = "basics?n=8"', 'view = "basics?n=8"\nlock = ["n"]'),
                          "locked.toml")
    view = lesson.steps[0].view
    assert view.embed_url == "basics?n=8&embed=true&lock=n" and view.url == "basics?n=8"
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lock"] = "n"
    at.run()
    at.switch_page("pages/basics.py").run()
    figure = json.loads(at.get("bidi_component")[0].proto.json)  # Basics' Toeplitz figure
    assert figure["locked"] == ["n"]  # its n slider disabled, λ not


def test_a_bad_file_leaves_the_others_loaded(tmp_path):
    (tmp_path / "a.toml").write_text(GOOD)
    (tmp_path / "b.toml").write_text(GOOD.replace("answer = 15", "answer = true"))
    (tmp_path / "c.toml").write_bytes(b"\xff\xfe")
    lessons, errors = load_lessons(tmp_path)
    assert [lesson.slug for lesson in lessons] == ["a"]
    assert len(errors) == 2 and errors[0].startswith("b.toml, step 1.question: answer")
    assert errors[1] == "c.toml: not UTF-8 text"


# -- the page ---------------------------------------------------------------------------


@pytest.fixture
def lessons_page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/lessons.py").run()
    assert not at.exception, at.exception
    return at


SKETCH = [[2.0, 0.5], [16.0, 0.03], [128.0, 0.001]]  # a sketch, as the browser sends it


def _reveal(at: AppTest, lesson, number: int) -> None:
    question = lesson.steps[number - 1].question
    key = f"predict:{lesson.slug}:{number}"
    if question.sketch:
        at.session_state[f"sketch:{lesson.slug}:{number}"] = {"guess": SKETCH}
        at.run()
    elif question.choices:
        at.radio(key=key).set_value(question.choices[0]).run()
    else:
        at.number_input(key=key).set_value(question.answer).run()
    at.button(key=f"reveal:{lesson.slug}:{number}").click().run()


@pytest.mark.parametrize("lesson", SHIPPED, ids=[lesson.slug for lesson in SHIPPED])
def test_every_step_renders_and_reveals(lessons_page, lesson):
    at = lessons_page
    at.selectbox(key="lesson").set_value(lesson.title).run()
    for number, step in enumerate(lesson.steps, start=1):
        at.number_input(key="step").set_value(number).run()
        assert not at.exception, (lesson.slug, number, at.exception)
        assert at.header[0].value == f"{number}. {step.title}"
        if step.question is not None:
            _reveal(at, lesson, number)
            assert not at.exception, (lesson.slug, number, at.exception)
            shown = [m.value for m in (*at.success, *at.warning, *at.info)
                     if step.question.explain in m.value]
            assert len(shown) == 1
        if step.view is not None:
            assert any(b.label == "Open this view on its own page" for b in at.get("link_button"))


def test_the_answer_waits_for_a_prediction_and_the_figure_does_not(lessons_page):
    at = lessons_page
    first = SHIPPED[0]
    assert first.steps[1].question is not None and first.steps[1].view.withheld == ("causal",)
    at.number_input(key="step").set_value(2).run()
    assert at.button(key=f"reveal:{first.slug}:2").disabled  # no prediction yet
    assert not at.success and not at.warning
    assert first.steps[1].question.explain not in " ".join(m.value for m in at.markdown)
    figure = json.loads(at.get("bidi_component")[0].proto.json)  # drawn before the answer,
    assert not figure["causal"] and "causal" in figure["locked"]  # its switch withheld
    _reveal(at, first, 2)
    assert at.success or at.warning
    assert json.loads(at.get("bidi_component")[0].proto.json)["causal"]  # as the view says
    assert at.button(key=f"reveal:{first.slug}:2").disabled  # revealed once


def test_back_and_next_move_one_step(lessons_page):
    at = lessons_page
    assert at.button(key="back").disabled
    at.button(key="next").click().run()
    assert at.number_input(key="step").value == 2
    at.button(key="back").click().run()
    assert at.number_input(key="step").value == 1


@pytest.mark.parametrize("kind", ["choices", "number"])
def test_a_prediction_and_its_reveal_survive_next_and_back(lessons_page, kind):
    """Answered right, revealed, Next, Back: still right and revealed (Streamlit drops the
    widget's own state while another step is drawn)."""
    at = lessons_page
    lesson, number = next((lesson, i) for lesson in SHIPPED
                          for i, step in enumerate(lesson.steps, start=1)
                          if step.question is not None and not step.question.sketch
                          and not step.question.computed
                          and bool(step.question.choices) == (kind == "choices")
                          and i < len(lesson.steps))
    at.selectbox(key="lesson").set_value(lesson.title).run()
    at.number_input(key="step").set_value(number).run()
    question = lesson.steps[number - 1].question
    key = f"predict:{lesson.slug}:{number}"
    right = question.answer
    (at.radio(key=key) if kind == "choices" else at.number_input(key=key)).set_value(right).run()
    at.button(key=f"reveal:{lesson.slug}:{number}").click().run()
    assert at.success and not at.warning
    at.button(key="next").click().run()
    at.button(key="back").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="step").value == number
    assert at.success and not at.warning, "the right answer reads as wrong after Back"
    assert (at.radio(key=key) if kind == "choices" else at.number_input(key=key)).value == right
    assert at.button(key=f"reveal:{lesson.slug}:{number}").disabled  # revealed already


def _revealed_then_reopened(lesson, number: int) -> tuple[dict[str, str], AppTest]:
    """Predict and reveal step ``number`` in one session; open a fresh session (a reload,
    a link) on the address it left. Returns (that address, the fresh session)."""
    first = AppTest.from_file(APP, default_timeout=120)
    first.run()
    first.switch_page("pages/lessons.py").run()
    first.selectbox(key="lesson").set_value(lesson.title).run()
    first.number_input(key="step").set_value(number).run()
    _reveal(first, lesson, number)
    address = {name: value if isinstance(value, str) else value[-1]
               for name, value in first.query_params.items()}
    again = AppTest.from_file(APP, default_timeout=120)
    again.run()
    again.switch_page("pages/lessons.py")
    # the lesson and step, which the browser's address holds (bound widgets), and the rest
    for name, value in {"lesson": lesson.title, "step": str(number), **address}.items():
        again.query_params[name] = value
    again.run()
    assert not again.exception, again.exception
    return address, again


@pytest.mark.parametrize("kind", ["choices", "number"])
def test_a_reload_keeps_the_steps_prediction_and_reveal(kind):
    """A fresh session (a reload, a link) opened on the address a revealed step left."""
    lesson, number = next((lesson, i) for lesson in SHIPPED
                          for i, step in enumerate(lesson.steps, start=1)
                          if step.question is not None and not step.question.sketch
                          and not step.question.computed
                          and bool(step.question.choices) == (kind == "choices"))
    question = lesson.steps[number - 1].question
    address, again = _revealed_then_reopened(lesson, number)
    assert address["guess"].startswith(f"{number}:") and address["revealed"] == str(number)
    assert again.number_input(key="step").value == number
    shown = [m.value for m in (*again.success, *again.warning)]
    assert len(shown) == 1 and question.explain in shown[0]
    key = f"predict:{lesson.slug}:{number}"
    kept = (again.radio(key=key) if question.choices else again.number_input(key=key)).value
    assert kept == (question.choices[0] if question.choices else question.answer)


def test_a_reload_keeps_a_sketch_and_its_reveal():
    """A sketch question's drawing and reveal, from the address a revealed step left."""
    lesson, number = next((lesson, i) for lesson in SHIPPED
                          for i, step in enumerate(lesson.steps, start=1)
                          if step.question is not None and step.question.sketch)
    address, again = _revealed_then_reopened(lesson, number)
    assert address["sketch"] == f"{number}:" + ";".join(f"{x:.3g},{y:.3g}" for x, y in SKETCH)
    assert again.session_state[f"prediction:{lesson.slug}:{number}"] == SKETCH
    assert any(lesson.steps[number - 1].question.explain in m.value for m in again.info)


def test_another_lesson_starts_at_its_first_step(lessons_page):
    at = lessons_page
    at.number_input(key="step").set_value(4).run()
    at.selectbox(key="lesson").set_value(SHIPPED[2].title).run()
    assert not at.exception
    assert at.number_input(key="step").value == 1
    assert at.header[0].value == f"1. {SHIPPED[2].steps[0].title}"


VIEWS = sorted({step.view for lesson in SHIPPED for step in lesson.steps
                if step.view is not None and step.view.params}, key=lambda view: view.url)


@pytest.mark.parametrize("view", VIEWS, ids=[view.url[:60] for view in VIEWS])
def test_every_view_opens_exactly_as_written(view):
    """The page takes every value the step's view sets, as written: no link notice (a
    checkpoint select box, for one, takes its shown label, not its key)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(str(PAGE_FILES[view.path].relative_to(ROOT)))
    for key, value in view.params:
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    notices = [w.value for w in at.warning if w.value.startswith("The link's")]
    assert not notices, notices


def test_a_malformed_lesson_file_is_an_error_and_the_rest_works(monkeypatch, tmp_path):
    for path in lesson_lab.LESSON_DIR.glob("*.toml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "9-broken.toml").write_text(GOOD.replace('view = "basics?n=8"',
                                                         'view = "basics?rank=8"'))
    monkeypatch.setattr(lesson_lab, "LESSON_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/lessons.py").run()
    assert not at.exception
    assert len(at.error) == 1 and "9-broken.toml, step 1.view" in at.error[0].value
    assert len(at.selectbox(key="lesson").options) == len(SHIPPED)
    at.button(key="next").click().run()
    assert not at.exception and at.number_input(key="step").value == 2


@pytest.mark.parametrize("question, message", [
    ('computed = "nope"\nchoices = ["a", "b"]', "computed must be one of"),
    ('computed = "never_to_roundoff"\nanswer = "a"\nchoices = ["a", "b"]',
     "then no answer is typed"),
    ('sketch = "nope"', "sketch must be one of"),
    ('sketch = "decay_envelope"\nanswer = 1', "a sketch question has no answer"),
])
def test_a_computed_or_sketched_question_is_checked_on_load(question, message):
    text = ('title = "Q"\nsummary = "s"\n[[steps]]\ntitle = "t"\ntext = "x"\n'
            '[steps.question]\nprompt = "p"\nexplain = "e"\n' + question + "\n")
    with pytest.raises(LessonError, match=message):
        parse_lesson(text, "q.toml")


@pytest.mark.slow  # Table 10's pair: two charlm models at 1x to 16x
def test_a_step_may_draw_several_panels_of_a_page(monkeypatch, tmp_path):
    """Inspect's channel, atlas, ablation and Table 10 in one step: each drawn once."""
    (tmp_path / "1-panels.toml").write_text(
        'title = "1. Panels"\nsummary = "s"\n[[steps]]\ntitle = "All of Inspect"\n'
        'text = "x"\nview = "inspect"\nfigures = ["channel", "atlas", "ablation", "table10"]\n',
        encoding="utf-8")
    monkeypatch.setattr(lesson_lab, "LESSON_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/lessons.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("bidi_component")) == 1  # the channel on the Toeplitz figure
    assert len(at.get("plotly_chart")) == 1  # Table 10
    assert any("every layer kept to its band" in m.value for m in at.markdown)
    assert any("the atlas's medians per layer" in m.value for m in at.markdown)
