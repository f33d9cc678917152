"""The figures' sliders, declared once (tnn_core/lab/common/figure_controls.py): Compare's
sides are the band + W A Wᵀ figure's sliders renamed, and the URL table carries every one."""

import pytest

from tnn_core.lab.common import figure_controls as fc
from tnn_core.lab.common.url_controls import URL_CONTROLS


def test_a_side_is_the_decomposition_figures_sliders_renamed():
    a = fc.side_controls("a", True)
    assert fc.names(a) == ("a_rank", "a_band", "a_decay")
    for side, base in zip(a, fc.DECOMPOSITION, strict=True):
        assert (side.low, side.high, side.step, side.default, side.help) == (
            base.low, base.high, base.step, base.default, base.help)
    assert fc.names(fc.side_controls("b", False)) == ("b_rank", "b_band")  # FD: no λ


def test_an_unknown_side_is_refused_by_name():
    with pytest.raises(ValueError, match=r"side must be one of \('a', 'b'\); got 'c'"):
        fc.side_controls("c", True)


@pytest.mark.parametrize(("page", "controls"), [
    ("decomposition", (*fc.DECOMPOSITION, fc.MODES)), ("basics", fc.TOEPLITZ),
    ("frequency", (fc.WIDTH,)),
    ("compare", (*fc.side_controls("a", True), *fc.side_controls("b", True)))])
def test_the_url_table_carries_each_figures_sliders(page, controls):
    assert set(fc.names(controls)) <= set(URL_CONTROLS[page])


def test_a_slider_spec_is_what_the_browser_draws():
    assert fc.RANK.spec(40) == {"name": "rank", "label": "Inducing points r", "min": 2,
                                "max": fc.SLIDER_MAX, "step": 1, "value": 40,
                                "help": fc.RANK.help}
    assert fc.RANK.whole and not fc.DECAY.whole
    assert fc.RANK.typed(40.0) == 40 and isinstance(fc.RANK.typed(40.0), int)
