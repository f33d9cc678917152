"""A causal kernel as a recurrence: its fits by s damped complex exponentials for every s of
a ladder (the Decomposition page's recurrent_fit figure, and lesson 6).

A time-invariant SSM (S4, S4D; not a selective one such as Mamba) h_{t+1} = z ⊙ h_t + x_t,
y_t = d x_t + Re(c · h_t) applies the causal Toeplitz matrix of k_0 = d,
k_l = Re Σ_j c_j z_j^(l-1) (TNN §4, "State space": its kernel is C A^(l-1) B, l >= 1).
``analysis.exponential_fit`` fits a kernel's lags that way; here every s of ``LADDER`` is
fitted at once, so the browser can move s with no server, and each fit is scored as the
band + W A Wᵀ curve is: the relative Frobenius error ||T - T̂||_F / ||T||_F of the n x n
matrices (lag l fills n - l entries).

A fit takes seconds (lesson 6: 1.4 CPU-s per kernel at n = 128 to 256), so the lessons'
fits are kept beside the shipped checkpoints (``stored_measurements``): ``recurrent_fit``
returns the stored fit when one was computed from these exact coefficients (their SHA-256)
by this code (``FIT_CODE``), and computes it otherwise (``computed_fit``).

Letters: n length, q the ladder's length, s modes.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import torch

from tnn_core.analysis import exponential_fit, variable_projection
from tnn_core.analysis.exponential_fit import (
    exponential_kernel,
    fit_exponentials_ladder,
    undamped_modes,
)
from tnn_core.analysis.norms import single_threaded_blas
from tnn_core.lab.common.recurrent_fit_result import LADDER, RecurrentFit
from tnn_core.lab.common.stored_measurements import stored_or_computed

__all__ = ["LADDER", "RECURRENT_MAX_N", "RecurrentFit", "is_causal", "recurrent_fit",
           "computed_fit", "kernel_digest", "fit_key", "FIT_CODE", "relative_error",
           "modes_for_error", "fitted_kernel", "undamped_sentence", "DECAYS", "TARGETS",
           "modes_by_decay"]

RECURRENT_MAX_N = 2048  # above it one Hankel SVD of n/2 x n/2 takes tens of seconds
DECAYS = (0.9, 0.99, 0.999)  # lesson 6's question: the s needed against λ
TARGETS = (0.01, 0.001)  # relative Frobenius errors it asks the smallest s for


def _fit_code() -> str:
    """SHA-256 of what a fit's numbers follow from besides its kernel: the source of the
    modules that compute it (this one, ``exponential_fit``, ``variable_projection``) and
    the numpy and torch versions. Any change to them makes every stored fit stale."""
    digest = hashlib.sha256(f"numpy {np.__version__}, torch {torch.__version__}".encode())
    for path in (__file__, exponential_fit.__file__, variable_projection.__file__):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


FIT_CODE = _fit_code()


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


def kernel_digest(coeffs: np.ndarray) -> str:
    """SHA-256 of kernel coeffs [2n-1] as little-endian float64: what its stored fit is
    keyed by (a kernel that differs in one bit has another)."""
    return hashlib.sha256(np.ascontiguousarray(coeffs, dtype="<f8").tobytes()).hexdigest()


def fit_key(coeffs: np.ndarray, ladder: tuple[int, ...] = LADDER
            ) -> tuple[tuple[str, str], dict]:
    """(digests, params) the store keeps the fit of coeffs [2n-1] at ``ladder`` under
    (``stored_measurements.stored_or_computed``): the kernel's SHA-256 and ``FIT_CODE``;
    the ladder."""
    return (kernel_digest(coeffs), FIT_CODE), {"ladder": [int(s) for s in ladder]}


def _checked(coeffs: np.ndarray) -> np.ndarray:
    """coeffs [2n-1] as float64; ValueError for a kernel with a nonzero negative lag (a
    recurrence running forward cannot produce it) or n above RECURRENT_MAX_N."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (len(coeffs) + 1) // 2
    if not is_causal(coeffs):
        raise ValueError("the kernel has nonzero negative lags: a recurrence running forward "
                         "gives a causal (lower-triangular) T only; switch Causal on")
    if n > RECURRENT_MAX_N:
        raise ValueError(f"n must be at most {RECURRENT_MAX_N} for the recurrent fit (one "
                         f"SVD of an n/2 x n/2 Hankel matrix); got {n}")
    return coeffs


def recurrent_fit(coeffs: np.ndarray, ladder: tuple[int, ...] = LADDER) -> RecurrentFit:
    """The fits of causal kernel coeffs [2n-1] (lag layout of ``core.toeplitz``) by s modes,
    for each s of ``ladder``: the stored fit when the lesson store holds one for these
    coefficients and this code (``fit_key``), else ``computed_fit``'s. ValueError for a
    kernel with a nonzero negative lag or n above RECURRENT_MAX_N."""
    coeffs = _checked(coeffs)
    digests, params = fit_key(coeffs, ladder)
    return stored_or_computed("recurrent_fit", digests, params,
                              lambda: computed_fit(coeffs, ladder))


def computed_fit(coeffs: np.ndarray, ladder: tuple[int, ...] = LADDER) -> RecurrentFit:
    """``recurrent_fit`` computed here, on one torch and one BLAS thread: the refinement's
    path depends on the thread count (lesson 6's kernels: errors at large s differ by up to
    30 % between one thread and two), so on one the stored fit and a computed one agree
    bit for bit on a machine, and one is faster (1.4 against 2.5–4.8 CPU-s)."""
    coeffs = _checked(coeffs)
    n = (len(coeffs) + 1) // 2
    column = coeffs[n - 1:]  # (n,) lags 0..n-1
    with single_threaded_blas(), variable_projection.one_thread():
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
