"""A matrix as an image whose cells need not be square: a tall W [n, r] or a strip [N, 1]
drawn at the height of the square matrices beside it (``heatmap_image`` for the colours)."""

from __future__ import annotations

import numpy as np

from tnn_core.lab.common.heatmap_image import heatmap_image

__all__ = ["cells_image"]


def cells_image(matrix: np.ndarray, limit: float, colours: np.ndarray, height: int,
                width: int) -> np.ndarray:
    """matrix [s, t] as an RGB image of about height × width pixels: each cell a block of
    round(height/s) × round(width/t) pixels, at least one (colours as ``heatmap_image``)."""
    if height < 1 or width < 1:
        raise ValueError(f"an image needs height and width >= 1, got {height}×{width}")
    image = heatmap_image(matrix, limit, colours)  # (s, t, 3)
    rows, cols = image.shape[:2]
    return image.repeat(max(1, round(height / rows)), axis=0).repeat(
        max(1, round(width / cols)), axis=1)
