"""What the Decomposition page's figures get from the server, and how they name a view.

The figures (``pages/figures/decomposition.js`` and ``error_curve.js``, whose headers hold
the data contracts) compute SKI's "sample" decomposition in the browser on every move of
r, m and λ. The server sends, once per kernel, its lags or, for a synthetic preset, the
two parts that λ does not touch (``synthetic_parts``), so that the browser derives the
kernel at any λ itself; after a move settles it sends what only it computes (spectral
norms, optima, the least-squares A of "fit", the error-against-r curve), each labelled
with the view it belongs to (``drawn``), so the browser can tell current from stale.

Letters: n length, k lag.
"""

from __future__ import annotations

import base64
import hashlib
import math
from urllib.parse import urlencode

import numpy as np
import torch

from tnn_core.analysis.presets import SYNTHETIC
from tnn_core.core.toeplitz import causal_part, check_length, lags

__all__ = ["SPIKES", "synthetic_parts", "kernel_id", "json_floats", "js_number", "drawn", "packed"]

SPIKES = {0: 1.5, 1: -0.8, -1: 0.6, 2: 0.4, -2: -0.3}  # spike_smooth's taps, lag -> value


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


def kernel_id(*arrays: np.ndarray) -> str:
    """A short name for a kernel's numbers: the browser recomputes only when it changes."""
    digest = hashlib.blake2b(digest_size=8)
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return digest.hexdigest()


def json_floats(values) -> list:
    """A float array as a JSON list, None where a value is NaN or infinite (JSON has none)."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, np.float64)]


def js_number(value: float | int) -> str:
    """A number as JavaScript's String() writes it, for the values a slider takes (whole,
    or short decimals such as 0.995): 1.0 -> "1", 0.95 -> "0.95"."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"value must be finite; got {value}")
    return str(int(value)) if value.is_integer() else repr(value)


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


def packed(values) -> str:
    """A float array as base64 of little-endian float64: exact, and about half the size of
    JSON text (the figures' ``decodeArray``)."""
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")
