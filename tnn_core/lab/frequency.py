"""The Frequency page: FD-TNN's causal kernel built from an MLP response, everything it draws.

Algorithm 2 of "SKI to go Faster": a seeded RPE MLP gives the real part R(ω) of the
response, the Hilbert transform the imaginary part, and the inverse FFT a kernel that is
exactly zero at negative lags (``analysis.fd_response``). Its decay is fitted
(``profiles.decay_fit``) and drawn for the three activations of Theorems 2-4.

Letters: N = 2n grid size, F = N//2 + 1 frequency bins, t time lag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.fd_response import THEOREMS, fd_response
from tnn_core.analysis.profiles import DecayFit, decay_fit

__all__ = ["FIT_START", "FIT_FLOOR", "LOG_FLOOR", "DecayCurve", "FrequencyView",
           "frequency_view"]

FIT_START = 2  # the decay fit skips lags 0 and 1, the kernel's head
FIT_FLOOR = 1e-13  # ... and lags below this share of max|k[t]|: round-off, not decay
LOG_FLOOR = 1e-300  # smallest value drawn on a log axis


@dataclass(frozen=True)
class DecayCurve:
    activation: str
    magnitude: np.ndarray  # [N/2] |k[t]| at t = 1..N/2, clipped at LOG_FLOOR


@dataclass(frozen=True)
class FrequencyView:
    """Everything the Frequency page draws for one MLP."""

    N: int  # grid size 2n
    omega: np.ndarray  # [F] 0..π
    real: np.ndarray  # [F] R(ω), from the MLP
    imag: np.ndarray  # [F] -H{R}(ω), from the Hilbert transform
    lags: np.ndarray  # [N] signed time lags, ascending: -(N/2-1)..N/2
    kernel: np.ndarray  # [N] k[t] at ``lags``
    negative_span: tuple[float, float]  # lag interval of the negative lags, to shade
    max_negative: float  # max |k[t]| over t < 0: causality, measured (0 exactly)
    fit: DecayFit  # of |k[t]| on t in [FIT_START, N/2] above FIT_FLOOR · max
    theorem: str  # "Theorem 2" .. "Theorem 4", for this activation
    statement: str  # what the theorem says about the decay
    decay_t: np.ndarray  # [N/2] t = 1..N/2
    decay_curves: tuple[DecayCurve, ...]  # one per activation of THEOREMS, same MLP shape


def frequency_view(activation: str, width: int, depth: int, n: int, seed: int,
                   smooth_extension: bool) -> FrequencyView:
    """The Frequency page for a seeded RPE MLP of ``width`` × ``depth`` on the grid N = 2n."""
    response = fd_response(activation, width, depth, n, seed, smooth_extension)
    N, kernel = response.N, response.kernel
    order = np.argsort(response.lags)
    lags = response.lags[order]
    t = np.arange(1, N // 2 + 1)
    curves = []
    for name in THEOREMS:
        other = response if name == activation else fd_response(name, width, depth, n, seed,
                                                                smooth_extension)
        curves.append(DecayCurve(name, np.maximum(np.abs(other.kernel[t]), LOG_FLOOR)))
    theorem, statement = THEOREMS[activation]
    return FrequencyView(
        N=N, omega=response.omega, real=response.real, imag=response.imag, lags=lags,
        kernel=kernel[order], negative_span=(float(lags[0]), -0.5),
        max_negative=float(np.abs(kernel[response.lags < 0]).max(initial=0.0)),
        fit=decay_fit(kernel[: N // 2 + 1], start=FIT_START, floor=FIT_FLOOR),
        theorem=theorem, statement=statement, decay_t=t, decay_curves=tuple(curves))
