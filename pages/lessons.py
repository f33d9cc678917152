"""Page "Lessons": guided steps over the lab's figures, one step per screen, with the step's
figures beside the text (pages/lessons/steps.py); predict, then reveal; a link to every
step; a presenter mode."""

import functools
import re
import urllib.parse
from pathlib import Path

import streamlit as st

from pages._ui import controls, frame, session_keys
from pages._ui.controls import fields
from pages._ui.memo import memo
from pages.lessons import predictions, steps
from tnn_core.lab import lesson as lesson_lab

VIEW_HEIGHT = 1100  # px of the embedded page


@functools.cache
def asset(name: str) -> str:
    """A file of the page's package, pages/lessons/: presenter.css (presenter mode),
    layout.css (the figures stay on the screen), page.js (the arrow keys, the verdict kept on
    the screen)."""
    return (Path(__file__).resolve().parent / "lessons" / name).read_text(encoding="utf-8")


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


def plain(title: str) -> str:
    """A title for markdown as it reads: "1. Toeplitz …" is not the first item of a list."""
    return re.sub(r"^(\d+)\. ", r"\1\\. ", title)


def chosen_step(found: dict[str, lesson_lab.Lesson], presenting: bool):
    """The lesson, step and presenter switches (presenting: folded below the step, which has
    the screen from its first line; else above it). Returns (its title, the step's number,
    presenter mode on, the container the step goes in)."""
    first, second = st.container(), st.container()
    body, fold = ((first, second.expander("Lesson, step and presenter mode")) if presenting
                  else (second, first))
    top = fold.columns([3, 1, 1])
    title = controls.control(top[0].selectbox, fields.LESSON, options=list(found),
                             on_change=go_to, args=(1,))  # another lesson: its first step
    count = len(found[title].steps)
    if not 1 <= st.session_state.get(session_keys.STEP, 1) <= count:
        st.session_state[session_keys.STEP] = 1
    number = int(controls.control(top[1].number_input, fields.STEP, high=count,
                                  on_change=forget_prediction, says={"count": count}))
    present = controls.control(top[2].toggle, fields.PRESENT)
    return title, number, present, body


def show_step(lesson: lesson_lab.Lesson, number: int, present: bool, body) -> None:
    """Step ``number``: its text, question and notice, and beside them its figures (from the
    top of the screen; the text 5/12 of the width: 1.1's display formula fits it at
    projector type)."""
    step, key = lesson.steps[number - 1], f"{lesson.slug}:{number}"
    text, view = body.columns([5, 7]) if step.view else (body.container(), None)
    with text:
        st.header(f"{number}. {step.title}")
        if not present:
            st.caption(f"{plain(lesson.title)} · step {number} of {len(lesson.steps)} · "
                       f"{lesson.summary}")
        st.markdown(step.text)
        for formula in step.latex:
            st.latex(formula)
        if step.question is None:
            revealed = True
        elif step.question.sketch:
            revealed = predictions.show_sketch(step.question, step.view, key, number)
        else:
            revealed = predictions.show_question(step.question, step.view, key, number)
        if revealed and step.notice:
            st.info(f"**What to notice.** {step.notice}", icon=":material/lightbulb:")
    if view is not None:
        with view, st.container(key="step-figures"):
            if revealed or not set(step.drawn) <= set(lesson_lab.MEASUREMENTS):
                show_view(step.view, step.drawn, f"lesson:{key}")
            else:  # the measurement is the answer
                st.caption("The measurement appears with the answer.")


def navigation(found: dict[str, lesson_lab.Lesson], title: str, number: int, body) -> None:
    """Back and Next (past a lesson's ends: the neighbouring lesson's), and the step's link."""
    count = len(found[title].steps)
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


def main() -> None:
    """The page: the lessons found, the chosen step with its figures, Back and Next."""
    frame.ensure_app_frame()
    presenting = st.session_state.get(session_keys.PRESENT,
                                      st.query_params.get("present") == "true")
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
    title, number, present, body = chosen_step(found, presenting)
    if present:
        st.html(f"<style>{asset('presenter.css')}</style>")
    st.html(f"<style>{asset('layout.css')}</style>")
    st.html(f"<script>{asset('page.js')}</script>", unsafe_allow_javascript=True)
    show_step(found[title], number, present, body)
    navigation(found, title, number, body)


main()
