"""How fast a kernel decays, as the decay figure draws it on log axes (the Frequency page,
and a lesson's computed answer and sketch): its magnitude per lag, and the lag from which
the rest is float64 round-off.

Letters: n length, t lag, P lags drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FIT_FLOOR", "decay_magnitude", "DecayCurve", "decay_curve"]

FIT_FLOOR = 1e-13  # below this share of max|k[t]|: float64 FFT round-off, neither fitted nor drawn


def decay_magnitude(kernel: np.ndarray) -> np.ndarray:
    """[n] at t = 0..n-1 of kernel [2n-1]: max(|k[t]|, |k[-t]|) (|k[t]| when causal, whose
    negative lags are exact zeros): ``profiles.decay_profile``'s magnitude."""
    n = (len(kernel) + 1) // 2
    forward = np.abs(kernel[n - 1 :])  # (n,) lags 0..n-1
    backward = np.abs(kernel[n - 1 :: -1])  # (n,) lags 0..-(n-1)
    return np.maximum(forward, backward)


@dataclass(frozen=True)
class DecayCurve:
    t: np.ndarray  # [P] lags >= 1 whose magnitude is above FIT_FLOOR · max
    magnitude: np.ndarray  # [P]
    roundoff_from: int | None  # the lag from which every magnitude is below the floor (None: never)


def decay_curve(magnitude: np.ndarray) -> DecayCurve:
    """What the decay figure draws of magnitude [n] on its log axes, and where it stops."""
    t = np.arange(len(magnitude))
    above = magnitude > FIT_FLOOR * magnitude.max(initial=0.0)
    last = int(np.flatnonzero(above)[-1]) if above.any() else -1
    keep = above & (t >= 1)
    return DecayCurve(t[keep], magnitude[keep], last + 1 if last + 1 < len(magnitude) else None)
