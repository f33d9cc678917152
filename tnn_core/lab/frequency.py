"""The Frequency page: FD-TNN's kernel built from an MLP response, everything it draws.

A seeded one-channel FD operator (``analysis.fd_response``) gives the response on the grid
it uses, N = fft_size(n), and the kernel it applies at length n. Its decay is fitted
(``profiles.decay_fit``) and drawn for the three activations of Theorems 2-4, and each
theorem's premise is checked against the setting: what the MLP reads (ω or cos ω) and
whether the kernel is causal.

Letters: n length, N FFT size, F = N//2 + 1 frequency bins, t time lag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.fd_response import THEOREMS, FdResponse, fd_response
from tnn_core.analysis.profiles import DecayFit, decay_fit

__all__ = ["FIT_START", "FIT_FLOOR", "FIT_SHARE", "DecayCurve", "FrequencyView",
           "frequency_view"]

FIT_START = 2  # the decay fit skips lags 0 and 1, the kernel's head
FIT_FLOOR = 1e-13  # below this share of max|k[t]|: float64 FFT round-off, neither fitted nor drawn
# The size-N kernel is the DTFT's kernel summed over shifts by N, which bends its tail near
# N/2; on t <= N/8 a 1/t² tail is bent by at most (1/7)² ≈ 2 %, so the fit stops there.
FIT_SHARE = 8


@dataclass(frozen=True)
class DecayCurve:
    activation: str
    t: np.ndarray  # [P] lags >= 1 whose |k[t]| is above FIT_FLOOR · max|k|
    magnitude: np.ndarray  # [P] |k[t]|, or max(|k[t]|, |k[-t]|) when bidirectional
    roundoff_from: int | None  # the lag from which every |k[t]| is below the floor (None: never)


@dataclass(frozen=True)
class FrequencyView:
    """Everything the Frequency page draws for one FD operator."""

    n: int
    N: int  # fft_size(n), the grid the operator uses
    causal: bool
    fd_input: str  # "omega" or "cosine": what the MLP reads
    omega: np.ndarray  # [F] 0..π
    real: np.ndarray  # [F] real part of the response
    imag: np.ndarray  # [F] imaginary part
    lags: np.ndarray  # [2n-1] -(n-1)..n-1
    kernel: np.ndarray  # [2n-1] FD.kernel(n) at ``lags``
    max_negative: float | None  # causal: max |k[t]| over t < 0 of kernel(n) (0 exactly)
    spectral_leak: float | None  # causal: the same through the FFT path, relative to max|k|
    fit: DecayFit  # of the decay magnitude on t in [FIT_START, fit_end] above FIT_FLOOR · max
    fit_end: int  # N // FIT_SHARE, capped at n - 1
    theorem: str  # "Theorem 2" .. "Theorem 4", for this activation
    conclusion: str  # what the theorem says about the decay
    premise: str  # what it needs, and whether this setting meets it
    regime: str  # what the setting predicts, beside the measurement
    decay_curves: tuple[DecayCurve, ...]  # one per activation of THEOREMS, same MLP shape


def _decay_magnitude(response: FdResponse) -> np.ndarray:
    """[n] at t = 0..n-1: |k[t]|, or max(|k[t]|, |k[-t]|) for a two-sided kernel."""
    n, k = response.n, response.kernel
    forward = np.abs(k[n - 1 :])  # (n,) lags 0..n-1
    backward = np.abs(k[n - 1 :: -1])  # (n,) lags 0..-(n-1)
    return np.maximum(forward, backward)


def _curve(activation: str, magnitude: np.ndarray) -> DecayCurve:
    t = np.arange(len(magnitude))
    above = magnitude > FIT_FLOOR * magnitude.max(initial=0.0)
    last = int(np.flatnonzero(above)[-1]) if above.any() else -1
    keep = above & (t >= 1)
    return DecayCurve(activation, t[keep], magnitude[keep],
                      last + 1 if last + 1 < len(magnitude) else None)


def _premise_and_regime(activation: str, fd_input: str, causal: bool) -> tuple[str, str]:
    """Whether this setting meets the theorem's premise, and the decay it predicts."""
    premise = THEOREMS[activation].premise
    if activation == "relu":
        holds = ("it holds here, but it bounds no rate, and on a finite grid every kernel is "
                 "square summable")
    elif fd_input == "cosine":
        holds = "it holds here: fed cos ω, the response is a smooth 2π-periodic function"
    else:
        holds = ("it fails here: fed ω on [0, π] and extended to the circle, the response "
                 "is not smooth at ω = 0 and π")
    if fd_input == "omega" and not causal:
        regime = ("the imaginary half is odd and forced to 0 at ω = 0 and π: a jump, so the "
                  "kernel decays like 1/t")
    elif fd_input == "omega":
        regime = ("the real part's even extension has kinks at ω = 0 and π (a nonzero slope "
                  "there), so the kernel decays like 1/t²")
    elif activation == "relu":
        regime = ("a ReLU MLP of cos ω is piecewise linear in cos ω: its kinks inside (0, π) "
                  "leave a 1/t² tail")
    else:
        regime = ("the response has no kink and no jump, so the kernel falls faster than any "
                  "power of t, down to round-off")
    return f"{premise}; {holds}", regime


def frequency_view(activation: str, width: int, depth: int, n: int, seed: int,
                   fd_input: str = "omega", causal: bool = True) -> FrequencyView:
    """The Frequency page for a seeded one-channel FD operator (see ``fd_response``)."""
    response = fd_response(activation, width, depth, n, seed, fd_input, causal)
    magnitudes = {name: _decay_magnitude(response if name == activation else fd_response(
        name, width, depth, n, seed, fd_input, causal)) for name in THEOREMS}  # [n] each
    fit_end = min(response.N // FIT_SHARE, n - 1)
    max_negative = spectral_leak = None
    if causal:
        negative = response.lags < 0
        max_negative = float(np.abs(response.kernel[negative]).max(initial=0.0))
        scale = np.abs(response.kernel).max()
        leak = np.abs(response.spectral_kernel[negative]).max(initial=0.0)
        spectral_leak = float(leak / scale) if scale > 0 else 0.0
    theorem = THEOREMS[activation]
    premise, regime = _premise_and_regime(activation, fd_input, causal)
    return FrequencyView(
        n=n, N=response.N, causal=causal, fd_input=fd_input, omega=response.omega,
        real=response.real, imag=response.imag, lags=response.lags, kernel=response.kernel,
        max_negative=max_negative, spectral_leak=spectral_leak,
        fit=decay_fit(magnitudes[activation][: fit_end + 1], start=FIT_START, floor=FIT_FLOOR),
        fit_end=fit_end, theorem=theorem.name, conclusion=theorem.conclusion, premise=premise,
        regime=regime, decay_curves=tuple(_curve(a, m) for a, m in magnitudes.items()))
