"""A conversion or a search given the source's scores (the app has them for every
checkpoint it opens) uses them and scores only the converted models; without them it
scores the source itself."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.compress_fixtures import small_digits_model
from tnn_core.compress import CompressionPlan, compress, pipeline, planner, search
from tnn_core.compress.measure import task_scores
from tnn_core.lab.compress import jobs
from tnn_core.training.tasks import get_task

PLAN = CompressionPlan.uniform(2, 3, 4)


@pytest.fixture
def scored(monkeypatch) -> list:
    """The models ``task_scores`` was asked to score, by the pipeline and the planner."""
    models = []

    def counted(model, task):
        models.append(model)
        return task_scores(model, task)
    monkeypatch.setattr(pipeline, "task_scores", counted)
    monkeypatch.setattr(planner, "task_scores", counted)
    return models


def test_a_conversion_uses_the_scores_it_is_given(scored):
    model, task = small_digits_model(), get_task("digits")
    known = task_scores(model, task)
    result = compress(model, task, PLAN, factors=(1,), repeats=1, source_scores=known)
    assert result.source is known
    assert scored == [result.model]  # the converted model only
    alone = compress(model, task, PLAN, factors=(1,), repeats=1)
    assert scored[1:] == [model, alone.model]
    assert np.array_equal(alone.source.loss, known.loss)  # the same numbers either way


def test_a_search_uses_the_scores_it_is_given(scored):
    model, task = small_digits_model(), get_task("digits")
    known = task_scores(model, task)
    stop = threading.Event()
    stop.set()  # the sensitivity study stops at once: only the source would be scored
    found = search(model, task, points=[(3, 4)], stop_event=stop, source_scores=known)
    assert found.source is known and scored == []
    search(model, task, points=[(3, 4)], stop_event=stop)
    assert scored == [model]


def test_a_job_takes_the_pages_scores_on_the_cpu_only():
    """On a GPU the source is scored beside its conversion, on the same device."""
    known = object()
    assert jobs._known_scores(known, "cpu") is known
    assert jobs._known_scores(known, "cuda") is None
