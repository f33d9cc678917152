"""A step's question on the Lessons page: predict (a choice, a number or a sketch), then
reveal the answer and say how close the prediction was. The prediction and the reveal are
kept per step (Back and Next return to them) and in the address (``guess=STEP:VALUE``,
``sketch=STEP:x,y;…``, ``revealed=STEP``), so a reload or a shared link keeps them."""

import streamlit as st

from pages._ui import controls, frame, session_keys
from pages._ui.link_values import quoted
from pages.lessons import sketch, steps
from tnn_core.lab import lesson as lesson_lab

__all__ = ["show_question", "show_sketch"]


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
