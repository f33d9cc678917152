"""One word, one meaning (issue 37): every "relative error" the lab shows is
||T - T̂||_F / ||T||_F, T the n × n Toeplitz matrix of the kernel (a layer: over all its
channels, sqrt(Σ_c ||T_c - T̂_c||² / Σ_c ||T_c||²)), and every band share is the band's
energy ||band(T)||_F² / ||T||_F². Checked against float64 references written here: T with
scipy.linalg.toeplitz, T̂ the dense matrix of the converted operator, at awkward lengths
n = 1, 2, odd and prime; and the atlas and the report on charlm-fd's layer 0."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.linalg import toeplitz

from tnn_core.analysis.atlas import (
    BAND_SHARE_NAME,
    SKI_ERROR_NAME,
    channel_statistics,
    default_rank,
    exact_by_construction,
    ski_statistics,
)
from tnn_core.analysis.decompose import decompose
from tnn_core.compress import LayerPlan, fit_layer
from tnn_core.lab.common.atlas import atlas_view, opening_atlas
from tnn_core.operators import build_operator
from tnn_core.report import report_for, to_json, to_markdown
from tnn_core.report.build import check_reportable
from tnn_core.report.render import COLUMNS
from tnn_core.training.checkpoint import SHIPPED_DIR, load
from tnn_core.training.tasks import task_from_info

D = 3  # channels of a layer
SIZES = (1, 2, 7, 13)  # one, two, odd, prime


def kernels(n: int, causal: bool, seed: int = 0) -> np.ndarray:
    """[D, 2n-1] decaying random kernels (negative lags zero when causal)."""
    rng = np.random.default_rng(seed)
    lags = np.arange(-(n - 1), n)
    t = rng.standard_normal((D, 2 * n - 1)) * 0.8 ** np.abs(lags)
    return np.where(lags < 0, 0.0, t) if causal else t


def dense(t: np.ndarray) -> np.ndarray:
    """T [n, n], T[i, j] = t_{i-j}, from t [2n-1] (lags -(n-1)..n-1)."""
    n = (len(t) + 1) // 2
    return toeplitz(t[n - 1:], t[n - 1::-1])


def band_mask(n: int, band: int, causal: bool) -> np.ndarray:
    """[n, n] the entries of the band: lags 0 <= i-j < m causal, |i-j| <= m//2 else."""
    lag = np.subtract.outer(np.arange(n), np.arange(n))
    return (lag >= 0) & (lag < band) if causal else np.abs(lag) <= band // 2


def layer_relative(T: np.ndarray, T_hat: np.ndarray) -> float:
    """sqrt(Σ_c ||T_c - T̂_c||_F² / Σ_c ||T_c||_F²) over [D, n, n]."""
    return math.sqrt(np.sum((T - T_hat) ** 2) / np.sum(T**2))


def converted_matrices(fit, n: int) -> np.ndarray:
    """[D, n, n] the matrices the converted operator applies at length n."""
    op = build_operator(fit.config, D).double()
    op.load_state_dict({k: torch.as_tensor(v.copy()) for k, v in fit.tensors.items()})
    with torch.no_grad():
        return op.matrix(n).numpy()


# -- the conversion ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7, 13])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("method", ["sample", "fit"])
def test_a_converted_layers_error_is_relative_to_norm_T(n, causal, method):
    t = kernels(n, causal)
    plan = LayerPlan(band=min(3, 2 * n - 2), rank=2 if n < 5 else 4, method=method)
    fit = fit_layer(t, plan, causal)
    T = np.stack([dense(row) for row in t])
    round_off = 1e-13 if causal else 1e-7  # bidirectional: a difference of squares (``gram``)
    assert fit.error == pytest.approx(layer_relative(T, converted_matrices(fit, n)),
                                      rel=1e-9, abs=round_off)


@pytest.mark.parametrize("n", [2, 3, 7, 13])
@pytest.mark.parametrize("state", [1, 2])
def test_a_recurrent_layers_error_is_relative_to_norm_T(n, state):
    t = kernels(n, causal=True)
    fit = fit_layer(t, LayerPlan(method="recurrent", state=state), causal=True)
    T = np.stack([dense(row) for row in t])
    T_hat = converted_matrices(fit, n)
    assert fit.error == pytest.approx(layer_relative(T, T_hat), rel=1e-9, abs=1e-13)
    # the diagonal is kept exactly, and still counts in the denominator
    off_diagonal = np.sum(np.tril(T, -1) ** 2)
    if fit.error > 0:
        assert fit.error < math.sqrt(np.sum((T - T_hat) ** 2) / off_diagonal)


def test_the_old_denominators_would_fail():
    """Planted: the off-band part and the off-diagonal part as denominators read larger."""
    n, band = 13, 3
    t = kernels(n, causal=False)
    fit = fit_layer(t, LayerPlan(band=band, rank=4, method="sample"), causal=False)
    T = np.stack([dense(row) for row in t])
    T_hat = converted_matrices(fit, n)
    off_band = math.sqrt(np.sum((T - T_hat) ** 2) / np.sum((T * ~band_mask(n, band, False)) ** 2))
    assert fit.error != pytest.approx(off_band, rel=1e-3)


# -- the atlas and the report -----------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("band", [1, 3, 4])
def test_the_atlas_and_the_report_share_the_band_energy_and_ski_error(n, causal, band):
    t = kernels(n, causal, seed=n)
    rank = min(4, n)
    atlas = channel_statistics(t, band, rank, causal)
    report = ski_statistics(t, band, rank, causal)
    for c, row in enumerate(t):
        T = dense(row)
        share = np.sum(T[band_mask(n, band, causal)] ** 2) / np.sum(T**2)
        assert atlas["locality"][c] == pytest.approx(share, rel=1e-12)
        assert report["band_mass"][c] == pytest.approx(share, rel=1e-12)
        if rank < 2 or band > 2 * n - 2:  # no SKI decomposition
            assert np.isnan(atlas["low_rank"][c]) and np.isnan(report["sample_error"][c])
            continue
        d = decompose(row, band, rank, causal, method="sample")
        error = np.linalg.norm(T - d.band_matrix() - d.low_rank_matrix()) / np.linalg.norm(T)
        round_off = 1e-7  # a difference of squares over ||T||_F (``gram``)
        assert atlas["low_rank"][c] == pytest.approx(error, abs=round_off)
        assert report["sample_error"][c] == pytest.approx(error, abs=round_off)


def test_the_old_atlas_definitions_would_fail():
    """Planted: the share of Σ|t_k| and SKI's error over ||T - band||_F read otherwise."""
    n, band, rank = 13, 3, 4
    t = kernels(n, causal=False)
    atlas = channel_statistics(t, band, rank, causal=False)
    lags = np.abs(np.arange(-(n - 1), n)) <= band // 2
    mass = np.abs(t[:, lags]).sum(-1) / np.abs(t).sum(-1)
    assert not np.allclose(atlas["locality"], mass, rtol=1e-3)
    T = np.stack([dense(row) for row in t])
    off_band = np.linalg.norm(T * ~band_mask(n, band, False), axis=(1, 2))
    norm = np.linalg.norm(T, axis=(1, 2))
    assert not np.allclose(atlas["low_rank"], atlas["low_rank"] * norm / off_band, rtol=1e-3)


def test_ski_is_exact_by_construction_at_r_equal_n_or_a_band_of_every_lag():
    assert "inducing point on every lag" in exact_by_construction(8, 3, 8, False)
    assert "every lag" in exact_by_construction(8, 8, 4, True)
    assert "every lag" in exact_by_construction(8, 14, 4, False)
    assert exact_by_construction(8, 3, 4, False) == ""
    t = kernels(8, causal=False)
    assert np.all(np.abs(ski_statistics(t, 3, 8, False)["sample_error"]) < 1e-7)


@pytest.mark.parametrize(("n", "rank"), [(2, 2), (7, 2), (32, 8), (64, 16), (128, 32),
                                         (256, 32), (1024, 32)])
def test_the_reports_default_rank_is_below_n(n, rank):
    assert default_rank(n) == rank


@pytest.mark.parametrize("name", ["digits-tno", "digits-ski", "listops-fd", "charlm-fd"])
def test_the_atlas_opens_at_the_reports_band_and_rank(name):
    model, info = load(SHIPPED_DIR / f"{name}.safetensors")
    n = task_from_info(info.task).seq_len
    (_, band, rank), *_ = check_reportable(model, n)
    assert opening_atlas(model.config, n)[1:] == (band, rank)
    assert rank < n


def test_the_atlas_and_the_report_agree_on_charlm_fd_layer_0():
    """Same number under the same name: the band energy share and SKI's error (sample) of
    every channel of charlm-fd's layer 0 at n = 256, m = 9, r = 32."""
    model, info = load(SHIPPED_DIR / "charlm-fd.safetensors")
    n = info.task["settings"]["seq_len"]
    report = report_for(model, info, None, band=9, rank=32, seconds_limit=0)
    atlas = atlas_view(model, n, 9, 32)
    first = atlas.channels.layer == 0
    order = np.argsort(atlas.channels.channel[first])
    layer = report.layers[0]
    np.testing.assert_allclose(atlas.channels.locality[first][order], layer.batched["band_mass"],
                               rtol=1e-12)
    np.testing.assert_allclose(atlas.channels.low_rank[first][order],
                               layer.batched["sample_error"], rtol=1e-12)
    names = dict(COLUMNS)
    assert names["band_mass"] == BAND_SHARE_NAME and names["sample_error"] == SKI_ERROR_NAME
    text = to_markdown(report)
    assert BAND_SHARE_NAME in text and SKI_ERROR_NAME in text and "‖T − T̂‖_F / ‖T‖_F" in text


def test_a_report_at_r_equal_n_says_its_ski_errors_are_exact_by_construction():
    model, info = load(SHIPPED_DIR / "digits-tno.safetensors")
    task = task_from_info(info.task)
    n = task.seq_len
    report = report_for(model, info, task, rank=n, seconds_limit=0)
    assert all(np.all(np.abs(layer.batched["sample_error"]) < 1e-7) for layer in report.layers)
    assert all("inducing point on every lag" in layer.exact for layer in report.layers)
    text = to_markdown(report)
    assert "(exact by construction)" in text
    assert f"SKI's errors are 0 whatever the kernel, exact by construction: r = {n} ≥ n" in text
    assert '"ski_exact": "exact by construction' in to_json(report)
    assert not any(layer.exact for layer in report_for(model, info, task, seconds_limit=0).layers)
