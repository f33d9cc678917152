"""The recurrent fit (tnn_core.lab.common.recurrent_fit, the Decomposition page's
recurrent_fit figure): the ladder's fits are fit_exponentials', the errors a dense
computation's, and the page shows the section for a causal kernel only.

The figure's JavaScript against exponential_kernel, in Chromium:
test_figure_recurrent_fit.py.
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest
from test_app_decomposition import decomposition, decomposition_figures

from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.exponential_fit import (
    GROWN_UP_TO,
    fit_exponentials,
    fit_exponentials_ladder,
)
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.analysis.presets import operator_kernel, synthetic_kernel
from tnn_core.analysis.variable_projection import one_thread
from tnn_core.lab.common.recurrent_fit import undamped_sentence
from tnn_core.lab.decomposition import (
    CURVE_FLOOR,
    RECURRENT_LADDER,
    RECURRENT_MAX_N,
    fitted_kernel,
    is_causal,
    modes_for_error,
    rank_curve,
    recurrent_fit,
)


def dense_error(column: np.ndarray, fitted: np.ndarray) -> float:
    """‖T − T̂‖_F / ‖T‖_F of the n × n causal Toeplitz matrices, built dense."""
    n = len(column)
    layout = lambda k: np.concatenate([np.zeros(n - 1), k])  # noqa: E731 - [2n-1], causal
    T, T_hat = dense_toeplitz(layout(column)), dense_toeplitz(layout(fitted))
    return float(np.linalg.norm(T - T_hat) / np.linalg.norm(T))


KERNELS = [("tno", 2), ("tno", 7), ("tno", 97), ("tno", 128), ("spike_smooth", 64),
           ("oscillating", 31)]


def causal_kernel(name: str, n: int) -> np.ndarray:
    if name == "tno":
        return operator_kernel("tno", n, 0.99, True, seed=0, channel=1).numpy()
    return synthetic_kernel(name, n, 0.9, True).numpy()


@pytest.mark.parametrize(("name", "n"), KERNELS)
def test_the_ladders_fits_are_fit_exponentials(name, n):
    """Bit for bit, both on one torch and one BLAS thread, as recurrent_fit fits (the
    refinement's path depends on the thread count)."""
    coeffs = causal_kernel(name, n)
    fit = recurrent_fit(coeffs)
    column = coeffs[n - 1:]
    assert fit.modes.tolist() == list(RECURRENT_LADDER) and fit.direct == column[0]
    for s in (1, 2, 3, 8, 17, 32):
        with single_threaded_blas(), one_thread():
            want = fit_exponentials(column[None], s)
        i = s - 1
        assert np.array_equal(fit.poles[i], want.poles[0]), s  # bit for bit
        assert np.array_equal(fit.residues[i], want.residues[0]), s
        np.testing.assert_array_equal(fitted_kernel(fit, s), want.kernel(n)[0])


@pytest.mark.parametrize(("name", "n"), KERNELS)
def test_the_errors_are_a_dense_computations(name, n):
    coeffs = causal_kernel(name, n)
    fit = recurrent_fit(coeffs)
    column = coeffs[n - 1:]
    dense = np.array([dense_error(column, fitted_kernel(fit, s)) for s in fit.modes])
    np.testing.assert_allclose(fit.errors, dense, rtol=1e-9, atol=1e-15)
    pencil = np.array([dense_error(column, f.kernel(n)[0]) for f in fit_exponentials_ladder(
        column[None], RECURRENT_LADDER, refine=False)])
    assert (fit.errors <= pencil * (1 + 1e-9) + 1e-15).all()  # never above the pencil's
    grown = fit.errors[:GROWN_UP_TO]  # grown from s - 1: never grows with s up to there
    assert (np.diff(grown) <= 1e-9 * grown[:-1] + 1e-15).all()


def test_the_ladder_shares_one_svd_and_still_equals_each_call():
    column = causal_kernel("tno", 101)[100:][None]
    for s, got in zip((5, 1, 9), fit_exponentials_ladder(column, (5, 1, 9)), strict=True):
        want = fit_exponentials(column, s)
        assert np.array_equal(got.poles, want.poles) and np.array_equal(got.residues,
                                                                         want.residues)


def test_a_pole_on_the_unit_circle_is_counted_and_said():
    """A growing kernel's poles are held on |z| = 1: counted per s and said in a sentence;
    a decaying kernel's are not."""
    n = 40
    growing = np.concatenate([np.zeros(n - 1), 1.05 ** np.arange(n)])
    fit = recurrent_fit(growing, (1, 2))
    poles = np.abs(fit.poles[0][fit.poles[0] != 0])
    assert fit.undamped[0] == np.sum(poles >= 1 - 1e-9) >= 1
    assert "never decays" in undamped_sentence(fit, 1)
    decaying = recurrent_fit(synthetic_kernel("oscillating", 64, 0.9, True).numpy(), (1, 2))
    assert decaying.undamped.tolist() == [0, 0] and undamped_sentence(decaying, 1) == ""


def test_one_complex_mode_fits_a_damped_oscillation_exactly():
    """λ^l cos(πl/4) = Re z^l, z = λ e^{iπ/4}: one mode (c = z), exact at s = 1."""
    fit = recurrent_fit(synthetic_kernel("oscillating", 64, 0.9, True).numpy())
    assert fit.errors[0] < 1e-13 and modes_for_error(fit, 0.01) == 1
    np.testing.assert_allclose(fit.poles[0][0], 0.9 * np.exp(1j * np.pi / 4), rtol=1e-12)
    np.testing.assert_allclose(fit.residues[0][0], 0.9 * np.exp(1j * np.pi / 4), rtol=1e-12)


def test_a_bidirectional_kernel_or_a_long_one_is_refused_with_a_sentence():
    two_sided = synthetic_kernel("exponential", 16, 0.9, False).numpy()
    assert not is_causal(two_sided) and is_causal(np.concatenate([np.zeros(15),
                                                                  two_sided[15:]]))
    with pytest.raises(ValueError, match="nonzero negative lags"):
        recurrent_fit(two_sided)
    n = RECURRENT_MAX_N + 1
    with pytest.raises(ValueError, match=f"at most {RECURRENT_MAX_N}"):
        recurrent_fit(np.concatenate([np.zeros(n - 1), np.ones(n)]))


# -- the page ------------------------------------------------------------------------------
def unpack(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), "<f8")


@pytest.mark.slow
def test_the_section_appears_for_a_causal_kernel_with_the_labs_fits():
    at = decomposition(source="spike_smooth", n=128, causal=True, band=9)
    data = decomposition_figures(at)["recurrent_fit"]
    coeffs = synthetic_kernel("spike_smooth", 128, 0.99, True).numpy()
    fit, curve = recurrent_fit(coeffs), rank_curve(coeffs, 9, True)
    assert data["n"] == 128 and data["modes"] == list(RECURRENT_LADDER)
    assert np.array_equal(unpack(data["column"]), coeffs[127:])
    for i in (0, 3, 31):
        pairs = unpack(data["poles"][i]).reshape(-1, 2)
        assert np.array_equal(pairs[:, 0] + 1j * pairs[:, 1], fit.poles[i])
        pairs = unpack(data["residues"][i]).reshape(-1, 2)
        assert np.array_equal(pairs[:, 0] + 1j * pairs[:, 1], fit.residues[i])
    errors = [np.nan if e is None else e for e in data["errors"]]
    np.testing.assert_array_equal(errors, np.where(fit.errors >= CURVE_FLOOR, fit.errors,
                                                   np.nan))
    assert data["ranks"] == curve.ranks.tolist() and data["band"] == 9
    assert [c["name"] for c in data["controls"]] == ["modes"]
    assert "Why no recurrent fit" not in "".join(m.value for m in at.markdown)
    assert any("C A^(l−1) B for l ≥ 1" in c.value and "not a selective one such as Mamba"
               in c.value for c in at.caption)


@pytest.mark.slow
def test_the_section_says_why_it_is_absent_for_a_bidirectional_kernel():
    at = decomposition(source="spike_smooth", n=128, causal=False)
    assert "recurrent_fit" not in decomposition_figures(at)
    said = "".join(m.value for m in at.markdown)
    assert "Why no recurrent fit" in said and "lower triangular" in said


def test_lesson_6_step_3_quotes_the_fit():
    """Step 6.3 has no question; its notice quotes the learned channel's fit and SKI's r."""
    from lesson_checks_recurrent import SLUG
    from test_lesson_answers import LESSONS, trained

    step = LESSONS[SLUG].steps[2]
    view = dict(step.view.params)
    assert step.figures == ("recurrent_fit",) and view["checkpoint"].startswith("charlm-tno ·")
    n, band, s = int(view["n"]), int(view["band"]), int(view["modes"])
    model, _ = trained("charlm-tno")
    operator = model.operators()[int(view["layer"])]
    coeffs = operator.kernel(n)[int(view["channel"])].detach().numpy()
    fit, curve = recurrent_fit(coeffs), rank_curve(coeffs, band, True)
    error = fit.errors[s - 1]
    reach = int(curve.ranks[np.flatnonzero(curve.fit <= error)[0]])
    assert modes_for_error(fit, 0.01) == s
    says = [f"s = 1 misses {100 * fit.errors[0]:.1f} %", f"s = {s} modes",
            f"{2 * s} real numbers", f"m = {band} first reaches at r = {reach}"]
    assert all(text in step.notice for text in says), (says, step.notice)
    # the refinement's path varies with the machine's threads (measured 0.1338 % on the CI
    # machine, 0.1351 % here), so the stated error is checked to 0.01 percentage points
    stated = float(re.search(r"bring it to ([0-9.]+) %", step.notice).group(1))
    assert stated == pytest.approx(100 * error, abs=0.01)


def test_lesson_6_step_2_is_exact_where_band_and_low_rank_is_not():
    """Step 6.2's notice: one pole at radius 0.9, angle 45°, error below the floor; band +
    W A Wᵀ does not get there at any r of its curve."""
    from lesson_checks_recurrent import SLUG
    from test_lesson_answers import LESSONS

    step = LESSONS[SLUG].steps[1]
    view = dict(step.view.params)
    coeffs = synthetic_kernel("oscillating", int(view["n"]), float(view["decay"]), True).numpy()
    fit, curve = recurrent_fit(coeffs), rank_curve(coeffs, int(view["band"]), True)
    z = fit.poles[int(view["modes"]) - 1][0]
    assert abs(abs(z) - 0.9) < 1e-12 and abs(np.angle(z, deg=True) - 45) < 1e-9
    assert fit.errors[0] < CURVE_FLOOR and np.nanmin(curve.fit) > CURVE_FLOOR
    assert "radius 0.9 and angle 45°" in step.notice and "does not get there" in step.notice
