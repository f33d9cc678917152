"""SKI's error against the rank r at one band (the Decomposition page's curve, and the one a
lesson asks a student to sketch first).

Log axes: values below CURVE_FLOOR are round-off (or exact zeros) and carry no information,
so they are NaN (a gap in the line), never clipped to a tiny number that would stretch the
axis; the Gram formula is a difference of squares, and reads an exact fit as ~1e-8.

Letters: n length, q ranks on the curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.curves import CURVE_RANKS, error_curve

__all__ = ["CURVE_FLOOR", "RankCurve", "rank_curve"]

CURVE_FLOOR = 1e-7  # relative Frobenius error: the Gram formula reads an exact fit as ~1e-8
# the optimum's Lanczos stops once its top-r energy grows by < this share of the tail: the
# drawn optimum is then good to ~1e-3 relative (measured: <= 1.4e-3 against the 1e-6 curve,
# for the spike, exponential and oscillating kernels at n = 1024), 1/2000 of a decade, far
# below a pixel of the log axis; it saves a third of the curve's Lanczos steps (rank 128's
# top singular values cluster, and their energy settles slowly)
DRAWN_ENERGY_RTOL = 1e-3


def _above_floor(values: np.ndarray, floor: float) -> np.ndarray:
    """values as float64 with NaN where they are below floor (not drawn on a log axis)."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(values >= floor, values, np.nan)


@dataclass(frozen=True)
class RankCurve:
    """Relative Frobenius error against r at one band; NaN below CURVE_FLOOR (exact up to
    round-off), and those ranks listed in ``exact``."""

    ranks: np.ndarray  # [q] the ranks of CURVE_RANKS up to n
    sample: np.ndarray  # [q] SKI with A sampled from the kernel
    fit: np.ndarray  # [q] SKI with A fitted by least squares
    optimal: np.ndarray  # [q] the Eckart–Young optimum (SVD) with the fitted band
    exact: np.ndarray  # [e] ranks where some curve is below CURVE_FLOOR


def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> RankCurve:
    """The error-against-r curve of kernel coeffs [2n-1] at the ranks of CURVE_RANKS <= n."""
    n = (len(coeffs) + 1) // 2
    curve = error_curve(coeffs, band, [r for r in CURVE_RANKS if r <= n], causal=causal,
                        energy_rtol=DRAWN_ENERGY_RTOL)
    below = np.zeros(len(curve.ranks), bool)
    for errors in (curve.sample, curve.fit, curve.optimal):
        below |= errors < CURVE_FLOOR
    return RankCurve(ranks=curve.ranks, sample=_above_floor(curve.sample, CURVE_FLOOR),
                     fit=_above_floor(curve.fit, CURVE_FLOOR),
                     optimal=_above_floor(curve.optimal, CURVE_FLOOR), exact=curve.ranks[below])
