"""Every shipped checkpoint opens as the Inspect page opens it, through the same lab calls.

The page itself runs in an AppTest once per operator kind (tests/test_app.py); this test
takes every one of checkpoints/*.safetensors through what that page computes when it opens
one at its defaults (the header's summary and task, the atlas at the opening length and
band, the first channel, the kernels its training kept, lineage, model card, the run's
curves), which costs a fraction of an AppTest run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab.common.checkpoints import task_from_info
from tnn_core.training.checkpoint import SHIPPED_DIR

SHIPPED = sorted(p.stem for p in SHIPPED_DIR.glob("*.safetensors"))


def test_every_shipped_checkpoint_is_in_the_first_visits_order():
    assert len(SHIPPED) == 10
    assert sorted(name for name, _ in inspect_lab.SHIPPED_ORDER) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_the_inspect_page_opens_every_shipped_checkpoint(name, one_thread):
    opened = inspect_lab.open_file(SHIPPED_DIR / f"{name}.safetensors")
    model, info = opened.model, opened.info
    task = task_from_info(info.task)
    about = inspect_lab.summary(info, task)
    assert about.task in ("charlm", "listops", "digits", "recall")
    assert about.train_n >= 2 and math.isfinite(about.final_metric)
    assert math.isfinite(about.chance) and about.steps
    assert len(about.eval_steps) == len(about.eval_metric) >= 2

    operators = model.operators()
    kind = model.config.operator.kind
    assert kind in ("tno", "ski", "fd") and name.split("-")[1] == kind
    n, band, rank = inspect_lab.opening_atlas(model.config, about.train_n)
    assert n == about.train_n and 2 <= rank < n
    atlas = inspect_lab.atlas_view(model, n, band, rank)
    for table in (atlas.channels, atlas.layers):
        for column in table.columns().values():
            assert len(column)
    assert atlas.kernels.shape == (len(atlas.kept), 2 * n - 1)
    assert np.all(np.isfinite(atlas.kernels))
    inspect_lab.band_description(band, model.config.operator.causal)

    drill = inspect_lab.channel_matrix(model, n, 0, 0)
    assert np.all(np.isfinite(drill.view.matrix))
    assert len(operators) == model.config.layers

    snapshots = inspect_lab.training_kernels(info)
    assert snapshots is None or len(snapshots.steps) >= 1
    inspect_lab.lineage_text(info)  # None for a model trained from scratch
    assert inspect_lab.report_refusal(model, about.train_n) is None  # the card is offered
    inspect_lab.convertible(model.config)
    curves = inspect_lab.curves(info)
    assert list(curves.step) == sorted(curves.step) and len(curves.step) >= 2
    assert math.isfinite(inspect_lab.final_metric(info).value)
