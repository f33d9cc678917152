"""Matrices drawn as images, for pages that redraw several heatmaps on every slider move.

A Plotly heatmap costs the browser its axes, ticks and colour bar on every redraw: on the
Decomposition page its four heatmaps took about as long to draw as everything else on the
page together. An image of the same cells, coloured with the same Plotly colour scale,
costs a PNG decode. The page states the colour scale's limits in words and with
``colorbar_image``.
"""

from __future__ import annotations

import functools

import numpy as np
import plotly.colors

__all__ = ["GAP_COLOUR", "colour_table", "heatmap_image", "colorbar_image"]

GAP_COLOUR = (230, 230, 230)  # NaN cells: light grey
_LEVELS = 256


@functools.cache
def colour_table(colorscale: str) -> np.ndarray:
    """[256, 3] uint8: Plotly's ``colorscale`` sampled evenly from its low end to its high."""
    rgb = plotly.colors.sample_colorscale(colorscale, list(np.linspace(0.0, 1.0, _LEVELS)))
    table = np.array([plotly.colors.unlabel_rgb(c) for c in rgb], dtype=np.float64)
    table = np.round(table).astype(np.uint8)
    table.flags.writeable = False
    return table


def heatmap_image(matrix: np.ndarray, limit: float, colorscale: str, scale: int = 1
                  ) -> np.ndarray:
    """matrix [s, t] as an RGB image [s·scale, t·scale, 3] uint8, row 0 on top: -limit and
    below get the scale's low end, +limit and above its high end, 0 its middle; each cell
    is a ``scale`` × ``scale`` block of pixels (sharp when the browser enlarges it)."""
    if not (np.isfinite(limit) and limit > 0):
        raise ValueError(f"limit must be a finite number > 0, got {limit}")
    if scale < 1:
        raise ValueError(f"scale must be at least 1, got {scale}")
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {matrix.shape}")
    position = (np.clip(matrix, -limit, limit) + limit) / (2 * limit)  # [0, 1]; NaN stays
    levels = np.rint(np.nan_to_num(position) * (_LEVELS - 1)).astype(np.intp)
    image = colour_table(colorscale)[levels]  # (s, t, 3)
    image[np.isnan(matrix)] = GAP_COLOUR
    return image.repeat(scale, axis=0).repeat(scale, axis=1)


def colorbar_image(colorscale: str, width: int = 256, height: int = 6) -> np.ndarray:
    """The colour scale from its low end (left) to its high end (right): [height, width, 3]."""
    if width < 2 or height < 1:
        raise ValueError(f"a colour bar needs width >= 2 and height >= 1, got {width}×{height}")
    row = colour_table(colorscale)[np.rint(np.linspace(0, _LEVELS - 1, width)).astype(np.intp)]
    return np.broadcast_to(row, (height, width, 3)).copy()
