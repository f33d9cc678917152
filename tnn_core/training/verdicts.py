"""What the lab concludes from two measurements, said only when their intervals allow it.

One rule everywhere a page says a model "keeps" or "loses" its quality (beyond the
training length, with only its band, after compression): the change is measured as a
``scores.Difference`` with its 95 % interval, and

    keeps its quality    the whole interval is within the tolerance (at most TOLERANCE worse)
    loses quality        the whole interval is beyond it
    cannot tell          the interval straddles it: more sequences would be needed

A change that keeps the quality is still said both ways (``two_sided``): "no worse than
0.050 bpc", and whether the same interval shows it significantly worse (all of it above
0), significantly better (all below) or no significant difference (it holds 0). "Keeps"
is a bound on how much worse, not a claim of no change (issue 37: charlm-tno-nodecay at 2×
is significantly worse by 0.032 bpc and within the tolerance).

The tolerance is in the metric's own unit: bits per character for a language model, points
of accuracy for a classifier (never a share of the margin over chance, which is far too
loose for a language model 4.7 bpc above chance).
"""

from __future__ import annotations

from typing import Literal

from tnn_core.training.scores import Difference, format_metric

__all__ = ["TOLERANCE", "Verdict", "quality", "quality_sentence", "change_text", "two_sided"]

TOLERANCE = {"bpc": 0.05, "accuracy": 0.02}  # "keeps its quality": worse by at most this

Verdict = Literal["keeps", "loses", "cannot tell"]


def quality(change: Difference, tolerance: float | None = None) -> Verdict:
    """The rule of the module docstring; ``tolerance`` defaults to TOLERANCE's."""
    limit = TOLERANCE[change.reference.metric_name] if tolerance is None else tolerance
    if change.high <= limit:
        return "keeps"
    if change.low > limit:
        return "loses"
    return "cannot tell"


def amount(value: float, metric_name: str) -> str:
    """A change in the metric's unit: "0.062 bpc" or "2.4 points"."""
    if metric_name == "accuracy":
        return f"{100 * value:.1f} points"
    return f"{value:.3f} bpc"


def change_text(change: Difference) -> str:
    """"0.062 bpc worse (95 % interval 0.031 to 0.094 bpc worse)": the change and its interval,
    each end in words when the interval spans no change."""
    name = change.reference.metric_name

    def signed(value: float) -> str:
        size = amount(abs(value), name)
        if float(size.split()[0]) == 0:  # rounds to nothing in the unit shown
            return "no change"
        return f"{size} {'worse' if value > 0 else 'better'}"

    if change.low > 0 or change.high < 0:  # one direction: say it once
        low, high = sorted((abs(change.low), abs(change.high)))
        ends = f"{amount(low, name).split()[0]} to {signed(high if change.low > 0 else -high)}"
    else:
        ends = f"{signed(change.low)} to {signed(change.high)}"
    return f"{signed(change.worse_by)} (95 % interval {ends})"


def _at_least_shown(value: float, metric_name: str) -> str:
    """``amount`` of |value|, or "less than 0.001 bpc" ("0.1 points": the last digit
    shown, 0.001 in either unit) where it rounds to 0."""
    size = amount(abs(value), metric_name)
    if float(size.split()[0]) == 0:
        return f"less than {amount(0.001, metric_name)}"
    return size


def two_sided(change: Difference, tolerance: float | None = None) -> str:
    """What a change within the tolerance is, both ways: "no worse than 0.050 bpc, and
    significantly worse by 0.032 bpc (95 % interval 0.020 to 0.044 bpc)", "..., and
    significantly better by ...", or "no worse than 0.050 bpc; no significant difference:
    0.011 bpc worse (95 % interval 0.005 bpc better to 0.027 bpc worse)". ``tolerance``
    defaults to TOLERANCE's."""
    name = change.reference.metric_name
    limit = TOLERANCE[name] if tolerance is None else tolerance
    bound = f"no worse than {amount(limit, name)}"
    if change.low <= 0 <= change.high:
        return f"{bound}; no significant difference: {change_text(change)}"
    direction = "worse" if change.low > 0 else "better"
    near, far = sorted((abs(change.low), abs(change.high)))
    return (f"{bound}, and significantly {direction} by "
            f"{_at_least_shown(change.worse_by, name)} (95 % interval "
            f"{amount(near, name).split()[0]} to {amount(far, name)})")


def quality_sentence(change: Difference, subject: str, where: str,
                     tolerance: float | None = None) -> str:
    """One sentence with the verdict and its numbers, e.g. "At 2× the training length
    charlm-tno keeps its quality: 2.001 bpc against 1.990 bpc, no worse than 0.050 bpc;
    no significant difference: 0.011 bpc worse (...)." (``two_sided``). ``where`` names
    the condition, ``subject`` the model."""
    name = change.reference.metric_name
    limit = TOLERANCE[name] if tolerance is None else tolerance
    measured = (f"{format_metric(change.other.metric, name)} against "
                f"{format_metric(change.reference.metric, name)}")
    values = f"{measured}, {change_text(change)}"
    verdict = quality(change, limit)
    if verdict == "keeps":
        return f"{where} {subject} keeps its quality: {measured}, {two_sided(change, limit)}."
    if verdict == "loses":
        return (f"{where} {subject} loses quality: {values}, beyond the {amount(limit, name)} "
                f"tolerance.")
    sequences = _sequences(change)
    return (f"{where} we cannot tell whether {subject} keeps its quality with {sequences}: "
            f"{values}; the interval straddles the {amount(limit, name)} tolerance.")


def _sequences(change: Difference) -> str:
    a, b = change.reference.sequences, change.other.sequences
    if change.paired or a == b:
        return f"{a:,} sequences"
    return f"{a:,} and {b:,} sequences"
