"""The Clauset–Shalizi–Newman power-law fit's goodness of fit (issue 37): the p-value of
their semi-parametric bootstrap (SIAM Review 51(4), 2009, §4.1), checked against a plain
loop that fits every synthetic set candidate by candidate, and by what it must decide."""

import math

import numpy as np
import pytest
import torch

from tnn_core.analysis.power_law import MIN_TAIL, csn_p_value, csn_power_law_fit
from tnn_core.analysis.spectral_summary import channel_spectrum, layer_spectra


def _loop_fit(values: np.ndarray, min_tail: int = MIN_TAIL) -> tuple[float, float]:
    """(α, KS) of the CSN fit by its definition, one candidate threshold at a time: every
    value with at least ``min_tail`` values strictly above it."""
    x = np.sort(values)[::-1]
    best = (math.nan, math.inf)
    for threshold in np.unique(x):
        tail = np.sort(x[x > threshold])  # ascending exceedances
        k = len(tail)
        spread = float(np.sum(np.log(tail / threshold)))
        if k < min_tail or spread <= 0:
            continue
        alpha = 1 + k / spread
        law = 1 - (tail / threshold) ** (1 - alpha)
        ks = max(np.max(np.arange(1, k + 1) / k - law), np.max(law - np.arange(k) / k))
        if ks < best[1]:
            best = (alpha, ks)
    return best


def _loop_p_value(values: np.ndarray, draws: int, seed: int) -> float:
    """CSN §4.1 written out set by set, the same random numbers as ``csn_p_value``."""
    x = np.sort(values)[::-1]
    fit = csn_power_law_fit(x)
    rng = np.random.default_rng(seed)
    share = fit.tail / len(x)
    in_tail = rng.random((draws, len(x))) < share
    uniform = rng.random((draws, len(x)))
    body = x[x <= fit.xmin]
    picks = rng.integers(0, len(body), (draws, len(x)))
    at_least = 0
    for b in range(draws):
        synthetic = np.where(in_tail[b], fit.xmin * (1 - uniform[b]) ** (-1 / (fit.alpha - 1)),
                             body[picks[b]])
        at_least += _loop_fit(synthetic)[1] >= fit.ks
    return at_least / draws


def test_the_batched_fit_is_the_candidate_by_candidate_fit_with_ties():
    rng = np.random.default_rng(7)
    for n in (11, 12, 37, 101):
        values = np.round(1 + rng.pareto(1.7, n), 1) + 0.01  # ties, as resampling makes
        fit = csn_power_law_fit(values)
        alpha, ks = _loop_fit(values)
        assert fit.alpha == pytest.approx(alpha, rel=1e-12)
        assert fit.ks == pytest.approx(ks, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_p_value_is_the_semi_parametric_bootstrap_written_out(seed):
    rng = np.random.default_rng(10 + seed)
    values = np.concatenate([rng.uniform(0.1, 1.0, 40), 1 + rng.pareto(1.8, 50)])
    assert csn_p_value(values, draws=30, seed=seed) == _loop_p_value(values, 30, seed)


def test_a_power_law_sample_is_rarely_ruled_out():
    """Under the power law p is about uniform: p <= 0.1 in about 10 % of samples (CSN rule
    it out there). 40 samples: at least 30 above 0.1 (P(fewer) < 1e-3 at 10 %)."""
    rng = np.random.default_rng(2)
    p = [csn_p_value(1 + rng.pareto(1.5, 150), seed=s) for s in range(40)]
    assert sum(v > 0.1 for v in p) >= 30


def test_a_bounded_sample_is_mostly_ruled_out():
    """Uniform values have no tail at all; with xmin free, a short top run can still pass
    (CSN's test has little power on a small tail), so the claim is a rate: measured 11 of
    12 at N = 400."""
    rng = np.random.default_rng(0)
    p = [csn_p_value(rng.uniform(1.0, 2.0, 400), draws=50) for _ in range(12)]
    assert sum(v <= 0.1 for v in p) >= 9


def test_p_value_is_a_function_of_the_values_and_nan_without_a_fit():
    values = 1 + np.random.default_rng(4).pareto(2.0, 120)
    assert csn_p_value(values) == csn_p_value(values[::-1].copy())
    assert math.isnan(csn_p_value(np.ones(50)))
    with pytest.raises(ValueError, match="draws"):
        csn_p_value(values, draws=0)


def test_a_layer_gives_the_p_value_to_the_channels_it_names():
    rng = np.random.default_rng(5)
    n = 48
    kernels = torch.tensor(rng.normal(size=(5, 2 * n - 1)) * 0.9 ** np.abs(np.arange(1 - n, n)))
    spectra = layer_spectra(kernels, band=5, rank=8, causal=False, gof_channels=3)
    tested = [c for c, s in enumerate(spectra) if not math.isnan(s.csn_p)]
    assert tested == [0, 2, 4]  # evenly spaced, the ends included
    one = channel_spectrum(kernels[2], band=5, rank=8, causal=False)
    assert one.csn_p == spectra[2].csn_p and 0 <= one.csn_p <= 1
