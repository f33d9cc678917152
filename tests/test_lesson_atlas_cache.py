"""Step 5.1's atlas medians come from Inspect's cached atlas (``checkpoint_views.atlas``),
so a rerun of the step (any click on the page) measures nothing again: the step called
``atlas_view`` directly, 0.27–0.31 s on every rerun."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

import tnn_core.lab.inspect as inspect_lab
from pages._ui import checkpoint_views
from tnn_core.lab.lesson import load_lessons

APP = "../app.py"
ATLAS_STEP = ("5-reading-a-trained-model", 1)


def test_the_lesson_atlas_is_measured_once_over_reruns(monkeypatch):
    calls = []
    measured = inspect_lab.atlas_view
    monkeypatch.setattr(inspect_lab, "atlas_view",
                        lambda *args, **kwargs: calls.append(args[1:4]) or measured(*args,
                                                                                   **kwargs))
    checkpoint_views._atlas._entries.clear()  # measured by no earlier test in this process
    slug, number = ATLAS_STEP
    lesson = next(lesson for lesson in load_lessons()[0] if lesson.slug == slug)
    assert "atlas" in lesson.steps[number - 1].figures
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/lessons.py").run()
    at.selectbox(key="lesson").set_value(lesson.title).run()
    at.number_input(key="step").set_value(number).run()
    assert not at.exception, at.exception
    at.run()  # a rerun: a click anywhere on the page
    assert not at.exception, at.exception
    assert len(calls) == 1, calls
    assert any("the atlas's medians per layer" in block.value for block in at.markdown)
