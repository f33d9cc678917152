"""A causal kernel as a recurrence: its fits by s damped complex exponentials for every s of
a ladder (the Decomposition page's recurrent_fit figure, and lesson 6).

A time-invariant SSM (S4, S4D; not a selective one such as Mamba) h_{t+1} = z ⊙ h_t + x_t,
y_t = d x_t + Re(c · h_t) applies the causal Toeplitz matrix of k_0 = d,
k_l = Re Σ_j c_j z_j^(l-1) (TNN §4, "State space": its kernel is C A^(l-1) B, l >= 1).
``analysis.exponential_fit`` fits a kernel's lags that way; here every s of ``LADDER`` is
fitted at once, so the browser can move s with no server, and each fit is scored as the
band + W A Wᵀ curve is: the relative Frobenius error ||T - T̂||_F / ||T||_F of the n x n
matrices (lag l fills n - l entries).

Letters: n length, q the ladder's length, s modes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.exponential_fit import (
    exponential_kernel,
    fit_exponentials_ladder,
    undamped_modes,
)

__all__ = ["LADDER", "RECURRENT_MAX_N", "RecurrentFit", "is_causal", "recurrent_fit",
           "relative_error", "modes_for_error", "fitted_kernel", "undamped_sentence", "DECAYS",
           "TARGETS", "modes_by_decay"]

LADDER = tuple(range(1, 33))  # s = 1..32: every value the figure's slider takes
RECURRENT_MAX_N = 2048  # above it one Hankel SVD of n/2 x n/2 takes tens of seconds
DECAYS = (0.9, 0.99, 0.999)  # lesson 6's question: the s needed against λ
TARGETS = (0.01, 0.001)  # relative Frobenius errors it asks the smallest s for


@dataclass(frozen=True)
class RecurrentFit:
    """The fits of one causal kernel, one per s of ``modes``."""

    n: int
    column: np.ndarray  # [n] k_0 .. k_{n-1}, the kernel fitted
    modes: np.ndarray  # [q] s, ascending
    poles: tuple[np.ndarray, ...]  # q arrays, complex [s]: z (0 where a mode is unused)
    residues: tuple[np.ndarray, ...]  # q arrays, complex [s]: c
    direct: float  # d = k_0, fitted exactly
    errors: np.ndarray  # [q] ||T - T̂||_F / ||T||_F at each s (nan when T = 0)
    undamped: np.ndarray  # [q] modes on |z| = 1 at each s: they never decay


def is_causal(coeffs: np.ndarray) -> bool:
    """Whether kernel coeffs [2n-1] is zero at every negative lag (T lower triangular)."""
    n = (len(coeffs) + 1) // 2
    return not np.any(np.asarray(coeffs)[: n - 1])


def relative_error(column: np.ndarray, fitted: np.ndarray) -> float:
    """||T - T̂||_F / ||T||_F for the causal Toeplitz matrices of lags column [n] and fitted
    [n]: lag l fills n - l entries (nan when T = 0)."""
    column, fitted = np.asarray(column, np.float64), np.asarray(fitted, np.float64)
    fills = len(column) - np.arange(len(column))  # (n,) entries of lag l
    norm = math.sqrt(float(np.sum(fills * column**2)))
    return math.sqrt(float(np.sum(fills * (column - fitted) ** 2))) / norm if norm else math.nan


def recurrent_fit(coeffs: np.ndarray, ladder: tuple[int, ...] = LADDER) -> RecurrentFit:
    """The fits of causal kernel coeffs [2n-1] (lag layout of ``core.toeplitz``) by s modes,
    for each s of ``ladder``. ValueError for a kernel with a nonzero negative lag (a
    recurrence running forward cannot produce it) or n above RECURRENT_MAX_N."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (len(coeffs) + 1) // 2
    if not is_causal(coeffs):
        raise ValueError("the kernel has nonzero negative lags: a recurrence running forward "
                         "gives a causal (lower-triangular) T only; switch Causal on")
    if n > RECURRENT_MAX_N:
        raise ValueError(f"n must be at most {RECURRENT_MAX_N} for the recurrent fit (one "
                         f"SVD of an n/2 x n/2 Hankel matrix); got {n}")
    column = coeffs[n - 1:]  # (n,) lags 0..n-1
    fits = fit_exponentials_ladder(column[None], ladder)
    errors = [relative_error(column, fit.kernel(n)[0]) for fit in fits]
    return RecurrentFit(n=n, column=column, modes=np.array(ladder),
                        poles=tuple(fit.poles[0] for fit in fits),
                        residues=tuple(fit.residues[0] for fit in fits),
                        direct=float(column[0]), errors=np.array(errors),
                        undamped=np.array([int(undamped_modes(fit)[0]) for fit in fits]))


def modes_for_error(fit: RecurrentFit, target: float) -> int | None:
    """The smallest s of the fit's ladder whose error is at most ``target`` (None: none)."""
    reached = fit.modes[fit.errors <= target]
    return int(reached[0]) if reached.size else None


def fitted_kernel(fit: RecurrentFit, modes: int) -> np.ndarray:
    """Lags 0..n-1 [n] of the fit with ``modes`` = s of the ladder."""
    i = int(np.flatnonzero(fit.modes == modes)[0])
    return exponential_kernel(fit.poles[i][None], fit.residues[i][None],
                              np.array([fit.direct]), fit.n)[0]


def undamped_sentence(fit: RecurrentFit, modes: int) -> str:
    """One sentence when the fit with ``modes`` = s of the ladder has a pole on the unit
    circle (|z| >= 1 - 1e-9, held there by the bound |z| <= 1), else ""."""
    count = int(fit.undamped[int(np.flatnonzero(fit.modes == modes)[0])])
    if not count:
        return ""
    poles = "1 pole lies" if count == 1 else f"{count} poles lie"
    return (f"At s = {modes}, {poles} on the unit circle (|z| = 1, where the bound |z| <= 1 "
            "holds it): such a mode never decays, its state keeps every input it has read.")


def modes_by_decay(kernels: dict[float, np.ndarray], targets: tuple[float, ...] = TARGETS
                   ) -> dict[float, tuple[int | None, ...]]:
    """For each λ's causal kernel [2n-1] of ``kernels``, the smallest s of the ladder that
    reaches each error of ``targets`` (None: none does)."""
    fits = {decay: recurrent_fit(coeffs) for decay, coeffs in kernels.items()}
    return {decay: tuple(modes_for_error(fit, target) for target in targets)
            for decay, fit in fits.items()}
