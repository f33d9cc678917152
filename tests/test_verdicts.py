"""training.verdicts says both directions (issue 37, "Tolerances that test"): a change within
the tolerance is still said to be significantly worse, significantly better, or not
significantly different, as its paired interval has it; a sentence never calls a change
"within" a tolerance its size exceeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tnn_core.training.scores import Difference, Scores
from tnn_core.training.verdicts import (
    TOLERANCE,
    change_text,
    quality,
    quality_sentence,
    two_sided,
)


def _bpc(value: float) -> Scores:
    """Four sequences of 100 characters scoring ``value`` bits per character."""
    targets = np.full(4, 100.0)
    return Scores("bpc", False, value * math.log(2) * targets, np.zeros(4), targets)


def _change(worse_by: float, low: float, high: float, name: str = "bpc") -> Difference:
    """A paired change from a reference of 4.009 bpc (or 80 % accuracy on 5 sequences)."""
    if name == "bpc":
        return Difference(worse_by, low, high, True, _bpc(4.009), _bpc(4.009 + worse_by))
    reference = Scores("accuracy", True, np.zeros(5), np.array([1.0] * 4 + [0.0]), np.ones(5))
    return Difference(worse_by, low, high, True, reference, reference)


def _says_both_ways(sentence: str, change: Difference) -> bool:
    """Whether a "keeps" sentence names the tolerance and the direction its interval shows."""
    direction = ("significantly worse by" if change.low > 0 else "significantly better by"
                 if change.high < 0 else "no significant difference")
    return "no worse than 0.050 bpc" in sentence and direction in sentence and \
        "within the" not in sentence


def _one_sided_sentence(change: Difference) -> str:
    """The old wording: the whole interval below the tolerance, and nothing else said."""
    return (f"Here it keeps its quality: {change.other.metric:.3f} bpc against "
            f"{change.reference.metric:.3f} bpc, {change_text(change)}, within the "
            f"{TOLERANCE['bpc']:.3f} bpc tolerance.")


@pytest.mark.parametrize("worse_by, low, high, said", [
    (0.032, 0.020, 0.044, "no worse than 0.050 bpc, and significantly worse by 0.032 bpc "
                          "(95 % interval 0.020 to 0.044 bpc)"),
    (-0.063, -0.066, -0.060, "no worse than 0.050 bpc, and significantly better by 0.063 bpc "
                             "(95 % interval 0.060 to 0.066 bpc)"),
    (0.011, -0.005, 0.027, "no worse than 0.050 bpc; no significant difference: 0.011 bpc "
                           "worse (95 % interval 0.005 bpc better to 0.027 bpc worse)"),
    (0.0002, 0.0001, 0.0003, "no worse than 0.050 bpc, and significantly worse by less than "
                             "0.001 bpc (95 % interval 0.000 to 0.000 bpc)"),
])
def test_a_change_within_the_tolerance_says_which_way_it_goes(worse_by, low, high, said):
    change = _change(worse_by, low, high)
    assert quality(change) == "keeps"
    assert two_sided(change) == said
    sentence = quality_sentence(change, "charlm-tno", "At 2×")
    assert sentence == (f"At 2× charlm-tno keeps its quality: "
                        f"{4.009 + worse_by:.3f} bpc against 4.009 bpc, {said}.")


def test_the_self_contradicting_sentence_of_the_audit_is_gone():
    """"0.063 bpc better (...), within the 0.050 bpc tolerance" read as if 0.063 <= 0.050."""
    sentence = quality_sentence(_change(-0.063, -0.066, -0.060), "it", "Here")
    assert "within the" not in sentence and "significantly better by 0.063 bpc" in sentence


def test_accuracy_is_said_in_points_both_ways():
    change = _change(-0.012, -0.020, -0.004, "accuracy")
    assert two_sided(change) == ("no worse than 2.0 points, and significantly better by 1.2 "
                                 "points (95 % interval 0.4 to 2.0 points)")
    assert two_sided(_change(0.01, -0.002, 0.015, "accuracy")).startswith(
        "no worse than 2.0 points; no significant difference: 1.0 points worse")


@pytest.mark.parametrize("worse_by, low, high, start, end", [
    (0.122, 0.10, 0.14, "At 2× it loses quality: ", "beyond the 0.050 bpc tolerance."),
    (0.04, 0.03, 0.07, "At 2× we cannot tell whether it keeps its quality with 4 sequences: ",
     "the interval straddles the 0.050 bpc tolerance."),
    (0.0, -0.1, 0.06, "At 2× we cannot tell whether it keeps its quality with 4 sequences: ",
     "the interval straddles the 0.050 bpc tolerance."),
])
def test_the_worse_verdicts_name_the_interval_against_the_tolerance(worse_by, low, high, start,
                                                                     end):
    sentence = quality_sentence(_change(worse_by, low, high), "it", "At 2×")
    assert sentence.startswith(start) and sentence.endswith(end)
    assert "significantly" not in sentence


@pytest.mark.parametrize("worse_by, low, high", [
    (0.032, 0.020, 0.044), (-0.063, -0.066, -0.060), (0.011, -0.005, 0.027)])
def test_a_planted_one_sided_wording_fails_where_the_lab_s_passes(worse_by, low, high):
    change = _change(worse_by, low, high)
    assert _says_both_ways(quality_sentence(change, "it", "Here"), change)
    assert not _says_both_ways(_one_sided_sentence(change), change)


def test_a_tolerance_given_replaces_the_lab_wide_one():
    change = _change(0.015, 0.012, 0.018)
    assert quality(change, 0.02) == "keeps" and quality(change, 0.01) == "loses"
    assert two_sided(change, 0.02).startswith("no worse than 0.020 bpc, and significantly worse")
