"""A lesson's drawn predictions: the curve a sketch is compared with, and how far it is.

A sketch question asks a student to draw a curve on empty axes before the answer, then
draws the lab's curve over it. ``SKETCHES`` names the curves a lesson may ask for; each
is computed from the step's settings, and ``distance`` says how far a sketch is from it.

Letters: n length, r rank (inducing points), q points on a curve, p points of a sketch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.fd_response import fd_response
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.bench.flops import dense_flops
from tnn_core.lab.common.decay_curve import FIT_FLOOR, decay_magnitude
from tnn_core.lab.common.rank_curve import rank_curve

__all__ = ["SKETCHES", "Curve", "fit_error_against_r", "dense_cost_against_n",
           "decay_envelope", "fd_kernel_decay", "distance"]

# the names a lesson's question may give as ``sketch``
SKETCHES = ("fit_error_against_r", "dense_cost_against_n", "decay_envelope", "fd_kernel_decay")
COST_LENGTHS = tuple(2**k for k in range(4, 13))  # n = 16 .. 4096
ENVELOPE_LAGS = 60  # the decay envelope is sketched on lags 0 .. ENVELOPE_LAGS


@dataclass(frozen=True)
class Curve:
    """A curve to sketch, on fixed axes (the sketch and the curve share them)."""

    x: np.ndarray  # [q] increasing
    y: np.ndarray  # [q] (NaN: not drawn)
    label: str
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    log_x: bool
    log_y: bool
    x_label: str
    y_label: str
    # drawn as the error curve beside it draws A fitted (dashed, in that series' colour:
    # pages/figures/error_curve.js), not as the lab's solid line of every other sketch
    dashed: bool = False


def fit_error_against_r(coeffs: np.ndarray, band: int, causal: bool) -> Curve:
    """SKI's relative Frobenius error with A fitted, against r (``rank_curve``), for kernel
    coeffs [2n-1] and band m, on log-log axes from r = 2 to the largest rank drawn and
    from 1e-4 to 1."""
    curve = rank_curve(coeffs, band, causal)
    ranks = curve.ranks.astype(np.float64)  # (q,)
    return Curve(x=ranks, y=curve.fit, label="SKI's error, A fitted (the lab's)",
                 x_range=(float(ranks[0]), float(ranks[-1])), y_range=(1e-4, 1.0),
                 log_x=True, log_y=True, x_label="inducing points r",
                 y_label="relative Frobenius error", dashed=True)


def dense_cost_against_n() -> Curve:
    """The dense product's flops for one sequence and channel (``flops.dense_flops``,
    2 n²) against n = 16 .. 4096, log-log."""
    n = np.array(COST_LENGTHS, dtype=np.float64)  # (q,)
    return Curve(x=n, y=np.array([dense_flops(int(v)) for v in n]),
                 label="the dense product's flops, 2 n² (the lab's formula)",
                 x_range=(n[0], n[-1]), y_range=(1e2, 1e8), log_x=True, log_y=True,
                 x_label="n", y_label="flops")


def decay_envelope(decay: float) -> Curve:
    """TNN's decay factor λ^|k| on lags 0 .. ENVELOPE_LAGS (the exponential preset's
    kernel), on a logarithmic y axis."""
    t = synthetic_kernel("exponential", ENVELOPE_LAGS + 1, decay).numpy()  # (2L+1,)
    lags = np.arange(ENVELOPE_LAGS + 1, dtype=np.float64)
    return Curve(x=lags, y=t[ENVELOPE_LAGS:], label=f"λ^|k|, λ = {decay:g} (the lab's)",
                 x_range=(0.0, float(ENVELOPE_LAGS)), y_range=(1e-3, 1.0), log_x=False,
                 log_y=True, x_label="lag k", y_label="factor")


def fd_kernel_decay(activation: str, width: int, depth: int, n: int, seed: int,
                    fd_input: str, causal: bool) -> Curve:
    """|k[t]| against t = 1 .. n-1 of a seeded FD operator's kernel (``fd_response``,
    ``decay_magnitude``), log-log; values below FIT_FLOOR · max are round-off, not drawn."""
    kernel = fd_response(activation, width, depth, n, seed, fd_input, causal).kernel
    magnitude = decay_magnitude(kernel)  # (n,) lags 0 .. n-1
    t = np.arange(1, n, dtype=np.float64)
    y = np.where(magnitude[1:] > FIT_FLOOR * magnitude.max(), magnitude[1:], np.nan)
    return Curve(x=t, y=y, label=f"|k[t]| of the {activation} kernel (the lab's)",
                 x_range=(1.0, float(max(n - 1, 2))), y_range=(1e-6, 1.0), log_x=True,
                 log_y=True, x_label="lag t", y_label="|k[t]|")


def distance(guess: list[list[float]], curve: Curve) -> float:
    """How far a sketch [[x, y], ...] is from ``curve``: the median over its points, inside
    the curve's x range, of |log10(y / curve's y there)| in decades on a log y axis (the
    curve interpolated on its own axes), else of |y − curve's y| over the y range. NaN
    when no point of the sketch can be compared."""
    drawn = np.isfinite(curve.y) & ((curve.y > 0) | (not curve.log_y))
    if drawn.sum() < 2:
        return math.nan
    cx = np.log10(curve.x[drawn]) if curve.log_x else curve.x[drawn]  # (q',)
    cy = np.log10(curve.y[drawn]) if curve.log_y else curve.y[drawn]
    gaps = []
    for x, y in guess:
        if not (math.isfinite(x) and math.isfinite(y)) or (curve.log_y and y <= 0) \
                or (curve.log_x and x <= 0):
            continue
        gx = math.log10(x) if curve.log_x else x
        if not cx[0] <= gx <= cx[-1]:
            continue
        there = float(np.interp(gx, cx, cy))
        gaps.append(abs((math.log10(y) if curve.log_y else y) - there))
    if not gaps:
        return math.nan
    scale = 1.0 if curve.log_y else curve.y_range[1] - curve.y_range[0]
    return float(np.median(gaps)) / scale
