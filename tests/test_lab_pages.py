"""The Basics and Inspect pages' views (tnn_core.lab.basics, .inspect, .common.kernel_view)
against direct sums."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tnn_core.analysis.dense import display_indices
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.lab.basics import fft_check
from tnn_core.lab.common.kernel_view import kernel_view
from tnn_core.lab.inspect import (
    FACTORS,
    atlas_view,
    checkpoint_path,
    extrapolation,
    length_sweep,
    save_as,
    saved_checkpoints,
    summary,
)
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training import checkpoint
from tnn_core.training.tasks import task_from_info


def toeplitz_by_loops(t: np.ndarray, rows: np.ndarray) -> np.ndarray:
    n = (len(t) + 1) // 2
    return np.array([[t[n - 1 + i - j] for j in rows] for i in rows])


# -- Basics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 7, 192, 193, 1024])
def test_kernel_view_samples_T_at_the_display_indices(n):
    t = np.random.default_rng(n).standard_normal(2 * n - 1)
    view = kernel_view(t)
    rows = np.arange(0, n, math.ceil(n / 192))  # every ⌈n/192⌉-th row and column
    assert np.array_equal(view.indices, rows) and np.array_equal(view.indices,
                                                                  display_indices(n))
    assert view.step == math.ceil(n / 192) and view.n == n
    assert np.array_equal(view.matrix, toeplitz_by_loops(t, rows))
    # Row 0 is T's row 0 at the drawn columns: t_0, t_{-s}, t_{-2s}, ...
    assert np.array_equal(view.matrix[0], t[n - 1 - rows])
    assert np.array_equal(view.lags, np.arange(-(n - 1), n))
    assert view.limit == np.abs(t).max()


def test_kernel_view_of_a_causal_kernel_is_lower_triangular_and_zero_has_unit_limit():
    t = synthetic_kernel("exponential", 40, 0.8, causal=True).numpy()
    view = kernel_view(t)
    assert np.all(np.triu(view.matrix, 1) == 0) and np.all(np.diag(view.matrix) == 1.0)
    assert kernel_view(np.zeros(9)).limit == 1.0


def test_kernel_view_small_multiples_use_the_same_rule():
    view = kernel_view(np.arange(2 * 256 - 1.0), max_cells=64)
    assert view.step == 4 and np.array_equal(view.indices, np.arange(0, 256, 4))


@pytest.mark.parametrize("n", [1, 2, 100])
def test_fft_check_is_exact_and_reports_its_speedup_spread_and_flops(n):
    check = fft_check(synthetic_kernel("spike_smooth", n, 0.9).numpy(), seed=0, device="cpu")
    assert check.max_abs_diff < 1e-12 and check.n == n
    assert check.fft_ms > 0 and check.dense_ms > 0
    assert check.fft_iqr[0] <= check.fft_ms <= check.fft_iqr[1]
    assert check.dense_iqr[0] <= check.dense_ms <= check.dense_iqr[1]
    assert check.speedup == pytest.approx(check.dense_ms / check.fft_ms)
    assert check.dense_flops == 2 * n * n * check.batch
    assert check.flop_ratio == pytest.approx(check.dense_flops / check.fft_flops)
    assert check.flop_crossover_n is not None
    assert (check.flop_ratio > 1) == (n >= check.flop_crossover_n)
    assert f"from n = {check.flop_crossover_n} on" in check.flop_sentence
    assert ("overlap within their spread" in check.time_sentence) != check.times_separate


# -- Inspect: the atlas ----------------------------------------------------------------------
LAMBDAS = ((0.5, 0.7, 0.0, 0.9), (0.6, 0.8, 0.95, 0.0))  # 0.0: an all-zero channel


def stub_model(n_lambdas=LAMBDAS):
    """A model whose layer l, channel c kernel is λ^|k| (λ = LAMBDAS[l][c]; 0: all zero)."""

    def operator(lambdas):
        def kernel(n):
            return torch.stack([synthetic_kernel("exponential", n, lam) if lam else
                                torch.zeros(2 * n - 1) for lam in lambdas])
        return SimpleNamespace(kernel=kernel, dim=len(lambdas),
                               config=SimpleNamespace(kind="tno", causal=False))

    ops = [operator(lams) for lams in n_lambdas]
    return SimpleNamespace(operators=lambda: ops,
                           config=SimpleNamespace(operator=SimpleNamespace(causal=False)))


def test_atlas_rows_measure_each_channel():
    n, band = 48, 5
    atlas = atlas_view(stub_model(), n, band, rank=8)
    ch = atlas.channels
    assert ch.layer.tolist() == [0] * 4 + [1] * 4 and ch.channel.tolist() == [0, 1, 2, 3] * 2
    fitted = np.array([lam for lams in LAMBDAS for lam in lams])
    alive = fitted > 0
    assert np.allclose(ch.decay[alive], fitted[alive], atol=1e-3)
    assert np.all(np.isnan(ch.locality[~alive]))  # the zero channel: undefined, not an error
    # locality: the band energy share ||band(T)||_F² / ||T||_F², lags |k| <= m // 2
    t = synthetic_kernel("exponential", n, 0.7).numpy()
    k = np.arange(-(n - 1), n)
    energy = (n - np.abs(k)) * t**2  # each lag as often as it fills T
    assert ch.locality[1] == pytest.approx(energy[np.abs(k) <= band // 2].sum() / energy.sum(),
                                           rel=1e-5)
    assert np.all((0 <= ch.low_rank[alive]) & (ch.low_rank[alive] <= 1))
    assert atlas.kernels.shape == (len(atlas.kept), 2 * n - 1)


def test_layer_medians_are_the_medians_of_the_rows_ignoring_undefined_ones():
    atlas = atlas_view(stub_model(), 32, 3, rank=8)
    ch, layers = atlas.channels, atlas.layers
    assert layers.layer.tolist() == [0, 1]
    for statistic in ("locality", "decay", "low_rank"):
        for i, layer in enumerate(layers.layer):
            values = getattr(ch, statistic)[ch.layer == layer]
            assert getattr(layers, statistic)[i] == pytest.approx(np.nanmedian(values))
            assert layers.quartiles[statistic][i] == pytest.approx(
                np.nanpercentile(values, [25, 75]))
    assert layers.decay[0] == pytest.approx(np.median([0.5, 0.7, 0.9]), abs=1e-3)
    assert list(layers.columns()) == ["locality", "decay", "low_rank"]


def test_layer_median_of_only_undefined_values_is_nan():
    atlas = atlas_view(stub_model(((0.0, 0.0), (0.5, 0.0))), 16, 3, rank=4)
    assert np.isnan(atlas.layers.decay[0]) and not np.isnan(atlas.layers.decay[1])


@pytest.mark.parametrize("statistic", ["decay", "locality", "low_rank", "outlier"])
def test_sorting_puts_the_chosen_extreme_first_and_undefined_last(statistic):
    atlas = atlas_view(stub_model(), 32, 3, rank=8)
    table = atlas.channels.sorted_by(statistic)
    values = getattr(table, statistic)
    finite = values[~np.isnan(values)]
    descending = statistic in ("locality", "outlier")
    expected = np.sort(finite)[::-1] if descending else np.sort(finite)
    assert np.array_equal(finite, expected)
    assert np.all(np.isnan(values[len(finite):]))  # NaN rows at the end
    # Rows move whole: every (layer, channel) keeps its own statistics.
    for row in range(len(values)):
        original = (atlas.channels.layer == table.layer[row]) & \
                   (atlas.channels.channel == table.channel[row])
        assert np.array_equal(getattr(atlas.channels, statistic)[original], values[[row]],
                              equal_nan=True)


def test_channel_view_is_that_channels_matrix():
    atlas = atlas_view(stub_model(), 300, 3, rank=8)
    view = atlas.channel_view(1, 2)
    t = synthetic_kernel("exponential", 300, 0.95).numpy()
    rows = display_indices(300)
    assert np.allclose(view.matrix, toeplitz_by_loops(t, rows), atol=1e-7)
    assert atlas.channel_view(1, 2, 64).step == math.ceil(300 / 64)


# -- Inspect: checkpoints, summary, extrapolation --------------------------------------------
@pytest.fixture(scope="module")
def tiny_tno():
    config = ModelConfig(dim=4, layers=2, expand_ratio=1, operator=OperatorConfig(kind="tno"))
    torch.manual_seed(0)
    return build_model(config)


def test_extrapolation_evaluates_the_same_kernel_at_more_lags(tiny_tno):
    longer = extrapolation(tiny_tno, 16, layer=1, channel=2)
    assert longer.lengths == tuple(f * 16 for f in FACTORS)
    for n, lags, kernel in zip(longer.lengths, longer.lags, longer.kernels, strict=True):
        assert np.array_equal(lags, np.arange(-(n - 1), n)) and kernel.shape == (2 * n - 1,)
    # TNN's kernel is a function of the lag k (RPE times λ^|k|): longer lengths only add lags.
    first, last = longer.kernels[0], longer.kernels[-1]
    middle = last[(64 - 1) - 15:(64 - 1) + 16]
    assert np.allclose(middle, first, atol=1e-6)
    assert np.array_equal(first, tiny_tno.operators()[1].kernel(16)[2].detach().double().numpy())


SHIPPED = checkpoint.SHIPPED_DIR / "digits-tno.safetensors"


def test_summary_reads_the_checkpoints_own_record():
    _, info = checkpoint.load(checkpoint.SHIPPED_DIR / "listops-ski.safetensors")
    about = summary(info)
    evals = info.history["evals"]
    assert about.task == info.task["name"] == "listops"
    assert about.final_metric == evals[-1]["metric"]
    assert about.eval_steps.tolist() == [e["step"] for e in evals]
    assert about.eval_metric.tolist() == [e["metric"] for e in evals]
    assert about.train_n == info.task["settings"]["seq_len"]
    assert about.size == f"{info.model_config.dim} × {info.model_config.layers}"
    assert "vocab" not in about.config["task"]
    # digits records no seq_len: its 8 × 8 images are sequences of 64 pixels
    assert summary(checkpoint.load(SHIPPED)[1]).train_n == 64


def test_length_sweep_of_a_fixed_length_task_has_no_longer_lengths():
    model, info = checkpoint.load(SHIPPED)
    task = task_from_info(info.task)
    sweep = length_sweep(model, task)
    assert sweep.factor.tolist() == list(FACTORS)
    assert sweep.length.tolist() == [f * task.seq_len for f in FACTORS]
    assert np.isfinite(sweep.metric[0]) and np.all(np.isnan(sweep.metric[1:]))


def test_checkpoint_keys_map_to_plain_file_names(tmp_path):
    assert checkpoint_path("digits-tno", tmp_path) == SHIPPED
    assert checkpoint_path("user/mine", tmp_path) == tmp_path / "mine.safetensors"
    for bad in ("../evil", "user/../x", "user/", "a/b", ""):
        with pytest.raises(ValueError, match="plain name"):
            checkpoint_path(bad, tmp_path)


def test_saved_runs_join_the_choices_and_load_again(tmp_path):
    model, info = checkpoint.load(SHIPPED)
    result = SimpleNamespace(model=model, task=SimpleNamespace(info=lambda: info.task),
                             history=info.history, model_config=info.model_config)
    with pytest.raises(ValueError, match="name must be"):
        save_as(result, "../evil", tmp_path)
    assert not tmp_path.joinpath("user").exists()
    folder = tmp_path / "user"
    assert "user/mine" not in saved_checkpoints(folder)
    assert save_as(result, "mine", folder) == "user/mine"
    choices = saved_checkpoints(folder)
    assert choices["user/mine"] == "mine (saved by you)"
    assert choices["digits-tno"].startswith("digits-tno · spike plus smooth")
    loaded, _ = checkpoint.load(checkpoint_path("user/mine", folder))
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(),
                                                 model.state_dict().values(), strict=True))


def test_a_saved_name_is_never_overwritten(tmp_path):
    """Sessions share the user folder: a second save under a taken name is refused."""
    model, info = checkpoint.load(SHIPPED)
    result = SimpleNamespace(model=model, task=SimpleNamespace(info=lambda: info.task),
                             history=info.history, model_config=info.model_config)
    save_as(result, "shared-name", tmp_path)
    before = (tmp_path / "shared-name.safetensors").read_bytes()
    with pytest.raises(ValueError, match="already taken"):
        save_as(result, "shared-name", tmp_path)
    assert (tmp_path / "shared-name.safetensors").read_bytes() == before
