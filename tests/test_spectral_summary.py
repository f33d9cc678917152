"""The report's spectral statistics named for what they are (issue 37): the energy rank,
Roy–Vetterli's effective rank and the Clauset–Shalizi–Newman power-law fit, whose Hill step
uses the exceedances. Each checked against an independent float64 numpy evaluation."""

import math

import numpy as np
import pytest

from tnn_core.analysis.power_law import csn_power_law_fit
from tnn_core.analysis.spectral_summary import (
    STATISTICS,
    channel_spectrum,
    energy_rank,
    roy_vetterli_rank,
)


# -- the Hill step on the exceedances -----------------------------------------------------
def _hill_by_order_statistics(values: np.ndarray, k: int) -> float:
    """The Hill estimate from the k order statistics above the (k+1)-th, a plain loop:
    α = 1 + k / Σ_{i=1..k} ln(X_(i) / X_(k+1)), X_(1) >= X_(2) >= ... ."""
    ordered = sorted(float(v) for v in values)[::-1]
    total = 0.0
    for i in range(k):
        total += math.log(ordered[i] / ordered[k])
    return 1 + k / total


def test_the_chosen_tail_is_the_exceedances_and_alpha_their_hill_estimate():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.uniform(0.2, 1.0, 150), 1 + rng.pareto(2.2, 120)])
    fit = csn_power_law_fit(values)
    assert fit.tail == int(np.sum(values > fit.xmin))  # strictly above the threshold
    assert fit.xmin in values  # the threshold is the (k+1)-th largest value
    assert fit.alpha == pytest.approx(_hill_by_order_statistics(values, fit.tail), rel=1e-12)


def test_the_hill_step_is_unbiased_for_one_over_alpha_minus_one():
    """Above the (k+1)-th order statistic of a Pareto sample the k exceedances are again
    Pareto (Rényi): the mean of ln(X_(i) / X_(k+1)) is 1/(α - 1) exactly. Counting the
    threshold in the tail would read it k/(k+1) times too small (9 % at k = 10)."""
    alpha, k, draws = 2.5, 10, 3000
    rng = np.random.default_rng(4)
    samples = 1 + rng.pareto(alpha - 1, size=(draws, k + 1))  # density ∝ x^-α on [1, ∞)
    inverse = [1 / (csn_power_law_fit(s, min_tail=k).alpha - 1) for s in samples]
    # standard error of the mean: (1/(α-1)) / sqrt(k · draws) = 0.4 %
    assert np.mean(inverse) == pytest.approx(1 / (alpha - 1), rel=0.02)


def test_every_exceedance_count_is_a_candidate_and_the_smallest_ks_wins():
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.uniform(0.5, 2.0, 60), 2 + rng.pareto(2.0, 40)])
    x = np.sort(values)[::-1]
    best = (math.inf, 0)
    for k in range(10, len(x)):  # k exceedances above x[k]; KS by its definition
        a = _hill_by_order_statistics(x, k)
        tail = np.sort(x[:k])  # ascending
        law = 1 - (tail / x[k]) ** (1 - a)
        ks = max(np.max(np.arange(1, k + 1) / k - law), np.max(law - np.arange(k) / k))
        best = min(best, (ks, k))
    fit = csn_power_law_fit(values)
    assert (fit.ks, fit.tail) == (pytest.approx(best[0], abs=1e-12), best[1])


# -- the two ranks --------------------------------------------------------------------------
def test_energy_rank_counts_the_singular_values_holding_99_percent_of_the_energy():
    sigma = np.sqrt(np.array([50.0, 30.0, 15.0, 4.0, 0.6, 0.4]))  # energy shares in %
    assert energy_rank(sigma) == 4  # 50 + 30 + 15 + 4 = 99
    assert energy_rank(sigma, 0.95) == 3
    assert energy_rank(np.zeros(3)) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roy_vetterli_rank_is_the_exponential_of_the_entropy_of_sigma_shares(seed):
    sigma = np.sort(np.random.default_rng(seed).lognormal(size=40))[::-1]
    p = sigma / sigma.sum()
    assert roy_vetterli_rank(sigma) == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-12)


def test_roy_vetterli_rank_of_flat_single_and_zero_spectra():
    assert roy_vetterli_rank(np.full(7, 3.0)) == pytest.approx(7.0, rel=1e-12)
    assert roy_vetterli_rank(np.array([2.0, 0.0, 0.0])) == pytest.approx(1.0)  # 0 ln 0 = 0
    assert math.isnan(roy_vetterli_rank(np.zeros(4)))


# -- a channel's statistics under their names ----------------------------------------------
def test_a_channel_reports_the_csn_fit_and_both_ranks_under_their_names():
    assert {"energy_rank", "roy_vetterli_rank", "csn_alpha", "csn_xmin", "csn_tail",
            "csn_ks"} <= set(STATISTICS)
    assert not {"alpha", "effective_rank"} & set(STATISTICS)
    rng = np.random.default_rng(6)
    t = rng.standard_normal(127) / (1 + np.abs(np.arange(-63, 64)))
    dense = np.array([[t[63 + i - j] for j in range(64)] for i in range(64)])
    sigma = np.linalg.svd(dense, compute_uv=False)
    spectrum = channel_spectrum(t, 9, 16, False)
    fit = csn_power_law_fit(sigma**2)
    assert (spectrum.csn_alpha, spectrum.csn_tail) == (pytest.approx(fit.alpha, rel=1e-9),
                                                        fit.tail)
    assert spectrum.csn_xmin == pytest.approx(fit.xmin, rel=1e-9)
    assert spectrum.csn_ks == pytest.approx(fit.ks, abs=1e-9)
    p = sigma / sigma.sum()
    assert spectrum.roy_vetterli_rank == pytest.approx(np.exp(-np.sum(p * np.log(p))),
                                                       rel=1e-9)
    assert spectrum.energy_rank == energy_rank(sigma)
