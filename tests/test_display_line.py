"""What a line chart is sent (analysis.dense.display_line): every point of a short line;
of a long one, each run's extremes in order, so spikes keep their height and gaps stay."""

import numpy as np
import pytest

from tnn_core.analysis.dense import display_line


@pytest.mark.parametrize("length", [1, 2, 7, 101, 1024])
def test_a_line_that_fits_is_sent_whole(length):
    x, y = np.arange(length), np.random.default_rng(length).normal(size=length)
    xs, ys = display_line(x, y, max_points=1024)
    np.testing.assert_array_equal(xs, x)
    np.testing.assert_array_equal(ys, y)


@pytest.mark.parametrize("length", [1025, 2047, 4093, 8191])
def test_a_long_line_keeps_every_runs_extremes_in_order(length):
    rng = np.random.default_rng(length)
    x, y = np.arange(length) - length // 2, rng.normal(size=length)
    spike = rng.integers(length)
    y[spike] = 100.0  # one point wide
    y[(spike + length // 2) % length] = -100.0
    xs, ys = display_line(x, y, max_points=256)
    assert len(xs) <= 256
    assert np.all(np.diff(xs) > 0)  # in order, no repeats
    assert ys.max() == 100.0 and ys.min() == -100.0
    assert xs[np.argmax(ys)] == x[spike]
    np.testing.assert_array_equal(ys, y[np.searchsorted(x, xs)])  # real points only
    per = -(-length // 128)  # every run keeps its own extremes
    for start in range(0, length, per):
        run = y[start:start + per]
        assert run.max() in ys and run.min() in ys


def test_a_gap_inside_a_run_stays_a_gap():
    y = np.linspace(1.0, 2.0, 5000)
    y[2500:2503] = np.nan  # round-off floor: not drawn
    xs, ys = display_line(np.arange(5000), y, max_points=100)
    assert np.isnan(ys).sum() == 1 and 2500 <= xs[np.isnan(ys)][0] < 2503
    all_gap = np.full(5000, np.nan)
    assert np.isnan(display_line(np.arange(5000), all_gap, max_points=100)[1]).all()
