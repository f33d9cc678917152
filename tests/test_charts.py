"""The shared Plotly charts (pages/_ui/charts.py): the Table 10 pair readable without colour
and at a projector's type size.

- Each of the two models has its own marker symbol and each part (last n positions, all
  positions) its own line style, so every one of the four traces is told apart without its
  colour (issue 38: no meaning by colour alone).
- ``text_size`` sets every text of the chart (title, axes, ticks, legend, the chance
  annotation) to that size; without it the chart keeps Plotly's default.
"""

from __future__ import annotations

import math

import numpy as np

from pages._ui import charts
from tnn_core.lab.common.decay_pair import DecayPair
from tnn_core.training.scores import Scores


def scores(bpc: float) -> Scores:
    targets = np.full(4, 100.0)
    return Scores("bpc", False, np.full(4, bpc) * math.log(2) * targets, np.zeros(4), targets)


def pair() -> DecayPair:
    rows = tuple(tuple(scores(b) for b in means) for means in ([2.6, 2.6, 2.7], [2.6, 3.5, 7.2]))
    return DecayPair(names=("with", "without"), decays=(0.99, 1.0), train_n=128,
                     metric_name="bpc", chance=6.658, factor=np.array([1, 2, 16]),
                     length=np.array([128, 256, 2048]), last=rows, every=rows)


def test_each_trace_has_its_own_marker_and_line_style():
    fig = charts.decay_pair_chart(pair())
    styles = [(trace.marker.symbol, trace.line.dash or "solid") for trace in fig.data]
    assert len(styles) == 4 and len(set(styles)) == 4
    assert len({trace.marker.symbol for trace in fig.data}) == 2  # one per model
    assert len({trace.line.dash or "solid" for trace in fig.data}) == 2  # one per part


def test_text_size_reaches_every_text_of_the_chart():
    fig = charts.decay_pair_chart(pair(), text_size=20)
    layout = fig.layout
    assert layout.font.size == 20
    assert layout.title.font.size >= 20 and layout.legend.font.size == 20
    for axis in (layout.xaxis, layout.yaxis):
        assert axis.tickfont.size == 20 and axis.title.font.size == 20
    assert [a.font.size for a in layout.annotations] == [20]  # the chance line's label
    plain = charts.decay_pair_chart(pair()).layout
    assert plain.font.size is None and plain.annotations[0].font.size is None
