"""A model's results on an evaluation set, kept per sequence, and how sure they are.

Every metric the lab reports is a ratio of sums over sequences: bits per character is
Σ loss / Σ targets / ln 2, accuracy is Σ correct / Σ targets. Keeping the three sums per
sequence lets one object give the metric, its 95 % interval and the number of
sequences, and lets two models measured on the same sequences be compared pair by pair.

Intervals:
- accuracy with one target per sequence (classification): the exact binomial interval
  of Clopper and Pearson (1934), "The use of confidence or fiducial limits illustrated in
  the case of the binomial", Biometrika 26(4).
- everything else: the percentile bootstrap over sequences (Efron and Tibshirani, "An
  Introduction to the Bootstrap", 1993, ch. 13), with a fixed seed, so the same scores
  always give the same interval.

Letters: N sequences, R bootstrap resamples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["LEVEL", "RESAMPLES", "Scores", "Difference", "difference", "clopper_pearson",
           "median_ci", "format_metric", "format_interval"]

LEVEL = 0.95  # every interval the lab reports
RESAMPLES = 2000  # bootstrap resamples R
_SEED = 0  # the bootstrap's generator: an interval is a function of the scores alone
_CHUNK = 250  # resamples drawn at once: R × N indices would be 64 MB at N = 4096


@dataclass(frozen=True)
class Scores:
    """Per-sequence sums of one model on one evaluation set: [N] each."""

    metric_name: str  # "bpc" or "accuracy"
    higher_is_better: bool
    loss: np.ndarray  # [N] summed cross-entropy (nats) over the sequence's targets
    correct: np.ndarray  # [N] targets whose argmax prediction is right
    targets: np.ndarray  # [N] targets counted

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
        if self.metric_name == "accuracy" and np.all(self.targets == 1):
            return clopper_pearson(int(self.correct.sum()), self.sequences)
        low, high = np.quantile(self._resampled(), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        return float(low), float(high)

    def _resampled(self, index: np.ndarray | None = None) -> np.ndarray:
        """The metric on each bootstrap resample [R]; ``index`` [R, N] given or drawn."""
        index = bootstrap_index(self.sequences) if index is None else index
        return _metric(self.metric_name, self.loss[index].sum(1), self.correct[index].sum(1),
                       self.targets[index].sum(1))

    def merged(self, group: int, count: int) -> Scores:
        """The first ``count`` runs of ``group`` consecutive sequences, each summed into one:
        windows of length n that tile the same text as windows of length group × n."""
        if group < 1 or count < 1 or group * count > self.sequences:
            raise ValueError(f"cannot merge {self.sequences} sequences into {count} groups of "
                             f"{group}")

        def summed(values: np.ndarray) -> np.ndarray:
            return values[: group * count].reshape(count, group).sum(1)  # (count,)

        return Scores(self.metric_name, self.higher_is_better, summed(self.loss),
                      summed(self.correct), summed(self.targets))

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
    same sequences from both and their shared difficulty cancels; otherwise each set is
    resampled on its own."""
    if reference.metric_name != other.metric_name:
        raise ValueError(f"cannot compare {reference.metric_name} with {other.metric_name}")
    if paired and reference.sequences != other.sequences:
        raise ValueError(f"paired scores need the same sequences; got {reference.sequences} "
                         f"and {other.sequences}")
    sign = -1.0 if reference.higher_is_better else 1.0
    index = bootstrap_index(reference.sequences)
    other_index = index if paired else bootstrap_index(other.sequences, seed=_SEED + 1)
    resampled = sign * (other._resampled(other_index) - reference._resampled(index))  # (R,)
    low, high = np.quantile(resampled, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Difference(sign * (other.metric - reference.metric), float(low), float(high),
                      paired, reference, other)
