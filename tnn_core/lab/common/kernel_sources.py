"""Where a page's kernel comes from: a preset (``analysis.presets``: a synthetic shape or a
freshly initialised operator's channel), coefficients typed by hand, or one learned channel
of a checkpoint (``learned_kernel``). Each is float64 in the lag layout [2n-1].

A togeipi layer is not one Toeplitz matrix per channel: each head h applies T_h + S, its
Toeplitz point spread function plus a learned sparse matrix S that is not Toeplitz, between
projections that mix channels. Its Toeplitz part is T_h, shared by the head's channels:
``toeplitz_part`` gives that, and ``TOGEIPI_PART`` says so in one sentence.
"""

from __future__ import annotations

import numpy as np
import torch
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
from tnn_core.operators import TokenMixer

__all__ = ["PRESETS", "SYNTHETIC", "OPERATOR_CHANNELS", "MAX_TYPED_LENGTH", "MAX_TYPED_CHARS",
           "preset_kernel", "parse_coefficients", "TOGEIPI_PART", "toeplitz_part",
           "learned_kernel"]

TOGEIPI_PART = ("A togeipi head applies its Toeplitz point spread function T_h plus a learned "
                "sparse matrix S, which is not Toeplitz: what is shown here is T_h, shared by "
                "the head's channels, and not S.")


def toeplitz_part(operator: TokenMixer, n: int, channel: int) -> torch.Tensor:
    """The Toeplitz kernel [2n-1] (float64, CPU) channel ``channel`` applies at length n:
    ``analysis.channel_kernel`` (for bidirectional SKI its diagonal means); for togeipi the
    point spread function of the channel's head (``TOGEIPI_PART``)."""
    if operator.config.kind != "togeipi":
        return channel_kernel(operator, n, channel)
    check_int("channel", channel, 0, operator.dim - 1, "[0, D-1]")
    head = channel // (operator.dim // operator.heads)
    with torch.no_grad():
        return operator.psf_kernel(n)[head].to("cpu", torch.float64)  # (2n-1,)


def learned_kernel(model: nn.Module, n: int, layer: int, channel: int) -> np.ndarray:
    """The Toeplitz kernel [2n-1] that channel ``channel`` of layer ``layer`` applies at
    length n (``toeplitz_part``); ValueError naming the layer when there is no such layer."""
    operators = model.operators()
    layer = check_int("layer", layer, 0, len(operators) - 1)
    return toeplitz_part(operators[layer], n, channel).numpy()
