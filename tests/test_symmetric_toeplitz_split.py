"""Singular values of a symmetric Toeplitz matrix from its two centrosymmetric halves
(``persymmetric.symmetric_toeplitz_singular_values``) against a dense float64 SVD at awkward
sizes, and the dense route taking the split only for a symmetric kernel."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from tnn_core.analysis import persymmetric
from tnn_core.analysis.persymmetric import (
    symmetric_toeplitz_singular_values,
    toeplitz_singular_values,
)


def symmetric_kernel(n: int, seed: int) -> np.ndarray:
    half = np.random.default_rng(seed).standard_normal(n)  # t_0 .. t_{n-1}
    return np.concatenate([half[:0:-1], half])  # (2n-1,) t_{-k} = t_k


def svd_reference(coeffs: np.ndarray) -> np.ndarray:
    n = (len(coeffs) + 1) // 2
    T = scipy.linalg.toeplitz(coeffs[n - 1 :], coeffs[n - 1 :: -1])  # T_ij = t_{i-j}
    return np.linalg.svd(T, compute_uv=False)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 13, 64, 97, 128])
def test_halves_give_every_singular_value(n):
    coeffs = symmetric_kernel(n, n)
    reference = svd_reference(coeffs)
    np.testing.assert_allclose(symmetric_toeplitz_singular_values(coeffs), reference,
                               rtol=1e-12, atol=1e-12 * reference[0])


def test_dense_route_splits_only_a_symmetric_kernel(monkeypatch):
    calls = []
    split = persymmetric.symmetric_toeplitz_singular_values
    monkeypatch.setattr(persymmetric, "symmetric_toeplitz_singular_values",
                        lambda t: calls.append(len(t)) or split(t))
    symmetric = symmetric_kernel(97, 1)
    values, route = toeplitz_singular_values(symmetric, 5)
    assert route == "dense" and calls == [len(symmetric)]
    np.testing.assert_allclose(values[:5], svd_reference(symmetric)[:5], rtol=1e-12)
    skewed = symmetric.copy()
    skewed[0] += 1e-3  # t_{-(n-1)} != t_{n-1}
    values, _ = toeplitz_singular_values(skewed, 5)
    assert calls == [len(symmetric)]
    np.testing.assert_allclose(values[:5], svd_reference(skewed)[:5], rtol=1e-12)
