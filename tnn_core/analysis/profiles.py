"""What a kernel looks like: its decay, its frequency response, its causality.

Every function takes one kernel in the lag layout, coeffs [2n-1] with
coeffs[n-1+k] = t_k (torch or numpy), and returns numpy arrays and floats.

* ``decay_fit``: the one decay fit, of any magnitudes |k_t| against t: exponential
  log|k_t| ≈ c + t log λ (TNN's decay bias t_k = λ^|k| RPE(k)) and power law
  log|k_t| ≈ c - p log t. Both pages use it.
* ``decay_profile``: |t_k| against |k|, its ``decay_fit``, and the receptive field
  holding 99% of Σ|t_k|.
* ``frequency_response``: the DTFT k̂(ω) = Σ_k t_k e^{-iωk} sampled at
  ω_j = 2πj/N by the rfft of the circulant column (exact, no windowing: the
  kernel is finite). §4.2 of "SKI to go Faster" ties its smoothness to the decay.
* ``channel_kernel``: the kernel of one channel of any ``tnn_core`` operator.

Letters: n length, L = 2n - 1 lags, N FFT size, F = N//2 + 1 bins, D channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.decompose import as_kernel
from tnn_core.analysis.gram import diagonal_sums
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import kernel_rfft
from tnn_core.checks import check_int
from tnn_core.core.toeplitz import check_length, fft_size
from tnn_core.operators import TokenMixer

__all__ = ["RECEPTIVE_SHARE", "DecayFit", "decay_fit", "DecayProfile", "decay_profile",
           "FrequencyResponse", "frequency_response", "channel_kernel"]

RECEPTIVE_SHARE = 0.99  # receptive field: the smallest |k| window holding this share of Σ|t_k|


@dataclass(frozen=True)
class DecayFit:
    """Two straight-line fits of log|k_t|: against t and against log t."""

    rate: float  # λ in |k_t| ≈ e^c λ^t (nan with fewer than two points)
    intercept: float  # c of the exponential fit
    exponent: float  # p in |k_t| ≈ e^c' t^-p, fitted on the same lags with t >= 1
    exp_residual: float  # root-mean-square residual in log|k_t| of each fit
    power_residual: float
    points: int  # lags fitted

    @property
    def better_law(self) -> str | None:
        """"exponential" or "power law", the smaller residual; None when either fit is
        undefined or exact (fewer than three points)."""
        if self.points < 3 or not np.isfinite([self.exp_residual, self.power_residual]).all():
            return None
        return "exponential" if self.exp_residual < self.power_residual else "power law"

    def exponential(self, t: np.ndarray) -> np.ndarray:
        """The fitted exponential e^c λ^t at lags t."""
        return np.exp(self.intercept) * self.rate ** np.asarray(t, dtype=np.float64)


def _line_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares (slope, intercept) of y on x and the RMS residual; nan below 2 points."""
    if len(x) < 2:
        return np.array([math.nan, math.nan]), math.nan
    coef = np.polyfit(x, y, 1)
    return coef, float(np.sqrt(np.mean((np.polyval(coef, x) - y) ** 2)))


def decay_fit(magnitude, start: int = 0, floor: float = 0.0) -> DecayFit:
    """Fit the decay of magnitudes |k_t| [T] at lags t = 0..T-1.

    Uses the lags t >= start whose |k_t| is a normal float above floor · max|k| (zeros,
    underflow and round-off left out); the power law only those with t >= 1.
    """
    mag = np.abs(np.asarray(magnitude, dtype=np.float64))
    t = np.arange(len(mag), dtype=np.float64)
    tiny = np.finfo(np.float64).tiny
    keep = (t >= start) & (mag >= tiny) & (mag > floor * max(mag.max(initial=0.0), tiny))
    y = np.log(mag[keep])
    positive = t[keep] >= 1
    with single_threaded_blas():
        (slope, intercept), exp_residual = _line_fit(t[keep], y)
        (power_slope, _), power_residual = _line_fit(np.log(t[keep][positive]), y[positive])
    return DecayFit(rate=float(np.exp(slope)), intercept=float(intercept),
                    exponent=float(-power_slope), exp_residual=exp_residual,
                    power_residual=power_residual, points=int(keep.sum()))


@dataclass(frozen=True)
class DecayProfile:
    lags: np.ndarray  # [n] |k| = 0..n-1
    magnitude: np.ndarray  # [n] max(|t_k|, |t_-k|), or |t_k| for a causal kernel
    fit: DecayFit  # of magnitude against |k|: fit.rate is the effective λ
    receptive_field: int  # smallest L with Σ_{|k|<=L}|t_k| >= 0.99 Σ|t_k|


def _magnitudes(t: np.ndarray, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(max(|t_k|, |t_-k|) or |t_k| for causal, |t_k| + |t_-k| mass) per |k| = 0..n-1."""
    n = (len(t) + 1) // 2
    forward = np.abs(t[n - 1 :])  # (n,) lags 0..n-1
    backward = np.abs(t[n - 1 :: -1])  # (n,) lags 0..-(n-1)
    magnitude = forward if causal else np.maximum(forward, backward)
    mass = forward + backward
    mass[0] = forward[0]  # lag 0 counted once
    return magnitude, mass


def decay_profile(coeffs, causal: bool = False) -> DecayProfile:
    """Decay of |t_k| with |k| for coeffs [2n-1] (see ``DecayProfile``)."""
    t = as_kernel(coeffs)
    n = (len(t) + 1) // 2
    magnitude, mass = _magnitudes(t, causal)
    cumulative = np.cumsum(mass)
    total = cumulative[-1]
    receptive_field = int(np.argmax(cumulative >= RECEPTIVE_SHARE * total)) if total > 0 else 0
    return DecayProfile(lags=np.arange(n), magnitude=magnitude, fit=decay_fit(magnitude),
                        receptive_field=receptive_field)


@dataclass(frozen=True)
class FrequencyResponse:
    omega: np.ndarray  # [F] ω_j = 2πj/N, 0..π
    magnitude: np.ndarray  # [F] |k̂(ω_j)|
    phase: np.ndarray  # [F] radians, in (-π, π]


def frequency_response(coeffs, N: int | None = None) -> FrequencyResponse:
    """DTFT of the kernel at ω_j = 2πj/N, j = 0..N//2. N defaults to fft_size(n) >= 2n."""
    t = as_kernel(coeffs)
    n = (t.shape[0] + 1) // 2
    if N is None:
        N = fft_size(n)
    N = check_int("N", N, 2 * n - 1, span="[2n-1, inf)")
    response = kernel_rfft(t, N)  # (F,) = Σ_k t_k e^{-iω_j k}
    return FrequencyResponse(omega=2 * math.pi * np.arange(N // 2 + 1) / N,
                             magnitude=np.abs(response), phase=np.angle(response))


def channel_kernel(op: TokenMixer, n: int, channel: int) -> torch.Tensor:
    """Kernel [2n-1] (float64) of channel ``channel`` of a tnn_core operator at length n.

    Toeplitz operators (TNO, FD, causal SKI) apply dense(op.kernel(n)) exactly, so
    this is op.kernel(n)[channel]. Bidirectional SKI applies band + W A Wᵀ, which is
    not Toeplitz; we return its nearest Toeplitz kernel in Frobenius norm, the
    diagonal means of op.matrix(n)[channel], computed without the [D, n, n] matrix
    (band taps + diagonal sums of W A Wᵀ by FFT, divided by n - |k|).
    """
    check_length(n)
    D = op.dim
    check_int("channel", channel, 0, D - 1, "[0, D-1]")
    with torch.no_grad():
        if op.config.kind == "ski" and not op.config.causal:
            band = op.band_kernel(n)[channel].to(torch.float64)  # (2n-1,)
            A_coeffs = op.inducing_kernel(n)[channel].to(torch.float64)  # (2r-1,)
            interp = op.interp(n).to("cpu", torch.float64)
            sums = diagonal_sums(interp, A_coeffs.cpu(), fft_size(n))  # (2n-1,)
            counts = n - torch.arange(-(n - 1), n).abs()  # (2n-1,)
            return band.cpu() + sums / counts
        return op.kernel(n)[channel].detach().to("cpu", torch.float64)
