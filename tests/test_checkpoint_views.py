"""pages/_ui/checkpoint_views: a view one page computed serves another page."""

import numpy as np

from pages._ui import checkpoint_views
from pages._ui.checkpoints import checkpoint_task, opened
from tnn_core.lab import inspect as lab


def test_the_evaluation_is_the_length_sweeps_first_row_once_the_sweep_has_run():
    """Compress's source scores after Inspect's sweep: the same scores, not computed again."""
    key = "digits-fd"
    sweep = checkpoint_views.start_length_sweep(key).result(timeout=120)
    assert sweep.factor[0] == 1
    scores = checkpoint_views.evaluation(key)
    assert scores is sweep.scores[0]
    again = lab.evaluation(opened(key).model, checkpoint_task(key))  # scored here
    for name in ("loss", "correct", "targets"):
        assert np.array_equal(getattr(scores, name), getattr(again, name)), name
    assert scores.metric == again.metric and scores.ci95 == again.ci95
