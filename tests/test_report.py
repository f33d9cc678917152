"""The per-layer report and model card (tnn_core/report) and its per-channel maths
(tnn_core/analysis/spectral_summary.py), checked against numpy and scipy in float64."""

import csv
import io
import json
import math
import types
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
import torch

from tnn_core.analysis.atlas import MAX_LAYOUT_N
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.spectral_summary import (
    MAX_N,
    STATISTICS,
    band_mass,
    channel_spectrum,
    csn_power_law_fit,
    energy_rank,
    layer_spectra,
    stable_rank,
)
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators.config import OperatorConfig
from tnn_core.report import (
    BATCHED,
    DEFAULT_BAND,
    DEFAULT_RANK,
    default_rank,
    report_for,
    to_csv,
    to_json,
    to_markdown,
)
from tnn_core.training.checkpoint import load
from tnn_core.training.evaluate import layer_kernels
from tnn_core.training.tasks import task_from_info

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1, 2, 7, 13, 64)  # awkward: one, two, odd, prime, a power of two


def _kernel(n: int, seed: int, causal: bool = False) -> np.ndarray:
    """A decaying random kernel [2n-1] (zero negative lags when causal)."""
    rng = np.random.default_rng(seed)
    lags = np.arange(-(n - 1), n)
    t = rng.standard_normal(2 * n - 1) * 0.9 ** np.abs(lags)
    return np.where(lags < 0, 0.0, t) if causal else t


def _dense(t: np.ndarray) -> np.ndarray:
    """T[i, j] = t_{i-j}, written out entry by entry: the test's own reference."""
    n = (len(t) + 1) // 2
    return np.array([[t[n - 1 + i - j] for j in range(n)] for i in range(n)])


# -- ranks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
def test_stable_rank_is_numpys_frobenius_over_spectral_norm(n):
    T = _dense(_kernel(n, n))
    expected = np.linalg.norm(T, "fro") ** 2 / np.linalg.norm(T, 2) ** 2
    assert stable_rank(np.linalg.svd(T, compute_uv=False)) == pytest.approx(expected, rel=1e-12)
    if n >= 2:
        spectrum = channel_spectrum(_kernel(n, n), band=1, rank=2, causal=False)
        assert spectrum.stable_rank == pytest.approx(expected, rel=1e-10)


def test_stable_rank_of_zero_is_nan_and_of_rank_one_is_one():
    assert math.isnan(stable_rank(np.zeros(5)))
    assert stable_rank(np.array([3.0, 0.0, 0.0])) == 1.0


def _direct_energy_rank(sigma: np.ndarray, energy: float = 0.99) -> int:
    total = float(np.sum(sigma**2))
    running = 0.0
    for k, s in enumerate(sigma, start=1):
        running += s * s
        if running >= energy * total:
            return k
    return 0


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", range(3))
def test_energy_rank_matches_a_direct_cumulative_sum(n, seed):
    sigma = np.linalg.svd(_dense(_kernel(n, seed)), compute_uv=False)
    assert energy_rank(sigma) == _direct_energy_rank(sigma)


def test_energy_rank_at_exact_shares_and_for_zero():
    # 99 of 100 in the first value: exactly 99 % is enough, k = 1
    assert energy_rank(np.sqrt(np.array([99.0, 1.0]))) == 1
    assert energy_rank(np.ones(100)) == 99  # equal values: 99 of 100
    assert energy_rank(np.zeros(4)) == 0


# -- the power-law tail -----------------------------------------------------------------------
def _pareto_quantiles(alpha: float, count: int, xmin: float = 1.0) -> np.ndarray:
    """Exact quantiles of the density ∝ x^-α on [xmin, ∞): a sample without noise."""
    u = (np.arange(count) + 0.5) / count
    return xmin * (1 - u) ** (-1 / (alpha - 1))


@pytest.mark.parametrize("alpha", [1.5, 2.5, 4.0])
def test_power_law_recovers_a_known_exponent(alpha):
    fit = csn_power_law_fit(_pareto_quantiles(alpha, 2000))
    assert fit.alpha == pytest.approx(alpha, abs=0.05)
    assert fit.ks < 0.02


def test_power_law_alpha_and_ks_are_scipys_on_the_chosen_tail():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(0.1, 1.0, 300), 1 + rng.pareto(1.7, 200)])
    fit = csn_power_law_fit(values)
    tail = np.sort(values)[::-1][: fit.tail]
    assert tail.min() > fit.xmin and np.sum(values > fit.xmin) == fit.tail  # exceedances
    b, _, _ = scipy.stats.pareto.fit(tail, floc=0, fscale=fit.xmin)  # MLE of b = α - 1
    assert fit.alpha == pytest.approx(1 + b, rel=1e-6)
    law = scipy.stats.pareto(b=fit.alpha - 1, scale=fit.xmin)
    assert fit.ks == pytest.approx(scipy.stats.kstest(tail, law.cdf).statistic, abs=1e-12)


def test_power_law_tail_is_the_smallest_ks_over_every_candidate():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.uniform(0.5, 2.0, 60), 2 + rng.pareto(2.0, 40)])
    x = np.sort(values)[::-1]
    best = math.inf
    for k in range(10, len(x)):  # brute force, scipy's KS for each xmin = x[k]
        a = 1 + k / np.sum(np.log(x[:k] / x[k]))
        law = scipy.stats.pareto(b=a - 1, scale=x[k])
        best = min(best, scipy.stats.kstest(x[:k], law.cdf).statistic)
    assert csn_power_law_fit(values).ks == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_a_channels_tail_is_fitted_to_the_eigenvalues_sigma_squared(causal):
    t = _kernel(64, 5, causal)
    sigma = np.linalg.svd(_dense(t), compute_uv=False)
    expected = csn_power_law_fit(sigma**2)
    spectrum = channel_spectrum(t, 9, 16, causal)
    assert spectrum.csn_alpha == pytest.approx(expected.alpha, rel=1e-9)
    assert spectrum.csn_tail == expected.tail


def test_round_off_singular_values_are_left_out_and_zero_is_nan():
    ones = channel_spectrum(np.ones(127), 9, 16, False)  # T = 1 1ᵀ: σ = (64, 0, ..., 0)
    assert ones.stable_rank == pytest.approx(1.0) and ones.energy_rank == 1
    assert math.isnan(ones.csn_alpha) and ones.csn_tail == 0
    zero = channel_spectrum(np.zeros(127), 9, 16, False)
    assert zero.energy_rank == 0
    assert all(math.isnan(getattr(zero, s)) for s in ("stable_rank", "csn_alpha", "band_mass",
                                                      "sample_error", "optimal_error"))


def test_power_law_without_a_tail_is_nan():
    assert math.isnan(csn_power_law_fit(np.ones(50)).alpha)  # equal values: no power law
    short = csn_power_law_fit(_pareto_quantiles(2.0, 9))  # fewer than MIN_TAIL
    assert math.isnan(short.alpha) and short.tail == 0
    with pytest.raises(ValueError, match="positive"):
        csn_power_law_fit(np.array([1.0, 0.0, 2.0]))


# -- band mass and the SKI errors -------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("band", [1, 2, 5, 9])
def test_band_mass_is_the_dense_masked_share(n, causal, band):
    t = _kernel(n, 7, causal)
    T = _dense(t)
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n) i - j
    mask = (lag >= 0) & (lag < band) if causal else np.abs(lag) <= band // 2
    assert band_mass(t, band, causal) == pytest.approx(np.sum(T[mask] ** 2) / np.sum(T**2),
                                                       rel=1e-12)


def test_band_mass_of_zero_is_nan():
    assert math.isnan(band_mass(np.zeros(9), 3, False))


@pytest.mark.parametrize(("n", "band", "rank", "causal"),
                         [(2, 1, 2, False), (13, 3, 5, True), (64, 9, 16, False)])
def test_ski_errors_match_the_dense_decomposition(n, band, rank, causal):
    t = _kernel(n, 3, causal)
    spectrum = channel_spectrum(t, band, rank, causal)
    norm = np.linalg.norm(_dense(t))
    for method, error in (("sample", spectrum.sample_error), ("fit", spectrum.fit_error)):
        d = decompose(t, band, rank, causal, method=method)
        assert error == pytest.approx(np.linalg.norm(d.residual_matrix()) / norm, abs=1e-7)
    assert spectrum.optimal_error <= spectrum.fit_error + 1e-7 <= spectrum.sample_error + 2e-7


def test_a_length_above_the_limit_is_refused_before_any_matrix():
    with pytest.raises(ValueError, match=rf"n must be an integer in \[2, MAX_N\] = \[2, {MAX_N}\]"):
        channel_spectrum(np.ones(2 * MAX_N + 1), 9, 32, False)
    with pytest.raises(ValueError, match="n must be"):
        layer_spectra(torch.ones(3, 2 * MAX_N + 1), 9, 32, False)
    with pytest.raises(ValueError, match=r"rank must be an integer in \[2, n\] = \[2, 7\]; got 8"):
        channel_spectrum(_kernel(7, 0), 3, 8, False)


# -- the report -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_ski():
    model, info = load(ROOT / "checkpoints" / "digits-ski.safetensors")
    task = task_from_info(info.task)
    return model, info, task, report_for(model, info, task)


def test_a_ski_report_uses_each_layers_own_band_and_rank_and_its_kernels(digits_ski):
    model, _, task, report = digits_ski
    operator = model.config.operator
    n = task.seq_len
    kernels = layer_kernels(model, n)  # (L, D, 2n-1)
    assert report.length == n and len(report.layers) == model.config.layers
    for layer in report.layers:
        assert (layer.operator, layer.band, layer.rank) == ("ski", operator.band, operator.rank)
        assert len(layer.channels) == kernels.shape[1] == layer.width
        for c in (0, 5):  # each layer's own kernels, channel by channel
            expected = channel_spectrum(kernels[layer.layer, c].double(), operator.band,
                                        operator.rank, operator.causal,
                                        gof=c == 0)  # the first channel has its p-value
            assert layer.channels[c] == expected
        for statistic in BATCHED:  # every channel's, batched, as one channel's spectrum says
            np.testing.assert_allclose(
                layer.batched[statistic],
                [getattr(spectrum, statistic) for spectrum in layer.channels], atol=1e-7)


def test_the_card_holds_metric_interval_baselines_and_training(digits_ski):
    _, info, task, report = digits_ski
    card = report.card
    assert card.task == "digits" and card.data == task.describe()
    low, high = card.ci95
    assert low <= card.metric <= high and card.sequences > 0
    assert card.baselines["uniform"] == pytest.approx(0.1)
    assert card.training["steps"] == info.history["train_config"]["steps"]
    assert "model" not in card.training and card.run["command"].startswith("python -m")
    assert card.lineage == {}


def test_band_and_rank_are_validated_against_the_training_length(digits_ski):
    model, info, task, _ = digits_ski
    with pytest.raises(ValueError, match=r"band must be an integer in \[1, 2n-2\] = \[1, 126\]; "
                                         r"got 0"):
        report_for(model, info, task, band=0)
    with pytest.raises(ValueError, match=r"rank must be an integer in \[2, n\] = \[2, 64\]; "
                                         r"got 65"):
        report_for(model, info, task, rank=65)
    too_long = types.SimpleNamespace(seq_len=MAX_LAYOUT_N + 1)  # refused before any work
    with pytest.raises(ValueError, match=f"training length n must be an integer in "
                                         rf"\[2, MAX_LAYOUT_N\] = \[2, {MAX_LAYOUT_N}\]; "
                                         f"got {MAX_LAYOUT_N + 1}"):
        report_for(model, info, too_long)


def test_a_model_without_toeplitz_kernels_is_refused(digits_ski):
    _, info, task, _ = digits_ski
    config = ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=16, layers=1,
                         operator=OperatorConfig(kind="togeipi", heads=2))
    with pytest.raises(ValueError, match=r"layer 0's operator is togeipi; a spectral report needs "
                                         r"channel-wise Toeplitz layers \(tno, ski, fd, ssm\)$"):
        report_for(build_model(config), info, task)


def test_a_non_ski_model_gets_the_defaults_or_the_given_band_and_rank():
    model, info = load(ROOT / "checkpoints" / "digits-tno.safetensors")
    task = task_from_info(info.task)
    report = report_for(model, info, task)
    assert {(layer.band, layer.rank) for layer in report.layers} == {(DEFAULT_BAND, 16)}
    assert default_rank(64) == 16 == 64 // 4 < DEFAULT_RANK  # r = n would be exact, so r < n
    assert not any(layer.exact for layer in report.layers)
    report = report_for(model, info, task, band=3, rank=8)
    assert {(layer.band, layer.rank) for layer in report.layers} == {(3, 8)}


# -- the renderers ----------------------------------------------------------------------------
def test_csv_has_one_row_per_layer_and_channel_with_every_value(digits_ski):
    report = digits_ski[3]
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert len(rows) == sum(layer.width for layer in report.layers)
    for row in rows[:3] + rows[-3:]:
        layer = report.layers[int(row["layer"])]
        spectrum = layer.channels[int(row["channel"])]
        for statistic in STATISTICS:
            expected = layer.batched[statistic][int(row["channel"])] if statistic in BATCHED \
                else getattr(spectrum, statistic)
            assert float(row[statistic]) == pytest.approx(expected, rel=1e-15, nan_ok=True)


def test_json_holds_everything_and_no_nan(digits_ski):
    report = digits_ski[3]
    data = json.loads(to_json(report))  # parses: NaN is written as null
    assert data["card"]["ci95"] == list(report.card.ci95)
    layer = data["layers"][1]
    values = np.array([c.stable_rank for c in report.layers[1].channels])
    assert layer["summary"]["stable_rank"]["median"] == pytest.approx(np.median(values))
    assert layer["summary"]["stable_rank"]["low"] == pytest.approx(np.percentile(values, 25))
    assert len(layer["channels"]) == len(report.layers[1].channels)


def test_markdown_shows_the_card_and_each_layers_median(digits_ski):
    report = digits_ski[3]
    text = to_markdown(report)
    assert "# Model card:" in text and "95 % interval" in text and "majority baseline" in text
    assert "**Lineage.** None recorded" in text
    energy = np.median([c.energy_rank for c in report.layers[0].channels])
    assert f"| 0 | ski | {report.layers[0].band} | {report.layers[0].rank} |" in text
    assert f"| {energy:.3g} [" in text


def test_a_converted_checkpoint_reports_its_lineage(tmp_path):
    """compress → save_converted → load → report: the card names the source file and its
    SHA-256, the plan, the fine-tuning, every stage's metric with its interval and the
    commands; the history it shows is the converted model's own."""
    from tnn_core.compress.pipeline import compress, save_converted
    from tnn_core.compress.plan import CompressionPlan

    model, info = load(ROOT / "checkpoints" / "digits-tno.safetensors")
    task = task_from_info(info.task)
    result = compress(model, task, CompressionPlan.uniform(2, 9, 16, "fit"), finetune_steps=2,
                      factors=(1,), repeats=1)
    path = save_converted(tmp_path / "converted.safetensors", result, info, "convert it")
    converted, saved = load(path)
    lineage = saved.history["lineage"]
    assert lineage["source"] == {"name": "digits-tno.safetensors", "sha256": info.sha256}
    assert lineage["commands"] == [info.history["command"], "convert it"]
    assert saved.history["steps"] == 2 and len(saved.history["evals"]) == 2
    assert saved.history["evals"][0]["metric"] == pytest.approx(result.converted.metric)
    text = to_markdown(report_for(converted, saved, task))
    assert f"converted from digits-tno.safetensors (SHA-256 {info.sha256[:16]}" in text
    assert "fine-tuned 2 steps (all parameters, lr 0.0003)" in text
    assert f"source {100 * result.source.metric:.1f} % (95 % interval" in text
    assert '"rank":16' in text and "    convert it" in text


def test_inspect_offers_the_report_or_says_why_not():
    """lab.inspect's side of the download: the three files from one report, and a sentence
    for a model the report refuses (an operator without Toeplitz kernels)."""
    from tnn_core.lab.inspect import lineage_text, model_report, report_refusal, report_text

    model, info = load(ROOT / "checkpoints" / "digits-fd.safetensors")
    task = task_from_info(info.task)
    assert report_refusal(model, task.seq_len) is None
    made = model_report(model, info, task)
    assert report_text(made, "markdown") == to_markdown(made)
    assert report_text(made, "csv").startswith("layer,channel,operator,n,band,rank")
    assert json.loads(report_text(made, "json"))["card"]["sequences"] == 360
    assert lineage_text(info) is None  # trained from scratch
    togeipi = build_model(ModelConfig(dim=8, layers=1, operator=OperatorConfig(
        kind="togeipi", heads=2, max_length=64)))
    assert "togeipi" in report_refusal(togeipi, 64)
    assert "MAX_LAYOUT_N" in report_refusal(model, MAX_LAYOUT_N + 1)


# -- the spectra's work bound ------------------------------------------------------------------
def test_the_channels_reported_are_the_full_reports_own(digits_ski, monkeypatch):
    """Past the work bound a layer's statistics are those of the full report at the same
    channels (nothing approximated), and every format names the channels it shows."""
    from tnn_core.report import build

    model, info, task, full = digits_ski
    L, D, n = len(full.layers), full.layers[0].width, task.seq_len
    monkeypatch.setattr(build, "SPECTRA_WORK", L * 7 * n**3)
    sampled = report_for(model, info, task)
    for whole, part in zip(full.layers, sampled.layers, strict=True):
        assert len(part.channel_ids) == 7 and part.width == D == len(whole.channels)
        assert [replace(c, csn_p=0.0) for c in part.channels] == [  # p: for its own few
            replace(whole.channels[c], csn_p=0.0) for c in part.channel_ids]
        for statistic in BATCHED:  # still every channel's
            np.testing.assert_array_equal(part.batched[statistic], whole.batched[statistic])
    assert f"over 7 of a layer's {D} channels, evenly spaced" in to_markdown(sampled)
    rows = list(csv.DictReader(io.StringIO(to_csv(sampled))))
    assert len(rows) == L * D
    assert [int(r["channel"]) for r in rows[:D] if r["stable_rank"]] == \
        list(sampled.layers[0].channel_ids)
    assert json.loads(to_json(sampled))["layers"][0]["channel_ids"] == \
        list(sampled.layers[0].channel_ids)
