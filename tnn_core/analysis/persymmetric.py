"""Singular values of persymmetric matrices: Toeplitz T, and every matrix of a SKI split.

A Toeplitz T satisfies J T J = Tᵀ (J the reversal), and so does W A Wᵀ on inducing
points symmetric about the middle (J W = W J_r), hence T - band and the residual
T - band - W A Wᵀ of ``decompose``. For such an M, M J is symmetric and, J being
orthogonal, σ(M) = σ(M J) = |λ(M J)|:

* dense, eigvalsh(M J) is 4x faster than the SVD (n = 128..1024 here);
* by products, Lanczos on M J (``norms.symmetric_lanczos``) takes one product and one
  reorthogonalisation per step where Golub–Kahan on M takes two; for the top 1-66
  singular values of T - band at n = 1024 and 4096 it took about as many steps
  (within 15%).

Products are scipy.fft circulant embeddings (TNN §3.1), dense pieces numpy: see
``norms`` on threads. Letters: n size, k values wanted, N FFT size, F = N//2 + 1.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict

import numpy as np
import scipy.fft
import torch

from tnn_core.analysis.dense import dense_toeplitz, frobenius_sq
from tnn_core.analysis.norms import LanczosResult, NumpyProduct, symmetric_lanczos
from tnn_core.checks import check_int
from tnn_core.core.toeplitz import fft_size

__all__ = ["persymmetric_singular_values", "symmetric_toeplitz_singular_values", "kernel_rfft",
           "toeplitz_product",
           "toeplitz_singular_values", "LEADING_SINGULAR_MAX", "leading_singular_count",
           "NORM_MAX_STEPS", "capped_norm", "toeplitz_norm"]

logger = logging.getLogger(__name__)

LEADING_SINGULAR_MAX = 256  # leading_singular_count asks for at most this, or r + 1 if more


def persymmetric_singular_values(M: torch.Tensor | np.ndarray) -> np.ndarray:
    """All singular values of a persymmetric M [n, n] (J M J = Mᵀ) as |eigvalsh(M J)|."""
    M = M.detach().cpu().numpy() if isinstance(M, torch.Tensor) else np.asarray(M)
    H = M[:, ::-1]  # M J, symmetric
    return np.sort(np.abs(np.linalg.eigvalsh(0.5 * (H + H.T))))[::-1]


def symmetric_toeplitz_singular_values(coeffs: np.ndarray) -> np.ndarray:
    """All singular values of the Toeplitz T of a symmetric kernel coeffs [2n-1]
    (t_k = t_{-k}), descending, from two eigenproblems of half the size.

    T is then symmetric and centrosymmetric (J T J = T), and with h = n // 2 and
    T = [[A, ·, B], [xᵀ, c, ·], [·, ·, ·]] (x and c only for odd n) its eigenvalues are
    those of A - B J and of A + B J bordered by √2 x and c (Cantoni & Butler, "Eigenvalues
    and eigenvectors of symmetric centrosymmetric matrices", Linear Algebra Appl. 13, 1976);
    σ = |λ|. Two eigvalsh of n/2 cost about a quarter of one of n."""
    M = dense_toeplitz(np.asarray(coeffs, dtype=np.float64))  # (n, n)
    n = M.shape[0]
    h = n // 2
    if h == 0:
        return np.abs(M[0])
    A, BJ = M[:h, :h], M[:h, n - h :][:, ::-1]  # (h, h) each
    plus = A + BJ
    if n % 2:
        border = np.sqrt(2.0) * M[:h, h]  # (h,)
        plus = np.block([[plus, border[:, None]], [border[None, :], M[h : h + 1, h : h + 1]]])
    eig = np.concatenate([np.linalg.eigvalsh(plus), np.linalg.eigvalsh(A - BJ)])
    return np.sort(np.abs(eig))[::-1]


def _is_symmetric(t: np.ndarray) -> bool:
    """t_k = t_-k to round-off: the antisymmetric part then moves no σ by more than
    Σ_k |t_k - t_-k| / 2 <= 1e-14 Σ_k |t_k| (Weyl)."""
    return 0.5 * np.sum(np.abs(t - t[::-1])) <= 1e-14 * np.sum(np.abs(t))


def _dense_singular_values(t: np.ndarray, symmetric: bool) -> np.ndarray:
    """All singular values of the Toeplitz T of coeffs [2n-1]: from its halves for a
    symmetric kernel, else |eigvalsh(T J)|."""
    if symmetric:
        return symmetric_toeplitz_singular_values(0.5 * (t + t[::-1]))
    return persymmetric_singular_values(dense_toeplitz(t))


def kernel_rfft(coeffs, N: int) -> np.ndarray:
    """rfft of the size-N circulant column of coeffs [2n-1] (numpy). -> complex [N//2+1]."""
    t = np.asarray(coeffs, dtype=np.float64)
    n = (len(t) + 1) // 2
    column = np.zeros(N)
    column[:n] = t[n - 1 :]  # lags 0 .. n-1
    if n > 1:
        column[N - (n - 1) :] = t[: n - 1]  # lags -(n-1) .. -1
    return scipy.fft.rfft(column)


def toeplitz_product(coeffs: torch.Tensor | np.ndarray, flip: bool = False) -> NumpyProduct:
    """x [n] -> T x (or T J x with flip) for the Toeplitz T of coeffs [2n-1], by scipy.fft."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (coeffs.shape[-1] + 1) // 2
    N = fft_size(n)
    spectrum = kernel_rfft(coeffs, N)  # (F,)
    padded = np.zeros(N)  # x's circulant embedding, zeros past n written once (20 % faster)

    def product(x: np.ndarray) -> np.ndarray:
        padded[:n] = x[::-1] if flip else x
        return scipy.fft.irfft(scipy.fft.rfft(padded) * spectrum, n=N)[:n]

    return product


def toeplitz_singular_values(coeffs: torch.Tensor, k: int, dense_max_n: int = 512,
                             tol: float = 1e-8, energy_rank: int | None = None,
                             energy_rtol: float = 1e-6) -> tuple[np.ndarray, str]:
    """Singular values of the Toeplitz matrix of coeffs [2n-1], descending, and the route.

    All n, dense ("dense"), when n <= dense_max_n or k > n/4 (n/8 for a symmetric kernel,
    whose dense route splits in halves: at n = 1024 it took ~40 ms where Lanczos took
    ~220 ms for k = 200 and ~45 ms for k = 129; not with energy_rank, whose Lanczos took
    ~20 ms for k = 129); else the top k as the
    largest |λ(T J)| by symmetric Lanczos ("lanczos"), at most max(4k, k + 100) steps.
    If that is not enough (a spectrum clustered at the top) it goes dense for n <= 2048
    and otherwise returns the Ritz values, marked "lanczos (not converged)". With
    energy_rank = r it may stop once Σ_{i<=r} σ_i² has settled (``symmetric_lanczos``).
    """
    t = coeffs.detach().cpu().numpy() if isinstance(coeffs, torch.Tensor) else coeffs
    t = np.asarray(t, dtype=np.float64)
    n = (t.shape[-1] + 1) // 2
    k = min(k, n)
    symmetric = _is_symmetric(t)
    halves_pay = symmetric and energy_rank is None  # the energy test stops Lanczos sooner
    if n <= dense_max_n or k > (n // 8 if halves_pay else n // 4):
        return _dense_singular_values(t, symmetric), "dense"
    energy = None
    if energy_rank is not None:
        energy = (energy_rank, frobenius_sq(t), energy_rtol)
    result = symmetric_lanczos(toeplitz_product(t, flip=True), n, k, tol=tol,
                               max_steps=max(4 * k, k + 100), energy=energy)
    if result.converged:
        return result.values, "lanczos"
    if n <= 2048:
        return _dense_singular_values(t, symmetric), "dense"
    logger.warning("top %d singular values not converged in %d steps at n=%d; using Ritz "
                   "values", k, result.steps, n)
    return result.values, "lanczos (not converged)"


def leading_singular_count(n: int, rank: int) -> int:
    """How many leading singular values of an n × n matrix show its spectrum around rank
    r: σ_1 .. σ_{2r+2} (σ_{r+1}, the Eckart–Young error at rank r, with as many values
    after it as before), at most LEADING_SINGULAR_MAX unless σ_{r+1} itself lies
    further, and never more than n:

        k = min(n, max(min(2r + 2, 256), r + 1))

    The k to pass to ``toeplitz_singular_values``."""
    n, rank = check_int("n", n, 1), check_int("rank", rank, 1)
    return min(n, max(min(2 * rank + 2, LEADING_SINGULAR_MAX), rank + 1))


NORM_MAX_STEPS = 300  # cap for a spectral norm; see ``capped_norm``


def capped_norm(hankel: NumpyProduct, n: int, tol: float = 1e-10) -> LanczosResult:
    """Largest |λ| of a symmetric map by Lanczos, at most NORM_MAX_STEPS steps.

    A top singular value inside a dense cluster converges only algebraically (an FD
    kernel's, docs/benchmarks.md). The cap keeps the page responsive; a warning reports
    the residual bound when it stops there."""
    result = symmetric_lanczos(hankel, n, 1, tol=tol, max_steps=NORM_MAX_STEPS)
    if not result.converged:
        logger.warning("spectral norm: Lanczos stopped at the %d-step cap (n=%d) before "
                       "tol=%g; the value is a lower bound", result.steps, n, tol)
    return result


NORMS_KEPT = 64  # kernels whose ||T||_2 ``toeplitz_norm`` keeps
_norms: OrderedDict[tuple[bytes, float], float] = OrderedDict()  # (digest, tol) -> ||T||_2
_norms_lock = threading.Lock()


def toeplitz_norm(coeffs, tol: float = 1e-10) -> float:
    """||T||_2 for the Toeplitz T of coeffs [2n-1]: the largest |λ(T J)| (``capped_norm``),
    kept for the last NORMS_KEPT kernels (by a digest of their float64 bytes): a move of r
    or m decomposes the same T again."""
    t = coeffs.detach().cpu().numpy() if isinstance(coeffs, torch.Tensor) else coeffs
    t = np.ascontiguousarray(t, dtype=np.float64)
    key = (hashlib.blake2b(t.tobytes(), digest_size=16).digest(), float(tol))
    with _norms_lock:
        if key in _norms:
            _norms.move_to_end(key)
            return _norms[key]
    n = (len(t) + 1) // 2
    norm = float(capped_norm(toeplitz_product(t, flip=True), n, tol).values[0])
    with _norms_lock:
        _norms[key] = norm
        while len(_norms) > NORMS_KEPT:
            _norms.popitem(last=False)
    return norm
