"""training.scores, training.verdicts and the tasks' evaluation sets: every metric the lab
reports, its interval, and the one rule that turns two of them into a verdict."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators.config import OperatorConfig
from tnn_core.training.evaluate import score
from tnn_core.training.scores import (
    Difference,
    Scores,
    clopper_pearson,
    difference,
    median_ci,
)
from tnn_core.training.tasks import CharLMConfig, CharLMTask, get_task
from tnn_core.training.verdicts import TOLERANCE, change_text, quality, quality_sentence

RNG = np.random.default_rng(7)


def bpc_scores(loss_per_target: np.ndarray, targets: int = 100) -> Scores:
    """N sequences of ``targets`` targets each, with these mean losses (nats)."""
    counts = np.full(len(loss_per_target), targets)
    return Scores("bpc", False, loss_per_target * counts, np.zeros(len(counts)), counts)


def accuracy_scores(right: np.ndarray) -> Scores:
    """One target per sequence (a classifier), ``right`` 0/1 per sequence."""
    return Scores("accuracy", True, np.zeros(len(right)), right.astype(float),
                  np.ones(len(right)))


# -- the metric and its interval ----------------------------------------------------------------
def test_the_metric_is_a_ratio_of_sums():
    loss, targets = np.array([3.0, 5.0, 1.0]), np.array([2.0, 4.0, 1.0])
    scores = Scores("bpc", False, loss, np.array([1.0, 2.0, 0.0]), targets)
    assert scores.metric == pytest.approx(9 / 7 / math.log(2), rel=1e-15)
    assert scores.accuracy == pytest.approx(3 / 7, rel=1e-15)
    assert scores.sequences == 3


@pytest.mark.parametrize("successes, trials", [(0, 1), (1, 1), (0, 360), (281, 360),
                                               (1187, 2048), (2048, 2048), (7, 13)])
def test_an_accuracy_gets_the_exact_binomial_interval(successes, trials):
    expected = stats.binomtest(successes, trials).proportion_ci(0.95, method="exact")
    assert clopper_pearson(successes, trials) == pytest.approx(
        (expected.low, expected.high), abs=1e-12)
    right = np.arange(trials) < successes
    assert accuracy_scores(right).ci95 == pytest.approx((expected.low, expected.high),
                                                        abs=1e-12)


def test_a_bootstrap_interval_covers_the_metric_is_fixed_and_shrinks_with_n():
    small = bpc_scores(RNG.normal(1.4, 0.4, 300))
    large = bpc_scores(np.tile(small.loss / 100, 16))  # the same values, 16 times as many
    low, high = small.ci95
    assert low < small.metric < high
    assert small.ci95 == small.ci95  # seeded: the same interval every time
    width = high - low
    assert (large.ci95[1] - large.ci95[0]) == pytest.approx(width / 4, rel=0.15)  # 1/√16
    se = (small.loss / 100 / math.log(2)).std(ddof=1) / math.sqrt(300)
    assert width == pytest.approx(2 * 1.96 * se, rel=0.1)  # the normal approximation


def test_a_paired_difference_cancels_what_both_share():
    """Two models on the same sequences: per-sequence difficulty varies a lot, the models
    differ by a small constant. The paired interval is narrow and excludes 0; the unpaired
    one cannot see the difference."""
    difficulty = RNG.normal(1.4, 0.5, 500)
    a = bpc_scores(difficulty)
    b = bpc_scores(difficulty + 0.01 + RNG.normal(0, 0.002, 500))
    paired, independent = difference(a, b, paired=True), difference(a, b, paired=False)
    assert paired.worse_by == pytest.approx(0.01 / math.log(2), rel=0.05)
    assert 0 < paired.low < paired.worse_by < paired.high
    assert independent.low < 0 < independent.high
    with pytest.raises(ValueError, match="same sequences"):
        difference(a, bpc_scores(difficulty[:10]), paired=True)


def test_higher_is_better_flips_the_sign_of_worse():
    worse = difference(accuracy_scores(np.ones(50)), accuracy_scores(np.arange(50) < 40),
                       paired=True)
    assert worse.worse_by == pytest.approx(0.2) and worse.low > 0


def test_merged_windows_sum_the_sequences_they_cover():
    scores = bpc_scores(np.arange(1.0, 9.0))
    merged = scores.merged(2, 3)
    assert merged.loss.tolist() == [300.0, 700.0, 1100.0] and merged.sequences == 3
    with pytest.raises(ValueError, match="cannot merge 8 sequences into 5 groups of 2"):
        scores.merged(2, 5)


@pytest.mark.parametrize("n", [1, 2, 5, 6, 9, 15, 40])
def test_the_median_interval_is_order_statistics_with_95_percent_coverage(n):
    values = RNG.permutation(np.arange(1.0, n + 1))
    low, high = median_ci(values)
    k = int(low)  # values are 1..n: the k-th smallest is k
    assert high == n + 1 - k  # symmetric order statistics
    coverage = 1 - 2 * stats.binom.cdf(k - 1, n, 0.5)
    if n >= 6:
        assert coverage >= 0.95 and 1 - 2 * stats.binom.cdf(k, n, 0.5) < 0.95  # the tightest
    else:
        assert (low, high) == (1, n)  # too few rounds: the whole range


# -- verdicts -------------------------------------------------------------------------------
def _change(worse_by: float, low: float, high: float, name: str = "bpc") -> Difference:
    reference = bpc_scores(np.ones(4)) if name == "bpc" else accuracy_scores(np.ones(4))
    return Difference(worse_by, low, high, True, reference, reference)


@pytest.mark.parametrize("low, high, verdict", [
    (-0.02, 0.049, "keeps"), (-0.5, -0.1, "keeps"), (0.051, 0.2, "loses"),
    (0.03, 0.07, "cannot tell"), (-0.1, 0.06, "cannot tell")])
def test_one_rule_for_keeps_loses_and_cannot_tell(low, high, verdict):
    assert TOLERANCE["bpc"] == 0.05
    assert quality(_change((low + high) / 2, low, high)) == verdict


def test_the_sentence_carries_the_numbers_and_the_sequences():
    sentence = quality_sentence(_change(0.04, 0.03, 0.07), "the model", "At 2×,")
    assert sentence.startswith("At 2×, we cannot tell whether the model keeps its quality "
                               "with 4 sequences")
    assert "0.040 bpc worse (95 % interval 0.030 to 0.070 bpc worse)" in sentence
    assert "0.050 bpc tolerance" in sentence
    assert change_text(_change(-0.012, -0.014, -0.011)) == \
        "0.012 bpc better (95 % interval 0.011 to 0.014 bpc better)"
    assert change_text(_change(0.021, -0.005, 0.04, "accuracy")) == \
        "2.1 points worse (95 % interval 0.5 points better to 4.0 points worse)"


# -- the evaluation sets ----------------------------------------------------------------------
TEXT = ("the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor "
        "jugs. " * 200).encode()


def test_charlm_tiles_the_same_characters_at_every_dividing_length():
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=16))
    span = task.evaluation_span()
    assert span % (16 * 16) == 0 and span <= len(task._data["val"]) - 1
    text = task._data["val"][: span + 1].long()
    for n in (16, 32, 64, 256):
        tokens, targets = task.evaluation_set(n)
        assert tokens.shape == (span // n, n)
        assert torch.equal(tokens.reshape(-1), text[:-1]) and torch.equal(
            targets.reshape(-1), text[1:])  # every character scored once, at every length
    with pytest.raises(ValueError, match=f"length must be in \\[1, {span:,}\\]"):
        task.evaluation_set(span + 1)


def test_listops_and_digits_evaluate_their_held_out_sets():
    listops = get_task("listops")
    tokens, labels = listops.evaluation_set()
    assert len(tokens) == listops.config.val_size == 2048
    held = {tuple(listops.decode(row).split()) for row in tokens}
    assert held == listops.held_out()  # exactly the expressions training never sees
    digits = get_task("digits")
    tokens, labels = digits.evaluation_set()
    assert len(tokens) == len(digits.indices("val")) == 360
    assert torch.equal(labels, digits._labels[digits.indices("val")])


@pytest.mark.parametrize("n", [1, 2, 7, 13])
def test_score_sums_each_sequence_as_a_direct_float64_computation(n):
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=n))
    torch.manual_seed(n)
    model = build_model(ModelConfig(task="lm", vocab_size=task.vocab_size, dim=8, layers=1,
                                    operator=OperatorConfig(causal=True))).double()
    scores = score(model, task)
    tokens, targets = task.evaluation_set()
    with torch.no_grad():
        logits = model(tokens)  # (N, n, V) float64
    loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # (N, n)
    assert scores.loss == pytest.approx(loss.sum(1).numpy(), rel=1e-12)
    assert scores.correct.tolist() == (logits.argmax(-1) == targets).sum(1).tolist()
    assert scores.targets.tolist() == [n] * len(tokens)


# -- consecutive windows: the block bootstrap (tests/test_interval_coverage.py: coverage) ----------
def _ar1(length: int, rho: float, seed: int) -> np.ndarray:
    rng, out = np.random.default_rng(seed), np.empty(length)
    out[0] = rng.standard_normal() / math.sqrt(1 - rho**2)
    for t in range(1, length):
        out[t] = rho * out[t - 1] + rng.standard_normal()
    return out


def _windows(values: np.ndarray, contiguous: bool = True) -> Scores:
    counts = np.full(len(values), 256.0)
    return Scores("bpc", False, values * math.log(2) * counts, np.zeros(len(values)), counts,
                  contiguous=contiguous)


def test_contiguous_windows_widen_the_interval_by_their_dependence():
    """AR(1) at ρ = 0.7: the variance of the mean is (1 + ρ) / (1 - ρ) = 5.7 times the
    independent one, so the block interval is about √5.7 = 2.4 times the naive one, and
    seeded: the same scores give the same interval."""
    values = 2.0 + 0.1 * _ar1(4000, 0.7, 9)
    block, naive = _windows(values), _windows(values, contiguous=False)
    assert block.metric == naive.metric
    ratio = (block.ci95[1] - block.ci95[0]) / (naive.ci95[1] - naive.ci95[0])
    assert ratio == pytest.approx(math.sqrt(1.7 / 0.3), rel=0.15)
    assert block.ci95 == _windows(values).ci95
    assert block.ci95[0] < block.metric < block.ci95[1]


def test_independent_windows_keep_about_the_naive_interval():
    """No dependence: the rule picks blocks of 1 and the interval is the iid bootstrap-t's,
    within a few % of the percentile interval's width."""
    values = 2.0 + 0.1 * np.random.default_rng(10).standard_normal(2000)
    block, naive = _windows(values), _windows(values, contiguous=False)
    assert (block.ci95[1] - block.ci95[0]) == pytest.approx(naive.ci95[1] - naive.ci95[0],
                                                            rel=0.05)


def test_merging_windows_keeps_them_contiguous():
    values = 2.0 + 0.1 * _ar1(64, 0.5, 11)
    assert _windows(values).merged(4, 16).contiguous
    assert not _windows(values, contiguous=False).merged(4, 16).contiguous


def test_a_paired_block_difference_of_a_constant_shift_is_that_shift():
    """Both models on the same windows, the other worse by exactly 0.1 bpc in every window:
    every resample's change is 0.1, so the interval is the point."""
    values = 2.0 + 0.1 * _ar1(500, 0.7, 12)
    change = difference(_windows(values), _windows(values + 0.1), paired=True)
    assert change.worse_by == pytest.approx(0.1, abs=1e-12)
    assert (change.low, change.high) == pytest.approx((0.1, 0.1), abs=1e-12)


def test_constant_or_single_windows_give_the_point_and_overflow_gives_no_interval():
    assert _windows(np.full(50, 1.5)).ci95 == pytest.approx((1.5, 1.5), abs=1e-12)
    assert _windows(np.array([1.5])).ci95 == pytest.approx((1.5, 1.5), abs=1e-12)
    overflowing = _windows(np.array([1.0, np.inf, 2.0, 1.0]))
    assert all(math.isnan(end) for end in overflowing.ci95)


def test_charlm_scores_are_contiguous_and_other_tasks_are_not():
    """charlm's evaluation set tiles its text (``tiles_text``); recall is a language model
    too, but its sequences are drawn independently."""
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=16))
    torch.manual_seed(0)
    model = build_model(ModelConfig(task="lm", vocab_size=task.vocab_size, dim=8, layers=1,
                                    operator=OperatorConfig(causal=True)))
    assert score(model, task).contiguous
    recall = get_task("recall")
    assert recall.kind == "lm" and not recall.tiles_text
    assert not get_task("digits").tiles_text and not get_task("listops").tiles_text
