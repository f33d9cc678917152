"""The figures' axes (pages/figures/common.js): tick positions and labels, in Chromium.

A linear axis is labelled at round values, multiples of 1, 2 or 5 × 10^k, three to six
of them inside the drawn range; a log axis at whole decades when it spans two or more, else
at round values too. Labels are short: three significant figures at most.
"""

from __future__ import annotations

import math

import pytest

from pages.figures import script
from tests.test_figure_fft import js_page

pytestmark = pytest.mark.browser

RANGES = [(0.0, 1.0), (-0.37, 2.91), (0.0123, 0.0456), (-3e-5, 7e-5), (1.0, 1.0000001),
          (-250.0, 4096.0), (0.3, 0.30000000000000004 + 1e-3)]


@pytest.fixture(scope="module")
def page(chromium):
    page = js_page(chromium, script("profiles"))
    yield page
    page.close()


def round_step(ticks: list[float]) -> float:
    steps = {round(b - a, 12) for a, b in zip(ticks[:-1], ticks[1:], strict=True)}
    assert len(steps) == 1, ticks  # evenly spaced
    return steps.pop()


@pytest.mark.parametrize("a,b", RANGES)
def test_linear_ticks_are_round_multiples_inside_the_range(page, a, b):
    ticks = page.evaluate("([a, b]) => axisTicks(a, b, false)", [a, b])
    assert 3 <= len(ticks) <= 6
    assert all(a - 1e-12 * abs(b - a) <= t <= b + 1e-12 * abs(b - a) for t in ticks)
    step = round_step(ticks)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-6, step
    for t in ticks:  # every tick a whole multiple of the step
        assert abs(t / step - round(t / step)) < 1e-6, (t, step)


@pytest.mark.parametrize("a,b,expected", [(-12, -1, [-12, -10, -8, -6, -4, -2]),
                                          (0, 3, [0, 1, 2, 3]), (-1.5, 0.5, [-1, 0])])
def test_log_ticks_are_whole_decades_when_two_or_more_fit(page, a, b, expected):
    assert page.evaluate("([a, b]) => axisTicks(a, b, true)", [a, b]) == expected


def test_a_log_axis_within_one_decade_is_labelled_at_round_values(page):
    ticks = page.evaluate("() => axisTicks(Math.log10(2), Math.log10(9), true)")
    values = [10 ** t for t in ticks]
    assert values == pytest.approx([2, 4, 6, 8])


@pytest.mark.parametrize("value,label", [(0, "0"), (0.25, "0.25"), (1 / 3, "0.333"),
                                         (0.1 + 0.2, "0.3"), (4096, "4096"), (2e-5, "2e-5"),
                                         (1.23456e-7, "1.23e-7"), (3e5, "3e+5")])
def test_tick_labels_are_short(page, value, label):
    assert page.evaluate("(v) => formatTick(v)", value) == label


def test_a_pixel_of_the_plot_maps_back_to_its_data(page):
    """frameToData inverts drawLines' axes (the sketch figure reads the pointer with it)."""
    corners = page.evaluate("""() => {
      const canvas = document.createElement('canvas');
      canvas.width = 400; canvas.height = 200;
      const frame = drawLines(canvas, [{x: [2, 50], y: [0.5, 0.001]}], {logX: true,
        logY: true, bounds: {x: [1, 100], y: [1e-4, 1]}});
      const {left, top, width, height} = frame;
      return [frameToData(frame, left, top), frameToData(frame, left + width, top + height),
              frameToData(frame, left + width / 2, top + height / 2)];
    }""")
    assert corners[0] == pytest.approx([1, 1])
    assert corners[1] == pytest.approx([100, 1e-4])
    assert corners[2] == pytest.approx([10, 1e-2])
