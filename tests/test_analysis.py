"""tnn_core.analysis against independent dense numpy/scipy computations, in float64.

The references below rebuild SKI's pieces from the spec alone (scipy's toeplitz,
a from-scratch interpolation W, dense diagonal means, a brute-force least
squares over all n² entries, numpy norms and SVDs) and never call the code
under test. Then: the fast routes (Lanczos, coefficient-only Frobenius,
error_curve) against those, the orderings the maths guarantees, the frequency response,
and bad input. Decay profiles and channel kernels: test_profiles.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.references import band_lags_ref, diagonal_means, interp_ref, toeplitz_ref
from tnn_core.analysis import (
    decompose,
    error_curve,
    frequency_response,
)
from tnn_core.analysis.norms import single_threaded_blas, symmetric_lanczos
from tnn_core.analysis.persymmetric import leading_singular_count


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Multithreaded OpenBLAS next to torch's thread pool crawled on the 2-core CI box
    (a 1024 SVD took 15 s instead of 0.2 s); the references run single-threaded."""
    with single_threaded_blas():
        yield


def sample_A_ref(t: np.ndarray, band: int, r: int, causal: bool) -> np.ndarray:
    """a_l = k̃(l h): the kernel with the band replaced by a straight line, read linearly."""
    n = (len(t) + 1) // 2
    value = dict(zip(range(-(n - 1), n), t, strict=True))
    lags = band_lags_ref(n, band, causal)
    lo, hi = lags[0] - 1, lags[-1] + 1
    left, right = value.get(lo, 0.0), value.get(hi, 0.0)
    for k in lags:
        value[k] = left + (k - lo) / (hi - lo) * (right - left)
    h = (n - 1) / (r - 1)
    grid = np.arange(-(n - 1), n)
    smooth = np.array([value[k] for k in grid])
    return np.array([np.interp(min(max(l * h, -(n - 1)), n - 1), grid, smooth)
                     for l in range(-(r - 1), r)])


def assemble_ref(t: np.ndarray, band: int, r: int, causal: bool, a: np.ndarray) -> dict:
    """Band (diagonal means of T - W A Wᵀ on the band lags) and low-rank part, densely."""
    n = (len(t) + 1) // 2
    T, W = toeplitz_ref(t), interp_ref(n, r)
    A = toeplitz_ref(a)
    L = W @ A @ W.T
    means = diagonal_means(T - L)
    taps = np.zeros(2 * n - 1)
    for k in band_lags_ref(n, band, causal):
        taps[n - 1 + k] = means[k]
    B = toeplitz_ref(taps)
    return {"T": T, "W": W, "A": A, "L": L, "B": B, "taps": taps, "R": T - B - L}


def fit_ref(t: np.ndarray, band: int, r: int, causal: bool) -> np.ndarray:
    """Brute force over all n² entries: outside the band T - L, inside the wobble of L."""
    n = (len(t) + 1) // 2
    T, W = toeplitz_ref(t), interp_ref(n, r)
    lag = np.subtract.outer(np.arange(n), np.arange(n))
    inside = np.isin(lag, band_lags_ref(n, band, causal))
    columns = []
    for l in range(-(r - 1), r):
        M = W @ np.eye(r, k=-l) @ W.T  # W S_l Wᵀ, (S_l)_pq = 1 iff p - q = l
        wobble = M.copy()
        for k in band_lags_ref(n, band, causal):
            wobble[lag == k] -= M[lag == k].mean()
        columns.append(np.concatenate([M[~inside], wobble[inside]]))
    design = np.stack(columns, axis=1)  # (n², 2r-1)
    target = np.concatenate([T[~inside], np.zeros(inside.sum())])
    return np.linalg.lstsq(design, target, rcond=None)[0]


def kernel(name: str, n: int, causal: bool = False, seed: int = 0) -> np.ndarray:
    k = np.arange(-(n - 1), n)
    rng = np.random.default_rng(seed)
    if name == "random":
        t = rng.standard_normal(2 * n - 1)
    elif name == "spiky":  # spikes near the diagonal on a smooth decaying bump
        t = 0.5 * 0.97 ** np.abs(k) * (1 + np.cos(np.pi * k / n))
        for lag, value in {0: 1.5, 1: -0.8, -1: 0.6, 2: 0.4, -2: -0.3}.items():
            if abs(lag) < n:
                t[n - 1 + lag] += value
    elif name == "oscillating":
        t = 0.95 ** np.abs(k) * np.cos(2 * np.pi * k / 7) + 0.01 * rng.standard_normal(2 * n - 1)
    else:
        raise ValueError(name)
    if causal:
        t[: n - 1] = 0
    return t


def rel(a, b, floor: float = 0.0) -> float:
    """|a - b| / |b|, with values below ``floor`` (rounding noise of a zero) counted as floor."""
    return abs(a - b) / max(abs(b), floor, 1e-300)


# -- decompose against the dense reference ---------------------------------------------

CASES = [  # n, band, rank
    (2, 1, 2), (3, 2, 2), (17, 5, 4), (64, 9, 8), (257, 9, 32), (512, 17, 24),
]


@pytest.mark.parametrize("n,band,rank", CASES)
@pytest.mark.parametrize("causal", [False, True])
def test_decompose_sample_matches_dense_reference(n, band, rank, causal):
    t = kernel("spiky", n, causal)
    d = decompose(torch.from_numpy(t), band, rank, causal=causal)
    ref = assemble_ref(t, band, rank, causal, sample_A_ref(t, band, rank, causal))

    np.testing.assert_allclose(d.A_coeffs, sample_A_ref(t, band, rank, causal),
                               rtol=0, atol=1e-12)
    A = d.A
    i, j = np.indices(A.shape)
    np.testing.assert_array_equal(A, d.A_coeffs[rank - 1 + i - j])  # Toeplitz
    W = d.W
    assert ((W != 0).sum(axis=1) <= 2).all()
    np.testing.assert_allclose(W.sum(axis=1), 1, atol=1e-14)
    np.testing.assert_allclose(W, ref["W"], atol=1e-12)
    np.testing.assert_allclose(d.inducing_points, np.linspace(0, n - 1, rank))
    np.testing.assert_allclose(d.band_coeffs, ref["taps"], atol=1e-11)
    np.testing.assert_allclose(d.band_matrix(), ref["B"], atol=1e-11)
    np.testing.assert_allclose(d.low_rank_matrix(), ref["L"], atol=1e-11)
    np.testing.assert_allclose(d.residual_matrix(), ref["R"], atol=1e-11)
    idx = np.arange(0, n, 3)  # the heatmap's rows and columns: the same entries
    np.testing.assert_allclose(d.low_rank_matrix(idx), ref["L"][np.ix_(idx, idx)], atol=1e-11)
    np.testing.assert_allclose(d.band_matrix(idx), ref["B"][np.ix_(idx, idx)], atol=1e-11)
    np.testing.assert_allclose(d.residual_matrix(idx), ref["R"][np.ix_(idx, idx)], atol=1e-11)
    assert d.spacing == pytest.approx((n - 1) / (rank - 1))  # h, as in Theorem 1's h²/8


@pytest.mark.parametrize("n,band,rank", CASES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("method", ["sample", "fit"])
def test_errors_match_numpy_norms(n, band, rank, causal, method):
    t = kernel("spiky", n, causal)
    d = decompose(t, band, rank, causal=causal, method=method)
    T, R = toeplitz_ref(t), d.residual_matrix()
    sigma = np.linalg.svd(T - d.band_matrix(), compute_uv=False)
    e = d.errors
    floor = 1e-10 * np.linalg.norm(T, 2)
    assert rel(e.spectral, np.linalg.norm(R, 2), floor) < 1e-6
    assert rel(e.frobenius, np.linalg.norm(R, "fro"), floor) < 1e-6
    assert rel(e.norm_spectral, np.linalg.norm(T, 2)) < 1e-6
    assert rel(e.norm_frobenius, np.linalg.norm(T, "fro")) < 1e-12
    assert rel(e.relative_frobenius, np.linalg.norm(R) / np.linalg.norm(T), 1e-10) < 1e-6
    assert rel(e.relative_spectral, np.linalg.norm(R, 2) / np.linalg.norm(T, 2), 1e-10) < 1e-6
    noise = 1e-8 * sigma[0]  # an optimum of exactly 0 computes as ~1e-16 either way
    if rank < n:
        assert rel(e.optimal_spectral, sigma[rank], noise) < 1e-6
        assert rel(e.optimal_frobenius, np.sqrt(np.sum(sigma[rank:] ** 2)), noise) < 1e-6
        assert rel(e.relative_optimal_spectral, sigma[rank] / np.linalg.norm(T, 2), 1e-10) < 1e-6
    else:
        assert e.optimal_spectral == e.optimal_frobenius == 0.0
    np.testing.assert_allclose(d.singular_values, sigma, rtol=1e-9, atol=1e-12)
    assert e.spectral_method in ("dense", "lanczos") and e.note == ""


# -- fit: the joint least squares ------------------------------------------------------


@pytest.mark.parametrize("n,rank", [(24, 4), (37, 7), (24, 7), (37, 4), (12, 12)])
@pytest.mark.parametrize("band,causal", [(3, False), (6, False), (5, True)])
def test_fit_matches_brute_force_least_squares(n, rank, band, causal):
    t = kernel("spiky", n, causal, seed=n)
    a = fit_ref(t, band, rank, causal)
    d = decompose(t, band, rank, causal=causal, method="fit")
    scale = np.abs(a).max()
    np.testing.assert_allclose(d.A_coeffs, a, rtol=0, atol=1e-8 * scale)
    ref = assemble_ref(t, band, rank, causal, a)
    np.testing.assert_allclose(d.band_matrix() + d.low_rank_matrix(), ref["B"] + ref["L"],
                               atol=1e-8 * scale)
    floor = 1e-6 * np.linalg.norm(ref["T"])  # r = n fits exactly: both errors are ~1e-15
    assert rel(d.errors.frobenius, np.linalg.norm(ref["R"]), floor) < 1e-8


# -- Lanczos against dense -------------------------------------------------------------


@pytest.mark.parametrize("n", [64, 300, 1024])
@pytest.mark.parametrize("name", ["random", "spiky"])
def test_lanczos_spectral_norms_match_dense(n, name):
    t = kernel(name, n)
    d = decompose(t, 9, 16, spectral="lanczos", method="fit")
    e = d.errors
    assert e.spectral_method == "lanczos"
    assert rel(e.spectral, np.linalg.norm(d.residual_matrix(), 2)) < 1e-3
    assert rel(e.norm_spectral, np.linalg.norm(toeplitz_ref(t), 2)) < 1e-3
    assert rel(e.spectral, np.linalg.norm(d.residual_matrix(), 2)) < 1e-8  # aim


def test_large_n_singular_values_and_frobenius_without_dense():
    n, rank = 700, 20
    t = kernel("spiky", n)
    d = decompose(t, 9, rank, method="fit")
    e = d.errors
    R = d.residual_matrix()
    sigma = np.linalg.svd(toeplitz_ref(t) - d.band_matrix(), compute_uv=False)
    top = d.singular_values
    assert len(top) == rank + 1
    np.testing.assert_allclose(top, sigma[: len(top)], rtol=1e-7)
    assert rel(e.frobenius, np.linalg.norm(R)) < 1e-8
    assert rel(e.optimal_spectral, sigma[rank]) < 1e-7
    assert rel(e.optimal_frobenius, np.sqrt(np.sum(sigma[rank:] ** 2))) < 1e-6


@pytest.mark.parametrize(("n", "rank", "k"), [
    (1000, 2, 6), (1000, 16, 34), (1000, 127, 256), (1000, 200, 256), (1000, 300, 301),
    (20, 16, 20), (5, 5, 5), (3, 2, 3), (1, 1, 1),
])
def test_leading_singular_count_reaches_past_sigma_r_plus_1(n, rank, k):
    """σ_1..σ_{2r+2}, capped at 256 unless σ_{r+1} lies further, never more than n."""
    assert leading_singular_count(n, rank) == k
    assert min(n, rank + 1) <= k <= n


def test_symmetric_lanczos_on_dense_maps():
    rng = np.random.default_rng(3)
    for n in (1, 2, 50, 200):
        M = rng.standard_normal((n, n))
        M = M + M.T
        top = np.sort(np.abs(np.linalg.eigvalsh(M)))[::-1][: min(n, 3)]
        result = symmetric_lanczos(lambda x, M=M: M @ x, n, len(top), tol=1e-10)
        assert result.converged
        np.testing.assert_allclose(result.values, top, rtol=1e-8)
    M = np.diag([3.0, -3.0, 3.0, 1.0])  # a repeated top |λ|: breakdown, then a fresh vector
    np.testing.assert_allclose(symmetric_lanczos(lambda x: M @ x, 4, 3).values, [3, 3, 3])
    for kwargs, field in (({"k": 5}, "k"), ({"tol": 0.0}, "tol"), ({"k": 1.0}, "k")):
        with pytest.raises(ValueError, match=field):
            symmetric_lanczos(lambda x: M @ x, **({"n": 4, "k": 1} | kwargs))


# -- orderings the maths guarantees ----------------------------------------------------


@pytest.mark.parametrize("name", ["spiky", "random", "oscillating"])
@pytest.mark.parametrize("n,band,rank,causal", [(40, 5, 6, False), (90, 9, 12, True),
                                                (600, 9, 24, False)])
def test_fit_beats_sample_and_optima_bound_both(name, n, band, rank, causal):
    t = kernel(name, n, causal)
    sample = decompose(t, band, rank, causal=causal, method="sample").errors
    fit = decompose(t, band, rank, causal=causal, method="fit").errors
    assert fit.frobenius <= sample.frobenius + 1e-12 * sample.norm_frobenius
    for e in (sample, fit):
        assert e.spectral >= e.optimal_spectral - 1e-9 * e.norm_spectral
        assert e.frobenius >= e.optimal_frobenius - 1e-9 * e.norm_frobenius


# -- error_curve -----------------------------------------------------------------------


@pytest.mark.parametrize("n,causal", [(300, False), (700, True)])
def test_error_curve_matches_decompose(n, causal):
    t = kernel("spiky", n, causal)
    curve = error_curve(t, 9, [1, 5, 12, n + 1, 2], causal=causal)
    assert curve.ranks.tolist() == [5, 12, 2]
    for i, r in enumerate(curve.ranks):
        for method, errors in (("sample", curve.sample), ("fit", curve.fit)):
            e = decompose(t, 9, int(r), causal=causal, method=method).errors
            assert rel(errors[i], e.relative_frobenius) < 1e-8
        e = decompose(t, 9, int(r), causal=causal, method="fit").errors
        assert rel(curve.optimal[i], e.optimal_frobenius / e.norm_frobenius) < 1e-6
        assert curve.optimal[i] <= curve.fit[i] <= curve.sample[i] + 1e-12


# -- profiles --------------------------------------------------------------------------


def test_frequency_response_of_known_kernels():
    n = 33
    t = kernel("spiky", n)
    t = 0.5 * (t + t[::-1])  # symmetric: real DTFT, phase 0 or π
    out = frequency_response(t)
    N = 2 * len(out.omega) - 2
    assert out.omega[0] == 0 and out.omega[-1] == pytest.approx(math.pi)
    k = np.arange(-(n - 1), n)
    dtft = np.exp(-1j * np.outer(out.omega, k)) @ t  # Σ_k t_k e^{-iωk}
    np.testing.assert_allclose(out.magnitude, np.abs(dtft), atol=1e-12)
    big = out.magnitude > 1e-9
    assert np.all(np.abs(np.sin(out.phase[big])) < 1e-9)
    assert N >= 2 * n
    shifted = np.zeros(2 * n - 1)
    shifted[n - 1 + 3] = 1.0  # a pure delay by 3: phase -3ω
    out = frequency_response(shifted, N=128)
    np.testing.assert_allclose(np.exp(1j * out.phase), np.exp(-3j * out.omega), atol=1e-12)
    with pytest.raises(ValueError, match="N"):
        frequency_response(shifted, N=10)


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,field", [
    ({"rank": 11}, "rank"), ({"rank": 1}, "rank"), ({"rank": 3.0}, "rank"),
    ({"band": 19}, "band"), ({"band": 0}, "band"),
    ({"method": "svd"}, "method"), ({"spectral": "arpack"}, "spectral"),
    ({"causal": "yes"}, "causal"),
])
def test_bad_arguments_name_the_field(kwargs, field):
    args = {"band": 3, "rank": 4, **kwargs}
    with pytest.raises(ValueError, match=field):
        decompose(kernel("random", 10), **args)


def test_bad_kernels():
    for bad in (np.array([1.0, np.nan, 2.0]), np.array([1.0, np.inf, 2.0, 0.0, 1.0])):
        with pytest.raises(ValueError, match="coeffs must be finite"):
            decompose(bad, 1, 2)
        with pytest.raises(ValueError, match="coeffs"):
            error_curve(bad, 1, [2])
    with pytest.raises(ValueError, match="odd"):
        decompose(np.ones(4), 1, 2)
    with pytest.raises(ValueError, match="n must be >= 2"):
        decompose(np.ones(1), 1, 2)
    with pytest.raises(ValueError, match="1-D"):
        decompose(np.ones((2, 3)), 1, 2)
    with pytest.raises(ValueError, match=r"rank must be an integer in \[2, n\] = \[2, 3\]"):
        decompose(np.ones(5), 1, 4)  # n = 3 < rank
    with pytest.raises(ValueError, match="ranks"):
        error_curve(np.ones(5), 1, [2.5])


@pytest.mark.parametrize("n,spectral", [(16, "dense"), (600, "lanczos")])
def test_all_zero_kernel_gives_nan_relative_errors(n, spectral):
    d = decompose(np.zeros(2 * n - 1), 5, 4, spectral=spectral, method="fit")
    e = d.errors
    assert math.isnan(e.relative_spectral) and math.isnan(e.relative_frobenius)
    assert math.isnan(e.relative_optimal_spectral)
    assert "all-zero" in e.note
    assert e.spectral == e.frobenius == e.norm_frobenius == 0.0
    curve = error_curve(np.zeros(2 * n - 1), 5, [2, 3])
    assert np.isnan(np.concatenate([curve.fit, curve.sample, curve.optimal])).all()
    assert "all-zero" in curve.note


@pytest.mark.parametrize("n,band,rank", [(2, 1, 2), (3, 2, 3), (7, 3, 4), (13, 5, 13),
                                         (31, 9, 8)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("method", ["sample", "fit"])
def test_decompose_channels_is_decompose_of_each_channel(n, band, rank, causal, method):
    """One layout built once for a layer's channels gives each channel's decomposition to the
    bit: its A, band taps, projection and Frobenius error."""
    from tnn_core.analysis.decompose import decompose, decompose_channels

    kernels = np.random.default_rng(n).standard_normal((4, 2 * n - 1))  # (D, 2n-1) float64
    if causal:
        kernels[:, : n - 1] = 0
    together = list(decompose_channels(kernels, band, rank, causal, method))
    assert len(together) == 4
    for t, d in zip(kernels, together, strict=True):
        alone = decompose(t, band, rank, causal, method)
        np.testing.assert_array_equal(d.A_coeffs, alone.A_coeffs)
        np.testing.assert_array_equal(d.band_coeffs, alone.band_coeffs)
        np.testing.assert_array_equal(d.projection, alone.projection)
        assert d.errors.relative_frobenius == alone.errors.relative_frobenius


def test_decompose_channels_refuses_kernels_of_two_lengths():
    from tnn_core.analysis.decompose import decompose_channels

    with pytest.raises(ValueError, match="kernels must share one length: 5 coefficients "
                                         "after 7"):
        list(decompose_channels([np.ones(7), np.ones(5)], 1, 2))
