"""What the Decomposition page states, rebuilt from definitions with numpy: Theorem 1's terms,
the smooth part's spectrum, the log-axis floors, the aliasing warning, the clamped sliders.

References here use numpy, scipy's toeplitz (``tests.references``) and plain formulas,
never the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pages.decomposition.notes import theorem1_caveats, warnings
from tests.references import band_lags_ref, interp_ref, lopsided, toeplitz_ref
from tnn_core.analysis.decompose import check_decomposition, decomposition_limits
from tnn_core.analysis.errors import _off_band_entry_error
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.core.interpolation import interpolation
from tnn_core.lab.decomposition import (
    CURVE_FLOOR,
    ROUNDOFF_FLOOR,
    decomposition_view,
    fit_to_length,
    rank_curve,
    ratio_text,
    smooth_spectrum,
    speed_text,
    theorem1_panel,
)

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def bridged(t: np.ndarray, lags: list[int]) -> np.ndarray:
    """k̃: the band lags replaced by the straight line between their outer neighbours."""
    n = (len(t) + 1) // 2
    out = t.copy()
    lo, hi = lags[0] - 1, lags[-1] + 1
    left = t[n - 1 + lo] if lo > -n else 0.0
    right = t[n - 1 + hi] if hi < n else 0.0
    for k in lags:
        out[n - 1 + k] = left + (k - lo) / (hi - lo) * (right - left)
    return out


def at_lag(continued: np.ndarray, x) -> np.ndarray:
    """k̃ at real lags x, linear between integer lags."""
    n = (len(continued) + 1) // 2
    return np.interp(x, np.arange(-(n - 1), n), continued)


# -- Theorem 1 -----------------------------------------------------------------------------


@pytest.mark.parametrize("n,band,rank,causal,method", [
    (2, 1, 2, False, "sample"), (3, 2, 2, True, "sample"), (37, 5, 6, False, "fit"),
    (100, 9, 12, False, "sample"), (101, 4, 17, True, "sample"), (257, 17, 32, False, "fit"),
])
def test_theorem1_terms_against_numpy(n, band, rank, causal, method):
    t = lopsided(n, causal)
    lags = band_lags_ref(n, band, causal)
    k = bridged(t, lags)
    h = (n - 1) / (rank - 1)
    # L: largest |second difference| of k̃ at the lags off the band
    L, where = 0.0, 0
    for lag in range(-(n - 2), n - 1):
        if lag not in lags:
            value = abs(k[n + lag] - 2 * k[n - 1 + lag] + k[n - 2 + lag])
            if value > L:
                L, where = value, lag
    p = np.linspace(0, n - 1, rank)
    i = np.arange(n)
    A = at_lag(k, p[:, None] - p[None, :])  # (r, r) A_ij = k̃(p_i - p_j)
    F = at_lag(k, i[:, None] - p[None, :])  # (n, r)
    B = at_lag(k, p[:, None] - i[None, :])  # (r, n)
    W = interp_ref(n, rank)
    low_rank = W @ A @ W.T
    off = ~np.isin(np.subtract.outer(i, i), lags)
    entry = np.abs(low_rank - toeplitz_ref(t))[off].max(initial=0.0)
    U, s, Vt = np.linalg.svd(toeplitz_ref(k))
    best = U[:, :rank] @ np.diag(s[:rank]) @ Vt[:rank]
    a_sigma = np.linalg.svd(A, compute_uv=False)

    panel = theorem1_panel(t, band, rank, causal, method)
    terms = panel.terms
    assert terms.spacing == pytest.approx(h)
    assert terms.curvature == pytest.approx(L, rel=1e-12, abs=1e-15)
    if L > 0:
        assert terms.curvature_lag == where
    assert terms.interpolation_error == pytest.approx(h * h / 8 * L, rel=1e-12, abs=1e-15)
    assert terms.entry_error == pytest.approx(entry, rel=1e-9, abs=1e-12)
    assert terms.a_extreme == pytest.approx((a_sigma[0], a_sigma[-1]), rel=1e-9, abs=1e-14)
    assert terms.ski_error == pytest.approx(np.linalg.norm(low_rank - best, 2), rel=1e-8,
                                            abs=1e-12)
    if a_sigma[-1] > 1e-12 * a_sigma[0]:
        nystrom = np.linalg.norm(F @ np.linalg.inv(A) @ B - best, 2)
        ratio = min(np.linalg.norm(F, 2), np.linalg.norm(B, 2)) / a_sigma[-1]
        rhs = math.sqrt(n * rank) * h * h / 8 * L * (2 * math.sqrt(n) + ratio) + nystrom
        assert terms.nystrom_error == pytest.approx(nystrom, rel=1e-6, abs=1e-9)
        assert terms.right_hand_side == pytest.approx(rhs, rel=1e-6, abs=1e-9)
        # the theorem holds here: the measured side is below the bound
        assert terms.ski_error <= terms.right_hand_side * (1 + 1e-9)
    else:
        assert terms.right_hand_side == math.inf
        assert panel.a_singular
        assert any("singular" in c for c in theorem1_caveats(panel, method))
    caveats = theorem1_caveats(panel, method)
    assert any("twice continuously differentiable" in c for c in caveats)
    assert any("sampled" in c for c in caveats) == (method == "fit")


def test_theorem1_entry_error_in_row_blocks_and_no_dense_sides_above_512():
    """n = 600: the max entry error is formed in row blocks (checked against the whole
    matrix), and the two sides, which need n × n SVDs, are left out and said so."""
    n, band, rank = 600, 9, 40
    t = lopsided(n)
    lags = band_lags_ref(n, band, False)
    k = bridged(t, lags)
    p = np.linspace(0, n - 1, rank)
    W = interp_ref(n, rank)
    low_rank = W @ at_lag(k, p[:, None] - p[None, :]) @ W.T
    i = np.arange(n)
    off = ~np.isin(np.subtract.outer(i, i), lags)
    panel = theorem1_panel(t, band, rank, False, "sample")
    assert panel.terms.entry_error == pytest.approx(
        np.abs(low_rank - toeplitz_ref(t))[off].max(), rel=1e-9)
    assert math.isnan(panel.terms.right_hand_side) and math.isnan(panel.terms.ski_error)
    assert panel.sides_dense_max_n == 512
    assert any("n = 512" in c for c in theorem1_caveats(panel, "sample"))


def test_kink_caveat_names_the_lag_where_the_band_line_meets_the_kernel():
    n, band = 200, 9
    t = synthetic_kernel("exponential", n, 0.9).numpy()
    panel = theorem1_panel(t, band, 16, False, "sample")
    assert panel.terms.curvature_lag in (-5, 5)  # the line spans lags -5..5
    assert panel.kink_lag == panel.terms.curvature_lag
    assert any(f"lag {panel.terms.curvature_lag}," in c and "kink" in c
               for c in theorem1_caveats(panel, "sample"))


# -- the smooth part's spectrum ------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_smooth_spectrum_is_T_smooth_and_does_not_move_with_r(causal):
    n, band = 120, 7
    t = lopsided(n, causal)
    sigma = np.linalg.svd(toeplitz_ref(bridged(t, band_lags_ref(n, band, causal))),
                          compute_uv=False)
    drawn = sigma[sigma >= ROUNDOFF_FLOOR * sigma[0]]
    for rank in (4, 16, 60):
        smooth = smooth_spectrum(t, band, rank, causal)
        np.testing.assert_allclose(smooth.values, drawn, rtol=1e-9, atol=1e-12 * sigma[0])
        np.testing.assert_array_equal(smooth.index, np.arange(1, len(drawn) + 1))
        assert smooth.dropped == len(sigma) - len(drawn)
        assert smooth.next_value == pytest.approx(sigma[rank], rel=1e-9)


def test_smooth_spectrum_drops_round_off():
    """A rank-1 smooth part: one singular value, the rest round-off, not drawn."""
    n = 50
    t = np.ones(2 * n - 1)  # T = all ones, rank 1; the band line through ones is ones
    smooth = smooth_spectrum(t, 3, 4, False)
    assert smooth.values == pytest.approx([n])
    assert smooth.dropped == n - 1 and math.isnan(smooth.next_value)


# -- floors on log axes --------------------------------------------------------------------


def test_rank_curve_marks_exact_fits_instead_of_drawing_round_off():
    n = 64  # r = 64 = n interpolates every position: the error is 0 up to round-off
    curve = rank_curve(lopsided(n), 9, False)
    assert curve.ranks[-1] == n
    assert np.isnan(curve.optimal[-1]) and np.isnan(curve.fit[-1]) and np.isnan(curve.sample[-1])
    assert list(curve.exact) == [n]
    for errors in (curve.sample, curve.fit, curve.optimal):
        drawn = errors[np.isfinite(errors)]
        assert (drawn >= CURVE_FLOOR).all()
    assert np.isfinite(curve.optimal[:-1]).all()


# -- aliasing and errors above 1 -----------------------------------------------------------


def test_aliasing_warning_when_h_exceeds_half_the_period():
    n = 512
    t = synthetic_kernel("oscillating", n, 0.99).numpy()  # period 8
    view = decomposition_view(t, 9, 32, False, "sample")  # h = 511/31 = 16.5
    k = bridged(t, band_lags_ref(n, 9, False))
    N = 1024  # fft_size(512)
    column = np.concatenate([k[n - 1:], np.zeros(N - 2 * n + 1), k[: n - 1]])
    j = int(np.argmax(np.abs(np.fft.rfft(column))))
    assert view.dominant_period == pytest.approx(N / j) == pytest.approx(8.0)
    assert view.relative_frobenius > 1
    assert view.aliasing_rank == 129
    said = warnings(view, "sample")
    assert any("Aliasing" in w and "r ≥ 129" in w for w in said)
    assert any("> 1" in w for w in said)
    # r = 100: h = 5.2, below the period but above half of it: still aliasing
    assert decomposition_view(t, 9, 100, False, "sample").aliasing_rank == 129
    # r = 129: h = 511/128 < 4, no aliasing
    unaliased = decomposition_view(t, 9, 129, False, "sample")
    assert unaliased.aliasing_rank is None
    assert not any("Aliasing" in w for w in warnings(unaliased, "sample"))


def test_no_warning_for_a_kernel_peaked_at_zero_frequency():
    t = synthetic_kernel("spike_smooth", 512, 0.99).numpy()
    view = decomposition_view(t, 9, 8, False, "sample")
    assert view.dominant_period == math.inf and view.aliasing_rank is None


# -- sliders clamped to n, ratios ----------------------------------------------------------


def test_fit_to_length_clamps_to_the_limits_that_check_decomposition_keeps():
    s = fit_to_length(5, 9, 32)
    assert (s.band, s.rank) == (8, 5) == decomposition_limits(5)
    assert (fit_to_length(512, 9, 32).band, fit_to_length(512, 9, 32).rank) == (9, 32)
    assert (fit_to_length(2, 1, 2).band, fit_to_length(2, 3, 2).band) == (1, 2)
    for n in (2, 3, 7, 64):  # the clamped values are accepted; one past is refused
        s = fit_to_length(n, 10**6, 10**6)
        check_decomposition(n, s.band, s.rank, False)
        with pytest.raises(ValueError, match=r"rank must be an integer in \[2, n\]"):
            check_decomposition(n, s.band, s.rank + 1, False)
        with pytest.raises(ValueError, match=r"band must be an integer in \[1, 2n-2\]"):
            check_decomposition(n, s.band + 1, s.rank, False)
    with pytest.raises(ValueError, match="n must be >= 2"):
        fit_to_length(1, 9, 32)


@pytest.mark.parametrize("ratio,text", [
    (1.0, "1.0× faster"), (2.345, "2.3× faster"), (123.4, "123× faster"),
    (0.01234, "81× slower"), (0.04, "25× slower"), (0.5, "2.0× slower"),
])
def test_ratio_text_has_two_significant_figures_and_never_zero(ratio, text):
    assert ratio_text(ratio) == text


@pytest.mark.parametrize("ski,other,text", [
    ((1.0, 1.1, 1.2), (1.1, 1.2, 1.3), "≈ same (within noise)"),
    ((1.0, 1.1, 1.2), (1.2, 1.3, 1.5), "≈ same (within noise)"),  # touching
    ((1.0, 1.1, 1.2), (2.0, 2.2, 2.4), "2.0× faster"),
    ((3.0, 3.3, 3.5), (1.0, 1.1, 1.2), "3.0× slower"),
])
def test_speed_text_calls_a_winner_only_where_the_quartiles_separate(ski, other, text):
    assert speed_text(ski, other) == text


@pytest.mark.parametrize("n,band,rank,causal", [
    (2, 1, 2, False), (5, 5, 2, False), (7, 3, 3, True), (13, 5, 4, False), (97, 9, 11, False),
    (300, 17, 32, True),
])
def test_the_off_band_entry_error_skips_exactly_the_band(n, band, rank, causal):
    """Against a dense W A Wᵀ - Toeplitz(k) with the band entries masked, for an arbitrary
    k whose band lags are far off (so counting a band entry would change the answer)."""
    rng = np.random.default_rng(n + band)
    k = rng.standard_normal(2 * n - 1)
    a = rng.standard_normal(2 * rank - 1)
    lags = np.array(band_lags_ref(n, band, causal))
    k[n - 1 + lags] += 10.0  # the band's entries carry the largest errors: they must not count
    W = interp_ref(n, rank)  # (n, r)
    error = np.abs(W @ toeplitz_ref(a) @ W.T - toeplitz_ref(k))
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    expected = error[~np.isin(lag, lags)].max(initial=0.0)
    got = _off_band_entry_error(k, lags, interpolation(n, rank), a)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
