"""Largest |λ| of symmetric maps known by their products, and one-thread BLAS.

``symmetric_lanczos``: Lanczos with full reorthogonalisation (Golub & Van Loan,
Matrix Computations, §10.1) for the k largest |λ| of a symmetric n × n map: the
tridiagonal T_j, Ritz pair (θ, s) with residual β_j |s_last|. Stop when every wanted
residual is <= tol · (largest Ritz value). A breakdown (an invariant subspace)
continues from a fresh random vector orthogonal to the basis, so repeated values are
found too. Ritz values are lower bounds. Singular values of Toeplitz and SKI matrices
come from it through their symmetric Hankel forms M J (``persymmetric``).

Threads. Multithreaded BLAS next to torch's OpenMP pool is pathological on a small CPU
(docs/benchmarks.md, "Analysis latency"): the bases live in numpy, the products use
scipy.fft, and the analysis entry points run inside ``single_threaded_blas()``, which
limits OpenBLAS to one thread for their duration and restores it after (through
threadpoolctl when installed; otherwise it does nothing). This Lanczos replaces ARPACK
(scipy.sparse.linalg.svds), slower here for the few values needed.

Letters: n size of the (square) map, k values wanted, j Lanczos steps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from tnn_core.checks import check_int, check_number

__all__ = ["single_threaded_blas", "LanczosResult", "NumpyProduct", "symmetric_lanczos"]

NumpyProduct = Callable[[np.ndarray], np.ndarray]  # numpy x [n] -> M x [n]

_controller = None  # threadpoolctl.ThreadpoolController, built on first use (scans libraries)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block with numpy's and scipy's BLAS limited to one thread, then restore it.

    The limit is process-wide while the block runs (another thread's BLAS calls run
    single-threaded meanwhile). A no-op without threadpoolctl. Nests."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional: correct without it, only slower on small CPUs
            _controller = False
        else:
            _controller = ThreadpoolController()
    if not _controller:
        yield
        return
    with _controller.limit(limits=1, user_api="blas"):
        yield


@dataclass(frozen=True)
class LanczosResult:
    values: np.ndarray  # [k] Ritz values (σ or |λ|), descending; lower bounds of the true ones
    converged: bool  # every residual <= tol · values[0], or the whole space was spanned
    steps: int  # Lanczos steps taken


def _check(n, k, tol) -> None:
    check_int("n", n, 1)
    check_int("k", k, 1, n, "[1, n]")
    check_number("tol", tol, 0, closed_low=False)


def _orthogonalise(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """x minus its projection on the rows of basis [j, n]; a second pass only when the
    first removed most of x (the DGKS criterion), which keeps orthogonality to ~eps."""
    if basis.shape[0] == 0:
        return x
    before = np.linalg.norm(x)
    x = x - (basis @ x) @ basis
    if np.linalg.norm(x) < 0.7 * before:
        x = x - (basis @ x) @ basis
    return x


def _fresh(basis: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """A random unit vector orthogonal to the rows of basis (zero if none is left)."""
    for _ in range(3):
        x = _orthogonalise(rng.standard_normal(n), basis)
        size = np.linalg.norm(x)
        if size > 1e-8:
            return x / size
    return np.zeros(n)


class _Basis:
    """Rows of Lanczos vectors [j, n], grown by doubling (most runs stop early)."""

    def __init__(self, n: int, capacity: int, limit: int):
        self.rows = np.zeros((min(capacity, limit), n))
        self.limit = limit

    def set(self, j: int, x: np.ndarray) -> None:
        if j >= self.rows.shape[0]:
            grown = np.zeros((min(2 * self.rows.shape[0], self.limit), self.rows.shape[1]))
            grown[: self.rows.shape[0]] = self.rows
            self.rows = grown
        self.rows[j] = x

    def extend(self, j: int, w: np.ndarray, size: float, scale: float,
               rng: np.random.Generator) -> float:
        """Row j = w / size, or a fresh vector orthogonal to rows 0..j-1 when w vanished
        (size <= 1e-13 scale: an invariant subspace). Returns the size kept (0 then)."""
        if size <= 1e-13 * scale:
            self.set(j, _fresh(self.rows[:j], self.rows.shape[1], rng))
            return 0.0
        self.set(j, w / size)
        return size


def _next_check(size: int) -> int:
    return size + max(4, size // 8)


def _largest_magnitude(diag: np.ndarray, off: np.ndarray, top: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of a symmetric tridiagonal with the ``top`` largest |λ|, in that order."""
    size = len(diag)
    if size == 1:
        return diag.copy(), np.ones((1, 1))

    def ends(low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
        return scipy.linalg.eigh_tridiagonal(diag, off, select="i", select_range=(low, high))

    if top > 4 or 2 * top >= size:  # all pairs (MRRR) beat inverse iteration for many
        theta, S = scipy.linalg.eigh_tridiagonal(diag, off)
    else:  # the top |λ| lie among the lowest and the highest ``top``
        (lo, S_lo), (hi, S_hi) = ends(0, top - 1), ends(size - top, size - 1)
        theta, S = np.concatenate([lo, hi]), np.concatenate([S_lo, S_hi], axis=1)
    order = np.argsort(np.abs(theta))[::-1][:top]
    return theta[order], S[:, order]


def _settled(current: float, last: float | None, energy: tuple[int, float, float]) -> bool:
    """Whether the top-r energy grew by <= rtol · (total - E) since the last check."""
    _, total, rtol = energy
    tail = max(total - current, 1e-12 * total)
    return last is not None and current - last <= rtol * tail


def symmetric_lanczos(matvec: NumpyProduct, n: int, k: int = 1, tol: float = 1e-8,
                      seed: int = 0, max_steps: int | None = None,
                      energy: tuple[int, float, float] | None = None) -> LanczosResult:
    """The k largest |λ| of a symmetric n × n map (numpy x [n] -> M x [n]), descending.

    energy = (r, total, rtol) adds a second way to stop, for callers that only need
    E = Σ_{i<=r} θ_i² (Eckart–Young: the tail is total - E, total = ||M||²_F): E only
    grows from step to step, so stop once it grew by <= rtol · (total - E) since the
    last check; that test alone then decides (the Ritz residuals, which need the
    tridiagonal's eigenvectors, five times the cost of its values, are not computed).
    Ritz values converge one by one, but their energy much sooner (for
    a random kernel at n = 1024 the top-32 energy was exact to 1e-15 at 170 steps,
    the values only at ~300)."""
    _check(n, k, tol)
    steps = n if max_steps is None else max(1, min(max_steps, n))
    rng = np.random.default_rng(seed)
    Q = _Basis(n, 2 * k + 33, steps + 1)
    alpha, beta = np.zeros(steps), np.zeros(steps)
    Q.set(0, _fresh(Q.rows[:0], n, rng))
    scale, check, values, last_energy = 0.0, min(steps, k + 4), np.zeros(k), None
    for j in range(steps):
        w = np.array(matvec(Q.rows[j]), dtype=np.float64)
        alpha[j] = Q.rows[j] @ w
        w -= alpha[j] * Q.rows[j]  # the three-term recurrence first, so that the full
        if j > 0:  # reorthogonalisation removes only round-off: one pass, not DGKS's two
            w -= beta[j - 1] * Q.rows[j - 1]
        w = _orthogonalise(w, Q.rows[: j + 1])
        norm = np.linalg.norm(w)
        scale = max(scale, abs(alpha[j]), norm)
        beta[j] = Q.extend(j + 1, w, norm, scale, rng)
        size = j + 1
        if size < check and size < steps:
            continue
        check = _next_check(size)
        top = min(k, size)
        if energy is not None:  # the energy test alone: Ritz values, no vectors
            theta = scipy.linalg.eigh_tridiagonal(alpha[:size], beta[: size - 1],
                                                  eigvals_only=True)
            values = np.zeros(k)
            values[:top] = np.sort(np.abs(theta))[::-1][:top]
            current = float(np.sum(values[: energy[0]] ** 2))
            if scale == 0.0 or size == n or (top == k and _settled(current, last_energy,
                                                                      energy)):
                return LanczosResult(values, True, size)
            last_energy = current if top == k else None
            continue
        theta, S = _largest_magnitude(alpha[:size], beta[: size - 1], top)
        values = np.zeros(k)
        values[:top] = np.abs(theta)
        residual = np.abs(beta[j] * S[-1])
        if scale == 0.0 or size == n or (top == k and np.all(residual <= tol * values[0])):
            return LanczosResult(values, True, size)
    return LanczosResult(values, False, steps)
