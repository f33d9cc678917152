"""The band + W A Wᵀ figure (the Decomposition page's, mounted twice on Compare A/B): what
it gets from the server, the band and rank it draws, and how it names a view.

The figures (``pages/figures/decomposition.js`` and ``error_curve.js``, whose headers hold
the data contracts) compute SKI's "sample" decomposition in the browser on every move of
r, m and λ. The server sends, once per kernel, its lags or, for a synthetic preset, the
two parts that λ does not touch (``synthetic_parts``), so that the browser derives the
kernel at any λ itself; after a move settles it sends what only it computes (spectral
norms, optima, the least-squares A of "fit", the error-against-r curve), each labelled
with the view it belongs to (``drawn``), so the browser can tell current from stale.
``fit_to_length`` clamps the sliders to what n allows (``decomposition_limits``, the one
rule, which the figure gets as its kernel's ``limits`` and clamps a drag with). Compare
mounts the figure once per side of ``SIDES``, its controls named after the side ("a_band").

Letters: n length, k lag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np
import torch

from tnn_core.analysis.decompose import decomposition_limits
from tnn_core.analysis.presets import SYNTHETIC
from tnn_core.core.toeplitz import causal_part, check_length, lags
from tnn_core.lab.common.browser_data import js_number, json_floats, kernel_id, packed

__all__ = ["SPIKES", "SIDES", "synthetic_parts", "drawn", "figure_data", "Settings",
           "fit_to_length"]

SPIKES = {0: 1.5, 1: -0.8, -1: 0.6, 2: 0.4, -2: -0.3}  # spike_smooth's taps, lag -> value
SIDES = ("a", "b")  # Compare's two settings; a side's controls are named "a_band", "b_rank", …


def synthetic_parts(name: str, n: int, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(base, extra) [2n-1] float64 with presets.synthetic_kernel(name, n, λ, causal) =
    base_k λ^|k| + extra_k for every λ (equal up to rounding; tested):

    exponential   base 1, extra 0
    spike_smooth  base (1 + cos(πk/n))/2, extra the sharp taps at |k| <= 2 (SPIKES)
    oscillating   base cos(2πk/8), extra 0
    """
    check_length(n)
    k = lags(n, dtype=torch.float64)  # (2n-1,)
    extra = torch.zeros_like(k)
    if name == "exponential":
        base = torch.ones_like(k)
    elif name == "spike_smooth":
        base = 0.5 * (1 + torch.cos(math.pi * k / max(n, 2)))
        for lag, value in SPIKES.items():
            if abs(lag) < n:
                extra[n - 1 + lag] = value
    elif name == "oscillating":
        base = torch.cos(2 * math.pi * k / 8)
    else:
        raise ValueError(f"synthetic kernel must be one of {SYNTHETIC}; got {name!r}")
    if causal:
        base, extra = causal_part(base), causal_part(extra)
    return base.numpy(), extra.numpy()


def drawn(n: int, band: int, rank: int, decay: float | None, method: str) -> str:
    """The figure's ``data-drawn`` for a view: ``n=1024&band=9&rank=33&decay=0.99&method=
    sample`` (decay left out for a kernel that has no λ). band and rank as drawn (clamped
    to n)."""
    params = [("n", n), ("band", band), ("rank", rank)]
    if decay is not None:
        params.append(("decay", decay))
    params.append(("method", method))
    return urlencode([(name, value if isinstance(value, str) else js_number(value))
                      for name, value in params])


def figure_data(view, parts: tuple[np.ndarray, np.ndarray] | None, causal: bool, label: str,
                decay: float | None, method: str, drawn_as: str) -> dict:
    """The band + W A Wᵀ figure's data (its contract: the header of
    pages/figures/decomposition.js), less its controls, for the Decomposition page and for
    each side of Compare. view: the server's numbers at the settled values (a
    ``decomposition.DecompositionView`` or a ``compare.SideView``: n, coeffs [2n-1], the
    relative errors and optima, gap, inducing_values [2r-1]); the kernel goes as ``parts``
    (base, extra) [2n-1] of a synthetic preset, so that λ moves in the browser, else as
    view.coeffs; ``drawn_as``: the ``data-drawn`` the numbers belong to (``drawn``, or a
    Compare side's prefixed one)."""
    if parts is not None:
        base, extra = parts
        kernel = {"id": kernel_id(base, extra), "base": packed(base), "extra": packed(extra)}
    else:
        kernel = {"id": kernel_id(view.coeffs), "coeffs": packed(view.coeffs)}
    max_band, max_rank = decomposition_limits(view.n)
    kernel |= {"n": view.n, "causal": causal, "label": label,
               "limits": {"band": max_band, "rank": max_rank}}
    numbers = dict(zip(("spectral", "optimalSpectral", "optimalFrobenius", "gap"),
                       json_floats([view.relative_spectral, view.relative_optimal_spectral,
                                    view.relative_optimal_frobenius, view.gap]), strict=True))
    return {"kernel": kernel, "decay": decay, "method": method,
            "numbers": {"drawn": drawn_as} | numbers,
            "fitted": {"drawn": drawn_as, "coeffs": packed(view.inducing_values)}
            if method == "fit" else None}


@dataclass(frozen=True)
class Settings:
    """The sliders' band and rank clamped to a kernel of length n."""

    band: int  # in [1, 2n-2]
    rank: int  # in [2, n]


def fit_to_length(n: int, band: int, rank: int) -> Settings:
    """Clamp band m and rank r to ``decomposition_limits(n)`` (n >= 2). The figure, sent
    the same limits, draws at these values and says what it clamped (decomposition.js)."""
    if n < 2:
        raise ValueError(f"n must be >= 2 to decompose; got n = {n}")
    max_band, max_rank = decomposition_limits(n)
    return Settings(band=min(band, max_band), rank=min(rank, max_rank))
