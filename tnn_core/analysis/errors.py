"""Errors of a SKI decomposition, and the Eckart–Young optimum to compare them with.

For T ≈ B + W A Wᵀ (``decompose``) with residual R = T - B - W A Wᵀ:

* spectral ||R||_2: dense, max |eigvalsh(R J)|; or Lanczos on R J. R is
  persymmetric (Toeplitz parts, and W A Wᵀ on a symmetric inducing grid), so
  R J is symmetric and σ(R) = |λ(R J)| (``persymmetric``).
* Frobenius ||R||_F: dense up to n = 512, else exact from lag coefficients and
  the Gram matrices of ``gram`` (no n × n):
      ||R||² = ||T - W A Wᵀ||² - Σ_{k in band} c_k (t_k - μ_k)².
* Eckart–Young: no rank-r matrix is closer to T - B than its truncated SVD, so
  ||R||_2 >= σ_{r+1}(T - B) and ||R||_F >= (Σ_{i>r} σ_i²)^½ (W A Wᵀ has rank <= r).
  With only the top r values, Σ_{i>r} σ_i² = ||T - B||²_F - Σ_{i<=r} σ_i², and
  ||T - B||²_F = Σ_k (n - |k|) (t_k - β_k)² is exact from coefficients.

Theorem 1 of "SKI to go Faster" bounds ||E_SKI||_2 = ||W A Wᵀ - T_{r,opt}||_2 for the
smooth part; ``theorem1_terms`` evaluates both sides and the per-entry interpolation term
h²/8 · max|k''| for one kernel (see its docstring).

``relative_error`` is the lab's one relative error, ||T - T̂||_F / ||T||_F, with T the
n × n Toeplitz matrix of the kernel (a layer: over all its channels); every page, lesson,
report, plan and command divides by ||T||_F (``RELATIVE_ERROR`` writes it on screen).

Everything here takes plain arrays: the lags of T [2n-1] and of the band B [2n-1],
the interpolation and A's lags [2r-1]. Letters: n length, r rank, m band lags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.dense import dense_toeplitz, frobenius_sq
from tnn_core.analysis.gram import SkiGram, inducing_projection, residual_frobenius_sq
from tnn_core.analysis.low_rank import (
    interpolation_weights,
    low_rank_matrix,
    low_rank_product,
    residual_matrix,
)
from tnn_core.analysis.persymmetric import (
    capped_norm,
    persymmetric_singular_values,
    toeplitz_norm,
    toeplitz_product,
)
from tnn_core.core.interpolation import Interpolation

__all__ = ["RELATIVE_ERROR", "relative_error", "DecompositionErrors", "optimal_errors",
           "decomposition_errors", "ZERO_KERNEL_NOTE", "THEOREM1_DENSE_MAX_N", "Theorem1Terms",
           "theorem1_terms"]

DENSE_FROBENIUS_MAX_N = 512  # form R densely for its Frobenius norm up to this n
# relative Ritz residual ρ for the spectral norms: the top Ritz value is then within ρ²/gap;
# 1e-7 instead of 1e-10 moved no norm by more than 1e-14 relative (5 kernels × 3 λ × r = 8
# and 64, n = 1024) and saves a quarter of a settled move's CPU
LANCZOS_TOL = 1e-7
THEOREM1_DENSE_MAX_N = 512  # Theorem 1's two sides need dense SVDs: up to this n
SINGULAR_RTOL = 1e-12  # A counts as singular when σ_r(A) <= this × σ_1(A)
ENTRY_ROWS_PER_CHUNK = 256  # rows of W A Wᵀ formed at once for the max entry error
ZERO_KERNEL_NOTE = "relative errors are undefined for an all-zero kernel (||T|| = 0)"
RELATIVE_ERROR = "‖T − T̂‖_F / ‖T‖_F"  # the one relative error, as the pages write it


def relative_error(error_sq: float, norm_sq: float) -> float:
    """sqrt(error_sq / norm_sq): ||T - T̂||_F / ||T||_F from the squared norms, each summed
    over a layer's channels for a layer. 0 when both are 0 (T = 0 reproduced exactly), inf
    for a nonzero error of T = 0."""
    if norm_sq == 0.0:
        return 0.0 if error_sq == 0.0 else math.inf
    return math.sqrt(error_sq / norm_sq)


@dataclass(frozen=True)
class DecompositionErrors:
    """||R|| for R = T - B - W A Wᵀ, ||T||, and the Eckart–Young optima of T - B."""

    spectral: float  # ||R||_2
    frobenius: float  # ||R||_F
    norm_spectral: float  # ||T||_2
    norm_frobenius: float  # ||T||_F
    optimal_spectral: float  # σ_{r+1}(T - B): no rank-r low-rank part does better
    optimal_frobenius: float  # (Σ_{i>r} σ_i²)^½
    spectral_method: str  # route of the two spectral norms: "dense" or "lanczos"
    singular_values_method: str  # how the σ_i of T - B were found

    def _relative(self, value: float, norm: float) -> float:
        return value / norm if self.norm_frobenius > 0 else math.nan

    @property
    def relative_spectral(self) -> float:
        """||R||_2 / ||T||_2 (nan for an all-zero kernel, see ``note``)."""
        return self._relative(self.spectral, self.norm_spectral)

    @property
    def relative_frobenius(self) -> float:
        return self._relative(self.frobenius, self.norm_frobenius)

    @property
    def relative_optimal_spectral(self) -> float:
        return self._relative(self.optimal_spectral, self.norm_spectral)

    @property
    def relative_optimal_frobenius(self) -> float:
        return self._relative(self.optimal_frobenius, self.norm_frobenius)

    @property
    def note(self) -> str:
        """Why the relative errors are undefined, or "" when they are not."""
        return ZERO_KERNEL_NOTE if self.norm_frobenius == 0 else ""


def optimal_errors(sigma: np.ndarray, complete: bool, r: int, n: int,
                   smooth_sq: float) -> tuple[float, float]:
    """Eckart–Young (σ_{r+1}, (Σ_{i>r} σ_i²)^½) from singular values of T - B, descending.

    complete: sigma holds all n values (sum the tail directly, no cancellation); else
    it holds at least the top r + 1 and the tail is smooth_sq - Σ_{i<=r} σ_i².
    """
    if r >= n:
        return 0.0, 0.0
    if complete:
        return float(sigma[r]), float(np.sqrt(np.sum(sigma[r:] ** 2)))
    tail = smooth_sq - float(np.sum(sigma[:r] ** 2))
    return float(sigma[r]) if len(sigma) > r else float("nan"), math.sqrt(max(tail, 0.0))


def _residual_hankel_product(smooth: np.ndarray, interp: Interpolation, A_coeffs: np.ndarray):
    """numpy x [n] -> R J x = (T - B) J x - W A Wᵀ J x, symmetric in x (module docstring)."""
    toeplitz = toeplitz_product(smooth, flip=True)
    low_rank = low_rank_product(interp, A_coeffs)

    def product(x: np.ndarray) -> np.ndarray:
        return toeplitz(x) - low_rank(x[::-1].copy())

    return product


def decomposition_errors(*, coeffs: np.ndarray, band_coeffs: np.ndarray, interp: Interpolation,
                         A_coeffs: np.ndarray, gram: SkiGram, projection: np.ndarray | None,
                         singular_values: np.ndarray, singular_values_method: str,
                         spectral_method: str) -> DecompositionErrors:
    """The errors of T ≈ B + W A Wᵀ, T and B given by their lags coeffs, band_coeffs [2n-1].

    gram: the SkiGram of (interp, band lags); projection: b = <W S_l Wᵀ, T>_F [2r-1]
    (``gram.inducing_projection``; None: computed here when n > 512 needs it);
    singular_values: of T - B, descending, all n when singular_values_method is "dense",
    else at least the top r + 1; spectral_method: "dense" or "lanczos".
    """
    n, r = interp.n, interp.r
    smooth = coeffs - band_coeffs  # (2n-1,) T - B
    norm_sq, smooth_sq = frobenius_sq(coeffs), frobenius_sq(smooth)
    R = None
    if spectral_method == "dense" or n <= DENSE_FROBENIUS_MAX_N:
        R = residual_matrix(smooth, interp, A_coeffs)  # (n, n)
    if spectral_method == "dense":
        spectral = persymmetric_singular_values(R)[0]
        norm_spectral = persymmetric_singular_values(dense_toeplitz(coeffs))[0]
    else:
        hankel = _residual_hankel_product(smooth, interp, A_coeffs)
        spectral = capped_norm(hankel, n, tol=LANCZOS_TOL).values[0]
        norm_spectral = toeplitz_norm(coeffs, tol=LANCZOS_TOL)
    if n <= DENSE_FROBENIUS_MAX_N:
        frobenius = float(np.linalg.norm(R))
    else:
        if projection is None:
            projection = inducing_projection(coeffs, gram)
        t_band = coeffs[n - 1 + gram.lags]
        frobenius = math.sqrt(residual_frobenius_sq(gram, A_coeffs, projection, t_band, norm_sq))
    optimal_spectral, optimal_frobenius = optimal_errors(
        singular_values, singular_values_method == "dense", r, n, smooth_sq)
    return DecompositionErrors(
        spectral=float(spectral), frobenius=frobenius, norm_spectral=float(norm_spectral),
        norm_frobenius=math.sqrt(norm_sq), optimal_spectral=optimal_spectral,
        optimal_frobenius=optimal_frobenius, spectral_method=spectral_method,
        singular_values_method=singular_values_method)


@dataclass(frozen=True)
class Theorem1Terms:
    """Theorem 1 of "SKI to go Faster" for linear interpolation (N = 1), term by term.

    k is the smooth part k̃ (the kernel continued across the band by a straight line),
    T_s = Toeplitz(k̃), A_ij = k̃(p_i - p_j) sampled as SKI does, F_ij = k̃(i - p_j),
    B_ij = k̃(p_i - j), and
        ||E_SKI||_2 <= √(n r) (h²/8) L (2√n + min(σ_1(F), σ_1(B)) / σ_r(A)) + ||E_nyst||_2,
    E_SKI = W A Wᵀ - T_{r,opt}, E_nyst = F A⁻¹ B - T_{r,opt}, T_{r,opt} the best rank-r
    approximation of T_s, L >= max|k''| estimated here by second differences of k̃.
    """

    spacing: float  # h = (n-1)/(r-1)
    curvature: float  # L = max |k̃(k+1) - 2 k̃(k) + k̃(k-1)| over the off-band lags k
    curvature_lag: int  # the lag k where that maximum sits
    interpolation_error: float  # h²/8 · L: Theorem 1's bound on one interpolated index
    entry_error: float  # max |W A Wᵀ - T| over the entries off the band, measured
    a_extreme: tuple[float, float]  # (σ_1(A), σ_r(A))
    right_hand_side: float  # the whole bound (nan above THEOREM1_DENSE_MAX_N; inf: A singular,
    # σ_r(A) <= SINGULAR_RTOL σ_1(A))
    nystrom_error: float  # ||E_nyst||_2 (nan above THEOREM1_DENSE_MAX_N or A singular)
    ski_error: float  # ||E_SKI||_2, measured (nan above THEOREM1_DENSE_MAX_N)


def _off_band_entry_error(continued: np.ndarray, band_lags: np.ndarray, interp: Interpolation,
                          A_coeffs: np.ndarray) -> float:
    """max |W A Wᵀ - Toeplitz(k̃)| over entries whose lag i - j is off the band (a contiguous
    run of lags), by row blocks (never n × n at once). Off the band Toeplitz(k̃) is T."""
    n = interp.n
    W = interpolation_weights(interp).tocsr()  # (n, r) sparse
    AWt = np.asarray(W @ dense_toeplitz(A_coeffs).T).T  # (r, n) = A Wᵀ
    # Row i of Toeplitz(k̃) is k̃(i - j), j = 0..n-1: the reversed kernel's window n-1-i.
    rows_of_T = np.lib.stride_tricks.sliding_window_view(continued[::-1], n)  # (n, n) view
    worst = 0.0
    for start in range(0, n, ENTRY_ROWS_PER_CHUNK):
        stop = min(start + ENTRY_ROWS_PER_CHUNK, n)
        error = np.abs(W[start:stop] @ AWt - rows_of_T[n - stop:n - start][::-1])  # (s, n)
        for lag in band_lags:  # the band's entries (i, i - lag) do not count
            rows = np.arange(max(start, lag), min(stop, n + lag))
            error[rows - start, rows - lag] = 0.0
        worst = max(worst, float(error.max(initial=0.0)))
    return worst


def theorem1_terms(continued: np.ndarray, band_lags: np.ndarray, interp: Interpolation,
                   A_coeffs: np.ndarray) -> Theorem1Terms:
    """Both sides of Theorem 1 (``Theorem1Terms``) for the smooth part k̃ = continued [2n-1]
    (``decompose.smooth_continuation``), the band's lags [m] and sampled A's lags [2r-1]
    (``decompose.sample_inducing_coeffs``). The two sides need dense SVDs of n × n
    matrices, so they are nan above THEOREM1_DENSE_MAX_N; the per-entry terms are exact
    at every n, O(n² + n r)."""
    n, r = interp.n, interp.r
    h = interp.spacing
    lags = np.arange(-(n - 2), n - 1)  # lags with both neighbours on the grid
    second = continued[2:] - 2 * continued[1:-1] + continued[:-2]  # (2n-3,) Δ²k̃ at lags
    off = ~np.isin(lags, band_lags)
    curvature, curvature_lag = 0.0, 0
    if off.any():
        where = int(np.argmax(np.abs(second[off])))
        curvature, curvature_lag = float(abs(second[off][where])), int(lags[off][where])
    A = dense_toeplitz(A_coeffs)  # (r, r) A_ij = k̃(p_i - p_j)
    a_sigma = np.linalg.svd(A, compute_uv=False)
    a_extreme = (float(a_sigma[0]), float(a_sigma[-1]))
    entry = _off_band_entry_error(continued, band_lags, interp, A_coeffs)
    nan = math.nan
    rhs = nystrom = ski = nan
    if n <= THEOREM1_DENSE_MAX_N:
        grid = np.arange(-(n - 1), n)
        p = np.linspace(0, n - 1, r)  # (r,) the inducing points
        positions = np.arange(n)
        F = np.interp(positions[:, None] - p[None, :], grid, continued)  # (n, r)
        B = np.interp(p[:, None] - positions[None, :], grid, continued)  # (r, n)
        U, sigma, Vt = np.linalg.svd(dense_toeplitz(continued))
        best = (U[:, :r] * sigma[:r]) @ Vt[:r]  # (n, n) T_{r,opt}
        ski = float(np.linalg.norm(low_rank_matrix(interp, A_coeffs) - best, 2))
        if a_extreme[1] <= SINGULAR_RTOL * a_extreme[0]:
            rhs = math.inf
        else:
            nystrom = float(np.linalg.norm(F @ np.linalg.solve(A, B) - best, 2))
            ratio = min(np.linalg.norm(F, 2), np.linalg.norm(B, 2)) / a_extreme[1]
            rhs = math.sqrt(n * r) * h * h / 8 * curvature * (2 * math.sqrt(n) + ratio) + nystrom
    return Theorem1Terms(spacing=h, curvature=curvature, curvature_lag=curvature_lag,
                         interpolation_error=h * h / 8 * curvature, entry_error=entry,
                         a_extreme=a_extreme, right_hand_side=float(rhs),
                         nystrom_error=nystrom, ski_error=ski)
