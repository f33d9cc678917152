"""A learned kernel's figure in a lesson says its checkpoint's own settings: step 2.5's
charlm-tno its λ = 0.99 (the figure read 0.90, the slider's default, right after the λ
lesson), and step 4.5's digits-fd no λ at all (FD-TNN has no decay bias)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.lab.lesson import load_lessons
from tnn_core.training.checkpoint import load

APP = "../app.py"
LESSONS = {lesson.slug: lesson for lesson in load_lessons()[0]}


def toeplitz_payload(slug: str, number: int) -> dict:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/lessons.py").run()
    at.selectbox(key="lesson").set_value(LESSONS[slug].title).run()
    at.number_input(key="step").set_value(number).run()
    assert not at.exception, at.exception
    found = [json.loads(f.proto.json) for f in at.get("bidi_component")]
    found = [data for data in found if "kernel" in data and "hidden" in data]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
@pytest.mark.parametrize(("slug", "number", "checkpoint"), [
    ("2-tnn-rpe-and-decay", 5, "charlm-tno"), ("4-fd-causality-by-hilbert", 5, "digits-fd")])
def test_a_learned_kernel_shows_its_own_decay_or_none(slug, number, checkpoint):
    data = toeplitz_payload(slug, number)
    operator = load(f"checkpoints/{checkpoint}.safetensors")[0].config.operator
    decay = {c["name"]: c for c in data["controls"]}["decay"]
    if "decay" in operator.used_fields():
        assert data["hidden"] == [] and decay["value"] == pytest.approx(operator.decay)
        assert operator.decay == 0.99
    else:
        assert operator.kind == "fd" and data["hidden"] == ["decay"]
