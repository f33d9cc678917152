"""Page "Lessons": guided steps over the lab's figures, one step per screen, with the step's
figures beside the text (pages/lessons/steps.py); predict, then reveal; a link to every
step; a presenter mode."""

import re
import urllib.parse
from pathlib import Path

import streamlit as st

from pages._ui import controls, frame, session_keys
from pages._ui.link_values import quoted
from pages._ui.memo import memo
from pages.figures import sketch
from pages.lessons import steps
from tnn_core.lab import lesson as lesson_lab

frame.ensure_app_frame()

# Presenter mode: the sidebar and header hidden, the page as wide as the screen, and the type
# sized by the screen's height, so that a step fits one screen of a projector from 720 to
# 1080 lines: at 900 every text is at least 18 px (the figures' through their one size,
# --figure-font: pages/figures/figure.css; a formula's subscripts are 0.7 of its size, so a
# display formula at 3vh puts them at 18.3 px).
PRESENTER_STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
[data-testid="stHeader"] {display: none;}
[data-testid="stMainBlockContainer"] {padding: 1.5rem 1.5rem 1rem; max-width: none;}
[data-testid="stMain"] {--figure-font: clamp(0.8rem, 2.05vh, 1.4rem);
  --factors-height: 19vh; --curve-height: calc(39vh - 121px); --sketch-height: 22vh;}
[data-testid="stMain"] :is(p, li, label, summary, input, button, a, th, td) {
  font-size: clamp(1rem, 2.4vh, 1.6rem);}
[data-testid="stMain"] :is(p, li) code {font-size: 0.9em;}
[data-testid="stMain"] .katex-display {font-size: clamp(1rem, 3vh, 2rem);}
[data-testid="stMain"] [data-testid="stCaptionContainer"] :is(p, code, a) {
  font-size: clamp(0.9rem, 2.1vh, 1.4rem);}
[data-testid="stMain"] [data-testid="stCaptionContainer"] code {word-break: break-all;}
[data-testid="stMain"] h2 {font-size: clamp(1.6rem, 4.3vh, 3rem);}
</style>"""
# Every mode: the step's figures stay on the screen while the text beside them scrolls (from
# 640 px wide, where Streamlit's columns sit side by side).
LAYOUT_STYLE = """<style>
@media (min-width: 640px) {
  [data-testid="stColumn"]:has(.st-key-step-figures) {
    position: sticky; top: 0.5rem; align-self: flex-start;}
}
</style>"""
# The page's keys and view: Left / Right click Back / Next wherever the focus is, but in a
# field being typed in (a figure's focused slider keeps them: pages/figures/common.js stops
# them on the window, before this listener on the document); after Reveal the verdict and the
# notice below it are scrolled onto the screen (the sticky figures stay) and kept there while
# what is above it settles its height (a sketch gains the lab's line), until 2 s without
# a resize or the reader's own scroll, key or click; a display formula wider than its column
# (a phone) is scaled down to fit it instead of scrolling sideways.
PAGE_SCRIPT = """<script>
if (!window.toeplitzLessonKeys) {
  window.toeplitzLessonKeys = true;
  document.addEventListener("keydown", (event) => {
    const label = {ArrowRight: "Next", ArrowLeft: "Back"}[event.key];
    const target = event.composedPath()[0];  // inside a figure's shadow root too
    const tag = target?.tagName, type = target?.type;
    const typing = ["TEXTAREA", "SELECT"].includes(tag) || (tag === "INPUT" &&
      !["range", "checkbox", "radio"].includes(type));
    if (!label || typing) return;
    const button = [...document.querySelectorAll("[data-testid='stMain'] button")]
      .find((b) => b.innerText.trim().endsWith(label) && !b.disabled);
    if (button) { event.preventDefault(); event.stopPropagation(); button.click(); }
  }, true);  // capture: before a focused radio takes the key
  let revealing = false, queued = false, keeper = null, placed = [null, 0];
  document.addEventListener("click", (event) => {
    const button = event.composedPath().find((e) => e.tagName === "BUTTON");
    if (button && button.innerText.trim().endsWith("Reveal")) revealing = true;
  }, true);
  const placeVerdict = () => {  // the verdict (returned) and the notice below it on screen
    const alerts = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stAlert']")];
    const verdict = alerts.find((a) => /the answer is/i.test(a.innerText));
    if (!verdict) return null;
    const column = verdict.closest("[data-testid='stColumn']") || document;
    [...column.querySelectorAll("[data-testid='stAlert']")].pop()
      .scrollIntoView({block: "nearest"});
    if (verdict.getBoundingClientRect().top < 0) verdict.scrollIntoView({block: "start"});
    placed = [verdict, verdict.getBoundingClientRect().top];  // where it was left
    return verdict;
  };
  const keepVerdict = (verdict) => {  // through every resize, until the layout is still
    const off = new AbortController(); let quiet;
    const stop = () => { off.abort(); clearTimeout(quiet); keeper?.disconnect(); keeper = null; };
    const moved = () => placed[0].isConnected &&
      Math.abs(placed[0].getBoundingClientRect().top - placed[1]) > 1;
    keeper = new ResizeObserver(() => {
      placeVerdict(); clearTimeout(quiet); quiet = setTimeout(stop, 2000); });
    for (const e of [document.querySelector("[data-testid='stMainBlockContainer']"),
      verdict.closest("[data-testid='stColumn']")]) if (e) keeper.observe(e);
    for (const type of ["keydown", "pointerdown"])
      window.addEventListener(type, stop, {capture: true, signal: off.signal});
    document.addEventListener("scroll", () => { if (moved()) stop(); },  // the reader's
      {capture: true, signal: off.signal});
  };
  const showVerdict = () => {
    const verdict = placeVerdict();
    if (!verdict || !document.querySelector("[data-test-script-state='notRunning']")) return;
    revealing = false; if (!keeper) keepVerdict(verdict);
  };
  const fitFormulas = () => {
    for (const display of document.querySelectorAll("[data-testid='stMain'] .katex-display")) {
      const formula = display.querySelector(":scope > .katex");
      if (!formula) continue;
      formula.style.fontSize = "";
      if (display.scrollWidth > display.clientWidth + 1) {
        formula.style.fontSize = `${1.21 * display.clientWidth / display.scrollWidth}em`;
      }
    }
  };
  const settle = () => { queued = false; fitFormulas(); if (revealing) showVerdict(); };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(settle); } };
  new MutationObserver(later).observe(document.body, {childList: true, subtree: true,
    attributes: true, attributeFilter: ["data-test-script-state"]});
  window.addEventListener("resize", later);
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


def move(by: int, count: int, neighbour: tuple[str, int] | None) -> None:
    """on_click of Back (``by`` -1) and Next (+1): the step ``by`` away, or past the
    lesson's first or last step the ``neighbour`` lesson's step (its title, its step)."""
    number = st.session_state.get(session_keys.STEP, 1) + by
    if 1 <= number <= count:
        go_to(number)
    elif neighbour is not None:
        st.session_state[session_keys.LESSON] = neighbour[0]
        go_to(neighbour[1])


def neighbours(found: dict[str, lesson_lab.Lesson], title: str
               ) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """Where Back leaves the lesson ``title`` (the previous lesson's last step) and where Next
    does (the next lesson's first step); None before the first and after the last."""
    titles = list(found)
    place = titles.index(title)
    before = titles[place - 1] if place > 0 else None
    after = titles[place + 1] if place + 1 < len(titles) else None
    return (before and (before, len(found[before].steps))), (after and (after, 1))


def go_to(number: int) -> None:
    """on_click / on_change: step ``number``."""
    st.session_state[session_keys.STEP] = number
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


def plain(title: str) -> str:
    """A title for markdown as it reads: "1. Toeplitz …" is not the first item of a list."""
    return re.sub(r"^(\d+)\. ", r"\1\\. ", title)


def show_sketch(question: lesson_lab.Question, view: lesson_lab.View, key: str,
                number: int) -> bool:
    """Sketch, then reveal: the lab's curve drawn over the sketch, and how far apart they
    are. Returns whether the curve is revealed. The sketch and its reveal are kept for the
    step, and in the address (three significant digits a point), so a reload keeps them."""
    st.markdown(f"**Predict first.** {question.prompt}")
    figure_key, stored_key = f"sketch:{key}", session_keys.prediction(key)
    revealed_key = session_keys.revealed(key)
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
    sketch.show(curve, sketch.INSTRUCTIONS, revealed, points, figure_key)
    st.button("Reveal", key=f"reveal:{key}", icon=":material/visibility:",
              disabled=not points or revealed,
              on_click=st.session_state.__setitem__, args=(revealed_key, True))
    if not revealed:
        st.caption("The lab's curve appears over your sketch once you press Reveal.")
        return False
    st.info(f"The answer is the lab's curve, drawn over your sketch: "
            f"{sketch.distance_words(points, curve)}. "
            f"{question.explain}", icon=":material/insights:")
    return True


def show_question(question: lesson_lab.Question, view: lesson_lab.View | None, key: str,
                  number: int) -> bool:
    """Predict, then reveal. Returns whether the answer is revealed. The prediction and the
    reveal are kept per step, so Back and Next return to them as they were, and the
    current step's are in the address, so a reload or a shared link keeps them."""
    st.markdown(f"**Predict first.** {question.prompt}")
    widget_key, stored_key = f"predict:{key}", session_keys.prediction(key)
    revealed_key = session_keys.revealed(key)
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


presenting = st.session_state.get(session_keys.PRESENT, st.query_params.get("present") == "true")
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

# presenting, the step has the screen from its first line: the lesson's controls fold away
# below it (the arrow keys move); else they come first
first, second = st.container(), st.container()
body, fold = ((first, second.expander("Lesson, step and presenter mode")) if presenting
              else (second, first))
top = fold.columns([3, 1, 1])
title = controls.control(top[0].selectbox, "Lesson", list(found), key="lesson",
                         on_change=go_to, args=(1,))  # another lesson starts at its first step
lesson = found[title]
count = len(lesson.steps)
if not 1 <= st.session_state.get(session_keys.STEP, 1) <= count:
    st.session_state[session_keys.STEP] = 1
number = int(controls.control(top[1].number_input, "Step", 1, count, key="step",
                              on_change=forget_prediction,
                              help=f"{count} steps; the address bar links to this step."))
present = controls.control(top[2].toggle, "Presenter mode", key="present",
                           help="Larger type, no sidebar, one step per screen; the arrow keys "
                                "move between steps.")
if present:
    st.html(PRESENTER_STYLE)
st.html(LAYOUT_STYLE)
st.html(PAGE_SCRIPT, unsafe_allow_javascript=True)

step = lesson.steps[number - 1]
# the figures beside the whole text, header included: they start at the top of the screen
# (the text 5/12 of the width: 1.1's display formula fits it at projector type)
text, view = body.columns([5, 7]) if step.view else (body.container(), None)
with text:
    st.header(f"{number}. {step.title}")
    if not present:
        st.caption(f"{plain(lesson.title)} · step {number} of {count} · {lesson.summary}")
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
    with view, st.container(key="step-figures"):
        if revealed or not set(step.drawn) <= set(lesson_lab.MEASUREMENTS):
            show_view(step.view, step.drawn, f"lesson:{lesson.slug}:{number}")
        else:  # the measurement is the answer
            st.caption("The measurement appears with the answer.")

previous, following = neighbours(found, title)
nav = body.columns([1, 1, 4])
nav[0].button("Back", key="back", icon=":material/arrow_back:",
              disabled=number == 1 and previous is None, on_click=move,
              args=(-1, count, previous), width="stretch",
              help=f"The last step of {previous[0]}" if number == 1 and previous else None)
nav[1].button("Next", key="next", icon=":material/arrow_forward:",
              disabled=number == count and following is None, on_click=move,
              args=(1, count, following), width="stretch",
              help=f"The first step of {following[0]}" if number == count and following
              else None)
if st.context.url:  # the app's address, with this page's path when it is not the default
    base = st.context.url.rstrip("/").removesuffix("/lessons")
    query = urllib.parse.urlencode({"lesson": title, "step": number})
    nav[2].caption(f"Link to this step: `{base}/lessons?{query}`")
