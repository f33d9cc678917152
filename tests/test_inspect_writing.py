"""Inspect's "Write text" (AppTest) and the view behind it (``tnn_core.lab.inspect.writing``):
a charlm checkpoint writes what the library writes, Stop keeps what was written, a classifier
has no section, bad input gets a sentence."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tnn_core.generate import Sampling, vocab_of, write
from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab.inspect import writing as writing_lab
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training import checkpoint

APP = str(Path(__file__).resolve().parents[1] / "app.py")
JOB_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def charlm():
    model, info = checkpoint.load(checkpoint.SHIPPED_DIR / "charlm-tno.safetensors")
    return model.eval(), info


@pytest.fixture
def inspect_charlm():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.selectbox(key="checkpoint").set_value("charlm-tno").run()
    assert not at.exception, at.exception
    yield at
    for job in (at.session_state["inspect_writings"] if "inspect_writings" in at.session_state
                else {}).values():
        job.stop()
        job.join(JOB_TIMEOUT_S)


def written(at: AppTest):
    """Wait for this page's writing of charlm-tno and draw the page once it has ended."""
    job = at.session_state["inspect_writings"]["charlm-tno"]
    job.join(JOB_TIMEOUT_S)
    assert not job.running, "the writing did not end in time"
    at.run()
    assert not at.exception, at.exception
    return job.snapshot()


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.mark.slow  # two Inspect pages, a classifier's and a language model's
def test_the_section_is_there_for_charlm_and_not_for_digits():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert "Write text" not in [s.value for s in at.subheader]
    assert not [b for b in at.button if b.key == "write_generate"]
    at.selectbox(key="checkpoint").set_value("charlm-tno").run()
    assert not at.exception, at.exception
    assert "Write text" in [s.value for s in at.subheader]
    assert any(c.value.startswith("Press **Generate**") for c in at.caption)


@pytest.mark.slow  # the Inspect page of charlm-tno, and 60 characters
def test_generating_at_temperature_0_writes_what_the_library_writes(inspect_charlm, charlm):
    at = inspect_charlm
    at.text_area(key="write_prompt").set_value("import ")
    at.number_input(key="write_characters").set_value(60)
    at.number_input(key="write_temperature").set_value(0.0).run()
    at.button(key="write_generate").click().run()
    assert not at.exception, at.exception
    view = written(at)
    model, info = charlm
    expected = "".join(write(model, vocab_of(info.task), "import ", 60, Sampling(0.0, 20, 0)))
    assert view.status == "done" and view.text == expected and len(view.text) == 60
    assert at.code[0].value == "import " + expected
    assert any(c.value.startswith("Wrote 60 characters. The first 7 characters are the prompt")
               for c in at.caption)
    assert len(view.step_ms) == 59  # every character but the first, which is the prompt's pass
    median = sorted(view.step_ms)[29]
    assert metric(at, "Time per character") == f"{median:.3f} ms"
    # The Toeplitz history: 192 channels (3 × 64) × 2 layers × 4 bytes per character read.
    assert view.context == 7 + 59
    assert metric(at, "State per sequence") == f"{66 * 192 * 2 * 4 / 1024:.1f} KiB"
    assert any(m.value.startswith("**charlm-tno**: Toeplitz history in both layers.") and
               "greedy" in m.value for m in at.markdown)


@pytest.mark.slow  # the Inspect page of charlm-tno, then a writing slowed down to be stopped
def test_stop_keeps_what_was_written(inspect_charlm, charlm, monkeypatch):
    """The writing is slowed down (20 ms a character) so that Stop lands in the middle."""
    real = writing_lab.writing

    def slow(*args):
        decoder, characters = real(*args)

        def paced():
            for piece in characters:
                time.sleep(0.02)
                yield piece
        return decoder, paced()

    monkeypatch.setattr(writing_lab, "writing", slow)
    at = inspect_charlm
    at.number_input(key="write_characters").set_value(inspect_lab.MAX_CHARACTERS).run()
    at.button(key="write_generate").click().run()
    assert at.button(key="write_generate").disabled  # one writing at a time
    at.button(key="write_stop").click().run()
    assert not at.exception, at.exception
    view = written(at)
    assert view.status == "stopped" and 0 < view.written < inspect_lab.MAX_CHARACTERS
    model, info = charlm
    library = write(model, vocab_of(info.task), "def ", inspect_lab.MAX_CHARACTERS,
                    Sampling(0.8, 20, 0))
    assert view.text == "".join(itertools.islice(library, view.written))
    kept = f"Stopped after {view.written:,} of 10,000 characters; they are kept."
    at.number_input(key="write_seed").set_value(5).run()  # another control: the text stays
    assert at.code[0].value == "def " + view.text
    assert any(c.value.startswith(kept) for c in at.caption)
    assert not at.button(key="write_generate").disabled


@pytest.mark.slow  # the Inspect page of charlm-tno
def test_an_empty_prompt_gets_a_sentence(inspect_charlm):
    at = inspect_charlm
    at.text_area(key="write_prompt").set_value("").run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "That setting cannot be used: the prompt is empty: type at least one character for "
        "the model to continue"]
    assert at.button(key="write_generate").disabled


# -- the view logic --------------------------------------------------------------------------
def test_settings_refuse_with_a_sentence():
    with pytest.raises(ValueError, match="the prompt is empty"):
        inspect_lab.WritingSettings("", 10)
    with pytest.raises(ValueError, match=r"characters to write must be .*\[1, 10000\]; got 0"):
        inspect_lab.WritingSettings("a", 0)
    with pytest.raises(ValueError, match="the prompt must be at most 4,000 characters"):
        inspect_lab.WritingSettings("a" * 4001, 10)
    with pytest.raises(ValueError, match="temperature must be a number"):
        inspect_lab.WritingSettings("a", 10, temperature=-1.0)
    assert inspect_lab.WritingSettings("a", 10, 0.0).describe().startswith("greedy")
    assert inspect_lab.WritingSettings("a", 10, 0.8, 20, 3).describe() == \
        "temperature 0.8, top-k 20, seed 3"


def test_state_text_and_the_forms_in_words():
    assert [inspect_lab.state_text(b) for b in (512, 49_152, 3 * 2**20 // 2)] == \
        ["512 B", "48.0 KiB", "1.50 MiB"]
    torch.manual_seed(0)
    mixed = build_model(ModelConfig(
        task="lm", vocab_size=11, dim=8, layers=2, operator=OperatorConfig(
            kind="ssm", causal=True, state=3),
        layer_operators=(OperatorConfig(kind="ssm", causal=True, state=3),
                         OperatorConfig(kind="tno", causal=True, rpe_dim=8))))
    about = inspect_lab.writer_about("mine", mixed)
    assert about.form_text() == "layer 0: recurrence, s = 3; layer 1: Toeplitz history"
    assert not about.recurrent and "grows with the context" in about.state_meaning()
    togeipi = build_model(ModelConfig(
        task="lm", vocab_size=11, dim=8, layers=1,
        operator=OperatorConfig(kind="togeipi", causal=True, heads=2, max_length=16)))

    class Info:
        task = {"name": "charlm", "vocab": "abcdefghij"}
    assert inspect_lab.writing_refusal(Info) is None
    assert inspect_lab.writer_about("t", togeipi).form_text() == \
        "Toeplitz-plus-sparse history in the layer"
    Info.task = {"name": "listops"}
    assert "keeps no character vocabulary" in inspect_lab.writing_refusal(Info)
