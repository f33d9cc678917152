"""The recurrent form's fit (``analysis.exponential_fit``): s damped complex exponentials
per channel, against kernels built from known poles, in float64 at awkward lengths.

Letters: D channels, n length, s modes.
"""

from __future__ import annotations

import numpy as np
import pytest

from tnn_core.analysis.exponential_fit import exponential_kernel, fit_exponentials

LENGTHS = [1, 2, 3, 8, 37, 101]  # the fit sees lags 1..n-1: none, one, two, ...


def known_kernel(D: int, s: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """k_l = d for l = 0 and Re Σ c z^(l-1) after, from random stable poles: [D, n], poles."""
    rng = np.random.default_rng(seed)
    poles = rng.uniform(0.3, 0.95, (D, s)) * np.exp(1j * rng.uniform(0.05, 3.0, (D, s)))
    residues = rng.normal(size=(D, s)) + 1j * rng.normal(size=(D, s))
    return exponential_kernel(poles, residues, rng.normal(size=D), n), poles


def dense_kernel(poles, residues, direct, n):
    """The definition, one lag at a time."""
    out = np.zeros((len(direct), n))
    for d in range(len(direct)):
        out[d, 0] = direct[d]
        for lag in range(1, n):
            out[d, lag] = sum((c * z ** (lag - 1)).real for z, c in zip(poles[d], residues[d],
                                                                         strict=True))
    return out


@pytest.mark.parametrize("n", LENGTHS)
def test_the_kernel_is_its_definition(n):
    rng = np.random.default_rng(n)
    poles = np.array([[0.0, 0.9, -0.5 + 0.3j], [1.0, 0.2j, 0.7 * np.exp(2j)]])
    residues = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    direct = rng.normal(size=2)
    np.testing.assert_allclose(exponential_kernel(poles, residues, direct, n),
                               dense_kernel(poles, residues, direct, n), rtol=0, atol=1e-13)


# (n, s) with 2s <= (n - 1) // 2: the poles the pencil can see in n - 1 samples
@pytest.mark.parametrize(("n", "s"), [(8, 1), (37, 1), (37, 2), (37, 3), (101, 3), (101, 4)])
def test_a_sum_of_s_exponentials_is_fitted_exactly(n, s):
    """Its 2s poles are found, and the fit equals the kernel up to round-off."""
    kernel, poles = known_kernel(4, s, n, seed=n * 10 + s)
    fit = fit_exponentials(kernel, s)
    np.testing.assert_allclose(fit.kernel(n), kernel, rtol=0,
                               atol=1e-9 * np.abs(kernel).max())
    np.testing.assert_allclose(np.sort_complex(fit.poles.ravel()), np.sort_complex(
        poles.ravel()), atol=1e-6)


@pytest.mark.parametrize("n", [1, 2])
def test_one_or_two_lags_are_exact(n):
    kernel = np.array([[0.5, -1.5][:n], [2.0, 0.25][:n]])
    np.testing.assert_allclose(fit_exponentials(kernel, 1).kernel(n), kernel, atol=1e-15)


def test_a_real_decay_is_one_mode():
    """λ^l is one real pole; the fit finds it with one mode."""
    n = 64
    kernel = 0.9 ** np.arange(n)[None, :]  # (1, n): d = 1, then c = 0.9, z = 0.9
    fit = fit_exponentials(kernel, 1)
    assert fit.poles[0, 0] == pytest.approx(0.9, abs=1e-12)
    np.testing.assert_allclose(fit.kernel(n), kernel, atol=1e-12)


def test_more_modes_fit_a_learned_shape_better():
    """A ReLU-like kernel (piecewise linear times a decay) is no finite sum of exponentials;
    its error falls as s grows and is small at s = 16."""
    n = 128
    lags = np.arange(n)
    kernel = (np.maximum(0, 1 - lags / 20) - 0.3 * np.maximum(0, lags / 40 - 0.5)) \
        * 0.97 ** lags
    kernel = kernel[None, :]
    errors = [np.linalg.norm(fit_exponentials(kernel, s).kernel(n) - kernel)
              / np.linalg.norm(kernel) for s in (1, 2, 4, 8, 16)]
    assert errors[-1] < 0.05 * errors[0] and errors[-1] < 1e-2, errors


def test_no_pole_leaves_the_unit_circle():
    """A growing kernel is fitted with poles pulled onto |z| = 1: the recurrence never grows."""
    kernel = 1.05 ** np.arange(40)[None, :]
    fit = fit_exponentials(kernel, 2)
    assert np.abs(fit.poles).max() <= 1 + 1e-15


def test_a_zero_kernel_has_no_modes():
    fit = fit_exponentials(np.zeros((2, 9)), 3)
    assert not fit.poles.any() and not fit.residues.any() and not fit.kernel(9).any()


@pytest.mark.parametrize(("column", "modes", "message"), [
    (np.zeros((3,)), 2, "column must be"),
    (np.zeros((2, 0)), 2, "column must be"),
    (np.array([[0.0, np.nan]]), 2, "finite"),
    (np.zeros((1, 4)), 0, "modes must be"),
    (np.zeros((1, 4)), 10**6, "modes must be"),
])
def test_bad_input_is_named(column, modes, message):
    with pytest.raises(ValueError, match=message):
        fit_exponentials(column, modes)


def planted_sums(kind: str, n: int = 512, seed: int = 0) -> tuple[np.ndarray, list]:
    """Channel s - 1 is a sum of s well-separated exponentials, s = 1..32: [32, n] and the
    planted poles of each channel (one per pair, upper half plane; then the real ones).

    complex: s conjugate pairs, angles (j + 1/2 + jitter) π / s, |z| in [0.9, 1] (the first
    on the unit circle); real: s real poles ±r, r evenly in [0.75, 1]; mixed: min(s // 2, 6)
    real poles, the rest pairs. Residues of magnitudes 10^[-1.5, 0], random phase (real on a
    real pole): the pencil needs order 2·pairs + reals, up to 64."""
    rng = np.random.default_rng(seed)
    columns, planted = [], []
    for s in range(1, 33):
        reals = {"real": s, "complex": 0, "mixed": min(s // 2, 6)}[kind]
        pairs = s - reals
        angles = np.pi * (np.arange(pairs) + 0.5 + rng.uniform(-0.2, 0.2, pairs)) / max(pairs, 1)
        radii = np.concatenate([[1.0], rng.uniform(0.9, 1.0, max(pairs - 1, 0))])[:pairs]
        moduli = np.linspace(0.75, 1.0, (reals + 1) // 2)
        poles = np.concatenate([radii * np.exp(1j * angles), np.concatenate(
            [moduli, -moduli])[:reals]])  # (s,)
        residues = 10 ** rng.uniform(-1.5, 0, s) * np.exp(2j * np.pi * rng.uniform(size=s))
        residues[pairs:] = residues[pairs:].real
        columns.append(exponential_kernel(poles[None], residues[None], rng.normal(size=1), n))
        planted.append(poles)
    return np.concatenate(columns), planted


@pytest.mark.parametrize("kind", ["complex", "mixed", "real"])
def test_every_sum_of_up_to_32_exponentials_is_recovered(kind):
    """Issue 37: every pencil order up to the Hankel size is a candidate, so a sum of s
    exponentials is fitted by s modes to round-off for every s = 1..32 (a ladder of orders
    that skips 18 and 22 missed s = 9, 11 and 12 by 3e-6 to 1.8e-4). Relative error over
    lags 0..n-1, and each planted pole's distance to the nearest fitted one."""
    n = 512
    columns, planted = planted_sums(kind, n)
    for s, (column, poles) in enumerate(zip(columns, planted, strict=True), 1):
        fit = fit_exponentials(column[None], s)
        error = np.linalg.norm(fit.kernel(n)[0] - column) / np.linalg.norm(column)
        assert error <= 1e-9, (kind, s, error)
        if kind != "real":  # s real poles on one line are recovered only in their sum
            distance = np.abs(poles[:, None] - fit.poles[0][None, :]).min(axis=1)  # (s,)
            assert distance.max() <= 1e-9, (kind, s, distance.max())
