"""Matrices drawn as images, for pages that redraw several heatmaps on every slider move.

A Plotly heatmap costs the browser its axes, ticks and colour bar on every redraw: on the
Decomposition page its four heatmaps took about as long to draw as everything else on the
page together. An image of the same cells costs a PNG decode. The colours come from a
table [L, 3] of RGB rows, low end first (the page passes Plotly's colour scale sampled
into one, so the images match its charts), and the page states the limits in words and
with ``colorbar_image``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GAP_COLOUR", "heatmap_image", "colorbar_image"]

GAP_COLOUR = (230, 230, 230)  # NaN cells: light grey


def _check_colours(colours: np.ndarray) -> np.ndarray:
    colours = np.asarray(colours)
    if colours.ndim != 2 or colours.shape[1] != 3 or len(colours) < 2 \
            or colours.dtype != np.uint8:
        raise ValueError(f"colours must be a uint8 table [L >= 2, 3], got {colours.dtype} "
                         f"{colours.shape}")
    return colours


def heatmap_image(matrix: np.ndarray, limit: float, colours: np.ndarray, scale: int = 1
                  ) -> np.ndarray:
    """matrix [s, t] as an RGB image [s·scale, t·scale, 3] uint8, row 0 on top: -limit and
    below get the table's first colour, +limit and above its last, values between the
    nearest of the L evenly spaced colours; each cell is a ``scale`` × ``scale`` block of
    pixels (sharp when the browser enlarges it)."""
    colours = _check_colours(colours)
    if not (np.isfinite(limit) and limit > 0):
        raise ValueError(f"limit must be a finite number > 0, got {limit}")
    if scale < 1:
        raise ValueError(f"scale must be at least 1, got {scale}")
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {matrix.shape}")
    position = (np.clip(matrix, -limit, limit) + limit) / (2 * limit)  # [0, 1]; NaN stays
    levels = np.rint(np.nan_to_num(position) * (len(colours) - 1)).astype(np.intp)
    image = colours[levels]  # (s, t, 3)
    image[np.isnan(matrix)] = GAP_COLOUR
    return image.repeat(scale, axis=0).repeat(scale, axis=1)


def colorbar_image(colours: np.ndarray, width: int = 256, height: int = 6) -> np.ndarray:
    """The colour table from its low end (left) to its high end (right): [height, width, 3]."""
    colours = _check_colours(colours)
    if width < 2 or height < 1:
        raise ValueError(f"a colour bar needs width >= 2 and height >= 1, got {width}×{height}")
    row = colours[np.rint(np.linspace(0, len(colours) - 1, width)).astype(np.intp)]
    return np.broadcast_to(row, (height, width, 3)).copy()
