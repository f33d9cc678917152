"""The Frequency page: FD-TNN's kernel built from an MLP response, and its decay.

The page draws two figures in the browser (``pages/figures``): *the FD kernel from its
frequency response* evaluates a seeded one-channel FD operator's RPE MLP itself, from the
weights ``rpe_weights`` gives for every width it offers (``WIDTHS``); *decay and frequency
response* fits the decay of the kernels ``frequency_view`` gives, one per activation of
Theorems 2-4, and says which theorem applies and whether its premise holds here.

What the figures compute is defined here, in ``common.decay_curve`` and in ``analysis``
(``fd_response``, ``profiles.decay_fit``): ``decay_magnitude``, ``decay_curve`` and
``kernel_fit`` are the references the browser's arithmetic is tested against.

Letters: n length, N FFT size, F = N//2 + 1 frequency bins, t time lag, e MLP width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.fd_response import THEOREMS, fd_response
from tnn_core.analysis.profiles import DecayFit, decay_fit
from tnn_core.checks import check_choice, check_int
from tnn_core.core.toeplitz import fft_size
from tnn_core.lab.common.decay_curve import FIT_FLOOR, DecayCurve, decay_curve, decay_magnitude
from tnn_core.lab.common.figure_controls import WIDTH, WIDTHS
from tnn_core.operators import seeded_weights
from tnn_core.operators.config import FD_INPUTS, OperatorConfig
from tnn_core.operators.fd import FD

__all__ = ["WIDTHS", "WIDTH", "FIT_START", "FIT_FLOOR", "FIT_SHARE", "fit_end", "decay_magnitude",
           "DecayCurve", "decay_curve", "kernel_fit", "RpeWeights", "rpe_weights",
           "FrequencyView", "frequency_view",
           # what the figures compute beside them: the response, the FFT grid, the theorems
           "THEOREMS", "fd_response", "fft_size"]

FIT_START = 2  # the decay fit skips lags 0 and 1, the kernel's head
# The size-N kernel is the DTFT's kernel summed over shifts by N, which bends its tail near
# N/2; on t <= N/8 a 1/t² tail is bent by at most (1/7)² ≈ 2 %, so the fit stops there.
FIT_SHARE = 8


def fit_end(n: int, N: int) -> int:
    """The last lag the decay fit uses: N // FIT_SHARE, capped at n - 1."""
    return min(N // FIT_SHARE, n - 1)


def kernel_fit(kernel: np.ndarray, N: int) -> DecayFit:
    """The decay fit of FD kernel [2n-1] on the grid N: lags FIT_START .. fit_end(n, N)
    above FIT_FLOOR · max (``profiles.decay_fit``)."""
    n = (len(kernel) + 1) // 2
    return decay_fit(decay_magnitude(kernel)[: fit_end(n, N) + 1], start=FIT_START,
                     floor=FIT_FLOOR)


@dataclass(frozen=True)
class RpeWeights:
    """The RPE MLP of a seeded one-channel FD operator (``analysis.fd_response``): its
    Linear(1→e), ``depth`` × Linear(e→e), and the output layer of the causal operator
    (Linear(e→1): R) and of the bidirectional one (Linear(e→2): real and imaginary parts).
    The same seed draws the same layers up to the output layer whether causal or not."""

    width: int
    depth: int
    # [e + e + depth·(e² + e) + e + 1 + 2e + 2] float64, each exactly a float32 (torch draws
    # them in float32), in this order: input weight [e], input bias [e], per hidden layer
    # weight [e, e] (row = output unit) and bias [e], causal output weight [e] and bias [1],
    # bidirectional output weight [2, e] and bias [2]
    parameters: np.ndarray


def _operator(width: int, depth: int, seed: int, causal: bool) -> FD:
    config = OperatorConfig(kind="fd", causal=causal, rpe_dim=width, rpe_layers=depth)
    with seeded_weights(seed):
        return FD(config, dim=1)  # float32, as fd_response draws it before .double()


def rpe_weights(width: int, depth: int, seed: int) -> RpeWeights:
    """The weights ``fd_response(activation, width, depth, n, seed, fd_input, causal)``
    evaluates, for every activation, n, fd_input and causal (none of them changes a draw)."""
    width, depth = check_int("width", width, 1), check_int("depth", depth, 0)
    causal, bidirectional = (_operator(width, depth, seed, c).rpe for c in (True, False))
    parts = [causal.inp.weight[:, 0], causal.inp.bias]
    for layer, twin in zip(causal.hidden, bidirectional.hidden, strict=True):
        if not torch.equal(layer.weight, twin.weight):  # the contract above, checked
            raise RuntimeError("the causal and bidirectional FD operators drew different "
                               "hidden layers from one seed")
        parts += [layer.weight.flatten(), layer.bias]
    if not torch.equal(causal.inp.weight, bidirectional.inp.weight):
        raise RuntimeError("the causal and bidirectional FD operators drew different input "
                           "layers from one seed")
    parts += [causal.out.weight.flatten(), causal.out.bias, bidirectional.out.weight.flatten(),
              bidirectional.out.bias]
    with torch.no_grad():
        parameters = torch.cat(parts).double().numpy()
    return RpeWeights(width=width, depth=depth, parameters=parameters)


@dataclass(frozen=True)
class FrequencyView:
    """What the Frequency page shows after a setting settles, beside the kernel figure."""

    n: int
    N: int  # fft_size(n), the grid the operator uses
    causal: bool
    fd_input: str  # "omega" or "cosine": what the MLP reads
    activation: str
    kernels: tuple[tuple[str, np.ndarray], ...]  # (activation, FD.kernel(n) [2n-1]) for
    # each activation of THEOREMS, this one first: the same MLP weights, for the decay figure
    fit_end: int  # the last lag fitted, fit_end(n, N)
    theorem: str  # "Theorem 2" .. "Theorem 4", for this activation
    conclusion: str  # what the theorem says about the decay
    premise: str  # what it needs, and whether this setting meets it
    regime: str  # what the setting predicts, beside the measurement


def _premise_and_regime(activation: str, fd_input: str, causal: bool) -> tuple[str, str]:
    """Whether this setting meets the theorem's premise, and the decay it predicts."""
    premise = THEOREMS[activation].premise
    if activation == "relu":
        holds = ("it holds here, but it bounds no rate, and on a finite grid every kernel is "
                 "square summable")
    elif fd_input == "cosine" and activation == "gelu":
        holds = ("it fails here: fed cos ω the response is smooth and 2π-periodic, but the "
                 "RPE's RMS norm between layers, h / √(mean h²), has branch points off the "
                 "real axis (where mean h² = 0), so it is analytic in a strip only. Smooth "
                 "and periodic is Theorem 3's premise: faster than any power of t, and the "
                 "strip bounds the rate, e^{−a t} for one a, not for every a")
    elif fd_input == "cosine":
        holds = "it holds here: fed cos ω, the response is a smooth 2π-periodic function"
    else:
        holds = ("it fails here: fed ω on [0, π] and extended to the circle, the response "
                 "is not smooth at ω = 0 and π")
    if fd_input == "omega" and not causal:
        regime = ("the imaginary half is odd and forced to 0 at ω = 0 and π: a jump, so the "
                  "kernel decays like 1/t")
    elif fd_input == "omega":
        regime = ("the real part's even extension has kinks at ω = 0 and π (a nonzero slope "
                  "there), so the kernel decays like 1/t²")
    elif activation == "relu":
        regime = ("a ReLU MLP of cos ω, with the RMS norms between its layers, is piecewise "
                  "smooth in cos ω: its kinks inside (0, π) leave a 1/t² tail")
    else:
        regime = ("the response has no kink and no jump, so the kernel falls faster than any "
                  "power of t, down to round-off")
    return f"{premise}; {holds}", regime


def frequency_view(activation: str, width: int, depth: int, n: int, seed: int,
                   fd_input: str = "omega", causal: bool = True) -> FrequencyView:
    """The Frequency page's settled view for a seeded one-channel FD operator."""
    check_choice("activation", activation, tuple(THEOREMS))
    check_choice("fd_input", fd_input, FD_INPUTS)
    order = (activation,) + tuple(a for a in THEOREMS if a != activation)
    kernels = tuple((a, fd_response(a, width, depth, n, seed, fd_input, causal).kernel)
                    for a in order)
    N = fft_size(n)
    theorem = THEOREMS[activation]
    premise, regime = _premise_and_regime(activation, fd_input, causal)
    return FrequencyView(n=n, N=N, causal=causal, fd_input=fd_input, activation=activation,
                         kernels=kernels, fit_end=fit_end(n, N), theorem=theorem.name,
                         conclusion=theorem.conclusion, premise=premise, regime=regime)
