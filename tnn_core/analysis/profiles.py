"""What a kernel looks like: its decay, its frequency response, its causality.

Every function takes one kernel in the lag layout, coeffs [2n-1] with
coeffs[n-1+k] = t_k (torch or numpy), and returns numpy arrays and floats.

* ``decay_profile``: |t_k| against |k|, the effective decay λ of a fit
  log|t_k| ≈ c + |k| log λ (TNN's decay bias t_k = λ^|k| RPE(k)), and the
  receptive field holding 99% of Σ|t_k|.
* ``frequency_response``: the DTFT k̂(ω) = Σ_k t_k e^{-iωk} sampled at
  ω_j = 2πj/N by the rfft of the circulant column (exact, no windowing: the
  kernel is finite). §4.2 of "SKI to go Faster" ties its smoothness to the decay.
* ``causality_leakage``: the share Σ_{k<0}|t_k| / Σ|t_k| of the mass on future lags.
* ``channel_kernel``: the kernel of one channel of any ``tnn_core`` operator.

Letters: n length, L = 2n - 1 lags, N FFT size, F = N//2 + 1 bins, D channels.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tnn_core.analysis.decompose import as_kernel
from tnn_core.analysis.gram import diagonal_sums
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.persymmetric import kernel_rfft
from tnn_core.core.toeplitz import check_length, fft_size
from tnn_core.operators import TokenMixer

__all__ = ["RECEPTIVE_SHARE", "decay_profile", "frequency_response", "causality_leakage",
           "channel_kernel"]

RECEPTIVE_SHARE = 0.99  # receptive field: the smallest |k| window holding this share of Σ|t_k|


def _magnitudes(t: np.ndarray, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(max(|t_k|, |t_-k|) or |t_k| for causal, |t_k| + |t_-k| mass) per |k| = 0..n-1."""
    n = (len(t) + 1) // 2
    forward = np.abs(t[n - 1 :])  # (n,) lags 0..n-1
    backward = np.abs(t[n - 1 :: -1])  # (n,) lags 0..-(n-1)
    magnitude = forward if causal else np.maximum(forward, backward)
    mass = forward + backward
    mass[0] = forward[0]  # lag 0 counted once
    return magnitude, mass


def decay_profile(coeffs, causal: bool = False) -> dict:
    """Decay of |t_k| with |k|: ``lags`` [n], ``magnitude`` [n], ``fitted_decay`` λ,
    ``fit_intercept`` c (log|t_k| ≈ c + |k| log λ by least squares over the lags whose
    magnitude is a normal float, so zeros and underflow are skipped; nan when fewer than
    two), ``receptive_field`` (smallest L with Σ_{|k|<=L}|t_k| >= 0.99 Σ|t_k|)."""
    t = as_kernel(coeffs).numpy()
    n = (len(t) + 1) // 2
    magnitude, mass = _magnitudes(t, causal)
    lags = np.arange(n)
    nonzero = magnitude >= np.finfo(np.float64).tiny  # zeros and underflowed (subnormal) lags out
    if np.count_nonzero(nonzero) >= 2:
        with single_threaded_blas():
            slope, intercept = np.polyfit(lags[nonzero], np.log(magnitude[nonzero]), 1)
        fitted_decay, fit_intercept = float(np.exp(slope)), float(intercept)
    else:
        fitted_decay = fit_intercept = float("nan")
    cumulative = np.cumsum(mass)
    total = cumulative[-1]
    receptive_field = int(np.argmax(cumulative >= RECEPTIVE_SHARE * total)) if total > 0 else 0
    return {
        "lags": lags,
        "magnitude": magnitude,
        "fitted_decay": fitted_decay,
        "fit_intercept": fit_intercept,
        "receptive_field": receptive_field,
    }


def frequency_response(coeffs, N: int | None = None) -> dict:
    """DTFT of the kernel at ω_j = 2πj/N, j = 0..N//2: ``omega`` [F] (0..π), ``magnitude``
    [F], ``phase`` [F] (radians, in (-π, π]). N defaults to fft_size(n) >= 2n."""
    t = as_kernel(coeffs)
    n = (t.shape[0] + 1) // 2
    if N is None:
        N = fft_size(n)
    if isinstance(N, bool) or not isinstance(N, int) or N < 2 * n - 1:
        raise ValueError(f"N must be an integer in [2n-1, inf) = [{2 * n - 1}, inf); got {N!r}")
    response = kernel_rfft(t.numpy(), N)  # (F,) = Σ_k t_k e^{-iω_j k}
    return {
        "omega": 2 * math.pi * np.arange(N // 2 + 1) / N,
        "magnitude": np.abs(response),
        "phase": np.angle(response),
    }


def causality_leakage(coeffs) -> float:
    """Σ_{k<0}|t_k| / Σ_k|t_k|: 0 for a causal kernel; nan for an all-zero one."""
    t = np.abs(as_kernel(coeffs).numpy())
    n = (len(t) + 1) // 2
    total = float(t.sum())
    return float(t[: n - 1].sum()) / total if total > 0 else float("nan")


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
    if isinstance(channel, bool) or not isinstance(channel, int) or not 0 <= channel < D:
        raise ValueError(f"channel must be an integer in [0, D-1] = [0, {D - 1}]; "
                         f"got {channel!r}")
    with torch.no_grad():
        if op.config.kind == "ski" and not op.config.causal:
            band = op.band_kernel(n)[channel].to(torch.float64)  # (2n-1,)
            A_coeffs = op.inducing_kernel(n)[channel].to(torch.float64)  # (2r-1,)
            interp = op.interp(n).to("cpu", torch.float64)
            sums = diagonal_sums(interp, A_coeffs.cpu(), fft_size(n))  # (2n-1,)
            counts = n - torch.arange(-(n - 1), n).abs()  # (2n-1,)
            return band.cpu() + sums / counts
        return op.kernel(n)[channel].detach().to("cpu", torch.float64)
