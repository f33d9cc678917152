"""Answers a lesson computes instead of stating: a question with ``computed = NAME``
names one of ``COMPUTED``, and the lesson page asks the function of that name, at the
step's settings, which of the question's choices is right.

Each function takes plain values (what the step's view sets, resolved by the screen) and
the question's choices, and returns one of them. Where the choices are the data's own
names (activations, methods), the function picks among them; otherwise ``OUTCOMES[NAME]``
lists what the function can conclude, and the question's i-th choice words the i-th
outcome (the loader checks their number). ValueError when the data decide none of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.fd_response import fd_response
from tnn_core.core.toeplitz import matvec
from tnn_core.lab.common.band_ablation import BandAblation
from tnn_core.lab.common.conversion import QuickConversion
from tnn_core.lab.common.decay_curve import decay_curve, decay_magnitude
from tnn_core.lab.common.recurrent_fit import modes_by_decay
from tnn_core.training.verdicts import quality

__all__ = ["COMPUTED", "OUTCOMES", "never_to_roundoff", "smaller_frobenius",
           "fft_against_dense", "negative_lags", "band_only", "conversion_loss",
           "modes_against_decay"]

# what each function concludes, in the order of its question's choices (None: the choices
# are the data's own names, and it picks one)
OUTCOMES: dict[str, tuple[str, ...] | None] = {
    "never_to_roundoff": None,
    "smaller_frobenius": None,
    "fft_against_dense": ("approximate", "round-off", "exact"),
    "negative_lags": ("zero", "small", "mirror"),
    "band_only": ("holds", "towards chance"),
    "conversion_loss": ("under a point", "about ten points", "chance"),
    "modes_against_decay": ("more as λ → 1", "about the same", "fewer as λ → 1"),
}
COMPUTED = tuple(OUTCOMES)  # the names a question may give
ROUNDOFF = 1e-12  # relative to the largest value: float64 round-off, and no more


def _choice(name: str, outcome: str, choices: Sequence[str]) -> str:
    return choices[OUTCOMES[name].index(outcome)]


def never_to_roundoff(choices: Sequence[str], width: int, depth: int, n: int, seed: int,
                      fd_input: str, causal: bool) -> str:
    """Of the activations ``choices``, the one whose FD kernel never falls below round-off
    (``common.decay_curve``) within its n − 1 lags, at this setting: the one response the
    FD-TNN theorems promise no fast decay (a ReLU response has kinks inside (0, π): a
    1/t² tail, Theorem 4 square summability only). ValueError unless exactly one."""
    never = [activation for activation in choices if decay_curve(decay_magnitude(
        fd_response(activation, width, depth, n, seed, fd_input, causal).kernel)
    ).roundoff_from is None]
    if len(never) != 1:
        raise ValueError(f"{len(never)} of the activations {list(choices)} never reach "
                         f"round-off at n = {n} ({never}); the question needs exactly one")
    return never[0]


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


def fft_against_dense(choices: Sequence[str], coeffs: np.ndarray, seed: int) -> str:
    """How far the FFT product is from the dense one for kernel coeffs [2n-1], on four
    seeded random inputs: exactly equal, round-off (≤ ROUNDOFF of the output's largest
    entry), or an approximation."""
    n = (len(coeffs) + 1) // 2
    t = torch.tensor(coeffs, dtype=torch.float64)
    x = torch.randn(4, n, 1, generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64)  # (B, n, 1)
    exact = dense_toeplitz(t.numpy()) @ x[..., 0].numpy().T  # (n, B)
    fast = matvec(t[None], x)[..., 0].numpy().T  # (n, B)
    gap = float(np.abs(fast - exact).max()) / (float(np.abs(exact).max()) or 1.0)
    outcome = "exact" if gap == 0 else "round-off" if gap <= ROUNDOFF else "approximate"
    return _choice("fft_against_dense", outcome, choices)


def negative_lags(choices: Sequence[str], kernel: np.ndarray) -> str:
    """What kernel [2n-1] holds at its negative lags: zero up to round-off, the mirror of
    its positive lags (t_{-k} = t_k), or something small but clearly non-zero."""
    n = (len(kernel) + 1) // 2
    scale = float(np.abs(kernel).max()) or 1.0
    negative, positive = kernel[: n - 1][::-1], kernel[n:]  # (n-1,) lags -1..-(n-1), 1..n-1
    if np.abs(negative).max(initial=0.0) <= ROUNDOFF * scale:
        outcome = "zero"
    elif np.allclose(negative, positive, rtol=0, atol=ROUNDOFF * scale):
        outcome = "mirror"
    else:
        outcome = "small"
    return _choice("negative_lags", outcome, choices)


def band_only(choices: Sequence[str], ablation: BandAblation) -> str:
    """Whether the task metric holds with every layer kept to its band (the ablation's
    verdict, ``training.verdicts``), or loses more than half its margin over chance."""
    verdict = quality(ablation.change(ablation.restricted))
    if verdict == "keeps":
        outcome = "holds"
    elif verdict == "loses" and ablation.margin_lost > 0.5:
        outcome = "towards chance"
    else:
        raise ValueError(f"the band alone {verdict} (it loses {ablation.margin_lost:.0%} of "
                         f"the margin over chance): neither holds nor falls to chance")
    return _choice("band_only", outcome, choices)


def conversion_loss(choices: Sequence[str], result: QuickConversion) -> str:
    """What converting every layer to band + low rank costs the task metric
    (``common.conversion.quick_conversion``): under a point, about ten points (5 to 15), or down
    to chance (within 5 points of it)."""
    loss = abs(result.source.metric - result.converted.metric)
    if loss < 0.01:
        outcome = "under a point"
    elif abs(result.converted.metric - result.chance) <= 0.05:
        outcome = "chance"
    elif 0.05 <= loss <= 0.15:
        outcome = "about ten points"
    else:
        raise ValueError(f"the conversion loses {100 * loss:.1f} points: none of the choices")
    return _choice("conversion_loss", outcome, choices)


def modes_against_decay(choices: Sequence[str], kernels: dict[float, np.ndarray]) -> str:
    """How the smallest s reaching 1 % relative Frobenius error (``common.recurrent_fit``)
    moves as λ grows, over ``kernels`` {λ: causal kernel [2n-1]}: about the same (within
    one mode of each other), or at least two modes more (fewer) at the largest λ than at
    the smallest."""
    needed = {decay: found[0] for decay, found in modes_by_decay(kernels, (0.01,)).items()}
    if None in needed.values():
        raise ValueError(f"some λ needs more modes than the ladder holds: {needed}")
    low, high = needed[min(needed)], needed[max(needed)]
    if max(needed.values()) - min(needed.values()) <= 1:
        outcome = "about the same"
    elif high - low >= 2:
        outcome = "more as λ → 1"
    elif low - high >= 2:
        outcome = "fewer as λ → 1"
    else:
        raise ValueError(f"the modes needed go up and down with λ: {needed}")
    return _choice("modes_against_decay", outcome, choices)
