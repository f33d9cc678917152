"""FD-TNN kernels for inspection: an RPE MLP frequency response, its Hilbert pair,
the causal kernel it defines, and how fast that kernel decays.

Algorithm 2 of "SKI to go Faster": an MLP gives the real part R(ω) of the
response on ω_k = 2πk/N, k = 0..N/2; the imaginary part is -Hilbert{R}; the
inverse transform is a causal kernel. Theorems 2-4 tie the MLP's activation to
the decay of the kernel in time:

    gelu  k[t] = O(exp(-a t)) for every a > 0   (faster than any exponential)
    silu  |k[t]| <= ||R^(N)||_1 / (2π |t|^N)     (faster than any polynomial)
    relu  Σ k[t]² < ∞                            (square summable)

The theorems treat the response as a smooth function on the whole circle. On the
grid the MLP sees only ω in [0, π] and the response is extended evenly, so a
nonzero slope at ω = 0 or π is a kink of the periodic response, and a kink limits
the decay to about 1/t². ``decay_fit`` measures what actually happens, and
``fd_response(..., smooth_extension=True)`` feeds the MLP cos ω to remove the kinks.

Letters: N FFT size (even), F = N//2 + 1 frequency bins, t time lag.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tnn_core.core.rpe import RpeMLP
from tnn_core.core.spectrum import causal_kernel, frequency_grid

__all__ = ["THEOREMS", "fd_response", "decay_fit"]

THEOREMS = {
    "gelu": ("Theorem 2", "faster than any exponential: |k[t]| = O(e^{-a t}) for all a > 0"),
    "silu": ("Theorem 3", "faster than any polynomial: |k[t]| ≤ ‖R^{(N)}‖₁ / (2π|t|^N) for all N"),
    "relu": ("Theorem 4", "square summable: Σ k[t]² < ∞"),
}


def fd_response(activation: str, width: int, depth: int, n: int, seed: int = 0,
                smooth_extension: bool = False) -> dict:
    """A seeded RPE MLP's real response on the size-N grid, N = 2n, and its causal kernel.

    With ``smooth_extension`` the MLP is fed cos ω instead of ω (as FD-TNN does), so
    its even periodic extension is as smooth as the MLP: the theorems' setting.

    Returns float64 numpy arrays:
        omega [F], real [F] = R(ω), imag [F] = -Hilbert{R}(ω),
        kernel [N] (time lags 0..N-1; exactly 0 for t > N/2, the negative times),
        lags [N] (signed: 0..N/2, then -(N/2-1)..-1, the circular order).
    """
    if activation not in THEOREMS:
        raise ValueError(f"activation must be one of {tuple(THEOREMS)}; got {activation!r}")
    for name, value, low in (("width", width, 1), ("depth", depth, 0), ("n", n, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer in [{low}, inf); got {value!r}")
    N = 2 * n
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mlp = RpeMLP(width, 1, depth, activation).double()
    with torch.no_grad():
        omega = frequency_grid(N, dtype=torch.float64)  # (F,)
        real = mlp(torch.cos(omega) if smooth_extension else omega)[:, 0]  # (F,)
        kernel = causal_kernel(real, N)  # (N,)
        spectrum = torch.fft.rfft(kernel)  # (F,)
    t = np.arange(N)
    return {
        "N": N,
        "omega": omega.numpy(),
        "real": real.numpy(),
        "imag": spectrum.imag.numpy(),
        "kernel": kernel.numpy(),
        "lags": np.where(t <= N // 2, t, t - N),
    }


def decay_fit(kernel: np.ndarray, start: int = 2, floor: float = 1e-13) -> dict:
    """Fit the tail of a causal kernel [N] (t = 0..N/2) two ways.

    exponential: log|k| ≈ c - t log(1/ρ)   -> rate ρ (the effective λ)
    power law:   log|k| ≈ c - p log t       -> exponent p
    Fitted on t in [start, N/2] where |k| > floor·max|k| (round-off excluded).
    The smaller residual says which law the tail follows.
    """
    half = kernel[: len(kernel) // 2 + 1]
    t = np.arange(len(half), dtype=np.float64)
    mag = np.abs(half)
    keep = (t >= start) & (mag > floor * max(mag.max(), np.finfo(float).tiny))
    if keep.sum() < 3:
        return {"rate": math.nan, "exponent": math.nan, "exp_residual": math.nan,
                "power_residual": math.nan, "points": int(keep.sum())}
    y = np.log(mag[keep])
    exp_coef, exp_res = _line_fit(t[keep], y)
    pow_coef, pow_res = _line_fit(np.log(t[keep]), y)
    return {
        "rate": float(np.exp(exp_coef[0])),
        "exponent": float(-pow_coef[0]),
        "exp_residual": exp_res,
        "power_residual": pow_res,
        "points": int(keep.sum()),
    }


def _line_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    coef = np.polyfit(x, y, 1)
    residual = float(np.sqrt(np.mean((np.polyval(coef, x) - y) ** 2)))
    return coef, residual
