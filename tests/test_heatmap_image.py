"""Heatmaps drawn as images (tnn_core.lab.common.heatmap_image): each value gets the colour Plotly
would give it on a symmetric scale ±limit, given the page's 256-colour table."""

import numpy as np
import plotly.colors
import pytest

from pages._ui.charts import colour_table
from tnn_core.lab.common.heatmap_image import GAP_COLOUR, colorbar_image, heatmap_image


def plotly_colour(colorscale: str, position: float) -> np.ndarray:
    return np.array(plotly.colors.unlabel_rgb(
        plotly.colors.sample_colorscale(colorscale, [position])[0]))


@pytest.mark.parametrize("size", [1, 2, 7, 13])
def test_each_cell_gets_plotlys_colour_for_its_value(size):
    rng = np.random.default_rng(size)
    matrix = rng.uniform(-3.0, 3.0, (size, size + 1))
    image = heatmap_image(matrix, limit=2.0, colours=colour_table("RdBu"))
    assert image.shape == (size, size + 1, 3) and image.dtype == np.uint8
    for i in range(size):
        for j in range(size + 1):
            position = (min(max(matrix[i, j], -2.0), 2.0) + 2.0) / 4.0
            # 256 levels: within one level's colour step of the exact colour
            assert np.abs(image[i, j] - plotly_colour("RdBu", position)).max() <= 3


def test_ends_middle_gaps_and_row_zero_on_top():
    matrix = np.array([[-5.0, 0.0], [np.nan, 5.0]])
    table = colour_table("PuOr")
    image = heatmap_image(matrix, limit=1.0, colours=table)
    np.testing.assert_array_equal(image[0, 0], table[0])  # below -limit: the low end
    np.testing.assert_array_equal(image[1, 1], table[-1])  # above +limit: the high end
    assert np.abs(image[0, 1].astype(int) - plotly_colour("PuOr", 0.5)).max() <= 3
    np.testing.assert_array_equal(image[1, 0], GAP_COLOUR)


def test_scale_makes_each_cell_a_block():
    matrix = np.arange(6.0).reshape(2, 3) - 2.5
    table = colour_table("RdBu")
    image = heatmap_image(matrix, limit=3.0, colours=table, scale=3)
    assert image.shape == (6, 9, 3)
    np.testing.assert_array_equal(image[::3, ::3], heatmap_image(matrix, 3.0, table))
    assert (image[3:6, 6:9] == image[3, 6]).all()


def test_colorbar_runs_from_the_low_end_to_the_high_end():
    table = colour_table("RdBu")
    bar = colorbar_image(table, width=5, height=2)
    assert bar.shape == (2, 5, 3)
    np.testing.assert_array_equal(bar[:, 0], [table[0]] * 2)
    np.testing.assert_array_equal(bar[:, -1], [table[-1]] * 2)


@pytest.mark.parametrize("kwargs, field", [
    (dict(limit=0.0), "limit"), (dict(limit=float("nan")), "limit"),
    (dict(limit=1.0, scale=0), "scale"),
    (dict(limit=1.0, colours=np.zeros((1, 3), np.uint8)), "colours"),
    (dict(limit=1.0, colours=np.zeros((4, 3))), "colours")])
def test_bad_arguments_are_named(kwargs, field):
    kwargs.setdefault("colours", colour_table("RdBu"))
    with pytest.raises(ValueError, match=field):
        heatmap_image(np.zeros((2, 2)), **kwargs)
    with pytest.raises(ValueError, match="2-D"):
        heatmap_image(np.zeros(3), 1.0, colour_table("RdBu"))
