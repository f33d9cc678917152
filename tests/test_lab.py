"""The Decomposition and Frequency pages' views against independent numpy/scipy computations.

Each number a page shows is rebuilt here from its definition (scipy's toeplitz, a
from-scratch interpolation W, dense SVDs and norms, numpy FFTs and least squares),
never through the code under test. Kernels are asymmetric so that a transposed
matrix or a mirrored lag shows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.references import band_lags_ref, interp_ref, lopsided, toeplitz_ref
from tnn_core.analysis.curves import CURVE_RANKS, error_curve
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.lab.decomposition import decomposition_view, rank_curve

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def reference(t: np.ndarray, band: int, rank: int, causal: bool, a: np.ndarray) -> dict:
    """T, W A Wᵀ, the band (diagonal means of T - W A Wᵀ on the band lags) and R, densely."""
    n = (len(t) + 1) // 2
    T, W = toeplitz_ref(t), interp_ref(n, rank)
    L = W @ toeplitz_ref(a) @ W.T
    lag = np.subtract.outer(np.arange(n), np.arange(n))  # i - j
    B = np.zeros((n, n))
    for k in band_lags_ref(n, band, causal):
        B[lag == k] = np.mean((T - L)[lag == k])
    return {"T": T, "L": L, "B": B, "R": T - B - L}


# -- Decomposition: errors and gap ----------------------------------------------------------


def test_an_all_zero_kernel_has_no_relative_errors():
    view = decomposition_view(np.zeros(7), 1, 2, False, "sample")
    assert "all-zero" in view.note and math.isnan(view.relative_frobenius)
    assert math.isnan(view.gap)


@pytest.mark.parametrize("n,band,rank,causal,method", [
    (100, 9, 12, False, "sample"), (60, 4, 7, True, "fit"), (300, 9, 24, False, "fit"),
])
def test_errors_and_gap(n, band, rank, causal, method):
    t = lopsided(n, causal)
    view = decomposition_view(t, band, rank, causal, method)
    ref = reference(t, band, rank, causal, view.inducing_values)
    T, R = ref["T"], ref["R"]
    sigma = np.linalg.svd(T - ref["B"], compute_uv=False)
    norm_2, norm_f = np.linalg.norm(T, 2), np.linalg.norm(T)
    assert view.relative_spectral == pytest.approx(np.linalg.norm(R, 2) / norm_2, rel=1e-6)
    assert view.relative_frobenius == pytest.approx(np.linalg.norm(R) / norm_f, rel=1e-8)
    assert view.optimal_spectral == pytest.approx(sigma[rank], rel=1e-8)
    assert view.optimal_frobenius == pytest.approx(np.sqrt(np.sum(sigma[rank:] ** 2)), rel=1e-8)
    assert view.relative_optimal_spectral == pytest.approx(sigma[rank] / norm_2, rel=1e-6)
    assert view.relative_optimal_frobenius == pytest.approx(
        np.sqrt(np.sum(sigma[rank:] ** 2)) / norm_f, rel=1e-8)
    # the gap is SKI's spectral error over the Eckart–Young optimum, never below 1
    assert view.gap == pytest.approx(np.linalg.norm(R, 2) / sigma[rank], rel=1e-6)
    assert view.gap >= 1 - 1e-9
    assert view.spacing == pytest.approx((n - 1) / (rank - 1))  # the inducing spacing h
    assert view.spectral_method == ("lanczos" if n >= 224 else "dense")


# -- Decomposition: the kernel plot --------------------------------------------------------


@pytest.mark.parametrize("n,rank,causal", [(100, 12, False), (300, 128, False), (50, 7, True)])
def test_inducing_lag_markers_are_p_i_minus_p_j_with_A_there(n, rank, causal):
    t = lopsided(n, causal)
    band = 5
    view = decomposition_view(t, band, rank, causal, "sample")
    p = np.linspace(0, n - 1, rank)  # the inducing points
    i, j = np.indices((rank, rank))
    # every lag p_i - p_j, once per lag l = i - j, in ascending order
    expected = np.array([(p[i] - p[j])[i - j == l][0] for l in range(-(rank - 1), rank)])
    np.testing.assert_allclose(view.inducing_lags, expected, rtol=0, atol=1e-9)
    # A's value at each: A[i, j] for W A Wᵀ's A, and the kernel itself there (method
    # "sample", lags outside the band's straight-line patch)
    A = decompose(t, band, rank, causal=causal).A
    for l in range(-(rank - 1), rank):
        assert view.inducing_values[rank - 1 + l] == A[i[i - j == l][0], j[i - j == l][0]]
    lags = np.arange(-(n - 1), n)
    outside = (view.inducing_lags < min(band_lags_ref(n, band, causal)) - 1) | (
        view.inducing_lags > max(band_lags_ref(n, band, causal)) + 1)
    np.testing.assert_allclose(view.inducing_values[outside],
                               np.interp(view.inducing_lags[outside], lags, t), atol=1e-12)
    np.testing.assert_array_equal(view.lags, lags)
    np.testing.assert_array_equal(view.coeffs, t)


@pytest.mark.parametrize("band,causal", [(9, False), (4, False), (5, True), (1, True)])
def test_band_span_shades_exactly_the_band_lags(band, causal):
    n = 40
    view = decomposition_view(lopsided(n, causal), band, 8, causal, "sample")
    lo, hi = view.band_span
    inside = [k for k in range(-(n - 1), n) if lo < k < hi]
    assert inside == band_lags_ref(n, band, causal)
    assert (lo, hi) == (inside[0] - 0.5, inside[-1] + 0.5)  # half a lag beyond each end


@pytest.mark.parametrize("name", ["spike_smooth", "oscillating"])
def test_drawn_optimum_is_the_precise_one_to_a_thousandth(name):
    """At n = 1024 the optimum comes from Lanczos, stopped earlier for the drawn curve."""
    t = synthetic_kernel(name, 1024, 0.95).double().numpy()
    drawn = rank_curve(t, 9, False)
    precise = error_curve(t, 9, CURVE_RANKS)
    np.testing.assert_allclose(drawn.optimal, precise.optimal, rtol=2e-3)
    np.testing.assert_array_equal(drawn.fit, precise.fit)


def test_rank_curve_against_the_decompositions():
    n, band = 100, 9
    t = lopsided(n)
    curve = rank_curve(t, band, False)
    np.testing.assert_array_equal(curve.ranks, [r for r in CURVE_RANKS if r <= n])
    for i in (0, 5, len(curve.ranks) - 1):
        r = int(curve.ranks[i])
        for method, errors in (("sample", curve.sample), ("fit", curve.fit)):
            view = decomposition_view(t, band, r, False, method)
            assert errors[i] == pytest.approx(view.relative_frobenius, rel=1e-7)
        assert curve.optimal[i] == pytest.approx(view.relative_optimal_frobenius, rel=1e-6)
        assert curve.optimal[i] <= curve.fit[i] <= curve.sample[i] + 1e-12
