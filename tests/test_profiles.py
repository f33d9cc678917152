"""tnn_core.analysis.profiles: what a kernel looks like. Decay fits recover known rates
and laws; a real operator's channel kernel is its matrix's diagonal means (in float64).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.references import diagonal_means, toeplitz_ref
from tnn_core.analysis import channel_kernel, decay_profile
from tnn_core.analysis.profiles import decay_fit
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights

# -- profiles --------------------------------------------------------------------------


@pytest.mark.parametrize("decay", [0.3, 0.8, 0.97])
@pytest.mark.parametrize("causal", [False, True])
def test_decay_profile_recovers_lambda(decay, causal):
    n = 200
    k = np.arange(-(n - 1), n)
    t = 2.0 * decay ** np.abs(k)
    if causal:
        t[: n - 1] = 0
    profile = decay_profile(t, causal=causal)
    assert abs(profile.fit.rate - decay) < 1e-3
    assert profile.fit.intercept == pytest.approx(math.log(2.0), abs=1e-6)
    np.testing.assert_allclose(profile.fit.exponential(np.arange(n)), 2.0 * decay ** np.arange(n))
    np.testing.assert_array_equal(profile.lags, np.arange(n))
    np.testing.assert_allclose(profile.magnitude, 2.0 * decay ** np.arange(n))
    mass = np.abs(t)
    target = 0.99 * mass.sum()
    field = next(L for L in range(n) if mass[np.abs(k) <= L].sum() >= target)
    assert profile.receptive_field == field


def test_decay_profile_ignores_zero_lags():
    t = np.zeros(2 * 30 - 1)
    t[29 + np.arange(0, 30, 3)] = 0.5 ** np.arange(0, 30, 3)  # every third lag zero
    assert decay_profile(t, causal=True).fit.rate == pytest.approx(0.5, abs=1e-9)
    assert math.isnan(decay_profile(np.zeros(9)).fit.rate)


def test_decay_fit_recovers_exponential_and_power_law():
    t = np.arange(401, dtype=float)
    fit = decay_fit(0.8**t)
    assert fit.rate == pytest.approx(0.8, abs=1e-9) and fit.points == 401
    assert fit.better_law == "exponential"
    power = (1 + t) ** -2.0
    fit = decay_fit(power, start=50)
    assert fit.points == 351
    assert fit.exponent == pytest.approx(2.0, abs=0.05)
    assert fit.better_law == "power law"
    # the floor leaves out round-off: only 0.5^t >= 1e-6 · max is fitted
    assert decay_fit(0.5**t, floor=1e-6).points == int(np.floor(np.log(1e-6) / np.log(0.5))) + 1


def test_decay_fit_of_too_few_points_is_undefined_not_an_error():
    fit = decay_fit(np.array([1.0, 0.0]))
    assert math.isnan(fit.rate) and fit.points == 1 and fit.better_law is None
    fit = decay_fit(np.array([0.0, 0.5, 0.25]))  # two points: an exact line, no comparison
    assert fit.rate == pytest.approx(0.5) and fit.better_law is None


# -- channel kernels of real operators -------------------------------------------------


@pytest.mark.parametrize("kind,causal", [("tno", False), ("tno", True), ("fd", False),
                                         ("fd", True), ("ski", True), ("ski", False)])
def test_channel_kernel_matches_operator_matrix(kind, causal):
    with seeded_weights(0):
        op = build_operator(OperatorConfig(kind=kind, causal=causal, rank=6, band=5), 3).double()
    for n in (1, 2, 17, 40):
        with torch.no_grad():
            M = op.matrix(n)[1].numpy()
        got = channel_kernel(op, n, 1).numpy()
        assert got.dtype == np.float64 and got.shape == (2 * n - 1,)
        means = diagonal_means(M)
        expected = np.array([means[k] for k in range(-(n - 1), n)])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
        if not (kind == "ski" and not causal):  # Toeplitz: the kernel rebuilds the matrix
            np.testing.assert_allclose(toeplitz_ref(got), M, rtol=0, atol=1e-10)
    for bad in (-1, 3, 1.0):
        with pytest.raises(ValueError, match="channel"):
            channel_kernel(op, 8, bad)
