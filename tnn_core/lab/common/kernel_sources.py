"""Where a page's kernel comes from: a preset (``analysis.presets``: a synthetic shape or a
freshly initialised operator's channel), coefficients typed by hand, or one learned channel
of a checkpoint (``learned_kernel``). Each is float64 in the lag layout [2n-1].
"""

from __future__ import annotations

import numpy as np
from torch import nn

from tnn_core.analysis import channel_kernel
from tnn_core.analysis.presets import (
    MAX_TYPED_CHARS,
    MAX_TYPED_LENGTH,
    OPERATOR_CHANNELS,
    PRESETS,
    SYNTHETIC,
    parse_coefficients,
    preset_kernel,
)
from tnn_core.checks import check_int

__all__ = ["PRESETS", "SYNTHETIC", "OPERATOR_CHANNELS", "MAX_TYPED_LENGTH", "MAX_TYPED_CHARS",
           "preset_kernel", "parse_coefficients", "learned_kernel"]


def learned_kernel(model: nn.Module, n: int, layer: int, channel: int) -> np.ndarray:
    """The Toeplitz kernel [2n-1] that channel ``channel`` of layer ``layer`` applies at
    length n (``analysis.channel_kernel``: for bidirectional SKI its diagonal means);
    ValueError naming the layer when there is no such layer."""
    operators = model.operators()
    layer = check_int("layer", layer, 0, len(operators) - 1)
    return channel_kernel(operators[layer], n, channel).numpy()
