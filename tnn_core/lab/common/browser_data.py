"""Numbers as the browser's figures get them (``pages/figures/*.js``, whose headers hold the
data contracts): arrays packed exactly, JSON without NaN, a slider value as JavaScript
writes it, and a short name for a kernel's numbers.
"""

from __future__ import annotations

import base64
import hashlib
import math

import numpy as np

__all__ = ["packed", "json_floats", "js_number", "kernel_id"]


def packed(values) -> str:
    """A float array as base64 of little-endian float64: exact, and about half the size of
    JSON text (the figures' ``decodeArray``)."""
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


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


def kernel_id(*arrays: np.ndarray) -> str:
    """A short name for a kernel's numbers: the browser recomputes only when it changes."""
    digest = hashlib.blake2b(digest_size=8)
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return digest.hexdigest()
