"""The diagonal sums of SKI's basis matrices at every lag, exact, from one 2-D FFT.

``gram`` writes SKI's low-rank part as W A(a) Wᵀ = Σ_l a_l M_l with M_l = W S_l Wᵀ and
needs the diagonal sums s[k, l] = Σ_i (M_l)_{i, i-k} on the band's lags. Since
(M_l)_{ij} = Σ_{p-q=l} W[i, p] W[j, q], the table over every lag k of an n × n matrix is
the 2-D autocorrelation of W [n, r]:

    s[k, l] = Σ_{i, p} W[i, p] W[i-k, p-l],

one rfft2 and one irfft2 of size (≥ 2n-1) × (≥ 2r-1), O(n r log n), where a scatter over
the band's entries costs O(n m) for every band (``gram.band_diagonal_sums`` below the
limits here: its reference). The same table gives SKI's projection without the r FFT
products of T W: b[l] = <M_l, T>_F = Σ_k t_k s[k, l], T_ij = t_{i-j}.

Exact: ``interpolation`` keeps each weight's fraction in integers, so (n-1) W is an
integer matrix and (n-1)² s an integer table. A float64 FFT of integers errs by about
eps · log2(size) · ||(n-1) W||²_F ≤ eps · log2(size) · n (n-1)², under 1e-2 for
n ≤ EXACT_MAX_N, so rounding the FFT's result recovers the integers, and s = that / (n-1)².
Its exact zeros stay zeros (a row k of s is nonzero only within a few columns of l = k/h,
h = (n-1)/(r-1)), and the table is kept compactly: each row's first nonzero column and a
window of fixed width.

Letters: n length, r inducing points, k lag, l A's lag, w window width.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.fft

from tnn_core.core.interpolation import interpolation
from tnn_core.core.toeplitz import fft_size

__all__ = ["BasisDiagonals", "basis_diagonals", "exact_by_fft", "EXACT_MAX_N", "FFT_MAX_ENTRIES"]

EXACT_MAX_N = 8192  # eps · log2(size) · n (n-1)² ≈ 1e-2 here: far from the 1/2 rounding needs
FFT_MAX_ENTRIES = 1 << 22  # the 2-D FFT's real size (32 MB of complex spectrum at most)
TABLES_KEPT = 64  # (n, r) tables: an error curve uses 13 ranks; one is ~(2n-1) · 6 floats


@dataclass(frozen=True)
class BasisDiagonals:
    """s[k, l] for every lag k in [-(n-1), n-1] and l in [-(r-1), r-1], kept by rows: row k
    holds ``values[k + n - 1]`` at l = ``first[k + n - 1]`` - (r - 1) + 0 .. w - 1."""

    n: int
    r: int
    first: np.ndarray  # [2n-1] column (l + r - 1) of each row's first entry
    values: np.ndarray  # [2n-1, w] the row's entries from there, zeros past its end

    def rows(self, lags: np.ndarray) -> np.ndarray:
        """s at the given lags, dense. -> [m, 2r-1]."""
        slots = np.asarray(lags, dtype=np.int64) + self.n - 1  # (m,)
        out = np.zeros((len(slots), 2 * self.r - 1 + self.values.shape[1]))
        columns = self.first[slots, None] + np.arange(self.values.shape[1])  # (m, w)
        np.put_along_axis(out, columns, self.values[slots], axis=1)
        return out[:, : 2 * self.r - 1]

    def projection(self, coeffs: np.ndarray) -> np.ndarray:
        """b[l] = <W S_l Wᵀ, T>_F = Σ_k t_k s[k, l] for the kernel coeffs [2n-1]. -> [2r-1]."""
        columns = self.first[:, None] + np.arange(self.values.shape[1])  # (2n-1, w)
        weights = self.values * np.asarray(coeffs, dtype=np.float64)[:, None]
        width = 2 * self.r - 1 + self.values.shape[1]
        return np.bincount(columns.ravel(), weights.ravel(), width)[: 2 * self.r - 1]


def exact_by_fft(n: int, r: int) -> bool:
    """Whether ``basis_diagonals(n, r)`` is computed (within EXACT_MAX_N and FFT_MAX_ENTRIES)."""
    return n <= EXACT_MAX_N and fft_size(n) * scipy.fft.next_fast_len(2 * r - 1) <= FFT_MAX_ENTRIES


@functools.lru_cache(maxsize=TABLES_KEPT)
def basis_diagonals(n: int, r: int) -> BasisDiagonals | None:
    """The table s of W = ``interpolation(n, r)``, kept for the last TABLES_KEPT (n, r);
    None beyond ``exact_by_fft``'s limits (the caller scatters the band's entries). Its
    arrays are read-only."""
    if not exact_by_fft(n, r):
        return None
    interp = interpolation(n, r)
    den = max(n - 1, 1)
    scaled = np.rint(interp.weight.double().numpy() * den)  # (n, 2) integers (n-1) w
    index, rows = interp.index.numpy(), np.arange(n)
    W = np.zeros((n, r))  # (n, r) (n-1) W
    W[rows, index] = scaled[:, 0]
    W[rows, index + 1] += scaled[:, 1]
    shape = (fft_size(n), scipy.fft.next_fast_len(2 * r - 1))
    spectrum = scipy.fft.rfft2(W, s=shape)
    circular = np.rint(scipy.fft.irfft2(spectrum * spectrum.conj(), s=shape))  # lag (k, l) mod
    lags, shifts = np.arange(-(n - 1), n), np.arange(-(r - 1), r)
    table = circular[np.ix_(lags % shape[0], shifts % shape[1])]  # (2n-1, 2r-1) integers
    nonzero = table != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 0)  # (2n-1,)
    last = np.where(nonzero.any(axis=1), 2 * r - 2 - nonzero[:, ::-1].argmax(axis=1), 0)
    width = int(np.max(last - first)) + 1
    padded = np.concatenate([table, np.zeros((2 * n - 1, width))], axis=1)
    values = np.take_along_axis(padded, first[:, None] + np.arange(width), axis=1) / den**2
    first.setflags(write=False)
    values.setflags(write=False)
    return BasisDiagonals(n, r, first, values)
