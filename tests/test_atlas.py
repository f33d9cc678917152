"""The kernel atlas: per-channel statistics agree with direct computations."""

import math

import numpy as np
import pytest
import torch

from tnn_core.analysis import decompose
from tnn_core.analysis.atlas import channel_stats, kernel_atlas
from tnn_core.analysis.presets import synthetic_kernel


def test_locality_is_the_mass_share_on_the_band_lags():
    n, band = 50, 5
    T = synthetic_kernel("spike_smooth", n, 0.9)
    t = T.numpy()
    inside = np.abs(np.arange(-(n - 1), n)) <= band // 2
    stats = channel_stats(T, band, 8, causal=False)
    assert stats["locality"] == pytest.approx(np.abs(t[inside]).sum() / np.abs(t).sum(),
                                              rel=1e-12)


def test_decay_and_low_rank_match_the_analysis():
    t = synthetic_kernel("exponential", 64, 0.8)
    stats = channel_stats(t, 5, 16, causal=False)
    assert stats["decay"] == pytest.approx(0.8, abs=1e-3)
    dec = decompose(t, 5, 16, method="sample")
    n, k = 64, np.arange(-63, 64)
    copies, coeffs = n - np.abs(k), t.numpy()
    off_band = np.sqrt((copies * coeffs**2)[np.abs(k) > 2].sum())  # ||T - band||_F
    total = np.sqrt((copies * coeffs**2).sum())  # ||T||_F
    assert stats["low_rank"] == pytest.approx(dec.errors.relative_frobenius * total / off_band,
                                              rel=1e-6)
    assert stats["optimal"] <= stats["low_rank"] + 1e-12


def test_atlas_rows():
    kernels = torch.stack([torch.stack([synthetic_kernel("exponential", 32, lam)
                                        for lam in (0.5, 0.7, 0.9)]),
                           torch.stack([synthetic_kernel("oscillating", 32, lam)
                                        for lam in (0.5, 0.7, 0.9)])])  # (2, 3, 63)
    rows = kernel_atlas(kernels, band=3, rank=8, channels=2)
    assert [(r["layer"], r["channel"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert rows[0]["decay"] == pytest.approx(0.5, abs=1e-3)
    assert rows[1] == {"layer": 0, "channel": 1, **channel_stats(kernels[0, 1], 3, 8, False)}


def test_zero_kernel_gives_undefined_statistics_not_an_error():
    stats = channel_stats(torch.zeros(31, dtype=torch.float64), 3, 4, causal=False)
    assert math.isnan(stats["locality"]) and math.isnan(stats["low_rank"])


def test_atlas_rejects_bad_shapes():
    with pytest.raises(ValueError, match="kernels must have shape"):
        kernel_atlas(torch.zeros(3, 5))


# -- the lab's atlas of a trained model (common.atlas) ---------------------------------------
def test_a_togeipi_atlas_measures_each_heads_point_spread_function():
    """Its channels share their head's T_h: one row per head, named by its first channel,
    whose kernel is psf_kernel(n) of that head; a channel's learned kernel is its head's."""
    from tnn_core.lab.common.atlas import atlas_view
    from tnn_core.lab.common.kernel_sources import learned_kernel
    from tnn_core.models import ModelConfig, build_model
    from tnn_core.operators import OperatorConfig

    torch.manual_seed(0)
    model = build_model(ModelConfig(dim=12, layers=2, expand_ratio=1, operator=OperatorConfig(
        kind="togeipi", heads=3, max_length=16)))
    atlas = atlas_view(model, 10, 3, 4, channels=16)
    assert atlas.channels.channel.tolist() == [0, 4, 8, 0, 4, 8]
    psf = model.operators()[1].psf_kernel(10).detach().double().numpy()  # (H, 2n-1)
    np.testing.assert_array_equal(atlas.channel_view(1, 8).coeffs, psf[2])
    np.testing.assert_array_equal(learned_kernel(model, 10, 1, 9), psf[2])  # channel 9: head 2
    with pytest.raises(ValueError, match="max_length"):
        learned_kernel(model, 17, 0, 0)


@pytest.mark.parametrize("band", [1, 64, 2047, 65_536])
def test_an_ski_atlas_opens_at_its_own_band_within_the_slider(band):
    from tnn_core.lab.common.atlas import ATLAS_MAX_BAND, opening_atlas
    from tnn_core.models import ModelConfig
    from tnn_core.operators import OperatorConfig

    config = ModelConfig(operator=OperatorConfig(kind="ski", band=band))
    assert opening_atlas(config, 64) == (64, min(band, ATLAS_MAX_BAND))
    assert ATLAS_MAX_BAND == 2 * 1024 - 1  # every lag at the longest n
