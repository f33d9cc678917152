"""Kernel atlas: a few statistics of every channel's Toeplitz kernel, many channels at once.

A researcher asks "which channels are local, which carry long smooth tails, and how well
would SKI's band + W A Wᵀ hold those tails?". For every channel's Toeplitz kernel at
length n, with the band |k| <= m//2 (causal: 0 <= k < m), the atlas gives

    locality     the share of the kernel's mass Σ|t_k| on the band lags (mass, not energy:
                 an energy share weighted by the n - |k| copies of each lag reads 99 % for
                 kernels with a third of their mass in the tails)
    decay        the fitted effective λ of |t_k| (``profiles.decay_profile``: the line
                 through log max(|t_k|, |t_-k|), or log |t_k| causal, against |k|)
    low_rank     the Frobenius error of SKI's band + W A Wᵀ at rank r ("sample", as SKI-TNN
                 computes A, ``curves.error_curve``) relative to ||T - band||_F, the
                 off-band part that W A Wᵀ is there to approximate: 1 is no better than the
                 band alone, 0 is exact

A channel with less than ``BAND_ONLY_MASS`` of its mass off the band is band-only: its λ
would be fitted to the band's shape and round-off, and there is no off-band part to
approximate, so decay and low_rank are NaN there; so is low_rank when r is outside [2, n]
or m above 2n - 2 (SKI has no decomposition there).

All three are linear algebra on the kernels [C, 2n-1] alone, never an n × n matrix:
``channel_statistics`` takes a batch of channels through the same formulas as the one-
channel functions it names, as matrix products with pieces that depend on (n, m, r) only
(``AtlasLayout``: SKI's sampled A and its projection <W S_l Wᵀ, T> are linear maps of the
kernel; ``gram`` gives the rest). 9,216 channels at n = 512 take about a second. The
Eckart–Young optimum at rank r needs the singular values of each channel's n × n matrix
(14 ms a channel at n = 512 here, two minutes for 9,216): the atlas leaves it to one
channel at a time (Decomposition, ``curves.error_curve``).

Letters: C channels, n length, m band lags, r rank, R = 2r - 1 lags of A.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.decompose import sample_inducing_coeffs, smooth_continuation
from tnn_core.analysis.dense import diagonal_lengths
from tnn_core.analysis.gram import band_diagonal_sums, band_lags, inducing_solver, ski_gram
from tnn_core.checks import check_int
from tnn_core.core.interpolation import interpolation

__all__ = ["BAND_ONLY_MASS", "STATISTICS", "CHUNK_CHANNELS", "MAX_LAYOUT_N", "band_mask",
           "AtlasLayout", "atlas_layout", "channel_statistics", "ski_statistics"]

BAND_ONLY_MASS = 0.01  # off-band share of Σ|t_k| below which a channel counts as band-only
STATISTICS = ("locality", "decay", "low_rank")
CHUNK_CHANNELS = 1024  # channels taken at once: a few [C, 2n-1] float64 tensors (33 MB at n 2048)
MAX_LAYOUT_N = 4096  # the longest n: the projection's diagonal sums take O(n²) (1 s here)


def band_mask(n: int, band: int, causal: bool) -> np.ndarray:
    """Which of the lags k = -(n-1) .. n-1 the band holds, bool [2n-1]."""
    mask = np.zeros(2 * n - 1, dtype=bool)
    mask[(n - 1) + band_lags(n, band, causal)] = True
    return mask


@dataclass(frozen=True)
class AtlasLayout:
    """What the statistics need besides the kernels, for one (n, band m, rank r, causal);
    float64 tensors. The SKI pieces are None when there is no decomposition (r outside
    [2, n] or m above 2n - 2)."""

    n: int
    inside: torch.Tensor  # [2n-1] bool, the band's lags
    copies: torch.Tensor  # [2n-1] n - |k|, the entries of T on lag k
    band: torch.Tensor  # [m] long, positions of the band's lags in [2n-1]
    sample: torch.Tensor | None  # [2n-1, R]: t -> SKI-TNN's sampled a (``sample_inducing_coeffs``)
    projection: torch.Tensor | None  # [2n-1, R]: t -> b_l = <W S_l Wᵀ, T> (``gram``)
    band_sums: torch.Tensor | None  # [m, R] s: Σ_i (W S_l Wᵀ)_{i, i-k} on the band's lags
    gram: torch.Tensor | None  # [R, R] Γ = <W S_l Wᵀ, W S_l' Wᵀ>
    solver: torch.Tensor | None  # [R, R]: b - sᵀ t_band -> the fitted a (``inducing_solver``)


def _unit_kernels(n: int):
    """The kernels [2n-1] with a single 1, at lag -(n-1), then -(n-2), ..., n-1."""
    for position in range(2 * n - 1):
        unit = np.zeros(2 * n - 1)
        unit[position] = 1.0
        yield unit


@functools.lru_cache(maxsize=8)
def atlas_layout(n: int, band: int, rank: int, causal: bool) -> AtlasLayout:
    """The ``AtlasLayout`` of (n, m, r, causal), cached: O(n² + n r) once, at n = 1024 about
    0.1 s; n at most MAX_LAYOUT_N. The sampled map is the one-kernel function applied to
    each unit kernel, so it is that function, not a second copy of it."""
    check_int("n", n, 1, MAX_LAYOUT_N, "[1, MAX_LAYOUT_N]")
    lags = band_lags(n, band, causal)
    as_tensor = functools.partial(torch.as_tensor, dtype=torch.float64)
    inside = torch.as_tensor(band_mask(n, band, causal))
    copies = as_tensor(diagonal_lengths(n))
    positions = torch.as_tensor(n - 1 + lags)
    if not (2 <= rank <= n and band <= 2 * n - 2):
        return AtlasLayout(n, inside, copies, positions, None, None, None, None, None)
    interp = interpolation(n, rank)
    sample = np.stack([sample_inducing_coeffs(smooth_continuation(unit, lags), rank)
                       for unit in _unit_kernels(n)])  # (2n-1, R)
    gram = ski_gram(interp, lags)
    solve = inducing_solver(gram)
    R = 2 * rank - 1
    solver = np.stack([solve(unit, np.zeros(len(lags))) for unit in np.eye(R)], axis=-1)
    every_lag = np.arange(-(n - 1), n)
    return AtlasLayout(n, inside, copies, positions, as_tensor(sample),
                       as_tensor(band_diagonal_sums(interp, every_lag)),
                       as_tensor(gram.diagonal), as_tensor(gram.gram), as_tensor(solver))


def _decay(magnitude: torch.Tensor) -> torch.Tensor:
    """λ = e^slope of the least-squares line through (|k|, log magnitude) [C, n] over the lags
    whose magnitude is a normal float (``profiles.decay_fit``); NaN below two such lags."""
    lags = torch.arange(magnitude.shape[-1], dtype=torch.float64)  # (n,)
    kept = (magnitude >= torch.finfo(torch.float64).tiny).to(torch.float64)  # (C, n)
    logs = torch.log(torch.where(kept > 0, magnitude, 1.0))  # (C, n), 0 where not kept
    count = kept.sum(-1, keepdim=True)  # (C, 1)
    mean_lag = (kept * lags).sum(-1, keepdim=True) / count.clamp(min=1)
    mean_log = (kept * logs).sum(-1, keepdim=True) / count.clamp(min=1)
    centred = kept * (lags - mean_lag)  # (C, n)
    slope = (centred * (logs - mean_log)).sum(-1) / (centred * (lags - mean_lag)).sum(-1)
    return torch.where(count[:, 0] >= 2, torch.exp(slope), torch.nan)


def _residual(t: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
              layout: AtlasLayout) -> torch.Tensor:
    """||T - B(β) - W A(a) Wᵀ||_F [C] for kernels t [C, 2n-1], lag coefficients a [C, R] of
    A, projections b [C, R] and β the optimal taps, by ``gram``'s identity
    ||T||² - 2 aᵀb + aᵀΓa - Σ_band c_k (t_k - μ_k)², μ = s a / c (>= 0)."""
    counts = layout.copies[layout.band]  # (m,)
    mu = a @ layout.band_sums.T / counts  # (C, m)
    total = (layout.copies * t * t).sum(-1)  # (C,) ||T||_F²
    low = total - 2 * (a * b).sum(-1) + ((a @ layout.gram) * a).sum(-1)
    taps = (counts * (t[:, layout.band] - mu) ** 2).sum(-1)
    return (low - taps).clamp(min=0).sqrt()


def _chunk_statistics(t: torch.Tensor, layout: AtlasLayout, causal: bool) -> torch.Tensor:
    """[3, C] locality, decay, low_rank of kernels t [C, 2n-1] (float64)."""
    n = layout.n
    mass = t.abs()  # (C, 2n-1)
    total_mass = mass.sum(-1)
    locality = torch.where(total_mass > 0, (mass * layout.inside).sum(-1) / total_mass,
                           torch.nan)
    tails = (1 - locality) >= BAND_ONLY_MASS  # False for NaN: a zero kernel
    forward = mass[:, n - 1 :]  # (C, n) lags 0..n-1
    magnitude = forward if causal else torch.maximum(forward, mass[:, :n].flip(-1))
    decay = torch.where(tails, _decay(magnitude), torch.nan)
    low_rank = torch.full_like(locality, torch.nan)
    if layout.sample is not None:
        off_band = (layout.copies * t * t * ~layout.inside).sum(-1).sqrt()  # ||T - band||_F
        error = _residual(t, t @ layout.sample, t @ layout.projection, layout)
        low_rank = torch.where(tails, error / off_band, torch.nan)
    return torch.stack([locality, decay, low_rank])


def channel_statistics(kernels: torch.Tensor | np.ndarray, band: int, rank: int,
                       causal: bool) -> dict[str, np.ndarray]:
    """locality, decay and low_rank (module docstring) of every kernel of kernels [C, 2n-1],
    each [C] float64 (NaN where undefined), CHUNK_CHANNELS at a time."""
    t = torch.as_tensor(kernels).detach().to("cpu", torch.float64)
    if t.dim() != 2 or t.shape[-1] % 2 == 0:
        raise ValueError(f"kernels must have shape [C, 2n-1]; got {tuple(t.shape)}")
    layout = atlas_layout((t.shape[-1] + 1) // 2, band, rank, causal)
    out = torch.cat([_chunk_statistics(t[i : i + CHUNK_CHANNELS], layout, causal)
                     for i in range(0, len(t), CHUNK_CHANNELS)] or [torch.empty(3, 0)], dim=-1)
    return {name: out[i].numpy() for i, name in enumerate(STATISTICS)}


def ski_statistics(kernels: torch.Tensor | np.ndarray, band: int, rank: int,
                   causal: bool) -> dict[str, np.ndarray]:
    """The report's batched columns of kernels [C, 2n-1], each [C] float64, NaN for T = 0:

        band_mass      Σ_band (n - |k|) t_k² / ||T||_F² (``spectral_summary.band_mass``)
        sample_error   ||T - band - W A Wᵀ||_F / ||T||_F, A sampled as SKI-TNN does
        fit_error      the same with A fitted (``curves.error_curve``'s sample and fit)

    The errors are NaN where SKI has no decomposition (r outside [2, n], m above 2n - 2)."""
    t = torch.as_tensor(kernels).detach().to("cpu", torch.float64)
    if t.dim() != 2 or t.shape[-1] % 2 == 0:
        raise ValueError(f"kernels must have shape [C, 2n-1]; got {tuple(t.shape)}")
    layout = atlas_layout((t.shape[-1] + 1) // 2, band, rank, causal)
    parts = []
    for chunk in torch.split(t, CHUNK_CHANNELS):
        energy = layout.copies * chunk * chunk  # (C, 2n-1)
        norm = energy.sum(-1)  # ||T||_F²
        defined = norm > 0
        columns = [torch.where(defined, (energy * layout.inside).sum(-1) / norm, torch.nan)]
        for a_of in ("sample", "fit"):
            if layout.sample is None:
                columns.append(torch.full_like(norm, torch.nan))
                continue
            b = chunk @ layout.projection  # (C, R)
            a = chunk @ layout.sample if a_of == "sample" else \
                (b - chunk[:, layout.band] @ layout.band_sums) @ layout.solver.T
            columns.append(torch.where(defined, _residual(chunk, a, b, layout) / norm.sqrt(),
                                       torch.nan))
        parts.append(torch.stack(columns))
    out = torch.cat(parts or [torch.empty(3, 0)], dim=-1)
    return {name: out[i].numpy() for i, name in
            enumerate(("band_mass", "sample_error", "fit_error"))}
