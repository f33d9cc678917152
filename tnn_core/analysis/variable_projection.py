"""Refine a sum of damped exponentials by variable projection: the poles move, the residues
follow by linear least squares.

The problem (``exponential_fit``), per channel: samples y_i = k_(i+1), i = 0..N-1, weights
w_i, and s modes, each a real pole or one complex pole standing for its conjugate pair;

    min over z, c of  Σ_i w_i² (y_i - Re Σ_j c_j z_j^i)²,    |z_j| <= 1.

For fixed poles the residues are a linear least-squares problem in (Re c, Im c): with B(z)
[N, 2s] the weighted basis (columns w_i Re z_j^i and -w_i Im z_j^i), c = B⁺ (w y), and the
error left is ||P⊥(z) w y|| with P⊥ = I - B B⁺. Variable projection (Golub and Pereyra,
"The differentiation of pseudo-inverses and nonlinear least squares problems whose
variables separate", SIAM J. Numer. Anal. 10(2), 1973; "Separable nonlinear least squares:
the variable projection method and its applications", Inverse Problems 19(2), 2003)
minimises that projected error over the poles alone, here by Levenberg–Marquardt
(Marquardt's scaling by diag JᵀJ) with Kaufman's Jacobian (L. Kaufman, "A variable
projection method for solving separable nonlinear least squares problems", BIT 15, 1975):
J = -P⊥ (∂B/∂p) c, the second term of the exact derivative dropped.

Parameters p: Re z and Im z of each used mode; an unused slot (z = c = 0) stays unused. A
real pole r is refined as a complex mode from r + i·OFF_AXIS: in the lab's SSM every mode is
one complex state, so a real pole costs what a complex one does, and near the axis a mode's
two columns Re z^i, Im z^i span (in the limit) r^i and i r^(i-1), a double pole, which
fits a learned kernel's peak far better than r^i alone (charlm-tno at s = 1: the optimum of
most channels sits there). A step is projected back onto |z| <= 1 (scaled onto the
circle) and kept only where the weighted error does not grow: the refined error is never
above the start's. Every channel at once, one batched SVD of B per iteration, float64,
torch; a channel that has converged leaves the batch.

Letters: D channels, N samples, s modes, P = 2s real parameters (and basis columns).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Refined", "refine_poles", "projected_fit", "grown", "one_thread",
           "ITERATIONS", "OFF_AXIS"]

ITERATIONS = 60  # Levenberg–Marquardt steps at most (charlm-tno: converged by ~30)
# a column of B whose new part is below this (times the largest) adds nothing
_RANK_TOLERANCE = 1e-13
_DAMPING_START, _DAMPING_DOWN, _DAMPING_UP, _DAMPING_MAX = 1e-3, 0.3, 10.0, 1e10
_CONVERGED = 1e-9  # a kept step that lowers the error by less than this (relative) ends it
OFF_AXIS = 1e-4  # a real pole's starting imaginary part
# |c| at most this times the channel's largest sample: near the axis a mode can buy a double
# pole with residues of 1e9 that cancel, which no float32 recurrence reproduces (the
# compression guard refuses weights above 1e4); a step past it is not kept. At 1000 a
# float32 kernel loses about 1e-4 of its scale to the cancellation (charlm-tno: |c| <= 4.6e3,
# and the refinement keeps 40-50 % at s = 1, 2; at 100 it kept 40-60 %)
RESIDUE_BOUND = 1000.0


@dataclass(frozen=True)
class Refined:
    """Poles and residues (complex128 [D, s]) and each channel's weighted error [D]."""

    poles: torch.Tensor
    residues: torch.Tensor
    error: torch.Tensor


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread for the block, then as before: the refinement's operations are
    small, and handing each to a second thread costs more than it saves (4 channels of 100
    lags at s <= 4, on the shared 2-core machine: 0.7 s on one thread, 9 s on two). torch's
    thread count is process-wide: for that time other threads get one too (as
    ``training.budget``'s calibration)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def projected_fit(poles: torch.Tensor, used: torch.Tensor, target: torch.Tensor,
                  weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                 torch.Tensor]:
    """For poles [D, s] (complex, ``used`` [D, s] bool, the used slots first), target w y
    [D, N] and weight w [N]: the least-squares residues c [D, s], the residual w y - B c
    [D, N], its norm [D], and the orthonormal basis Q [D, N, P] of range(B), by a batched QR
    of B with each mode's columns Re z^i, -Im z^i side by side (an unused slot's zero
    columns last; a column that adds less than ``_RANK_TOLERANCE`` to the span is left
    out)."""
    if poles.shape[1] == 0:  # no modes: all of w y is left
        return (poles.clone(), target, torch.linalg.vector_norm(target, dim=1),
                target.new_zeros(target.shape + (0,)))
    powers = _powers(poles, target.shape[1]) * used[..., None]  # (D, s, N)
    basis = torch.stack([powers.real, -powers.imag], dim=2).flatten(1, 2).mT  # (D, N, P)
    basis = basis * weight[:, None]
    N, P = basis.shape[1:]
    padded = torch.nn.functional.pad(basis, (0, 0, 0, max(P - N, 0)))  # zero rows: N >= P
    q, r = torch.linalg.qr(padded)  # (D, max(N, P), P), (D, P, P)
    q = q[:, :N]  # a column in range(B) is zero on the padding
    diagonal = torch.diagonal(r, dim1=1, dim2=2).abs()  # (D, P)
    keep = diagonal > _RANK_TOLERANCE * diagonal.amax(dim=1, keepdim=True)  # (D, P)
    q = q * keep[:, None, :]
    both = keep[:, :, None] & keep[:, None, :]
    eye = torch.eye(r.shape[1], dtype=r.dtype).expand_as(r)
    projection = (q.mT @ target[..., None])  # (D, P, 1) Qᵀ w y
    solution = torch.linalg.solve_triangular(torch.where(both, r, eye), projection,
                                             upper=True)[..., 0] * keep  # (D, P) B⁺ w y
    residual = target - (basis @ solution[..., None])[..., 0]  # (D, N)
    pairs = solution.unflatten(1, (-1, 2))  # (D, s, 2)
    residues = torch.complex(pairs[..., 0], pairs[..., 1]) * used
    return residues, residual, torch.linalg.vector_norm(residual, dim=1), q


def refine_poles(samples: torch.Tensor, weight: torch.Tensor, poles: torch.Tensor,
                 residues: torch.Tensor, fixed: torch.Tensor | None = None,
                 iterations: int = ITERATIONS) -> Refined:
    """Levenberg–Marquardt on the projected error from poles and residues [D, s] (complex;
    a slot with z = c = 0 is unused) for samples y [D, N] weighted by w [N] (module
    docstring). Every used mode is refined as a complex one: a real pole r starts at
    r + i·OFF_AXIS, where the pair's two columns already hold r^i, and may stay near the axis
    (its span tends to that of r^i and i r^(i-1), a double pole) or leave it. A channel
    stops moving when a step gains less than ``_CONVERGED`` or its damping passes
    ``_DAMPING_MAX``; a channel of ``fixed`` [D] bool (one already fitted to round-off) does
    not move at all. Returns the refined fit; its error is never above the start's at
    poles r + i·OFF_AXIS (the caller compares it with the start's own)."""
    poles, residues, used = _used_first(poles, residues)
    poles = torch.where(used & (poles.imag == 0), poles + 1j * OFF_AXIS, poles)
    target = samples * weight
    bound = RESIDUE_BOUND * samples.abs().amax(dim=1)  # (D,)
    c, residual, error, u = projected_fit(poles, used, target, weight)
    damping = torch.full_like(error, _DAMPING_START)
    active = torch.ones_like(error, dtype=torch.bool) if fixed is None else ~fixed
    for _ in range(iterations):
        rows = torch.nonzero(active)[:, 0]
        if rows.numel() == 0:
            break
        step = _step(poles[rows], c[rows], residual[rows], u[rows], used[rows], weight,
                     damping[rows])  # (A, s) for the A channels still moving
        trial = _inside_unit_disc(poles[rows] + step)
        trial_c, trial_residual, trial_error, trial_u = projected_fit(
            trial, used[rows], target[rows], weight)
        better = (trial_error <= error[rows]) & (  # (A,) kept where the error does not grow
            trial_c.abs().amax(dim=1) <= bound[rows])  # and the residues stay bounded
        gain = (error[rows] - trial_error) / error[rows].clamp_min(1e-300)
        keep = rows[better]
        poles[keep], c[keep], residual[keep] = trial[better], trial_c[better], \
            trial_residual[better]
        u[keep], error[keep] = trial_u[better], trial_error[better]
        damping[rows] = torch.where(better, damping[rows] * _DAMPING_DOWN,
                                    damping[rows] * _DAMPING_UP)
        active[rows] = ~((better & (gain < _CONVERGED)) | (damping[rows] > _DAMPING_MAX))
    error = torch.where(c.abs().amax(dim=1) <= bound, error, torch.inf)  # an unbounded start
    flip = poles.imag < 0  # a conjugate pole is the same mode: kept in the upper half plane
    return Refined(torch.where(flip, poles.conj(), poles), torch.where(flip, c.conj(), c),
                   error)


def _step(poles: torch.Tensor, residues: torch.Tensor, residual: torch.Tensor,
          u: torch.Tensor, used: torch.Tensor, weight: torch.Tensor, damping: torch.Tensor
          ) -> torch.Tensor:
    """One Levenberg–Marquardt step δz [D, s] with Kaufman's Jacobian: J = -P⊥ ∂(B c)/∂p
    [D, N, P], (JᵀJ + μ diag JᵀJ) δp = -Jᵀ r; an unused slot's parameters held at 0."""
    free = used.repeat_interleave(2, dim=1)  # (D, P): Re z, Im z of each used mode
    N = residual.shape[1]
    lags = torch.arange(N, dtype=torch.float64)
    derivative = torch.zeros(poles.shape + (N,), dtype=torch.complex128)  # (D, s, N)
    derivative[..., 1:] = lags[1:] * _powers(poles, N - 1)  # d z^i / dz = i z^(i-1)
    slope = residues[..., None] * derivative * used[..., None]  # (D, s, N) c · d z^i / dz
    # ∂ Re(c z^i) / ∂ Re z = Re(c i z^(i-1)), ∂ / ∂ Im z = Re(c i z^(i-1) · 1j) = -Im(...)
    model = torch.stack([slope.real, -slope.imag], dim=2).flatten(1, 2).mT  # (D, N, P)
    model = model * weight[:, None]
    jacobian = -(model - u @ (u.mT @ model)) * free[:, None, :]  # (D, N, P)
    normal = jacobian.mT @ jacobian  # (D, P, P)
    scale = torch.diagonal(normal, dim1=1, dim2=2)  # (D, P)
    scale = torch.where(free, scale.clamp_min(1e-300), 1.0)
    system = normal + torch.diag_embed(damping[:, None] * scale + (~free).double())
    gradient = (jacobian.mT @ residual[..., None])  # (D, P, 1)
    delta = torch.linalg.solve(system, -gradient)[..., 0] * free  # (D, P)
    delta = torch.nan_to_num(delta, nan=0.0, posinf=0.0, neginf=0.0)
    pairs = delta.unflatten(1, (-1, 2))  # (D, s, 2)
    return torch.complex(pairs[..., 0], pairs[..., 1])


def _inside_unit_disc(poles: torch.Tensor) -> torch.Tensor:
    """Poles [D, s] moved back onto |z| <= 1 (scaled onto the circle)."""
    radius = poles.abs()
    return torch.where(radius > 1, poles / radius.clamp_min(1e-300), poles)


def _used_first(poles: torch.Tensor, residues: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Poles and residues [D, s] with each channel's used slots (z or c nonzero) first, and
    the used mask [D, s]."""
    used = (poles != 0) | (residues != 0)
    order = torch.argsort((~used).to(torch.int8), dim=1, stable=True)
    return poles.gather(1, order), residues.gather(1, order), used.gather(1, order)


def _powers(poles: torch.Tensor, count: int) -> torch.Tensor:
    """z^0 .. z^(count-1) for poles [D, s] -> complex128 [D, s, count] (0^0 = 1)."""
    exponent = torch.arange(count, dtype=torch.float64)
    return torch.polar(torch.pow(poles.abs()[..., None], exponent),
                       poles.angle()[..., None] * exponent)


def grown(samples: torch.Tensor, weight: torch.Tensor, poles: torch.Tensor,
          residues: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A start for s + 1 modes from a fit of s, poles and residues [D, s] -> [D, s + 1]: the
    new mode's pole is the one of ``_GRID`` whose two columns, added to the basis, lower the
    weighted error most (the residual's energy in their part orthogonal to range(B)); its
    residue is left 0, ``refine_poles`` solves all residues again."""
    poles, residues, used = _used_first(poles, residues)
    target = samples * weight
    _, residual, _, u = projected_fit(poles, used, target, weight)  # (D, N), (D, N, P)
    powers = _powers(_GRID[None], samples.shape[1])[0]  # (G, N)
    columns = torch.stack([powers.real, -powers.imag], dim=-1) * weight[:, None]  # (G, N, 2)
    inside = torch.einsum("dnp,gnk->dgpk", u, columns)  # (D, G, P, 2) Uᵀ b
    outside = columns - torch.einsum("dnp,dgpk->dgnk", u, inside)  # (D, G, N, 2) P⊥ b
    q, _ = torch.linalg.qr(outside)  # (D, G, N, 2)
    gain = torch.linalg.vector_norm(torch.einsum("dgnk,dn->dgk", q, residual), dim=-1)
    choice = torch.nan_to_num(gain, nan=0.0).argmax(dim=1)  # (D,)
    new = _GRID[choice][:, None]  # (D, 1)
    return torch.cat([poles, new], dim=1), torch.cat([residues, torch.zeros_like(new)], dim=1)


# a new mode's candidate poles: radii from fast to slow decay, angles from the positive real
# axis (just above it: a mode there can become a double pole) to the negative one
_GRID = (torch.tensor([0.05, 0.2, 0.4, 0.6, 0.75, 0.85, 0.92, 0.96, 0.99],
                      dtype=torch.float64)[:, None]
         * torch.exp(1j * torch.tensor([1e-3, np.pi / 16, np.pi / 8, np.pi / 4, np.pi / 2,
                                        3 * np.pi / 4, np.pi - 1e-3],
                                       dtype=torch.float64))[None]).ravel()  # (G,)
