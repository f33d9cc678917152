"""Independent references shared by the tests: scipy, torch and plain loops, no tnn_core
code."""

import numpy as np
import scipy.linalg
import torch


def toeplitz_ref(t: np.ndarray) -> np.ndarray:
    """T[i, j] = t_{i-j} from lags t_{-(n-1)} .. t_{n-1}."""
    n = (len(t) + 1) // 2
    return scipy.linalg.toeplitz(t[n - 1 :], t[n - 1 :: -1])


def diagonal_means(M: np.ndarray) -> dict[int, float]:
    """{k: mean of M's entries on diagonal i - j = k} for an n × n M."""
    n = M.shape[0]
    return {k: float(np.mean(np.diagonal(M, offset=-k))) for k in range(-(n - 1), n)}


def interp_ref(n: int, r: int) -> np.ndarray:
    """Linear interpolation of positions 0..n-1 onto r points evenly spaced on [0, n-1]."""
    W = np.zeros((n, r))
    points = np.linspace(0, n - 1, r)
    for i in range(n):
        j = min(int(np.searchsorted(points, i, side="right")) - 1, r - 2)
        frac = (i - points[j]) / (points[j + 1] - points[j])
        W[i, j], W[i, j + 1] = 1 - frac, frac
    return W


def band_lags_ref(n: int, band: int, causal: bool) -> list[int]:
    lags = range(0, band) if causal else range(-(band // 2), band // 2 + 1)
    return [k for k in lags if abs(k) < n]


def lopsided(n: int, causal: bool = False) -> np.ndarray:
    """A test kernel [2n-1]: spikes near lag 0 on a smooth bump that decays faster on one
    side (the spike-plus-smooth shape, without symmetry); causal: zero at negative lags."""
    k = np.arange(-(n - 1), n)
    t = np.where(k >= 0, 0.97, 0.9) ** np.abs(k) * (1 + 0.3 * np.sin(k / 7))
    for lag, value in {0: 1.5, 1: -0.8, -1: 0.6, 2: 0.4, -2: -0.3}.items():
        if abs(lag) < n:
            t[n - 1 + lag] += value
    if causal:
        t[: n - 1] = 0
    return t


def bidirectional_spectrum(real: torch.Tensor, imag: torch.Tensor) -> torch.Tensor:
    """Complex response of a real kernel from its two halves (§3.3.2 of SKI to go Faster):
    real + i imag with the imaginary part 0 at ω = 0 and ω = π, where the response of a
    real kernel is real. real, imag: [..., N//2+1] -> complex [..., N//2+1]."""
    assert real.shape == imag.shape, (real.shape, imag.shape)
    mask = torch.ones(real.shape[-1], dtype=imag.dtype)
    mask[0] = mask[-1] = 0
    return torch.complex(real, imag * mask)
