"""Inspect's "Write text": a causal character language model continues a prompt, the text
appearing as it is sampled, with what writes it, the time per character and the state it
holds. Inspect calls ``show(inspected, model, info)``; a classifier gets no section.

The writing runs on a background thread (``inspect_lab.TextWriting``), so Stop, or any
other control, never loses what was written: it stays in this session's state, one
writing per checkpoint, and the page shows the open checkpoint's."""

from __future__ import annotations

import streamlit as st

from pages._ui import frame, session, session_keys, timing
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]

WRITINGS_KEPT = 8
STREAM_S = 0.2  # the text on the page is brought up to date this often while it is written
DEFAULT_PROMPT = "def "  # the shipped charlm models read the Python standard library


def show(inspected: Inspected, model, info) -> None:
    """The section for the checkpoint ``inspected`` (opened as ``model`` and ``info``)."""
    if not inspect_lab.is_language_model(model):
        return
    refusal = inspect_lab.writing_refusal(info)
    if refusal is not None:
        st.caption(f"This language model cannot write text here: {refusal}.")
        return
    _section(inspected.key, model, info)


# Streamlit: Generate reruns this section alone, so the page is not redrawn (on the same
# CPU) while the writing is timed.
@st.fragment
def _section(key: str, model, info) -> None:
    st.subheader("Write text")
    st.markdown(
        "The model continues your prompt **one character at a time**: it reads the prompt, "
        "draws the next character from its prediction, reads that character, draws the "
        "next, and so on. Each layer either keeps every input so far and weighs them by its "
        "Toeplitz kernel (**Toeplitz history**: the cost of a step and the state grow with "
        "the text) or, converted to a **recurrence** of s modes on the Compress page, keeps "
        "s numbers per channel (the same cost at any length). Write with both and compare.")
    prompt = st.text_area(
        "Prompt", DEFAULT_PROMPT, max_chars=inspect_lab.MAX_PROMPT, height=80,
        key="write_prompt", help="The text to continue. Characters outside the model's "
                                 "vocabulary read as unknown (shown as �).")
    c = st.columns(4)
    characters = c[0].number_input(
        "Characters to write", 1, inspect_lab.MAX_CHARACTERS, 300, step=50,
        key="write_characters",
        help=f"How many characters follow the prompt, 1 to {inspect_lab.MAX_CHARACTERS:,}.")
    temperature = c[1].number_input(
        "Temperature", 0.0, 10.0, 0.8, step=0.1, format="%.2f", key="write_temperature",
        help="Divides the model's scores before the draw: below 1 sharper, above 1 flatter; "
             "0 takes the most likely character every time (then top-k and seed do not "
             "matter).")
    top_k = c[2].number_input(
        "Top-k", 0, len(inspect_lab.vocab_of(info.task)) + 1, 20, key="write_top_k",
        help="Draw only among the k most likely characters; 0: among all.")
    seed = c[3].number_input(
        "Seed", 0, 2**31 - 1, 0, key="write_seed",
        help="Seeds the draws: the same seed and settings write the same text.")
    try:
        settings = inspect_lab.WritingSettings(prompt, int(characters), float(temperature),
                                               int(top_k), int(seed))
    except ValueError as err:
        settings = None
        frame.show_error(err)
    writings: dict = st.session_state.setdefault(session_keys.WRITINGS, {})
    job: inspect_lab.TextWriting | None = writings.get(key)
    st.button("Generate", type="primary", icon=":material/edit_note:", key="write_generate",
              disabled=settings is None or (job is not None and job.running),
              on_click=_start, args=(key, model, info, settings),
              help="Writes on a background thread; Stop keeps what was written.")
    refused = st.session_state.pop(session_keys.WRITE_REFUSED, None)
    if refused is not None:
        frame.show_error(ValueError(refused))
    if job is None:
        st.caption("Press **Generate** to write.")
    elif job.running:
        timing.poll_until(lambda: not job.running, lambda: _draw(job.snapshot(), job),
                          every=STREAM_S)
    else:
        _draw(job.snapshot(), None)


def _start(key: str, model, info, settings: inspect_lab.WritingSettings) -> None:
    """The Generate button: any writing of this session still running stops, and this one
    starts before the section is drawn."""
    writings: dict = st.session_state.setdefault(session_keys.WRITINGS, {})
    for other in writings.values():
        other.stop()
    try:
        job = inspect_lab.TextWriting(model, inspect_lab.vocab_of(info.task), settings,
                                      inspect_lab.writer_about(key, model))
    except ValueError as err:
        st.session_state[session_keys.WRITE_REFUSED] = str(err)
        return
    job.stop_when_collected(session.session_token())
    job.start()
    writings.pop(key, None)
    writings[key] = job
    while len(writings) > WRITINGS_KEPT:
        del writings[next(iter(writings))]  # the oldest


def _draw(view: inspect_lab.WritingView, running: inspect_lab.TextWriting | None) -> None:
    """The text so far beside what wrote it; ``running``: the job, while it writes."""
    left, right = st.columns([3, 2])
    with left:
        st.code(view.settings.prompt + view.text, language=None, wrap_lines=True)
        st.caption(f"{view.progress_text()} The first {len(view.settings.prompt):,} "
                   "characters are the prompt.")
        if running is not None:
            st.button("Stop", icon=":material/stop:", key="write_stop", on_click=running.stop,
                      disabled=running.stopped, help="Ends the writing; the text stays.")
    with right:
        about = view.about
        st.markdown(f"**{about.name}**: {about.form_text()}.  \n"
                    f"Sampling: {view.settings.describe()}.")
        m = st.columns(2)
        median = view.median_ms
        m[0].metric("Time per character", "—" if median is None else f"{median:.3f} ms",
                    help=f"The median of {len(view.step_ms):,} steps, each one character "
                         "through every layer and the draw of the next, on one CPU thread "
                         "of this server just now (the prompt's pass is not counted).")
        m[1].metric("State per sequence", inspect_lab.state_text(view.state_bytes),
                    help=f"{about.state_meaning()[:1].upper()}{about.state_meaning()[1:]}.")
        st.caption(f"Time: the median of {len(view.step_ms):,} steps. State: held after "
                   f"reading {view.context:,} characters; {about.state_meaning()}.")
