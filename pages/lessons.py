"""Page "Lessons": guided steps over the lab's figures, one step per screen, with the step's
figures beside the text (pages/figures/steps.py); predict, then reveal; a link to every
step; a presenter mode."""

import math
import urllib.parse
from pathlib import Path

import streamlit as st

from pages._ui import controls, frame
from pages._ui.link_values import quoted
from pages._ui.memo import memo
from pages.figures import sketch, steps
from tnn_core.lab import lesson as lesson_lab

frame.ensure_app_frame()

# Presenter mode: the sidebar hidden, larger type, arrow keys move between steps wherever
# the focus is (the keys click the Back / Next buttons; ignored while typing in a field,
# and left to a figure's slider while the pointer holds it).
PRESENTER_STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
[data-testid="stHeader"] {display: none;}
[data-testid="stMainBlockContainer"] {padding-top: 1.5rem; padding-bottom: 1rem;}
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p {font-size: 1.35rem;}
[data-testid="stMain"] h2 {font-size: 2.4rem;}
</style>"""
ARROW_KEYS = """<script>
if (!window.toeplitzLessonKeys) {
  window.toeplitzLessonKeys = true;
  let held = false;  // a pointer is down: a figure's slider under it keeps its arrow keys
  document.addEventListener("pointerdown", () => { held = true; }, true);
  document.addEventListener("pointerup", () => { held = false; }, true);
  document.addEventListener("keydown", (event) => {
    const label = {ArrowRight: "Next", ArrowLeft: "Back"}[event.key];
    const target = event.composedPath()[0];  // inside a figure's shadow root too
    const tag = target?.tagName, type = target?.type;
    const typing = ["TEXTAREA", "SELECT"].includes(tag) || (tag === "INPUT" &&
      !["range", "checkbox", "radio"].includes(type));
    if (!label || typing || (held && type === "range")) return;
    const button = [...document.querySelectorAll("[data-testid='stMain'] button")]
      .find((b) => b.innerText.trim().endsWith(label) && !b.disabled);
    if (button) { event.preventDefault(); event.stopPropagation(); button.click(); }
  }, true);  // capture: before a focused slider or radio takes the key
}
</script>"""
VIEW_HEIGHT = 1100  # px of the embedded page


@memo(max_entries=8)
def lessons(folder: str, listing: tuple) -> tuple[dict[str, lesson_lab.Lesson], list[str]]:
    """By title: a bound select box puts its displayed value in the URL, so the titles are
    the options (load_lessons keeps them unique). ``listing`` (the folder's names, sizes and
    modification times) is only the key: a file added or edited is read on the next run."""
    found, errors = lesson_lab.load_lessons(Path(folder))
    return {lesson.title: lesson for lesson in found}, errors


def move(by: int, count: int) -> None:
    go_to(min(max(1, st.session_state.get("step", 1) + by), count))


def go_to(number: int) -> None:
    """on_click / on_change: step ``number``."""
    st.session_state["step"] = number
    forget_prediction()


def forget_prediction() -> None:
    """The address's prediction and reveal were the step left's."""
    for name in ("guess", "sketch", "revealed"):
        st.query_params.pop(name, None)


def show_view(view: lesson_lab.View, wanted: tuple[str, ...], key: str) -> None:
    """The step's figures ``wanted``, drawn here at its settings (none: the page itself,
    embedded, with its controls set), and a link that opens the page on its own."""
    if wanted:
        try:
            steps.show(view, wanted, key)
        except ValueError as err:
            frame.show_error(err)
    else:
        st.iframe(f"/{view.embed_url}", height=VIEW_HEIGHT)
    if view.locked:
        st.caption(f"Fixed for this step: {', '.join(view.locked)}. The page on its own "
                   f"leaves every control free.")
    st.link_button("Open this view on its own page", f"/{view.url}",
                   icon=":material/open_in_new:")


def keep(widget_key: str, stored_key: str) -> None:
    """on_change: a prediction kept under a plain key, which outlives the widget (Streamlit
    drops a widget's state on any run that does not draw it: another step)."""
    st.session_state[stored_key] = st.session_state[widget_key]


def from_address(question: lesson_lab.Question, number: int, stored_key: str,
                 revealed_key: str) -> None:
    """A reload or a shared link: the step's prediction and reveal from the address
    (``guess=STEP:VALUE``, ``revealed=STEP``); a prediction the page cannot use is named in
    the link notice."""
    text = st.query_params.get("guess")
    if stored_key in st.session_state or text is None:
        return
    try:
        guess = lesson_lab.kept_predictions.read_guess(text, number, question)
    except ValueError as err:
        refuse_link_value("guess", text, err, "no prediction")
        return
    st.session_state[stored_key] = guess
    if st.query_params.get("revealed") == str(number):
        st.session_state[revealed_key] = True


def to_address(number: int, prediction, revealed: bool) -> None:
    """The step's prediction and reveal into the address, so a reload keeps them."""
    if prediction is None:
        st.query_params.pop("guess", None)
    else:
        st.query_params["guess"] = lesson_lab.kept_predictions.guess_text(number, prediction)
    if revealed:
        st.query_params["revealed"] = str(number)
    else:
        st.query_params.pop("revealed", None)


def sketch_from_address(number: int, curve: lesson_lab.Curve) -> list[list[float]]:
    """The step's sketch from the address (``sketch=STEP:x,y;x,y;...``), or []; a sketch
    the page cannot use is named in the link notice and taken out of the address."""
    text = st.query_params.get("sketch")
    if text is None:
        return []
    try:
        return lesson_lab.kept_predictions.read_sketch(text, number, curve)
    except ValueError as err:
        refuse_link_value("sketch", text, err, "no sketch")
        st.query_params.pop("sketch", None)
        return []


def refuse_link_value(key: str, text: str, err: ValueError, used: str) -> None:
    """The link's ``key`` = ``text`` cannot be used (``err`` says why): one line of the
    page's link notice, which says that ``used`` is used instead."""
    controls.note_link_value(key, f"= {quoted(text)} {err}", None, used)


def factor_text(decades: float) -> str:
    """The ratio 10^``decades`` in words: two significant figures, written out from 100 on
    ("1.3", "240", "12,000"), and from a million on a power of ten ("10^7", "10^323"),
    which no float overflows."""
    if decades >= 6:
        return f"10^{decades:.0f}"
    factor = 10**decades
    return f"{factor:.2g}" if factor < 100 else f"{float(f'{factor:.2g}'):,.0f}"


def show_sketch(question: lesson_lab.Question, view: lesson_lab.View, key: str,
                number: int) -> bool:
    """Sketch, then reveal: the lab's curve drawn over the sketch, and how far apart they
    are. Returns whether the curve is revealed. The sketch and its reveal are kept for the
    step, and in the address (three significant digits a point), so a reload keeps them."""
    st.markdown(f"**Predict first.** {question.prompt}")
    figure_key, stored_key, revealed_key = f"sketch:{key}", f"prediction:{key}", f"revealed:{key}"
    try:
        curve = steps.sketch_curve(view, question.sketch, frame.seed())
    except ValueError as err:
        frame.show_error(err)
        return True
    if stored_key not in st.session_state:  # a reload, a link
        st.session_state[stored_key] = sketch_from_address(number, curve)
        if st.session_state[stored_key] and st.query_params.get("revealed") == str(number):
            st.session_state[revealed_key] = True
    points = sketch.guess(figure_key) or st.session_state[stored_key]
    st.session_state[stored_key] = points
    if points:
        st.query_params["sketch"] = lesson_lab.kept_predictions.sketch_text(number, points)
    revealed = st.session_state.get(revealed_key, False)
    if revealed:
        st.query_params["revealed"] = str(number)
    sketch.show(curve, "Draw with the pointer: press, drag, release.", revealed, points,
                figure_key)
    st.button("Reveal", key=f"reveal:{key}", icon=":material/visibility:",
              disabled=not points or revealed,
              on_click=st.session_state.__setitem__, args=(revealed_key, True))
    if not revealed:
        st.caption("The lab's curve appears over your sketch once you press Reveal.")
        return False
    apart = lesson_lab.distance(points, curve)
    how = ("none of your sketch lies inside the curve's range" if not math.isfinite(apart)
           else f"your sketch is a factor {factor_text(apart)} from it, at the median "
                f"of its points" if curve.log_y
           else f"your sketch is {apart:.0%} of the axis from it")
    st.info(f"The answer is the lab's curve, drawn over your sketch: {how}. "
            f"{question.explain}", icon=":material/insights:")
    return True


def show_question(question: lesson_lab.Question, view: lesson_lab.View | None, key: str,
                  number: int) -> bool:
    """Predict, then reveal. Returns whether the answer is revealed. The prediction and the
    reveal are kept per step, so Back and Next return to them as they were, and the
    current step's are in the address, so a reload or a shared link keeps them."""
    st.markdown(f"**Predict first.** {question.prompt}")
    widget_key, stored_key = f"predict:{key}", f"prediction:{key}"
    revealed_key = f"revealed:{key}"
    from_address(question, number, stored_key, revealed_key)
    if widget_key not in st.session_state and stored_key in st.session_state:
        st.session_state[widget_key] = st.session_state[stored_key]  # back on this step
    if question.choices:
        prediction = st.radio("Your prediction", question.choices, index=None,
                              key=widget_key, label_visibility="collapsed",
                              on_change=keep, args=(widget_key, stored_key))
    else:
        prediction = st.number_input("Your prediction", value=None, key=widget_key,
                                     placeholder="type a number",
                                     on_change=keep, args=(widget_key, stored_key))
    st.button("Reveal", key=f"reveal:{key}", icon=":material/visibility:",
              disabled=prediction is None or st.session_state.get(revealed_key, False),
              on_click=st.session_state.__setitem__, args=(revealed_key, True))
    to_address(number, prediction, st.session_state.get(revealed_key, False))
    if not st.session_state.get(revealed_key, False):
        st.caption("The answer appears once you have made a prediction and pressed Reveal.")
        return False
    try:  # a computed question: the data at the step's settings decide
        answer = (steps.computed_answer(view, question.computed, question.choices, frame.seed())
                  if question.computed else question.answer)
    except ValueError as err:
        frame.show_error(err)
        return True
    shown = answer if question.choices else f"{answer:g}"
    if prediction is None:  # cleared after the reveal: nothing to judge
        st.info(f"The answer is **{shown}**. {question.explain}", icon=":material/info:")
        return True
    right = question.is_right(prediction, answer)
    (st.success if right else st.warning)(
        f"{'Right' if right else 'Not quite'}: the answer is **{shown}**. {question.explain}",
        icon=":material/check_circle:" if right else ":material/info:")
    return True


presenting = st.session_state.get("present", st.query_params.get("present") == "true")
if not presenting:
    st.title("Lessons")
found, problems = lessons(str(lesson_lab.LESSON_DIR),
                          lesson_lab.folder_listing(lesson_lab.LESSON_DIR))
for problem in problems:
    st.error(f"A lesson file could not be loaded: {problem}", icon=":material/error:")
if not found:
    st.info(f"No lessons to show. Add a lesson file to {lesson_lab.LESSON_DIR}; "
            f"docs/lessons.md shows how to write one.", icon=":material/school:")
    st.stop()

# presenting, the lesson's controls fold away: the step has the screen (the arrow keys move)
top = (st.expander("Lesson, step and presenter mode") if presenting else st.container()
       ).columns([3, 1, 1])
title = controls.control(top[0].selectbox, "Lesson", list(found), key="lesson", on_change=go_to,
                         args=(1,))  # another lesson starts at its first step
lesson = found[title]
count = len(lesson.steps)
if not 1 <= st.session_state.get("step", 1) <= count:
    st.session_state["step"] = 1
number = int(controls.control(top[1].number_input, "Step", 1, count, key="step",
                              on_change=forget_prediction,
                              help=f"{count} steps; the address bar links to this step."))
present = controls.control(top[2].toggle, "Presenter mode", key="present",
                           help="Larger type, no sidebar, one step per screen; the arrow keys "
                                "move between steps.")
if present:
    st.html(PRESENTER_STYLE)
st.html(ARROW_KEYS, unsafe_allow_javascript=True)

step = lesson.steps[number - 1]
# the figures beside the whole text, header included: they start at the top of the screen
text, view = st.columns([2, 3]) if step.view else (st.container(), None)
with text:
    st.header(f"{number}. {step.title}")
    if not present:
        st.caption(f"{lesson.title} · step {number} of {count} · {lesson.summary}")
    st.markdown(step.text)
    for formula in step.latex:
        st.latex(formula)
    if step.question is None:
        revealed = True
    elif step.question.sketch:
        revealed = show_sketch(step.question, step.view, f"{lesson.slug}:{number}", number)
    else:
        revealed = show_question(step.question, step.view, f"{lesson.slug}:{number}", number)
    if revealed and step.notice:
        st.info(f"**What to notice.** {step.notice}", icon=":material/lightbulb:")
if view is not None:
    with view:
        if revealed or not set(step.drawn) <= set(lesson_lab.MEASUREMENTS):
            show_view(step.view, step.drawn, f"lesson:{lesson.slug}:{number}")
        else:  # the measurement is the answer
            st.caption("The measurement appears with the answer.")

nav = st.columns([1, 1, 4])
nav[0].button("Back", key="back", icon=":material/arrow_back:", disabled=number == 1,
              on_click=move, args=(-1, count), width="stretch")
nav[1].button("Next", key="next", icon=":material/arrow_forward:", disabled=number == count,
              on_click=move, args=(1, count), width="stretch")
if st.context.url:  # the app's address, with this page's path when it is not the default
    base = st.context.url.rstrip("/").removesuffix("/lessons")
    query = urllib.parse.urlencode({"lesson": title, "step": number})
    nav[2].caption(f"Link to this step: `{base}/lessons?{query}`")
