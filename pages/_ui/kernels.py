"""The demo kernels a page decomposes (presets, typed coefficients) and their views,
computed once for the whole server (``memo``)."""

from __future__ import annotations

import numpy as np

from pages._ui.memo import memo
from tnn_core.lab import decomposition as lab
from tnn_core.lab.common import kernel_sources

SOURCE_LABELS = {
    "spike_smooth": "Spike plus smooth",
    "exponential": "Exponential decay λ^|k|",
    "oscillating": "Oscillating",
    "tno": "Fresh TNN operator (tno)",
    "ski": "Fresh SKI-TNN operator (ski)",
    "fd": "Fresh FD-TNN operator (fd)",
    "custom": "Type your own coefficients",
    "checkpoint": "Learned kernel from a checkpoint",
}


@memo(max_entries=64)
def preset_kernel(name: str, n: int, decay: float, causal: bool, seed: int,
                  channel: int) -> np.ndarray:
    """[2n-1] coefficients t_{-(n-1)} … t_{n-1} of the preset ``name``."""
    return kernel_sources.preset_kernel(name, n, decay, causal, seed, channel).numpy()


@memo(max_entries=64)
def parse_coefficients(text: str, causal: bool) -> np.ndarray:
    """[2n-1] coefficients typed as text; ValueError says what is wrong with the text."""
    return kernel_sources.parse_coefficients(text, causal).numpy()


# The lab's own functions, cached: one name per concept from the lab to the page.
decomposition_view = memo(max_entries=32, spinner="Decomposing…")(lab.decomposition_view)
rank_curve = memo(max_entries=32, spinner="Error against r…")(lab.rank_curve)
