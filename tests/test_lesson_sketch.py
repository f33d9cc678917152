"""Drawn predictions (tnn_core.lab.lesson.sketch): the curve a sketch is compared with,
and how far a sketch is from it, against numbers worked out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.lab.lesson.sketch import Curve, distance, fit_error_against_r


def line(log_y: bool) -> Curve:
    """y = 1/x on [1, 100] (log-log), or y = x on [0, 10]."""
    if log_y:
        x = np.array([1.0, 10.0, 100.0])
        return Curve(x, 1 / x, "1/x", (1.0, 100.0), (1e-3, 1.0), True, True, "x", "y")
    x = np.array([0.0, 10.0])
    return Curve(x, x.copy(), "x", (0.0, 10.0), (0.0, 10.0), False, False, "x", "y")


def test_a_sketch_on_the_curve_is_zero_apart_and_a_factor_ten_is_one_decade():
    curve = line(log_y=True)
    on = [[x, 1 / x] for x in (1.0, 3.0, 30.0, 100.0)]
    assert distance(on, curve) == pytest.approx(0, abs=1e-12)
    assert distance([[x, 10 * y] for x, y in on], curve) == pytest.approx(1.0)
    # the median: one wild point of four does not decide it
    assert distance(on[:3] + [[100.0, 1e3]], curve) == pytest.approx(0, abs=1e-12)


def test_points_outside_the_curve_or_the_log_axis_are_not_compared():
    curve = line(log_y=True)
    assert math.isnan(distance([[0.5, 1.0], [200.0, 1e-3], [5.0, 0.0], [5.0, -1.0]], curve))
    assert math.isnan(distance([], curve))


def test_on_a_linear_axis_the_distance_is_a_share_of_the_axis():
    curve = line(log_y=False)
    assert distance([[5.0, 6.0], [2.0, 3.0]], curve) == pytest.approx(0.1)


def test_the_fit_error_curve_is_the_fitted_decompositions_error():
    n, band = 200, 9
    t = synthetic_kernel("spike_smooth", n, 0.99).numpy()
    curve = fit_error_against_r(t, band, False)
    assert curve.log_x and curve.log_y and curve.x[0] == 2 and curve.x[-1] == 128
    for r in (2, 16, 128):
        expected = decompose(t, band, r, method="fit").errors.relative_frobenius
        assert curve.y[list(curve.x).index(r)] == pytest.approx(expected, rel=1e-6)
    assert curve.y_range[0] <= np.nanmin(curve.y) and np.nanmax(curve.y) <= curve.y_range[1]
