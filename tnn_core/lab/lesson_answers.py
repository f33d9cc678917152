"""Answers a lesson computes instead of stating: a question with ``computed = NAME``
names one of ``COMPUTED``, and the lesson page asks the function of that name, at the
step's settings, which of the question's choices is right.

Each function takes plain values (what the step's view sets, resolved by the screen) and
returns one of ``choices``; ValueError when the data cannot decide among them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.fd_response import fd_response
from tnn_core.lab.frequency import decay_curve, decay_magnitude

__all__ = ["COMPUTED", "first_to_roundoff", "smaller_frobenius"]

COMPUTED = ("first_to_roundoff", "smaller_frobenius")  # names a question may give


def first_to_roundoff(choices: Sequence[str], width: int, depth: int, n: int, seed: int,
                      fd_input: str, causal: bool) -> str:
    """Of the activations ``choices``, the one whose FD kernel falls below round-off
    (``frequency.decay_curve``) at the smallest lag, at this setting."""
    reached = {}
    for activation in choices:
        kernel = fd_response(activation, width, depth, n, seed, fd_input, causal).kernel
        lag = decay_curve(decay_magnitude(kernel)).roundoff_from
        if lag is not None:
            reached[activation] = lag
    if not reached:
        raise ValueError(f"no activation of {list(choices)} reaches round-off at n = {n}")
    return min(reached, key=reached.get)


def smaller_frobenius(choices: Sequence[str], coeffs: np.ndarray,
                      sides: Sequence[tuple[int, int, str]], causal: bool) -> str:
    """Of the methods ``choices``, the one of the ``sides`` [(band, rank, method), ...]
    whose band + W A Wᵀ has the smaller relative Frobenius error for kernel coeffs
    [2n-1]."""
    errors = {method: decompose(coeffs, band, rank, causal=causal, method=method
                                ).errors.relative_frobenius for band, rank, method in sides}
    best = min(errors, key=errors.get)
    if best not in choices:
        raise ValueError(f"the smaller error is {best}'s, which is not a choice")
    return best
