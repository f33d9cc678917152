"""The wide search that measures how far the recurrent fit is from the best
(``compress.fit_starts_study``): it finds the global optimum where one can be had by brute
force, and its table is ordered as its definition says."""

from __future__ import annotations

import numpy as np
import pytest

from tnn_core.analysis.variable_projection import RESIDUE_BOUND
from tnn_core.compress.fit_starts_study import best_of_starts, channel_errors, main


def grid_minimum(column: np.ndarray, points: int = 400) -> float:
    """One mode's smallest ||T - T̂||_F over a polar grid of poles (0 < |z| < 1, arg z off
    the real axis), the residue (Re c, Im c) by least squares at each pole and bounded as
    ours is (|c| <= RESIDUE_BOUND times the largest sample): an independent brute force."""
    n = column.shape[0]
    lags = np.arange(n - 1)
    weight = np.sqrt(n - 1 - lags)  # lag l = i + 1 fills n - l entries
    target = column[1:] * weight
    bound = RESIDUE_BOUND * np.abs(column[1:]).max()
    angles = np.linspace(1e-3, np.pi - 1e-3, points)
    best = np.inf
    for radius in np.linspace(0, 1, points, endpoint=False)[1:]:
        powers = (radius * np.exp(1j * angles))[:, None] ** lags[None, :]  # (G, N)
        basis = np.stack([powers.real, -powers.imag], axis=2) * weight[None, :, None]
        q, r = np.linalg.qr(basis)  # (G, N, 2), (G, 2, 2)
        projection = np.einsum("gnk,n->gk", q, target)  # (G, 2)
        residue = np.linalg.solve(r, projection[..., None])[..., 0]  # (G, 2)
        left = np.sum(target**2) - np.sum(projection**2, axis=1)
        kept = np.abs(residue[:, 0] + 1j * residue[:, 1]) <= bound
        if kept.any():
            best = min(best, float(np.sqrt(max(left[kept].min(), 0.0))))
    return best


def test_one_mode_reaches_the_brute_force_optimum():
    rng = np.random.default_rng(3)
    n = 41
    lags = np.arange(n)
    column = rng.normal(size=(3, n)) * 0.8 ** lags + np.cos(0.9 * lags) * 0.9 ** lags
    found = best_of_starts(column, 1, starts=32)
    for channel in range(3):
        assert found[channel] <= grid_minimum(column[channel]) * (1 + 1e-3), channel


def test_the_best_is_never_above_the_labs_fit_which_is_never_above_the_pencils(capsys):
    main(["checkpoints/charlm-tno.safetensors", "--states", "1", "--starts", "2"])
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()[2:]]
    assert [int(row[0]) for row in rows] == [0, 1]
    for row in rows:
        pencil, lab, best = float(row[2]), float(row[3].split()[0]), float(row[4].split()[0])
        assert best <= lab <= pencil


def test_channel_errors_is_the_frobenius_norm_of_the_toeplitz_difference():
    from scipy.linalg import toeplitz

    rng = np.random.default_rng(0)
    column, kernel = rng.normal(size=(2, 7)), rng.normal(size=(2, 7))
    want = [np.linalg.norm(np.tril(toeplitz(c - k))) for c, k in zip(column, kernel, strict=True)]
    np.testing.assert_allclose(channel_errors(column, kernel), want, rtol=1e-12)


@pytest.mark.parametrize("argv", [["--starts", "0"], ["--states", "0"]])
def test_bad_arguments_are_refused_with_their_name(argv):
    with pytest.raises(ValueError, match=argv[0][2:]):
        main(["checkpoints/charlm-tno.safetensors", *argv])
