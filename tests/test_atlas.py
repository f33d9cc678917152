"""The kernel atlas: its batched statistics of every channel (analysis.atlas) equal the
one-channel analysis they are defined by, in float64, and the lab's atlas (common.atlas)
measures every channel of a model with those statistics."""

import math
import types

import numpy as np
import pytest
import torch

from tnn_core.analysis.atlas import BAND_ONLY_MASS, channel_statistics, ski_statistics
from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.analysis.profiles import decay_profile
from tnn_core.analysis.spectral_summary import band_mass
from tnn_core.lab.common.atlas import ATLAS_TILES, atlas_view
from tnn_core.lab.common.kernel_sources import toeplitz_part
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, seeded_weights

SIZES = (1, 2, 7, 13)  # one, two, odd, prime


def _kernels(n: int, causal: bool, seed: int) -> np.ndarray:
    """[12, 2n-1]: decaying random kernels, one with exact zeros, a spike (band-only), a zero
    kernel, and one of a single tail lag."""
    rng = np.random.default_rng(seed)
    lags = np.arange(-(n - 1), n)
    rows = [rng.standard_normal(2 * n - 1) * rng.uniform(0.3, 0.99) ** np.abs(lags)
            for _ in range(8)]
    holes = rows[0].copy()
    holes[::3] = 0.0
    spike, zero, tail = (np.zeros(2 * n - 1) for _ in range(3))
    spike[n - 1] = 2.5
    tail[-1] = -1.0
    t = np.stack([*rows, holes, spike, zero, tail])
    return np.where(lags < 0, 0.0, t) if causal else t


def _dense(t: np.ndarray) -> np.ndarray:
    """T[i, j] = t_{i-j}, entry by entry."""
    n = (len(t) + 1) // 2
    return np.array([[t[n - 1 + i - j] for j in range(n)] for i in range(n)])


def _reference(t: np.ndarray, band: int, rank: int, causal: bool) -> tuple[float, ...]:
    """(locality, decay, low_rank, its round-off) of one kernel, from the one-channel
    analysis and dense matrices written out here: locality the band energy share
    ||band(T)||_F² / ||T||_F², low_rank ||T - band - W A Wᵀ||_F / ||T||_F. The round-off:
    SKI's error is a difference of squares, good to about 1e-8 ||T||_F (``curves``)."""
    n = (len(t) + 1) // 2
    T = _dense(t)
    lag = np.subtract.outer(np.arange(n), np.arange(n))  # (n, n) i - j
    inside = (lag >= 0) & (lag < band) if causal else np.abs(lag) <= band // 2
    if not np.any(t):
        return math.nan, math.nan, math.nan, 0.0
    locality = np.sum(T[inside] ** 2) / np.sum(T**2)
    decay = math.nan if 1 - locality < BAND_ONLY_MASS else decay_profile(t, causal=causal).fit.rate
    if not (2 <= rank <= n and band <= 2 * n - 2):
        return locality, decay, math.nan, 0.0
    curve = error_curve(t, band, [rank], causal=causal)
    return locality, decay, curve.sample[0], 1e-7


@pytest.mark.parametrize("n", SIZES + (64,))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("band", "rank"), [(1, 2), (3, 5), (9, 32)])
def test_the_batched_statistics_are_the_one_channel_analysis(n, causal, band, rank):
    t = _kernels(n, causal, seed=n + band)
    batched = channel_statistics(torch.from_numpy(t), band, min(rank, n), causal)
    for row, kernel in enumerate(t):
        locality, decay, low_rank, round_off = _reference(kernel, band, min(rank, n), causal)
        assert batched["locality"][row] == pytest.approx(locality, rel=1e-12, nan_ok=True)
        assert batched["decay"][row] == pytest.approx(decay, rel=1e-9, nan_ok=True)
        assert batched["low_rank"][row] == pytest.approx(low_rank, rel=1e-9, abs=round_off,
                                                         nan_ok=True), row


@pytest.mark.parametrize("n", SIZES + (64,))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("band", "rank"), [(1, 2), (3, 5), (9, 32)])
def test_the_reports_batched_columns_are_its_one_channel_statistics(n, causal, band, rank):
    """band_mass, and SKI's sampled and fitted errors over ||T||_F, for every channel at once,
    equal ``spectral_summary.band_mass`` and ``curves.error_curve`` one channel at a time."""
    t = _kernels(n, causal, seed=2 * n + band)
    batched = ski_statistics(torch.from_numpy(t), band, min(rank, n), causal)
    defined_ski = 2 <= min(rank, n) <= n and band <= 2 * n - 2
    for row, kernel in enumerate(t):
        if not np.any(kernel):
            assert all(np.isnan(batched[name][row]) for name in batched)
            continue
        assert batched["band_mass"][row] == pytest.approx(band_mass(kernel, band, causal),
                                                          rel=1e-12)
        if not defined_ski:
            assert np.isnan(batched["sample_error"][row]) and np.isnan(batched["fit_error"][row])
            continue
        curve = error_curve(kernel, band, [min(rank, n)], causal=causal)
        assert batched["sample_error"][row] == pytest.approx(curve.sample[0], abs=1e-7)
        assert batched["fit_error"][row] == pytest.approx(curve.fit[0], abs=1e-7)
        assert batched["fit_error"][row] <= batched["sample_error"][row] + 1e-7


def _one(t, band: int, rank: int, causal: bool) -> dict[str, float]:
    """The statistics of one kernel t [2n-1] (a batch of one)."""
    return {name: float(values[0]) for name, values in
            channel_statistics(torch.as_tensor(t)[None], band, rank, causal).items()}


def test_locality_is_the_band_energy_share():
    """Σ_band (n - |k|) t_k² / Σ_k (n - |k|) t_k²: the band's share of ||T||_F², each lag
    counted as often as it fills T; not the share of Σ|t_k| (the old "mass")."""
    n, band = 50, 5
    t = synthetic_kernel("spike_smooth", n, 0.9).numpy()
    k = np.arange(-(n - 1), n)
    copies = n - np.abs(k)
    expected = np.sum((copies * t**2)[np.abs(k) <= 2]) / np.sum(copies * t**2)
    assert _one(t, band, 8, causal=False)["locality"] == pytest.approx(expected, rel=1e-12)
    assert _one(t, band, 8, causal=False)["locality"] != pytest.approx(
        np.abs(t[np.abs(k) <= 2]).sum() / np.abs(t).sum(), rel=1e-3)
    causal = np.where(k >= 0, t, 0.0)
    inside = (k >= 0) & (k < band)
    assert _one(causal, band, 8, causal=True)["locality"] == pytest.approx(
        np.sum((copies * causal**2)[inside]) / np.sum(copies * causal**2), rel=1e-12)


def test_ski_error_is_relative_to_norm_T():
    n, band, rank = 64, 5, 8
    t = synthetic_kernel("spike_smooth", n, 0.95)
    d = decompose(t, band, rank, method="sample")
    dense = _dense(t.numpy())
    error = np.linalg.norm(dense - d.band_matrix() - d.low_rank_matrix())
    assert _one(t, band, rank, causal=False)["low_rank"] == pytest.approx(
        error / np.linalg.norm(dense), rel=1e-6)


def test_band_only_channels_have_no_decay_but_an_error():
    n = 40
    t = np.zeros(2 * n - 1)
    t[n - 1 - 2: n + 2] = [0.5, 1.0, 3.0, 1.0, 0.5]
    t[n - 1 + 10] = 1e-3  # 7e-9 of the energy off the band
    stats = _one(t, 5, 8, causal=False)
    energy = np.array([38, 39, 40, 39, 38]) @ np.array([0.25, 1, 9, 1, 0.25])
    assert stats["locality"] == pytest.approx(energy / (energy + 30 * 1e-6), rel=1e-12)
    assert 1 - stats["locality"] < BAND_ONLY_MASS and math.isnan(stats["decay"])
    assert 0 <= stats["low_rank"] <= math.sqrt(30 * 1e-6 / energy)  # at most what is off
    t[n - 1 + 10] = 0.1  # 7e-4 of the energy off the band: a tail to measure
    assert not math.isnan(_one(t, 5, 8, causal=False)["decay"])


def test_a_known_decay_and_a_band_only_channel():
    exponential = synthetic_kernel("exponential", 64, 0.8)
    spike = torch.zeros(127, dtype=torch.float64)
    spike[63] = 1.0
    stats = channel_statistics(torch.stack([exponential, spike]), 5, 16, causal=False)
    assert stats["decay"][0] == pytest.approx(0.8, abs=1e-3)
    assert 0 < stats["low_rank"][0] < 1
    assert stats["locality"][1] == 1 and np.isnan(stats["decay"][1])
    assert stats["low_rank"][1] == pytest.approx(0, abs=1e-7)  # the band holds it all


def test_the_statistics_refuse_a_kernel_of_even_length():
    with pytest.raises(ValueError, match=r"kernels must have shape \[C, 2n-1\]"):
        channel_statistics(torch.zeros(3, 4), 3, 2, False)


# -- the lab's atlas of a trained model (common.atlas) ---------------------------------------
OPERATORS = {"tno causal": OperatorConfig(causal=True, rpe_layers=2),
             "fd": OperatorConfig(kind="fd"),
             "ski bidirectional": OperatorConfig(kind="ski", rank=4, band=3),
             "ssm causal": OperatorConfig(kind="ssm", causal=True, state=4)}


def _model(operator: OperatorConfig, dim: int = 6, layers: int = 2):
    with seeded_weights(3):
        return build_model(ModelConfig(task="classify", dim=dim, layers=layers,
                                       expand_ratio=1, operator=operator)).double()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(OPERATORS))
def test_the_atlas_measures_every_channel_as_one_channel_at_a_time(name, n):
    """A float64 model: each row is its channel's ``toeplitz_part`` through the one-channel
    analysis, for every channel of every layer."""
    model = _model(OPERATORS[name])
    band, rank = 3, 4
    causal = model.config.operator.causal
    atlas = atlas_view(model, n, band, rank)
    assert atlas.channels.layer.tolist() == [0] * 6 + [1] * 6
    assert atlas.channels.channel.tolist() == list(range(6)) * 2
    for row, (layer, channel) in enumerate(zip(atlas.channels.layer, atlas.channels.channel,
                                               strict=True)):
        t = toeplitz_part(model.operators()[layer], n, int(channel)).numpy()
        *expected, round_off = _reference(t, band, min(rank, n), causal)
        for name_, value, tolerance in zip(("locality", "decay", "low_rank"), expected,
                                           (0.0, 0.0, round_off), strict=True):
            assert getattr(atlas.channels, name_)[row] == pytest.approx(
                value, rel=1e-9, abs=tolerance, nan_ok=True), (name_, layer, channel)


def test_the_atlas_keeps_the_kernels_of_each_orders_first_tiles():
    model = _model(OPERATORS["tno causal"], dim=16, layers=3)
    seen = []
    atlas = atlas_view(model, 40, 3, 8, on_progress=lambda done, total: seen.append((done,
                                                                                     total)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert len(atlas.channels.layer) == 48
    for statistic in ("locality", "decay", "low_rank"):
        table = atlas.channels.sorted_by(statistic)
        tiles = atlas.tiles(statistic)
        assert tiles == list(zip(table.layer[:ATLAS_TILES].tolist(),
                                 table.channel[:ATLAS_TILES].tolist(), strict=True))
        for layer, channel in tiles:
            np.testing.assert_array_equal(
                atlas.channel_view(layer, channel).coeffs,
                toeplitz_part(model.operators()[layer], 40, channel).numpy())
    assert len(atlas.kept) <= 3 * ATLAS_TILES
    unkept = next((layer, channel) for layer in range(3) for channel in range(16)
                  if not ((atlas.kept[:, 0] == layer) & (atlas.kept[:, 1] == channel)).any())
    with pytest.raises(ValueError, match="its kernel is not kept"):
        atlas.channel_view(*unkept)


def test_the_atlas_of_token_mixers_alone_measures_every_channel():
    """A kernels-only model (``models.MixerStack``, imported from the authors' code): every
    channel of every layer, as one channel at a time would give it."""
    from tests.kernels_only import kernels_only_model

    model = kernels_only_model(layers=3, dim=10, causal=False).double()
    atlas = atlas_view(model, 13, 3, 4)
    assert atlas.channels.layer.tolist() == [0] * 10 + [1] * 10 + [2] * 10
    t = toeplitz_part(model.operators()[2], 13, 7).numpy()
    *expected, round_off = _reference(t, 3, 4, causal=False)
    row = 27
    for name, value, tolerance in zip(("locality", "decay", "low_rank"), expected,
                                      (0.0, 0.0, round_off), strict=True):
        assert getattr(atlas.channels, name)[row] == pytest.approx(value, rel=1e-9,
                                                                   abs=tolerance)


def test_the_outlier_score_is_the_largest_robust_distance_from_the_layers_median():
    """One channel of a layer decays far slower than its siblings: its score is its robust
    z-score, |x - median| / (1.4826 MAD), the largest of its statistics, and it leads."""
    lambdas = (0.5, 0.52, 0.54, 0.56, 0.58, 0.97)
    kernels = torch.stack([synthetic_kernel("exponential", 40, lam) for lam in lambdas])
    operator = types.SimpleNamespace(kernel=lambda n: kernels, dim=6,
                                     config=types.SimpleNamespace(kind="tno", causal=False))
    model = types.SimpleNamespace(operators=lambda: [operator],
                                  config=types.SimpleNamespace(operator=operator.config))
    atlas = atlas_view(model, 40, 3, 8)
    scores = []
    for name in ("locality", "decay", "low_rank"):
        values = getattr(atlas.channels, name)
        deviation = np.abs(values - np.median(values))
        scores.append(deviation / (1.4826 * np.median(deviation)))
    np.testing.assert_allclose(atlas.channels.outlier, np.max(scores, axis=0), rtol=1e-12)
    assert atlas.channels.sorted_by("outlier").channel[0] == 5
    assert atlas.tiles("outlier")[0] == (0, 5)


def test_a_togeipi_atlas_measures_each_heads_point_spread_function():
    """Its channels share their head's T_h: one row per head, named by its first channel,
    whose kernel is psf_kernel(n) of that head; a channel's learned kernel is its head's."""
    from tnn_core.lab.common.kernel_sources import learned_kernel

    torch.manual_seed(0)
    model = build_model(ModelConfig(dim=12, layers=2, expand_ratio=1, operator=OperatorConfig(
        kind="togeipi", heads=3, max_length=16)))
    atlas = atlas_view(model, 10, 3, 4)
    assert atlas.channels.channel.tolist() == [0, 4, 8, 0, 4, 8]
    psf = model.operators()[1].psf_kernel(10).detach().double().numpy()  # (H, 2n-1)
    np.testing.assert_array_equal(atlas.channel_view(1, 8).coeffs, psf[2])
    np.testing.assert_array_equal(learned_kernel(model, 10, 1, 9), psf[2])  # channel 9: head 2
    with pytest.raises(ValueError, match="max_length"):
        learned_kernel(model, 17, 0, 0)


@pytest.mark.parametrize("band", [1, 64, 2047, 65_536])
def test_an_ski_atlas_opens_at_its_own_band_within_the_slider(band):
    from tnn_core.lab.common.atlas import ATLAS_MAX_BAND, opening_atlas

    config = ModelConfig(operator=OperatorConfig(kind="ski", band=band))
    assert opening_atlas(config, 64) == (64, min(band, ATLAS_MAX_BAND),
                                         min(config.operator.rank, 64))
    assert ATLAS_MAX_BAND == 2 * 1024 - 1  # every lag at the longest n
