"""||T||_2 by Lanczos (``persymmetric.toeplitz_norm``): equal to a dense float64 SVD's at
awkward sizes, and kept per kernel, so a move of r or m (the same T) does not compute it
again, while a kernel one float64 step away does."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from tnn_core.analysis import persymmetric
from tnn_core.analysis.persymmetric import toeplitz_norm


def dense_norm(coeffs: np.ndarray) -> float:
    n = (len(coeffs) + 1) // 2
    return float(np.linalg.norm(scipy.linalg.toeplitz(coeffs[n - 1 :], coeffs[n - 1 :: -1]), 2))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 13, 97, 300])
def test_the_norm_is_the_dense_one(n):
    coeffs = np.random.default_rng(n).standard_normal(2 * n - 1)
    assert toeplitz_norm(coeffs) == pytest.approx(dense_norm(coeffs), rel=1e-9)


def test_the_norm_is_kept_per_kernel(monkeypatch):
    calls = []
    lanczos = persymmetric.capped_norm
    monkeypatch.setattr(persymmetric, "capped_norm",
                        lambda *args, **kwargs: calls.append(1) or lanczos(*args, **kwargs))
    coeffs = np.random.default_rng(5).standard_normal(2 * 41 - 1)
    first = toeplitz_norm(coeffs)
    assert toeplitz_norm(coeffs.copy()) == first and len(calls) == 1
    nudged = coeffs.copy()
    nudged[3] = np.nextafter(nudged[3], np.inf)
    assert toeplitz_norm(nudged) == pytest.approx(first, rel=1e-9) and len(calls) == 2
    toeplitz_norm(coeffs, tol=1e-6)  # another tolerance: another value
    assert len(calls) == 3
