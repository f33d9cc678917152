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
3. Of the orders M <= 2s of ``_ORDERS`` (every one up to 128, then a ladder) up to the
   Hankel size and rank, those whose modes (pairs plus real poles) number at most s, the
   one with the smallest ||T - T̂||_F: so the error never grows with s, and for s <= 64 p
   pairs and r real poles (order 2p + r <= 2s) are always a candidate (issue 37: a ladder
   that skipped 18 and 22 missed sums of 9, 11 and 12 exponentials by up to 1.8e-4).
4. Refinement (``variable_projection``, Golub and Pereyra): the poles move by
   Levenberg–Marquardt on the error left after the residues' least squares, |z| <= 1 kept,
   every mode free to be complex (a real pole starts just above the axis), for s <=
   ``REFINED_UP_TO`` (above, the pencil's error is small and the cost grows). For s <=
   ``GROWN_UP_TO`` it starts both from the pencil's fit and from the refined fit of s - 1
   grown by the best new pole of a grid, and keeps the better; above, from the pencil's.
   The refined fit replaces the pencil's only where it lowers the weighted error, so the
   error is never above the pencil's. On charlm-tno at s = 1 it is 0.40 / 0.53 of the
   pencil's (layers 0 / 1); the pencil's poles come from an unweighted Hankel matrix, the
   error weighs lag l by n - l, and a kernel that is no finite sum of exponentials has its
   best poles elsewhere.

When the samples are a sum of at most s exponentials, the pencil's fit is exact up to
round-off and kept; n - 1 samples allow M <= (n - 1) // 2 poles. Every channel is fitted at
once, each pencil order one batched SVD, eigenvalue and least-squares call on torch's
threads, each refinement step one batched SVD.

Letters: D channels, n fitted length, s modes, M pencil order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.variable_projection import Refined, grown, one_thread, refine_poles
from tnn_core.checks import check_int

__all__ = ["ExponentialFit", "fit_exponentials", "fit_exponentials_ladder",
           "exponential_kernel", "undamped_modes", "MAX_MODES", "GROWN_UP_TO", "REFINED_UP_TO",
           "UNDAMPED_TOLERANCE"]

MAX_MODES = 4_096  # s at most: far above what a kernel of the lab's lengths can use
GROWN_UP_TO = 8  # for s up to it the refinement also starts from the s - 1 fit, grown
REFINED_UP_TO = 16  # above it the pencil's fit is kept: its error on charlm-tno is below
# 1e-5 there, and a refinement step costs O(N s²) per channel
UNDAMPED_TOLERANCE = 1e-9  # a pole with |z| >= 1 - this never decays
_ROUND_OFF = 1e-13  # a weighted error below this times ||w y|| is round-off
# the pencil orders tried: every one up to 128 (any mix of pairs and real poles up to s = 64
# modes is a candidate), then steps of a quarter of the power of two below (128, 160, ...
# 256, 320, ...): a least-squares fit costs O(n M²) per order, so every order up to a
# Hankel size of 1023 (n = 2048) would cost 105x these at s = 4096 (these: 1.2x the old
# ladder's, which was dense up to 16 only)
_ORDERS = np.array(sorted({*range(1, 129)} | {step * k for step in 2 ** np.arange(5, 12)
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


def fit_exponentials(column: np.ndarray, modes: int, refine: bool = True) -> ExponentialFit:
    """Fit lags 0..n-1 of each channel's causal kernel, column [D, n], with ``modes`` = s
    complex modes (module docstring; ``refine=False``: the matrix pencil's fit alone)."""
    return fit_exponentials_ladder(column, (modes,), refine)[0]


def fit_exponentials_ladder(column: np.ndarray, ladder, refine: bool = True
                            ) -> list[ExponentialFit]:
    """``[fit_exponentials(column, s, refine) for s in ladder]``, equal to it bit for bit,
    with one Hankel SVD and one fit per pencil order for the whole ladder (the candidates of
    every s are among those of the largest), and one chain of grown fits up to
    ``GROWN_UP_TO``."""
    column = np.asarray(column, dtype=np.float64)
    if column.ndim != 2 or column.shape[1] < 1:
        raise ValueError(f"column must be [D, n >= 1] (lags 0..n-1); got {column.shape}")
    if not np.isfinite(column).all():
        raise ValueError("column must be finite; got NaN or Inf")
    ladder = [check_int("modes", s, 1, MAX_MODES) for s in ladder]
    if not ladder:
        raise ValueError("ladder must hold at least one number of modes; got none")
    D, n = column.shape
    samples = torch.tensor(column[:, 1:])  # (D, N) y_i = k_(i+1)
    weight = torch.sqrt(n - torch.arange(1, n, dtype=torch.float64))  # (N,) lag l: n - l
    candidates = _candidates(samples, max(ladder), weight)
    grown_up_to = max([s for s in ladder if s <= GROWN_UP_TO], default=0) if refine else 0
    pencil = {s: _best(candidates, s, D) for s in range(1, max(ladder) + 1)
              if s in ladder or s <= grown_up_to}
    fits = [pencil[s][:2] for s in ladder]
    if refine and n > 1:
        with one_thread():
            chain = _grown_chain(samples, weight, pencil)
            fits = [_refined(samples, weight, pencil[s], chain.get(s))
                    if s <= REFINED_UP_TO else fits[i] for i, s in enumerate(ladder)]
    return [ExponentialFit(poles, residues, column[:, 0].copy()) for poles, residues in fits]


def undamped_modes(fit: ExponentialFit) -> np.ndarray:
    """Per channel, the modes whose pole lies on the unit circle (|z| >= 1 - 1e-9), [D]
    int: pulled there by the |z| <= 1 bound, such a mode never decays (its state keeps every
    input it ever read)."""
    used = (fit.poles != 0) | (fit.residues != 0)
    return ((np.abs(fit.poles) >= 1 - UNDAMPED_TOLERANCE) & used).sum(axis=1)


def _grown_chain(samples: torch.Tensor, weight: torch.Tensor, pencil: dict
                 ) -> dict[int, Refined]:
    """The refined fits of s = 1.. the ladder's largest s <= GROWN_UP_TO, each the better
    per channel of two starts: the pencil's fit of s, and the refined fit of s - 1 grown by
    one mode (for s = 1, the best single pole of the grid). Every entry depends on the
    smaller s only, so a ladder and a single call agree."""
    D = samples.shape[0]
    empty = torch.zeros((D, 0), dtype=torch.complex128)
    previous = Refined(empty, empty, torch.full((D,), torch.inf, dtype=torch.float64))
    chain = {}
    for s in range(1, GROWN_UP_TO + 1):
        if s not in pencil:
            break
        exact = torch.tensor(_exact(samples, weight, pencil[s][2]))  # (D,) nothing to gain
        from_pencil = refine_poles(samples, weight, torch.tensor(pencil[s][0]),
                                   torch.tensor(pencil[s][1]), exact)
        from_smaller = refine_poles(samples, weight, *grown(
            samples, weight, previous.poles, previous.residues), exact)
        pick = (from_smaller.error < from_pencil.error)[:, None]  # (D, 1)
        previous = chain[s] = Refined(
            torch.where(pick, from_smaller.poles, from_pencil.poles),
            torch.where(pick, from_smaller.residues, from_pencil.residues),
            torch.minimum(from_smaller.error, from_pencil.error))
    return chain


def _exact(samples: torch.Tensor, weight: torch.Tensor, error: np.ndarray) -> np.ndarray:
    """Channels [D] whose pencil error is round-off (at most _ROUND_OFF ||w y||): no
    refinement could be kept there."""
    return error <= _ROUND_OFF * torch.linalg.vector_norm(samples * weight, dim=1).numpy()


def _refined(samples: torch.Tensor, weight: torch.Tensor, pencil: tuple,
             chained: Refined | None) -> tuple[np.ndarray, np.ndarray]:
    """Poles and residues [D, s]: the refined fit (``chained``, or refined here from the
    pencil's) where it lowers the pencil's weighted error by more than round-off, else the
    pencil's own, unchanged: the error is never above the pencil's."""
    poles, residues, error = pencil
    if chained is None:
        chained = refine_poles(samples, weight, torch.tensor(poles), torch.tensor(residues),
                               torch.tensor(_exact(samples, weight, error)))
    scale = torch.linalg.vector_norm(samples * weight, dim=1).numpy()  # (D,) ||w y||
    better = chained.error.numpy() < error * (1 - 1e-9) - _ROUND_OFF * scale  # (D,)
    return (np.where(better[:, None], chained.poles.numpy(), poles),
            np.where(better[:, None], chained.residues.numpy(), residues))


@dataclass(frozen=True)
class _Candidate:
    """Every channel's fit at one pencil order M: poles and residues [D, M] (modes first,
    zero after), modes per channel [D], weighted error [D] (inf where the order is not
    valid for the channel: beyond its Hankel rank)."""

    order: int
    poles: np.ndarray
    residues: np.ndarray
    modes: np.ndarray
    error: np.ndarray


def _candidates(samples: torch.Tensor, s: int, weight: torch.Tensor) -> list[_Candidate]:
    """For each channel's samples y_0..y_(N-1) [D, N], every pencil order M <= 2s of
    ``_ORDERS`` up to the Hankel size and the largest channel's rank (an order beyond a
    channel's rank is not valid for it), all channels at once (torch's batched SVD,
    eigenvalues and least squares, on torch's threads). Cost: one SVD, then O(N M²) per
    order and channel."""
    D, N = samples.shape
    if N == 0:
        return []
    if N == 1:  # z = 0 carries k_1 alone
        zeros = np.zeros((D, 1), dtype=np.complex128)
        residues = samples.numpy().astype(np.complex128)
        return [_Candidate(1, zeros, residues, np.ones(D, dtype=np.int64), np.zeros(D))]
    L = N // 2  # pencil parameter: the Hankel matrix is [N - L, L + 1]
    hankel = samples.unfold(1, L + 1, 1)  # (D, N-L, L+1)
    _, sigma, vh = torch.linalg.svd(hankel, full_matrices=False)  # (D, K), (D, K, L+1)
    rank = (sigma > sigma[:, :1] * 1e-13).sum(dim=1)  # (D,) beyond it the pencil sees round-off
    target = samples * weight  # (D, N)
    found = []
    for order in _ORDERS[_ORDERS <= min(2 * s, L, N - L, int(rank.max()))]:
        v = vh[:, :order].mT  # (D, L+1, M) leading right singular vectors
        z = torch.linalg.eigvals(torch.linalg.pinv(v[:, :-1]) @ v[:, 1:])  # (D, M) conj pairs
        kept = z.imag >= 0  # one mode per pair, and the real poles
        first = torch.argsort((~kept).to(torch.int8), dim=1, stable=True)  # kept modes first
        z, kept = z.gather(1, first), kept.gather(1, first)
        radius = z.abs()
        z = torch.where(radius > 1, z / radius.clamp_min(1e-300), z) * kept  # never growing
        c, error = _residues(z, kept, target, weight)
        error = torch.where(rank >= order, error, torch.inf)
        found.append(_Candidate(int(order), z.numpy(), c.numpy(), kept.sum(1).numpy(),
                                error.numpy()))
    return found


def _best(candidates: list[_Candidate], s: int, D: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poles and residues of at most s modes [D, s]: per channel, of the candidates of
    order M <= 2s with at most s modes, the one with the smallest weighted error (the
    first of equals), and that error [D]. (A high order can give nearly equal poles whose
    residues cancel at 1e10, worse than a lower order: the order is chosen by the error,
    which then never grows with s.)"""
    poles = np.zeros((D, s), dtype=np.complex128)
    residues = np.zeros((D, s), dtype=np.complex128)
    best = np.full(D, np.inf)
    for candidate in candidates:
        if candidate.order > 2 * s:
            continue
        better = (candidate.modes <= s) & (candidate.error < best)  # (D,)
        width = min(s, candidate.order)
        poles[better, :width] = candidate.poles[better, :width]
        residues[better, :width] = candidate.residues[better, :width]
        poles[better, width:] = residues[better, width:] = 0
        best = np.where(better, candidate.error, best)
    return poles, residues, np.where(np.isfinite(best), best, 0.0)


def _residues(poles: torch.Tensor, kept: torch.Tensor, target: torch.Tensor,
              weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per channel, c minimising Σ_i w_i² (y_i - Re Σ_j c_j z_j^i)² over the kept modes, a
    real least-squares problem in (Re c, Im c), and that minimum's square root: poles and
    kept [D, M], target w y and weight [N] -> residues [D, M], error [D]."""
    N = target.shape[1]
    exponent = torch.arange(N, dtype=torch.float64)  # (N,)
    powers = torch.polar(torch.pow(poles.abs()[..., None], exponent),
                         poles.angle()[..., None] * exponent)  # (D, M, N): z^i, 0^0 = 1
    powers = powers * kept[..., None]  # (D, M, N) the unused modes' columns are zero
    basis = torch.cat([powers.real, -powers.imag], dim=1).mT * weight[:, None]  # (D, N, 2M)
    solution = torch.linalg.lstsq(basis, target[..., None], driver="gelsd").solution  # (D, 2M, 1)
    error = torch.linalg.vector_norm(basis @ solution - target[..., None], dim=(1, 2))  # (D,)
    M = poles.shape[1]
    return torch.complex(solution[:, :M, 0], solution[:, M:, 0]) * kept, error  # unused: 0


def _powers(poles: np.ndarray, count: int) -> np.ndarray:
    """z^0 .. z^(count-1) for poles [D, s] -> complex128 [D, s, count] (0^0 = 1)."""
    exponents = np.arange(count, dtype=np.float64)
    poles = np.asarray(poles, dtype=np.complex128)[..., None]  # (D, s, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        powers = poles ** exponents  # (D, s, count)
    powers[..., :1] = 1.0
    return np.where(np.isfinite(powers), powers, 0.0)
