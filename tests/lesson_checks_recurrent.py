"""Lesson 6's checks ("an SSM is a Toeplitz matrix"), registered into
test_lesson_answers.CHECKS (that file holds its 400 lines): each recomputes the step's
answer from tnn_core at the step's own settings."""

from __future__ import annotations

import numpy as np

from tnn_core.analysis.exponential_fit import fit_exponentials
from tnn_core.analysis.presets import operator_kernel, synthetic_kernel
from tnn_core.lab.common.recurrent_fit import DECAYS, relative_error
from tnn_core.lab.lesson.answers import modes_against_decay

SLUG = "6-ssm-is-toeplitz"


def says(text: str, *numbers: str) -> None:
    for number in numbers:
        assert number in text, f"{number!r} is not in {text!r}"


def smallest_modes(column: np.ndarray, target: float) -> int:
    """The smallest s whose fit_exponentials reaches ``target``, by a search of its own."""
    n = len(column)
    return next(s for s in range(1, 33)
                if relative_error(column, fit_exponentials(column[None], s).kernel(n)[0])
                <= target)


def _modes_for_exact(step, view):
    n, decay = int(view["n"]), float(view["decay"])
    column = synthetic_kernel("oscillating", n, decay, True).numpy()[n - 1:]
    assert view["preset"] == "Oscillating" and view["causal"] == "true"
    assert step.question.answer == str(smallest_modes(column, 1e-12))
    fit = fit_exponentials(column[None], 1)
    z = decay * np.exp(1j * np.pi / 4)
    np.testing.assert_allclose([fit.poles[0, 0], fit.residues[0, 0]], [z, z], rtol=1e-12)
    says(step.question.explain, "0.9 e^{iπ/4}", "c = z")


def _modes_against_decay(step, view):
    n, channel = int(view["n"]), int(view["channel"])
    kernels = {d: operator_kernel("tno", n, d, True, 0, channel).numpy() for d in DECAYS}
    needed = {d: [smallest_modes(k[n - 1:], target) for target in (0.01, 0.001)]
              for d, k in kernels.items()}
    assert step.question.computed == "modes_against_decay" and step.question.answer is None
    counts = [s for s, _ in needed.values()]
    assert max(counts) - min(counts) <= 1  # so "about the same" is the right choice ...
    assert modes_against_decay(step.question.choices, kernels) == "about the same"  # ... and
    # the one the lesson computes
    (one,) = {s for s, _ in needed.values()}
    tenths = ", ".join(str(t) for _, t in needed.values())
    says(step.question.explain, f"s = {one} reaches 1 %", f"0.1 %: s = {tenths}",
         *(f"{d:g}" for d in DECAYS), "exact sum of exponentials only", "far lags")


def register(check) -> None:
    check(f"{SLUG}:1")(_modes_for_exact)
    check(f"{SLUG}:4")(_modes_against_decay)
