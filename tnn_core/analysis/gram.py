"""Inner products of the SKI basis, without n × n matrices.

The low-rank part of a SKI decomposition (§3.2.1 of "SKI to go Faster") is
    L(a) = W A(a) Wᵀ = Σ_l a_l M_l,    M_l = W S_l Wᵀ,
with W [n, r] the linear-interpolation weights (2 nonzeros a row), S_l the
lag-l shift of r-space ((S_l)_pq = 1 iff p - q = l) and a [2r-1] the lag
coefficients of the Toeplitz A. Everything the decomposition needs is a
small inner product of these basis matrices:

    diagonal sums   s[k, l] = Σ_i (M_l)_{i, i-k}        band lag k, [m, 2r-1]
    Gram            Γ[l, m] = <M_l, M_m> = tr(G S_lᵀ G S_m),  G = WᵀW (tridiagonal),
                    nonzero only for |l - m| <= 2
    projection      b[l]    = <M_l, T> = Σ_{p-q=l} (Wᵀ T W)_pq   (r FFT products)

so that, for any a, with μ = s a / c the per-diagonal means of L inside the
band (c_k = n - |k| entries on diagonal k) and band taps β = t_band - μ,

    ||T - L||²_F          = ||T||²_F - 2 aᵀb + aᵀ Γ a
    ||T - B(β) - L||²_F   = ||T - L||²_F - Σ_k c_k (t_k - μ_k)².

Letters: n length, r inducing points, m band lags, N FFT size, F = N//2 + 1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.fft
import torch

from tnn_core.analysis.basis_diagonals import BasisDiagonals, basis_diagonals
from tnn_core.analysis.persymmetric import kernel_rfft
from tnn_core.core.interpolation import Interpolation, interpolation, used_columns
from tnn_core.core.toeplitz import fft_size

__all__ = [
    "band_lags",
    "SkiGram",
    "ski_gram",
    "layout_gram",
    "wide_band_table",
    "band_diagonal_sums",
    "scatter_diagonal_sums",
    "basis_gram",
    "inducing_projection",
    "product_projection",
    "diagonal_sums",
    "layout_solver",
    "inducing_solver",
    "residual_frobenius_sq",
]

_PAIRS_PER_CHUNK = 1 << 21  # band entries scattered at once: bounds memory for wide bands
# layouts whose Gram is kept: two bands' error curves (13 ranks each, ``curves.CURVE_RANKS``);
# one entry is at most m (2r - 1) floats, 8 MB at n = 4096, m = 4095, r = 128
LAYOUTS_KEPT = 26


def band_lags(n: int, band: int, causal: bool) -> np.ndarray:
    """Lags held by the band part: |k| <= band//2, or 0 <= k < band (causal); |k| < n. [m]."""
    if causal:
        return np.arange(0, min(band, n))
    half = min(band // 2, n - 1)
    return np.arange(-half, half + 1)


def _diagonal_index_sums(X: np.ndarray) -> np.ndarray:
    """Sums along each diagonal p - q = l of a square X [r, r] -> [2r-1], l = -(r-1)..r-1."""
    r = X.shape[0]
    p, q = np.indices((r, r))
    return np.bincount((p - q + r - 1).ravel(), weights=X.ravel(), minlength=2 * r - 1)


def wide_band_table(interp: Interpolation, lags: np.ndarray) -> BasisDiagonals | None:
    """The every-lag table (``basis_diagonals``, kept per (n, r)) when it is cheaper than
    scattering the band: m >= 2r lags (the scatter's O(n m) against the table's
    O(n r log n), measured even at about m = 2r), and within the table's limits; else None."""
    if len(lags) < 2 * interp.r:
        return None
    return basis_diagonals(interp.n, interp.r)


def band_diagonal_sums(interp: Interpolation, lags: np.ndarray) -> np.ndarray:
    """s[k, l] = Σ_i (W S_l Wᵀ)_{i, i-k} for the given lags k: rows of the exact every-lag
    table for a wide band (``wide_band_table``), else ``scatter_diagonal_sums``. -> [m, 2r-1]."""
    table = wide_band_table(interp, lags)
    if table is None:
        return scatter_diagonal_sums(interp, lags)
    return table.rows(lags)


def scatter_diagonal_sums(interp: Interpolation, lags: np.ndarray) -> np.ndarray:
    """``band_diagonal_sums`` by scattering the band's entries, for any W: the table's
    reference, and its route beyond the table's limits. -> [m, 2r-1].

    Row i of W has weights (w_i0, w_i1) at columns (p_i, p_i + 1), so the entry
    (i, j = i - k) of W S_l Wᵀ is Σ_ab w_ia w_jb [p_i + a - p_j - b = l]: four
    scatters per band entry, O(n m) in all.
    """
    n, r = interp.n, interp.r
    index = interp.index.cpu().numpy()  # (n,)
    weight = interp.weight.detach().cpu().to(torch.float64).numpy()  # (n, 2)
    lags = np.asarray(lags, dtype=np.int64)
    m, R = len(lags), 2 * r - 1
    out = np.zeros(m * R)
    rows = np.arange(n)
    step = max(1, _PAIRS_PER_CHUNK // max(n, 1))
    for start in range(0, m, step):
        chunk = lags[start : start + step]  # (c,)
        cols = rows[None, :] - chunk[:, None]  # (c, n): j = i - k
        valid = (cols >= 0) & (cols < n)
        which, i = np.nonzero(valid)  # band entry -> (lag slot, row)
        j = cols[which, i]
        slot = (start + which) * R + (index[i] - index[j] + r - 1)  # l = p_i - p_j, shifted
        w_i, w_j = weight[i], weight[j]  # (E, 2)
        size = m * R
        out += np.bincount(slot, w_i[:, 0] * w_j[:, 0], size)
        out += np.bincount(slot + 1, w_i[:, 1] * w_j[:, 0], size)  # p_i + 1
        out += np.bincount(slot - 1, w_i[:, 0] * w_j[:, 1], size)  # p_j + 1
        out += np.bincount(slot, w_i[:, 1] * w_j[:, 1], size)
    return out.reshape(m, R)


def basis_gram(interp: Interpolation) -> np.ndarray:
    """Γ[l, m] = <W S_l Wᵀ, W S_m Wᵀ>_F = tr(G S_lᵀ G S_m) with G = WᵀW. -> [2r-1, 2r-1].

    G is tridiagonal, so Γ[l, l + dp - dq] += Σ_{p - q = l} G[p, p+dp] G[q+dq, q]
    for dp, dq in {-1, 0, 1}: nine correlations of G's diagonals, O(r²).
    """
    r = interp.r
    index = interp.index.cpu().numpy()
    weight = interp.weight.detach().cpu().to(torch.float64).numpy()
    diag = np.bincount(index, weight[:, 0] ** 2, r) + np.bincount(index + 1, weight[:, 1] ** 2, r)
    upper = np.bincount(index, weight[:, 0] * weight[:, 1], r)  # G[p, p+1], last entry 0
    shifted = np.concatenate([[0.0], upper[:-1]])  # G[p, p-1], first entry 0
    band_of_g = {-1: shifted, 0: diag, 1: upper}  # u_d(p) = G[p, p+d]; G symmetric
    R = 2 * r - 1
    gram = np.zeros((R, R))
    lag = np.arange(R)  # slot of l = -(r-1)..r-1
    for dp, u in band_of_g.items():
        for dq in (-1, 0, 1):
            v = band_of_g[dq]  # v(q) = G[q+dq, q] = G[q, q+dq]
            corr = np.correlate(u, v, mode="full")  # (2r-1,): Σ_p u(p) v(p-l)
            target = lag + dp - dq
            ok = (target >= 0) & (target < R)
            gram[lag[ok], target[ok]] += corr[ok]
    return gram


def inducing_projection(coeffs: np.ndarray, gram: SkiGram) -> np.ndarray:
    """b[l] = <W S_l Wᵀ, T>_F for the kernel coeffs [2n-1] on the layout ``gram``. -> [2r-1].

    Σ_k t_k s[k, l] in O(n) when the layout kept the every-lag table (a wide band), else
    ``product_projection``'s r FFT products."""
    if gram.table is None:
        return product_projection(coeffs, gram.interp)
    return gram.table.projection(coeffs)


def product_projection(coeffs: np.ndarray, interp: Interpolation) -> np.ndarray:
    """``inducing_projection`` as Σ_{p-q=l} (Wᵀ T W)_pq, for any W: T W by r FFT products
    (scipy.fft; see ``norms`` on threads), Wᵀ(T W) by the sparse W. -> [2r-1]."""
    N = fft_size(interp.n)
    spectrum = kernel_rfft(coeffs, N)  # (F,)
    n, r = interp.n, interp.r
    index = interp.index.cpu().numpy()  # (n,)
    weight = interp.weight.detach().cpu().to(torch.float64).numpy()  # (n, 2)
    rows = np.arange(n)
    w_rows = np.zeros((r, n))  # (r, n): row p = column p of W
    w_rows[index, rows] = weight[:, 0]
    w_rows[index + 1, rows] += weight[:, 1]
    tw = scipy.fft.irfft(scipy.fft.rfft(w_rows, n=N) * spectrum, n=N)[:, :n]  # (r, n): T w_p
    # Wᵀ on each row: index is sorted, so sum each run of equal index (reduceat)
    used, starts = np.unique(index, return_index=True)
    wtw = np.zeros((r, r))  # wtw[p, q] = w_qᵀ T w_p = (Wᵀ T W)[q, p]
    wtw[:, used] += np.add.reduceat(tw * weight[:, 0], starts, axis=1)
    wtw[:, used + 1] += np.add.reduceat(tw * weight[:, 1], starts, axis=1)
    return _diagonal_index_sums(wtw.T)


def diagonal_sums(interp: Interpolation, A_coeffs: torch.Tensor, N: int) -> torch.Tensor:
    """Σ_i (W A Wᵀ)_{i, i-k} for every lag k in [-(n-1), n-1], by FFT. -> [2n-1].

    With U = W A [n, r], the diagonal sum at lag k is Σ_q Σ_i U[i, q] W[i-k, q]:
    r cross-correlations, one irfft of their summed spectra.
    """
    n, r = interp.n, interp.r
    A_coeffs = A_coeffs.to(torch.float64)
    columns, W = used_columns(interp.to(A_coeffs.device, A_coeffs.dtype))  # (u,), (n, u)
    A = A_coeffs[columns[:, None] - columns[None, :] + r - 1]  # (u, u): A on the used points
    u_f = torch.fft.rfft((W @ A).T, n=N)  # (u, F)
    w_f = torch.fft.rfft(W.T, n=N)  # (u, F)
    corr = torch.fft.irfft((u_f * w_f.conj()).sum(0), n=N)  # (N,): lag k at k mod N
    return torch.cat([corr[N - (n - 1) :], corr[:n]])  # (2n-1,) lag layout


@dataclass(frozen=True)
class SkiGram:
    """The kernel-independent pieces for one (n, r, band): see the module docstring."""

    interp: Interpolation
    lags: np.ndarray  # [m] band lags k
    counts: np.ndarray  # [m] c_k = n - |k|, entries on diagonal k
    diagonal: np.ndarray  # [m, 2r-1] s
    gram: np.ndarray  # [2r-1, 2r-1] Γ
    table: BasisDiagonals | None  # s at every lag, for a wide band (``wide_band_table``)


def ski_gram(interp: Interpolation, lags: np.ndarray,
             table: BasisDiagonals | None = None) -> SkiGram:
    """The layout's pieces; its band sums from ``table`` when one is given (a kept layout's),
    else from the table only for a wide band (``wide_band_table``), by the scatter otherwise."""
    lags = np.asarray(lags, dtype=np.int64)
    table = table if table is not None else wide_band_table(interp, lags)
    return SkiGram(
        interp=interp,
        lags=lags,
        counts=(interp.n - np.abs(lags)).astype(np.float64),
        diagonal=(table.rows(lags) if table is not None
                  else scatter_diagonal_sums(interp, lags)),
        gram=basis_gram(interp),
        table=table,
    )


@functools.lru_cache(maxsize=LAYOUTS_KEPT)
def layout_gram(n: int, r: int, band: int, causal: bool) -> SkiGram:
    """``ski_gram`` of W = interpolation(n, r) and the band's lags, kept for the last
    ``LAYOUTS_KEPT`` layouts: it depends on the layout alone, not on the kernel, so a new
    kernel of the same layout (a move of λ, another channel) reuses it. A kept layout
    takes its band sums from the every-lag table whatever its band (``basis_diagonals``,
    itself kept per (n, r): a move of m reads rows of it) and keeps it, so each kernel's
    projection costs O(n), not r FFT products. Its arrays are read-only."""
    gram = ski_gram(interpolation(n, r), band_lags(n, band, causal), basis_diagonals(n, r))
    for array in (gram.lags, gram.counts, gram.diagonal, gram.gram):
        array.setflags(write=False)
    return gram


@functools.lru_cache(maxsize=LAYOUTS_KEPT)
def layout_solver(n: int, r: int, band: int, causal: bool
                  ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``inducing_solver`` of ``layout_gram(n, r, band, causal)``, kept alike: a new kernel
    of a kept layout only solves."""
    return inducing_solver(layout_gram(n, r, band, causal))


def inducing_solver(gram: SkiGram, rcond: float = 1e-13
                    ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """(projection b [2r-1], t_band [m]) -> the joint least-squares a [2r-1] minimising
    ||T - B(β) - W A(a) Wᵀ||_F with β optimal, for the kernels of one layout.

    The objective is ||T||² - 2 aᵀb + aᵀΓa - Σ_k c_k (t_k - (s a)_k / c_k)² (module
    docstring), a quadratic in a with normal equations
        (Γ - sᵀ C⁻¹ s) a = b - sᵀ t_band.
    The matrix depends on the layout alone, so its eigendecomposition is taken once, and
    the returned function only solves. It is PSD and singular when band and low-rank
    share a direction (r = n: W = I); its pseudo-inverse (eigenvalues below rcond · max
    cut) gives the minimum-norm solution, as a dense least-squares solver would."""
    s, c = gram.diagonal, gram.counts
    Q = gram.gram - s.T @ (s / c[:, None])  # (2r-1, 2r-1)
    eig, vec = np.linalg.eigh(0.5 * (Q + Q.T))
    keep = eig > rcond * max(eig[-1], np.finfo(np.float64).tiny)  # the pseudo-inverse's cut
    kept_vec, kept_eig = vec[:, keep], eig[keep]

    def solve(projection: np.ndarray, t_band: np.ndarray) -> np.ndarray:
        rhs = projection - s.T @ t_band  # (2r-1,)
        return kept_vec @ ((kept_vec.T @ rhs) / kept_eig)

    return solve


def residual_frobenius_sq(gram: SkiGram, a: np.ndarray, projection: np.ndarray,
                          t_band: np.ndarray, norm_sq: float) -> float:
    """||T - B(β) - W A(a) Wᵀ||²_F with β = t_band - s a / c (the optimal taps), >= 0."""
    mu = gram.diagonal @ a / gram.counts  # (m,) diagonal means of L in the band
    low = norm_sq - 2.0 * a @ projection + a @ gram.gram @ a  # ||T - L||²
    inside = np.sum(gram.counts * (t_band - mu) ** 2)  # what the band taps remove
    return max(float(low - inside), 0.0)
