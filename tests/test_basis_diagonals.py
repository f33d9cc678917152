"""The every-lag table of SKI's basis diagonal sums (``basis_diagonals``): equal to a dense
float64 reference built from W S_l Wᵀ at awkward sizes, exact zeros where the reference has
them, the band's rows and the projection <W S_l Wᵀ, T>_F equal to the two routes it replaces
(the band scatter and r FFT products), and the limits beyond which those routes are used."""

from __future__ import annotations

import numpy as np
import pytest

from tnn_core.analysis.basis_diagonals import (
    EXACT_MAX_N,
    basis_diagonals,
    exact_by_fft,
)
from tnn_core.analysis.gram import (
    band_lags,
    inducing_projection,
    product_projection,
    scatter_diagonal_sums,
    ski_gram,
    wide_band_table,
)
from tnn_core.core.interpolation import interpolation, interpolation_matrix

SIZES = [(1, 2), (2, 2), (3, 2), (3, 3), (7, 4), (13, 5), (31, 31), (97, 13), (101, 100),
         (257, 64)]


def dense_table(n: int, r: int) -> np.ndarray:
    """s[k, l] = Σ_i (W S_l Wᵀ)_{i, i-k} from dense matrices. -> [2n-1, 2r-1]."""
    W = interpolation_matrix(interpolation(n, r)).double().numpy()  # (n, r)
    table = np.zeros((2 * n - 1, 2 * r - 1))
    for slot, lag in enumerate(range(-(r - 1), r)):
        M = W @ np.eye(r, k=-lag) @ W.T  # (S_l)_pq = 1 iff p - q = l
        for row, k in enumerate(range(-(n - 1), n)):
            table[row, slot] = np.trace(M, offset=-k)  # Σ_i M[i, i-k]
    return table


@pytest.mark.parametrize(("n", "r"), SIZES)
def test_table_is_the_dense_sums_with_their_zeros(n, r):
    table = basis_diagonals(n, r)
    every = table.rows(np.arange(-(n - 1), n))
    reference = dense_table(n, r)
    np.testing.assert_allclose(every, reference, rtol=1e-13, atol=1e-13 * max(n, 1))
    np.testing.assert_array_equal(every == 0, np.abs(reference) < 1e-12)


@pytest.mark.parametrize(("n", "r"), SIZES)
@pytest.mark.parametrize("causal", [False, True])
def test_band_rows_are_the_scatter(n, r, causal):
    lags = band_lags(n, max(1, n // 2), causal)
    interp = interpolation(n, r)
    np.testing.assert_allclose(basis_diagonals(n, r).rows(lags),
                               scatter_diagonal_sums(interp, lags), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize(("n", "r"), [(n, r) for n, r in SIZES if r < n])  # 2n - 1 >= 2r lags
def test_projection_is_the_fft_products(n, r):
    coeffs = np.random.default_rng(n * 1000 + r).standard_normal(2 * n - 1)
    interp = interpolation(n, r)
    every = np.arange(-(n - 1), n)
    gram = ski_gram(interp, every)
    assert gram.table is not None
    fast = inducing_projection(coeffs, gram)
    np.testing.assert_allclose(fast, product_projection(coeffs, interp), rtol=1e-10,
                               atol=1e-11 * np.abs(fast).max())


def test_table_only_for_a_band_of_at_least_2r_lags():
    interp = interpolation(257, 64)
    assert wide_band_table(interp, band_lags(257, 127, False)) is None  # 127 lags < 128
    assert wide_band_table(interp, band_lags(257, 128, False)) is not None  # 129 lags
    assert ski_gram(interp, band_lags(257, 9, False)).table is None


def test_limits_are_where_the_fft_would_not_be_exact_or_small():
    assert exact_by_fft(4096, 128) and exact_by_fft(EXACT_MAX_N, 2)
    assert not exact_by_fft(EXACT_MAX_N + 1, 2)
    assert not exact_by_fft(4096, 1024)  # 8192 × 2048 entries
    assert basis_diagonals(4096, 1024) is None


def test_arrays_are_read_only():
    table = basis_diagonals(13, 5)
    for array in (table.first, table.values):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0
