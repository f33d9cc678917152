"""Independent references shared by the analysis and lab tests: scipy and plain loops,
no tnn_core code."""

import numpy as np
import scipy.linalg


def toeplitz_ref(t: np.ndarray) -> np.ndarray:
    """T[i, j] = t_{i-j} from lags t_{-(n-1)} .. t_{n-1}."""
    n = (len(t) + 1) // 2
    return scipy.linalg.toeplitz(t[n - 1 :], t[n - 1 :: -1])


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
