"""A causal kernel as a diagonal state-space model: a sum of s damped complex exponentials.

The recurrent form of a causal Toeplitz layer (TNN §4, "State space"; Qin and Zhong,
EMNLP 2023, go from a trained TNN to an SSM). Per channel, with s complex modes and a
real output (the convention of S4D: Gu, Gupta, Goel and Ré, NeurIPS 2022):

    k_0 = d,    k_l = Re Σ_{j<s} c_j z_j^(l-1)   (l >= 1)

which is the kernel of the recurrence h_{t+1} = z ⊙ h_t + x_t, y_t = d x_t + Re(c · h_t)
(``operators.ssm``). A mode is one complex exponential; a real signal's conjugate pair of
poles is one mode (the real part of one), a real pole is one mode too.

The fit (``fit_exponentials``), per channel, on the lags 1..n-1 of a kernel at length n:

1. Poles by the matrix pencil method (Hua and Sarkar, "Matrix pencil method for estimating
   parameters of exponentially damped/undamped sinusoids in noise", IEEE Trans. ASSP
   38(5), 1990): the Hankel matrix of the samples y_i = k_(i+1), its M leading right
   singular vectors V, and the eigenvalues of pinv(V[:-1]) V[1:]. The samples are real, so
   the poles come in exact conjugate pairs. A pole outside the unit circle is pulled onto
   it, so that the recurrence never grows.
2. Residues c by least squares, each lag l weighted by the n - l entries it fills in the
   n x n matrix: the fit minimises ||T - T̂||_F at length n for the poles found. d = k_0.
3. Of the orders M <= 2s on a fixed ladder (``_ORDERS``) whose modes (pairs plus real
   poles) number at most s, the one with the smallest ||T - T̂||_F: so the error never
   grows with s.

When the samples are a sum of at most s exponentials, the fit is exact up to round-off;
n - 1 samples allow M <= (n - 1) // 2 poles.

Letters: D channels, n fitted length, s modes, M pencil order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.checks import check_int

__all__ = ["ExponentialFit", "fit_exponentials", "fit_exponentials_ladder",
           "exponential_kernel", "MAX_MODES"]

MAX_MODES = 4_096  # s at most: far above what a kernel of the lab's lengths can use
# the pencil orders tried: every one up to 16, then steps of a quarter of the power of two
# below (16, 20, ... 32, 40, ... 64, 80, ...): a fixed ladder, so that s's candidates are
# among s + 1's, and a few large orders rather than all of them
_ORDERS = np.array(sorted({*range(1, 17)} | {step * k for step in 2 ** np.arange(2, 12)
                                             for k in range(4, 9)}))


@dataclass(frozen=True)
class ExponentialFit:
    """Per channel: poles z and residues c (complex [D, s]; unused modes are 0) and the
    direct term d (real [D])."""

    poles: np.ndarray  # complex128 [D, s]
    residues: np.ndarray  # complex128 [D, s]
    direct: np.ndarray  # float64 [D]

    def kernel(self, n: int) -> np.ndarray:
        """Lags 0..n-1 of the fitted kernel, float64 [D, n]."""
        return exponential_kernel(self.poles, self.residues, self.direct, n)


def exponential_kernel(poles: np.ndarray, residues: np.ndarray, direct: np.ndarray,
                       n: int) -> np.ndarray:
    """k_0 = d, k_l = Re Σ_j c_j z_j^(l-1): lags 0..n-1, float64 [D, n]."""
    check_int("n", n, 1)
    powers = _powers(poles, n - 1)  # (D, s, n-1): z^0 .. z^(n-2)
    tail = np.einsum("ds,dsl->dl", residues, powers).real  # (D, n-1)
    return np.concatenate([np.asarray(direct, dtype=np.float64)[:, None], tail], axis=1)


def fit_exponentials(column: np.ndarray, modes: int) -> ExponentialFit:
    """Fit lags 0..n-1 of each channel's causal kernel, column [D, n], with ``modes`` = s
    complex modes (module docstring)."""
    return fit_exponentials_ladder(column, (modes,))[0]


def fit_exponentials_ladder(column: np.ndarray, ladder) -> list[ExponentialFit]:
    """``[fit_exponentials(column, s) for s in ladder]``, equal to it bit for bit, with one
    Hankel SVD and one fit per pencil order for the whole ladder (the candidates of every s
    are among those of the largest)."""
    column = np.asarray(column, dtype=np.float64)
    if column.ndim != 2 or column.shape[1] < 1:
        raise ValueError(f"column must be [D, n >= 1] (lags 0..n-1); got {column.shape}")
    if not np.isfinite(column).all():
        raise ValueError("column must be finite; got NaN or Inf")
    ladder = [check_int("modes", s, 1, MAX_MODES) for s in ladder]
    if not ladder:
        raise ValueError("ladder must hold at least one number of modes; got none")
    D, n = column.shape
    poles = [np.zeros((D, s), dtype=np.complex128) for s in ladder]
    residues = [np.zeros((D, s), dtype=np.complex128) for s in ladder]
    weight = np.sqrt(n - np.arange(1, n, dtype=np.float64))  # (n-1,): lag l fills n-l entries
    for channel in range(D):
        candidates = _candidates(column[channel, 1:], max(ladder), weight)
        for i, s in enumerate(ladder):
            found, found_residues = _best(candidates, s)
            poles[i][channel, : found.size] = found
            residues[i][channel, : found.size] = found_residues
    return [ExponentialFit(p, c, column[:, 0].copy()) for p, c in zip(poles, residues,
                                                                        strict=True)]


_EMPTY = np.zeros(0, dtype=np.complex128)


def _candidates(samples: np.ndarray, s: int, weight: np.ndarray
                ) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """For one channel's samples y_0..y_(N-1), every pencil order M <= 2s (of ``_ORDERS``)
    whose modes number at most s: (M, weighted error, poles, residues), M ascending."""
    N = samples.size
    if N == 0 or not samples.any():
        return [(0, 0.0, _EMPTY, _EMPTY)]
    if N == 1:  # z = 0
        return [(0, 0.0, np.zeros(1, dtype=np.complex128), samples.astype(np.complex128))]
    L = N // 2  # pencil parameter: the Hankel matrix is [N - L, L + 1]
    hankel = samples[np.arange(N - L)[:, None] + np.arange(L + 1)[None, :]]  # (N-L, L+1)
    _, sigma, vh = np.linalg.svd(hankel, full_matrices=False)
    rank = int((sigma > sigma[0] * 1e-13).sum())  # beyond it, the pencil sees round-off
    found = []
    for order in _ORDERS[_ORDERS <= min(2 * s, L, N - L, rank)]:
        v = vh[:order].T  # (L+1, M) leading right singular vectors
        z = np.linalg.eigvals(np.linalg.pinv(v[:-1]) @ v[1:])  # (M,) in conjugate pairs
        z = z[z.imag >= 0]  # one mode per pair, and the real poles
        if z.size > s:
            continue
        radius = np.abs(z)
        z = np.where(radius > 1, z / np.maximum(radius, 1e-300), z)  # never growing
        c, error = _residues(samples, z, weight)
        found.append((int(order), error, z, c))
    return found


def _best(candidates: list, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Poles and residues of at most s modes: of the candidates of order M <= 2s with at
    most s modes, the one with the smallest weighted error (the first of equals). (A high
    order can give nearly equal poles whose residues cancel at 1e10, worse than a lower
    order: the order is chosen by the error, which then never grows with s.)"""
    best = (np.inf, _EMPTY, _EMPTY)
    for order, error, z, c in candidates:
        if order <= 2 * s and z.size <= s and error < best[0]:
            best = (error, z, c)
    return best[1], best[2]


def _residues(samples: np.ndarray, poles: np.ndarray, weight: np.ndarray
              ) -> tuple[np.ndarray, float]:
    """c minimising Σ_i w_i² (y_i - Re Σ_j c_j z_j^i)², a real least-squares problem in
    (Re c, Im c), and that minimum's square root."""
    powers = _powers(poles[None], samples.size)[0].T  # (N, P): z_j^i
    basis = np.concatenate([powers.real, -powers.imag], axis=1) * weight[:, None]  # (N, 2P)
    target = samples * weight  # (N,)
    solution = np.linalg.lstsq(basis, target, rcond=None)[0]  # (2P,)
    P = poles.size
    return solution[:P] + 1j * solution[P:], float(np.linalg.norm(basis @ solution - target))


def _powers(poles: np.ndarray, count: int) -> np.ndarray:
    """z^0 .. z^(count-1) for poles [D, s] -> complex128 [D, s, count] (0^0 = 1)."""
    exponents = np.arange(count, dtype=np.float64)
    poles = np.asarray(poles, dtype=np.complex128)[..., None]  # (D, s, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        powers = poles ** exponents  # (D, s, count)
    powers[..., :1] = 1.0
    return np.where(np.isfinite(powers), powers, 0.0)
