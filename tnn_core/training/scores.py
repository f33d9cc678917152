"""A model's results on an evaluation set, kept per sequence, and how sure they are.

Every metric the lab reports is a ratio of sums over sequences: bits per character is
Σ loss / Σ targets / ln 2, accuracy is Σ correct / Σ targets. Keeping the three sums per
sequence lets one object give the metric, its 95 % interval and the number of
sequences, and lets two models measured on the same sequences be compared pair by pair.

Intervals:
- accuracy with one target per sequence (classification): the exact binomial interval
  of Clopper and Pearson (1934), "The use of confidence or fiducial limits illustrated in
  the case of the binomial", Biometrika 26(4).
- sequences that are consecutive windows of one text (``contiguous``: charlm's
  evaluation set): neighbouring windows share their file and topic (lag-1 autocorrelation
  of charlm's per-window bpc 0.69), so they are resampled in blocks. The interval is the
  symmetric studentized circular block bootstrap: circular blocks of Politis and Romano
  (1992), "A circular block-resampling procedure for stationary data", in "Exploring the
  Limits of Bootstrap"; studentized as in Götze and Künsch (1996), "Second-order
  correctness of the blockwise bootstrap for stationary observations", Ann. Statist.
  24(5), symmetric as in Hall (1988); block length b by Politis and White (2004),
  Econometric Reviews 23(1), corrected by Patton, Politis and White (2009), Econometric
  Reviews 28(4), on the statistic's per-window linearization (for a paired change: the
  per-window differences). The standard error scaling the bootstrap's t quantile is the
  block variance plus its first-order bias N Ĝ / b (Künsch 1989, Ann. Statist. 17(3),
  Thm 3.3; Ĝ the rule's own flat-top estimate). On an AR(1) mean (ρ = 0.7, N = 1104) the
  percentile interval at the same blocks covers 92 %, this one 95 %
  (tests/test_interval_coverage.py; docs/metrics.md "Intervals").
- everything else: the percentile bootstrap over sequences (Efron and Tibshirani, "An
  Introduction to the Bootstrap", 1993, ch. 13).
Every bootstrap has a fixed seed, so the same scores always give the same interval.

Letters: N sequences, R bootstrap resamples, b block length, k blocks per resample,
T ratios in a statistic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["LEVEL", "RESAMPLES", "Scores", "Difference", "difference", "clopper_pearson",
           "median_ci", "format_metric", "format_interval", "block_length"]

LEVEL = 0.95  # every interval the lab reports
RESAMPLES = 2000  # bootstrap resamples R
_SEED = 0  # the bootstrap's generator: an interval is a function of the scores alone
_CHUNK = 250  # resamples drawn at once: R × N indices would be 64 MB at N = 4096
_CHUNK_BLOCKS = 2**18  # block sums drawn at once (resamples × k): 2 MB per ratio part


@dataclass(frozen=True)
class Scores:
    """Per-sequence sums of one model on one evaluation set: [N] each."""

    metric_name: str  # "bpc" or "accuracy"
    higher_is_better: bool
    loss: np.ndarray  # [N] summed cross-entropy (nats) over the sequence's targets
    correct: np.ndarray  # [N] targets whose argmax prediction is right
    targets: np.ndarray  # [N] targets counted
    contiguous: bool = False  # consecutive windows of one text, in order: blocks resampled

    def __post_init__(self):
        if self.metric_name not in ("bpc", "accuracy"):
            raise ValueError(f"metric_name must be 'bpc' or 'accuracy'; got {self.metric_name!r}")
        if not (len(self.loss) == len(self.correct) == len(self.targets)) or not len(self.loss):
            raise ValueError(f"scores need one loss, correct and targets count per sequence, "
                             f"at least one; got {len(self.loss)}, {len(self.correct)}, "
                             f"{len(self.targets)}")
        self.ci95  # noqa: B018 - computed now, so a cached copy of these scores carries it

    @property
    def sequences(self) -> int:
        return len(self.targets)

    @property
    def loss_mean(self) -> float:
        """Mean cross-entropy per target, in nats."""
        return float(self.loss.sum() / self.targets.sum())

    @property
    def accuracy(self) -> float:
        return float(self.correct.sum() / self.targets.sum())

    @property
    def metric(self) -> float:
        return _metric(self.metric_name, self.loss.sum(), self.correct.sum(), self.targets.sum())

    @property
    def ci95(self) -> tuple[float, float]:
        """The metric's 95 % interval (module docstring), computed once, at construction: a
        bootstrap takes tens of ms, and a page that draws cached scores on every rerun gets
        a copy that carries it."""
        if "_ci95" not in self.__dict__:  # frozen: set past __setattr__, kept when pickled
            object.__setattr__(self, "_ci95", self._interval())
        return self.__dict__["_ci95"]

    def _interval(self) -> tuple[float, float]:
        if self.contiguous:
            return _block_t_interval([(self._ratios(1.0), True)])
        if self.metric_name == "accuracy" and np.all(self.targets == 1):
            return clopper_pearson(int(self.correct.sum()), self.sequences)
        low, high = np.quantile(self._resampled(), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        return float(low), float(high)

    def _resampled(self, index: np.ndarray | None = None) -> np.ndarray:
        """The metric on each bootstrap resample [R]; ``index`` [R, N] given or drawn."""
        index = bootstrap_index(self.sequences) if index is None else index
        summed = np.take(self.loss if self.metric_name == "bpc" else self.correct, index).sum(1)
        return _metric(self.metric_name, summed, summed, np.take(self.targets, index).sum(1))

    def _ratios(self, weight: float) -> _Ratios:
        """``weight`` × the metric as a ratio of per-sequence sums."""
        numerator = self.loss / math.log(2) if self.metric_name == "bpc" else self.correct
        return _Ratios(np.array([weight]), np.asarray(numerator, np.float64)[None],
                       np.asarray(self.targets, np.float64)[None])

    def merged(self, group: int, count: int) -> Scores:
        """The first ``count`` runs of ``group`` consecutive sequences, each summed into one:
        windows of length n that tile the same text as windows of length group × n."""
        if group < 1 or count < 1 or group * count > self.sequences:
            raise ValueError(f"cannot merge {self.sequences} sequences into {count} groups of "
                             f"{group}")

        def summed(values: np.ndarray) -> np.ndarray:
            return values[: group * count].reshape(count, group).sum(1)  # (count,)

        return Scores(self.metric_name, self.higher_is_better, summed(self.loss),
                      summed(self.correct), summed(self.targets), self.contiguous)

    def text(self, digits: int = 3) -> str:
        """"1.985 bpc (95 % interval 1.95–2.02, 1,105 sequences)"; accuracy in %."""
        return (f"{format_metric(self.metric, self.metric_name, digits)} (95 % interval "
                f"{format_interval(self.ci95, self.metric_name, digits)}, {self.sequences:,} "
                f"sequences)")

    def to_dict(self) -> dict:
        """The summary ``evaluate`` prints: metric, ci95 [low, high], sequences."""
        return {"metric": self.metric, "ci95": list(self.ci95), "sequences": self.sequences}


def _metric(name: str, loss, correct, targets):
    """bpc = Σ loss / Σ targets / ln 2; accuracy = Σ correct / Σ targets (scalars or [R])."""
    return loss / targets / math.log(2) if name == "bpc" else correct / targets


def format_metric(value: float, name: str, digits: int = 3, unit: bool = True) -> str:
    """bpc as 1.985 (digits after the point), accuracy as 60.9 % (one digit fewer); a value
    not measured (NaN) as a dash."""
    if not math.isfinite(value):
        return "—"
    if name == "accuracy":
        return f"{100 * value:.{max(digits - 2, 0)}f}" + (" %" if unit else "")
    return f"{value:.{digits}f}" + (" bpc" if unit else "")


def format_interval(interval: tuple[float, float], name: str, digits: int = 3) -> str:
    """A 95 % interval in the metric's unit: "2.375–2.430 bpc", "55.1–59.4 %"."""
    low, high = interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return "—"
    return f"{format_metric(low, name, digits, unit=False)}–{format_metric(high, name, digits)}"


def clopper_pearson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact binomial interval for ``successes`` of ``trials`` (Clopper and Pearson)."""
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else stats.beta.ppf(tail, successes, trials - successes + 1)
    high = 1.0 if successes == trials else stats.beta.ppf(1 - tail, successes + 1,
                                                          trials - successes)
    return float(low), float(high)


def median_ci(values, level: float = LEVEL) -> tuple[float, float]:
    """A distribution-free interval for the median of ``values``: the order statistics
    x_(k) and x_(N+1-k) with the largest k whose binomial tail P(X < k), X ~ Bin(N, 1/2),
    is at most (1 - level) / 2 (Conover, "Practical Nonparametric Statistics", 3rd ed.,
    §3.2). Below N = 6 no k qualifies, and the interval is the whole range."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))  # (N,)
    n = len(ordered)
    if n == 0:
        raise ValueError("median_ci needs at least one value; got none")
    tail = (1 - level) / 2
    k = 0  # 1-based rank of the lower end; 0: none qualifies
    while stats.binom.cdf(k, n, 0.5) <= tail:  # P(X < k + 1) = P(X <= k)
        k += 1
    k = max(k, 1)
    return float(ordered[k - 1]), float(ordered[n - k])


def bootstrap_index(n: int, seed: int = _SEED, resamples: int = RESAMPLES) -> np.ndarray:
    """[R, N] indices of R resamples of N sequences with replacement, seeded."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.integers(0, n, (min(_CHUNK, resamples - start), n))
                           for start in range(0, resamples, _CHUNK)])


@dataclass(frozen=True)
class Difference:
    """``other`` against ``reference``, signed so that positive means worse."""

    worse_by: float  # in the metric's unit (bpc, or accuracy as a fraction)
    low: float  # its 95 % interval
    high: float
    paired: bool  # the same sequences (resampled together) or independent sets
    reference: Scores
    other: Scores


def difference(reference: Scores, other: Scores, paired: bool) -> Difference:
    """How much worse ``other`` is than ``reference``, with a bootstrap interval.

    ``paired``: both scored the same sequences in the same order, so a resample draws the
    same sequences (or blocks, when contiguous: their length chosen on the per-window
    differences, the series whose mean the change is) from both and their shared
    difficulty cancels; otherwise each set is resampled on its own, with its own blocks."""
    if reference.metric_name != other.metric_name:
        raise ValueError(f"cannot compare {reference.metric_name} with {other.metric_name}")
    if paired and reference.sequences != other.sequences:
        raise ValueError(f"paired scores need the same sequences; got {reference.sequences} "
                         f"and {other.sequences}")
    sign = -1.0 if reference.higher_is_better else 1.0
    worse_by = sign * (other.metric - reference.metric)
    if reference.contiguous or other.contiguous:
        if paired:
            ours, theirs = other._ratios(sign), reference._ratios(-sign)
            samples = [(_Ratios(np.concatenate([ours.weights, theirs.weights]),
                                np.concatenate([ours.numerators, theirs.numerators]),
                                np.concatenate([ours.denominators, theirs.denominators])),
                        True)]
        else:
            samples = [(other._ratios(sign), other.contiguous),
                       (reference._ratios(-sign), reference.contiguous)]
        return Difference(worse_by, *_block_t_interval(samples), paired, reference, other)
    index = bootstrap_index(reference.sequences)
    other_index = index if paired else bootstrap_index(other.sequences, seed=_SEED + 1)
    resampled = sign * (other._resampled(other_index) - reference._resampled(index))  # (R,)
    low, high = np.quantile(resampled, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Difference(worse_by, float(low), float(high), paired, reference, other)


# -- the block bootstrap over consecutive windows ------------------------------------------------
@dataclass(frozen=True)
class _Ratios:
    """θ = Σ_t w_t Σ_i a[t, i] / Σ_i d[t, i]: a metric (T = 1) or a paired change (T = 2)
    over N windows that are resampled together."""

    weights: np.ndarray  # [T]
    numerators: np.ndarray  # [T, N] per window: bpc's loss / ln 2, or correct
    denominators: np.ndarray  # [T, N] targets

    def value(self, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
        """θ from sums [T, ...]."""
        return sum(w * a / d for w, a, d in zip(self.weights, numerators, denominators,
                                                strict=True))

    def influence(self, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
        """Each part's linearized share of θ - θ̂, [..., k] from parts [T, ..., k]: the sum of
        w_t (a - r_t d) / D_t, with r_t and D_t the ratio and denominator of the whole
        (last axis); the shares sum to 0, and θ̂'s variance is their sum's."""
        shares = 0.0
        for w, a, d in zip(self.weights, numerators, denominators, strict=True):
            total = d.sum(-1, keepdims=True)  # [..., 1]
            shares = shares + (a - a.sum(-1, keepdims=True) / total * d) * (w / total)
        return shares


def block_length(series: np.ndarray) -> int:
    """The circular block bootstrap's block length b for the mean of ``series`` [N]:
    (2 Ĝ² / D̂)^(1/3) N^(1/3) with D̂ = (4/3) ĝ² (Politis and White 2004, with the
    correction of Patton, Politis and White 2009), rounded, in [1, ⌈min(3 √N, N / 3)⌉]."""
    return _block_rule(len(series), *_flat_top(series))


def _block_rule(n: int, long_run: float, first_moment: float) -> int:
    """``block_length`` from ĝ (``long_run``) and Ĝ (``first_moment``); 1 when ĝ ≤ 0."""
    most = math.ceil(min(3 * math.sqrt(n), n / 3))
    if long_run <= 0:
        return 1
    return int(min(max(round((1.5 * (first_moment / long_run) ** 2 * n) ** (1 / 3)), 1), most))


def _flat_top(series: np.ndarray) -> tuple[float, float]:
    """ĝ = Σ λ(k/M) γ̂(k) and Ĝ = Σ λ(k/M) |k| γ̂(k) over |k| ≤ M, the trapezoidal flat-top
    window λ (1 to M/2, then linear to 0) of Politis and Romano (1995), "Bias-corrected
    nonparametric spectral estimation", J. Time Series Anal. 16(1). M = 2 m̂ (Politis 2003,
    "Adaptive bandwidth choice", J. Nonparam. Stat. 15): m̂ is the last lag before K =
    max(5, ⌈√log10 N⌉) autocorrelations all below 2 √(log10 N / N), at most ⌈√N⌉ + K."""
    n = len(series)
    lags = max(5, math.ceil(math.sqrt(math.log10(n))))
    most = math.ceil(math.sqrt(n)) + lags
    centred = np.asarray(series, np.float64) - np.mean(series)
    spectrum = np.fft.rfft(centred, 2 * n)
    autocovariance = np.zeros(most + lags + 1)  # γ̂(k) = Σ x_t x_{t+k} / N; 0 from k = N
    shown = min(n, len(autocovariance))
    autocovariance[:shown] = np.fft.irfft(spectrum * spectrum.conj(), 2 * n)[:shown] / n
    if not autocovariance[0] > 0:  # constant (or not finite): no dependence to measure
        return 0.0, 0.0
    small = np.abs(autocovariance / autocovariance[0]) < 2 * math.sqrt(math.log10(n) / n)
    runs = np.lib.stride_tricks.sliding_window_view(small[1:], lags).all(1)  # from lag 1
    m = int(np.argmax(runs[:most])) if runs[:most].any() else most
    window = min(2 * max(m, 1), most)
    k = np.arange(1, window + 1)
    weight = np.minimum(1.0, 2 * (1 - k / window))  # λ(k/M)
    return (float(autocovariance[0] + 2 * weight @ autocovariance[k]),
            float(2 * (weight * k) @ autocovariance[k]))


def _circular_cumsum(values: np.ndarray, block: int) -> np.ndarray:
    """[C, N + b + 1] running sums of ``values`` [C, N] wrapped by b: a circular block's
    sum from s over l ≤ b windows is c[s + l] - c[s]."""
    wrapped = np.concatenate([values, values[:, :block]], axis=1)
    return np.concatenate([np.zeros((len(values), 1)), np.cumsum(wrapped, axis=1)], axis=1)


def _block_lengths(n: int, block: int) -> np.ndarray:
    """[k] k = ⌈N / b⌉ blocks of b windows, the last cut to N - (k - 1) b (Politis and
    Romano's circular resample of exactly N windows)."""
    lengths = np.full(-(-n // block), block)
    lengths[-1] = n - (len(lengths) - 1) * block
    return lengths


def _block_variance(influence: np.ndarray, block: int, first_moment: float) -> float:
    """The circular block bootstrap's variance of Σ influence [N], exact (the k blocks are
    independent and each starts anywhere), plus its first-order bias N Ĝ / b: blocks lose
    the covariance of windows in different blocks (Künsch 1989, Thm 3.3)."""
    n = len(influence)
    cumulative = _circular_cumsum(influence[None], block)[0]  # (N + b + 1,)
    start = np.arange(n)
    lengths = _block_lengths(n, block)
    full = cumulative[start + block] - cumulative[start]  # (N,)
    last = cumulative[start + lengths[-1]] - cumulative[start]
    return float((len(lengths) - 1) * np.mean(full**2) + np.mean(last**2)
                 + n * first_moment / block)


def _studentized_draws(ratios: _Ratios, block: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """θ* [R] and its within-resample variance [R] (the sum of its k blocks' squared
    influences: blocks are independent in the bootstrap) over R circular block resamples."""
    parts, n = ratios.numerators.shape
    lengths = _block_lengths(n, block)
    cumulative = _circular_cumsum(np.concatenate([ratios.numerators, ratios.denominators]),
                                  block)  # (2T, N + b + 1)
    rng, chunk = np.random.default_rng(seed), max(1, _CHUNK_BLOCKS // len(lengths))
    values, variances = [], []
    for done in range(0, RESAMPLES, chunk):
        starts = rng.integers(0, n, (min(chunk, RESAMPLES - done), len(lengths)))  # (r, k)
        sums = (np.take(cumulative, starts + lengths, axis=1)
                - np.take(cumulative, starts, axis=1))  # (2T, r, k)
        values.append(ratios.value(sums[:parts].sum(-1), sums[parts:].sum(-1)))
        shares = ratios.influence(sums[:parts], sums[parts:])  # (r, k)
        variances.append(np.einsum("rk,rk->r", shares, shares))
    return np.concatenate(values), np.concatenate(variances)


def _block_t_interval(samples: list[tuple[_Ratios, bool]]) -> tuple[float, float]:
    """The symmetric studentized block bootstrap's interval θ̂ ± q ŝ for θ = Σ of independent
    samples' θ_s (one sample; two for an unpaired change), each resampled in blocks of its
    own rule (contiguous) or of 1 window. q is the L quantile of |θ* - θ̂| / ŝ* (Götze and
    Künsch 1996; symmetric as Hall 1988, JRSS B 50(1): with tens of blocks and a skewed
    per-block metric the equal-tailed ends follow a single block), ŝ² the bias-corrected
    block variance."""
    estimate, variance, deviation, draw_variance = 0.0, 0.0, 0.0, 0.0
    for seed, (ratios, contiguous) in enumerate(samples, start=_SEED):
        with np.errstate(invalid="ignore", divide="ignore"):
            influence = ratios.influence(ratios.numerators, ratios.denominators)  # (N,)
        if not np.all(np.isfinite(influence)):
            return math.nan, math.nan
        long_run, first_moment = _flat_top(influence) if contiguous else (0.0, 0.0)
        block = _block_rule(len(influence), long_run, first_moment)
        value = float(ratios.value(ratios.numerators.sum(-1), ratios.denominators.sum(-1)))
        values, variances = _studentized_draws(ratios, block, seed)
        estimate, deviation = estimate + value, deviation + values - value
        variance += _block_variance(influence, block, first_moment)
        draw_variance = draw_variance + variances
    spread = np.sqrt(draw_variance)  # (R,)
    t = np.divide(np.abs(deviation), spread, out=np.zeros_like(spread), where=spread > 0)
    half_width = float(np.quantile(t, LEVEL)) * math.sqrt(max(variance, 0.0))
    return estimate - half_width, estimate + half_width
