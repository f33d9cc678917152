"""Every answer the lessons state, recomputed from ``tnn_core`` at the step's own settings.

Each question of the shipped lessons has a check here, keyed "lesson-slug:step": it
rebuilds what the step is about from the lab (the step's view settings: n, λ, r, the
activation, the checkpoint) and asserts the stated answer is the computed one, and that
the numbers the explanation and the notice quote are the computed numbers. A question
without a check fails ``test_every_question_has_a_check``, so a lesson cannot drift from
the lab unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import lesson_checks_recurrent  # lesson 6's checks (this file holds its 400 lines)
import numpy as np
import pytest
import torch

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.fd_response import fd_response
from tnn_core.analysis.gram import band_lags
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.analysis.profiles import channel_kernel
from tnn_core.bench.flops import dense_flops
from tnn_core.compress.convert import convert
from tnn_core.compress.measure import task_scores
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.core.interpolation import inducing_points
from tnn_core.core.toeplitz import fft_size, matvec
from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.basics import circulant_embedding
from tnn_core.lab.compress import quick_conversion
from tnn_core.lab.frequency import (
    FIT_START,
    decay_curve,
    decay_magnitude,
    fit_end,
    frequency_view,
    kernel_fit,
)
from tnn_core.lab.inspect import (
    DECAY_PAIR,
    atlas_view,
    band_ablation,
    decay_pair,
    opening_atlas,
    summary,
)
from tnn_core.lab.lesson.answers import (
    band_only,
    conversion_loss,
    fft_against_dense,
    negative_lags,
    never_to_roundoff,
    smaller_frobenius,
)
from tnn_core.lab.lesson.sketch import (
    decay_envelope,
    dense_cost_against_n,
    fd_kernel_decay,
    fit_error_against_r,
)
from tnn_core.training.checkpoint import load
from tnn_core.training.tasks import task_from_info

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
LESSONS = {lesson.slug: lesson for lesson in lesson_lab.load_lessons(lesson_lab.LESSON_DIR)[0]}
QUESTIONS = sorted(f"{slug}:{i}" for slug, lesson in LESSONS.items()
                   for i, step in enumerate(lesson.steps, start=1) if step.question is not None)
CHECKS: dict[str, Callable[[lesson_lab.Step, dict], None]] = {}


def check(key: str):
    def register(function):
        CHECKS[key] = function
        return function
    return register


def settings(step: lesson_lab.Step) -> dict[str, str]:
    return dict(step.view.params) if step.view is not None else {}


def says(text: str, *numbers: str) -> None:
    """``text`` quotes each of ``numbers`` as written."""
    for number in numbers:
        assert number in text, f"{number!r} is not in {text!r}"


@cache
def trained(name: str):
    model, info = load(CHECKPOINTS / f"{name}.safetensors")
    return model.double(), task_from_info(info.task)


# -- lesson 1 ----------------------------------------------------------------------------
@check("1-toeplitz-fft:1")
def _distinct_entries(step, view):
    n = int(view["n"])
    T = dense_toeplitz(np.arange(2.0 * n - 1))  # every lag its own value
    assert step.question.answer == str(len(np.unique(T)))
    says(step.question.explain, f"= {len(np.unique(T))} numbers", f"n² = {n * n}")


@check("1-toeplitz-fft:2")
def _causal_zero_part(step, view):
    n = int(view["n"])
    T = dense_toeplitz(synthetic_kernel("exponential", n, float(view["decay"]), True).numpy())
    upper, lower = T[np.triu_indices(n, 1)], T[np.tril_indices(n, -1)]
    assert (upper == 0).all() and (lower != 0).all() and (np.diag(T) != 0).all()
    assert step.question.answer == "the upper triangle (j > i)"


@check("1-toeplitz-fft:3")
def _circulant_zeros(step, view):
    n = int(view["n"])
    embedding = circulant_embedding(np.ones(2 * n - 1))
    says(step.question.prompt, f"n = {n}", f"N = {embedding.N}")
    assert step.question.answer == embedding.padding
    says(step.question.explain, f"N − (2n − 1) = {embedding.N} − {2 * n - 1} = "
                                f"{embedding.padding}")


@check("1-toeplitz-fft:4")
def _fft_product_error(step, view):
    n = int(view["n"])
    t = synthetic_kernel("spike_smooth", n, float(view["decay"])).double()
    x = torch.randn(4, n, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    exact = dense_toeplitz(t.numpy()) @ x[..., 0].numpy().T  # (n, 4)
    fast = matvec(t[None], x)[..., 0].numpy().T  # (n, 4)
    difference = np.abs(fast - exact).max() / np.abs(exact).max()
    assert 0 < difference < 1e-12  # round-off: neither 10 % nor exactly zero
    assert step.question.computed == "fft_against_dense"
    assert fft_against_dense(step.question.choices, t.numpy(), 0).startswith(
        "floating-point round-off")


@check("1-toeplitz-fft:5")
def _dense_cost_doubling(step, view):
    curve = dense_cost_against_n()  # what the sketch is compared with
    assert step.question.sketch == "dense_cost_against_n"
    n = int(view["n"])
    assert dense_flops(2 * n) / dense_flops(n) == 4
    slope = np.diff(np.log(curve.y)) / np.diff(np.log(curve.x))
    np.testing.assert_allclose(slope, 2)  # a straight line of slope 2 on log-log axes
    says(step.question.explain, "2n² flops", "grows 4 times", "slope 2")


# -- lesson 2 ----------------------------------------------------------------------------
@check("2-tnn-rpe-and-decay:2")
def _decay_at_lag_20(step, view):
    curve = decay_envelope(float(view["decay"]))  # what the sketch is compared with
    kernel = synthetic_kernel("exponential", 64, float(view["decay"])).numpy()
    factor, far = kernel[63 + 20], kernel[63 + 60]  # the envelope λ^|k| at lags 20, 60
    assert step.question.sketch == "decay_envelope"
    assert curve.y[20] == pytest.approx(factor) and curve.y[60] == pytest.approx(far)
    says(step.question.explain, f"≈ {factor:.4f}", f"about {100 * factor:.0f} %",
         f"about {far:.4f}")


@check("2-tnn-rpe-and-decay:3")
def _reach_of_lambda(step, view):
    n = int(view["n"])
    at_100 = {decay: synthetic_kernel("exponential", n, decay).numpy()[n - 1 + 100]
              for decay in (0.9, 0.99)}  # the two λ the step's title and prompt compare
    says(step.title, "λ = 0.9", "λ = 0.99")
    assert float(view["decay"]) in at_100  # the figure opens at one of them
    assert at_100[0.99] > 0.3 > 1e-4 > at_100[0.9]
    assert step.question.answer == "λ = 0.99"
    says(step.question.explain, f"≈ {at_100[0.99]:.2f}", f"≈ {at_100[0.9] * 1e5:.0f}·10⁻⁵")


# -- lesson 3 ----------------------------------------------------------------------------
@check("3-ski-sparse-plus-low-rank:2")
def _band_lags(step, view):
    lags = band_lags(int(view["n"]), int(view["band"]), False)
    assert step.question.answer == f"|k| ≤ {lags.max()}" and lags.min() == -lags.max()


@check("3-ski-sparse-plus-low-rank:3")
def _spacing(step, view):
    n, r = int(view["n"]), int(view["rank"])
    spacing = np.diff(inducing_points(n, r).numpy())
    assert np.allclose(spacing, spacing[0]) and step.question.answer == spacing[0]


@check("3-ski-sparse-plus-low-rank:4")
def _fit_against_sample(step, view):
    n = int(view["n"])
    t = synthetic_kernel("spike_smooth", n, 0.99).numpy()
    errors = {method: decompose(t, 9, int(view[f"{side}_rank"]), method=method
                                ).errors.relative_frobenius
              for side, method in (("a", view["a_method"]), ("b", view["b_method"]))}
    assert errors["fit"] < errors["sample"]
    assert step.question.computed == "smaller_frobenius" and step.question.answer is None
    sides = [(9, int(view[f"{side}_rank"]), view[f"{side}_method"]) for side in "ab"]
    assert smaller_frobenius(step.question.choices, t, sides, False) == "fit"


@check("3-ski-sparse-plus-low-rank:5")
def _error_falls_with_r(step, view):
    n, band = int(view["n"]), int(view["band"])
    t = synthetic_kernel("spike_smooth", n, float(view["decay"])).numpy()
    fitted = {r: decompose(t, band, r, method="fit").errors.relative_frobenius
              for r in (2, 16, 64)}
    curve = fit_error_against_r(t, band, False)  # what the sketch is compared with
    assert step.question.sketch == "fit_error_against_r"
    np.testing.assert_allclose([curve.y[list(curve.x).index(r)] for r in fitted],
                               list(fitted.values()), rtol=1e-6)
    slope = np.log(fitted[64] / fitted[16]) / np.log(4)
    says(step.question.explain, f"{fitted[2]:.2f} at r = 2", f"{fitted[16]:.3f} at r = 16",
         f"{fitted[64]:.4f} at r = 64", f"r^−{-slope:.1f}")


@check("3-ski-sparse-plus-low-rank:6")
def _aliasing(step, view):
    n, period = int(view["n"]), 8
    first = next(r for r in range(2, n + 1) if (n - 1) / (r - 1) < period / 2)
    assert step.question.answer == first
    t = synthetic_kernel("oscillating", n, float(view["decay"])).numpy()
    assert view["method"] == "fit"  # the figure shows the errors the notice quotes
    fitted = {r: decompose(t, int(view["band"]), r, method="fit").errors.relative_frobenius
              for r in (first - 1, first, first + 1, 256)}
    assert min(fitted[first - 1], fitted[first], fitted[first + 1]) > 0.5  # still poor
    says(step.notice, "h = 73", f"r = {first} on",
         *(f"{fitted[r]:.2f}" for r in (first - 1, first, first + 1, 256)))


# -- lesson 4 ----------------------------------------------------------------------------
def fd_settings(view) -> dict:
    return dict(width=int(view["width"]), depth=int(view["depth"]), n=int(view["n"]),
                fd_input="cosine" if view["smooth"] == "true" else "omega",
                causal=view["causal"] == "true")


@check("4-fd-causality-by-hilbert:1")
def _fd_kernel_decay(step, view):
    s = fd_settings(view)
    kernel = fd_response(view["activation"], **s).kernel
    fit = kernel_fit(kernel, fft_size(s["n"]))
    curve = fd_kernel_decay(view["activation"], s["width"], s["depth"], s["n"], 0,
                            s["fd_input"], s["causal"])  # what the sketch is compared with
    assert step.question.sketch == "fd_kernel_decay"
    np.testing.assert_allclose(curve.y, decay_magnitude(kernel)[1:], rtol=1e-12)
    assert fit.better_law == "power law"
    says(step.question.explain, f"t^−{fit.exponent:.2f}",
         f"lags {FIT_START} … {fit_end(s['n'], fft_size(s['n']))}")


@check("4-fd-causality-by-hilbert:2")
def _causal_negative_lags(step, view):
    s = fd_settings(view)
    kernel = fd_response(view["activation"], **s).kernel
    assert s["causal"] and (kernel[: s["n"] - 1] == 0).all()
    assert step.question.computed == "negative_lags"
    assert negative_lags(step.question.choices, kernel) == "zero up to round-off"
    bidirectional = fd_response(view["activation"], **{**s, "causal": False}).kernel
    assert negative_lags(step.question.choices, bidirectional) == "small but clearly non-zero"


@check("4-fd-causality-by-hilbert:3")
def _never_to_round_off(step, view):
    s = fd_settings(view)
    assert s["fd_input"] == "cosine" and step.question.computed == "never_to_roundoff"
    for seed in range(4):  # ReLU's kinks leave a 1/t² tail at every seed: not the weights
        reaches = {a: decay_curve(decay_magnitude(fd_response(a, **s, seed=seed).kernel)
                                  ).roundoff_from for a in step.question.choices}
        assert reaches.pop("relu") is None and max(reaches.values()) < 100
        assert never_to_roundoff(step.question.choices, seed=seed, **s) == "relu"
    tail = decay_magnitude(fd_response("relu", **s).kernel)  # seed 0, as the page
    mantissa, power = f"{tail[-1] / tail.max():.0e}".split("e-0")
    lags = {a: decay_curve(decay_magnitude(fd_response(a.lower(), **s).kernel)).roundoff_from
            for a in ("SiLU", "GeLU")}
    says(step.question.explain, f"about {mantissa}·10⁻{'⁰¹²³⁴⁵⁶⁷⁸⁹'[int(power)]}",
         f"lag {s['n'] - 1}")
    says(step.notice, *(f"{a}, lag {lag}" for a, lag in lags.items()))


@check("4-fd-causality-by-hilbert:4")
def _premise(step, view):
    s = fd_settings(view)
    premise = frequency_view(view["activation"], s["width"], s["depth"], s["n"], 0,
                             s["fd_input"], s["causal"]).premise
    assert "fails here" in premise and step.question.answer == "no"
    assert "fails here" in frequency_view("gelu", s["width"], s["depth"], s["n"], 0,
                                          "cosine", s["causal"]).premise
    assert "holds here" in frequency_view("silu", s["width"], s["depth"], s["n"], 0,
                                          "cosine", s["causal"]).premise


# -- lesson 5 ----------------------------------------------------------------------------
@check("5-reading-a-trained-model:2")
def _band_ablation(step, view):
    model, task = trained("digits-tno")
    ablation = band_ablation(model, task, 9)
    full, restricted = ablation.full.metric, ablation.restricted.metric
    assert restricted - task.chance < 0.1 < full - restricted and ablation.margin_lost > 0.5
    assert step.question.computed == "band_only"  # "most of the way" to chance
    assert band_only(step.question.choices, ablation) == "it falls far, towards chance"
    says(step.notice, f"about {100 * full:.0f} %", f"all {ablation.full.sequences}")
    says(step.question.explain, f"from {100 * full:.0f} % to {100 * restricted:.0f} %",
         f"chance rate of {100 * task.chance:.0f} %")


@check("5-reading-a-trained-model:3")
def _learned_error_against_r(step, view):
    model, _ = load(CHECKPOINTS / "digits-tno.safetensors")  # float32, as the app has it
    n, band = int(view["n"]), int(view["band"])
    assert view["source"] == "Learned kernel from a checkpoint" and "checkpoint" not in view
    kernel = channel_kernel(model.operators()[0], n, 0).numpy()  # the first checkpoint's
    fitted = {r: decompose(kernel, band, r, method="fit").errors.relative_frobenius
              for r in (2, 16, 48, n)}
    assert step.question.sketch == "fit_error_against_r"
    assert fitted[n] < 1e-7  # r = n: every position an inducing point, exact
    says(step.question.explain, f"{fitted[2]:.2f} at r = 2", f"{fitted[16]:.3f} at r = 16",
         f"{fitted[48]:.4f} at r = 48", f"r = {n} = n")


@check("5-reading-a-trained-model:4")
def _compression_cost(step, view):
    model, task = trained("digits-tno")
    band, rank = int(view["band"]), int(view["rank"])
    converted, errors = convert(model, CompressionPlan.uniform(2, band, rank, view["method"]),
                                task.seq_len)
    source, after = task_scores(model, task).metric, task_scores(converted, task).metric
    assert abs(after - source) < 0.01 and step.question.computed == "conversion_loss"
    quick = quick_conversion(model, task, band, rank, view["method"])  # what the step shows
    assert conversion_loss(step.question.choices, quick) == "less than a point"
    with pytest.raises(ValueError, match="none of the choices"):  # m = 1, r = 2: 78 → 24 %
        conversion_loss(step.question.choices, quick_conversion(model, task, 1, 2, "sample"))
    assert (quick.source.metric, quick.converted.metric) == pytest.approx((source, after))
    assert quick.errors == pytest.approx(errors)
    for layer in range(2):  # each layer alone: the other kept
        plan = CompressionPlan(tuple(LayerPlan(band, rank, view["method"] if i == layer
                                               else "keep") for i in range(2)))
        alone = task_scores(convert(model, plan, task.seq_len)[0], task).metric
        assert quick.alone[layer].metric == pytest.approx(alone)
    says(step.question.explain, f"{100 * after:.1f} %", f"{errors[0]:.2f} for layer 0",
         f"{errors[1]:.2f} for layer 1")


@pytest.mark.slow  # converts and scores a model per layer
def test_each_layer_alone_is_that_layer_converted():
    """quick_conversion's per-layer scores, where converting a layer costs a lot (m = 1,
    r = 2): each is the model with that layer converted and the other kept."""
    model, task = trained("digits-tno")
    quick = quick_conversion(model, task, 1, 2, "sample")
    for layer in range(2):
        plan = CompressionPlan(tuple(LayerPlan(1, 2, "sample" if i == layer else "keep")
                                     for i in range(2)))
        assert quick.alone[layer].metric == pytest.approx(
            task_scores(convert(model, plan, task.seq_len)[0], task).metric)
    assert abs(quick.alone[0].metric - quick.alone[1].metric) > 0.1  # a swap shows


@pytest.mark.slow  # scores both charlm models at 1x to 16x their length
def test_the_table10_step_quotes_the_pair():
    """Step 2.4 has no question; its notice and text quote TNN's Table 10 pair."""
    step = LESSONS["2-tnn-rpe-and-decay"].steps[3]
    assert step.figures == ("table10",)
    (first, first_info), (second, _) = (load(CHECKPOINTS / f"{name}.safetensors")
                                        for name in DECAY_PAIR)
    task = task_from_info(first_info.task)
    pair = decay_pair((first, second), DECAY_PAIR, task)
    last = pair.metric_last  # [2, factors]: λ = 0.99, then λ = 1
    assert list(pair.decays) == [0.99, 1.0] and pair.factor[-1] == 16
    says(step.text, f"trained at {task.seq_len}", "16×")
    says(step.notice, f"last {task.seq_len} positions", f"near {last[0, 0]:.2f} bpc",
         f"from {last[1, 0]:.2f} to {last[1, -1]:.2f} bpc", f"chance ({pair.chance:.2f})")
    assert abs(last[0, -1] - last[0, 0]) < 0.05  # "stays near"


def test_the_atlas_step_quotes_the_atlas():
    """Step 5.1 has no question; its notice quotes the atlas's medians per layer."""
    step = LESSONS["5-reading-a-trained-model"].steps[0]
    assert step.figures == ("atlas",)
    model, info = load(CHECKPOINTS / "digits-tno.safetensors")
    n = summary(info).train_n
    atlas = atlas_view(model, n, *opening_atlas(model.config, n)[1:])
    says(step.notice, *(f"{100 * v:.0f} %" for v in atlas.layers.locality),
         *(f"{100 * v:.1f} %" for v in atlas.layers.low_rank))


# -- the contract ------------------------------------------------------------------------
lesson_checks_recurrent.register(check)


def test_every_question_has_a_check():
    assert sorted(CHECKS) == QUESTIONS


@pytest.mark.parametrize("key", QUESTIONS)
def test_the_stated_answer_is_the_computed_one(key):
    slug, number = key.rsplit(":", 1)
    step = LESSONS[slug].steps[int(number) - 1]
    CHECKS[key](step, settings(step))
