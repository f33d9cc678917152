"""Kernel atlas: a few statistics of every channel's Toeplitz kernel, many channels at once.

A researcher asks "which channels are local, which carry long smooth tails, and how well
would SKI's band + W A Wᵀ hold those tails?". For every channel's Toeplitz kernel at
length n, with the band |k| <= m//2 (causal: 0 <= k < m), the atlas gives

    locality     the band energy share ||band(T)||_F² / ||T||_F² = Σ_band (n - |k|) t_k² /
                 Σ_k (n - |k|) t_k² (``BAND_SHARE_NAME``; the report's band_mass, the same
                 number under the same name: ``spectral_summary.band_mass``)
    decay        the fitted effective λ of |t_k| (``profiles.decay_profile``: the line
                 through log max(|t_k|, |t_-k|), or log |t_k| causal, against |k|)
    low_rank     SKI's error at rank r, ||T - band - W A Wᵀ||_F / ||T||_F with A sampled as
                 SKI-TNN computes it (``curves.error_curve``), the lab's one relative error
                 (``errors.relative_error``; ``SKI_ERROR_NAME``, the report's sample_error;
                 0 is exact)

A channel with less than ``BAND_ONLY_MASS`` (a millionth) of its energy off the band is
band-only: its λ would be fitted to the band's shape and round-off, so decay is NaN there.
low_rank is NaN for T = 0 and when r is outside [2, n] or m above 2n - 2 (SKI has no
decomposition there); at r = n, or with a band of every lag, it is 0 by construction
(``exact_by_construction`` says why in words).

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

__all__ = ["BAND_ONLY_MASS", "BAND_SHARE_NAME", "BAND_SHARE", "SKI_ERROR_NAME", "STATISTICS",
           "DEFAULT_RANK", "RANK_SHARE", "default_rank", "exact_by_construction",
           "CHUNK_CHANNELS", "MAX_LAYOUT_N", "band_mask", "AtlasLayout", "atlas_layout",
           "channel_statistics", "ski_statistics"]

# off-band energy share below which a channel counts as band-only: tails a thousandth of
# ||T||_F, far above round-off, still carry a λ; a trained LM keeps 99.9 % of ||T||_F² in
# a 9-lag band (charlm-tno, median), so a share of 1 % would leave most channels without one
BAND_ONLY_MASS = 1e-6
BAND_SHARE_NAME = "band energy share"  # the atlas's locality and the report's band_mass
BAND_SHARE = "‖band(T)‖_F² / ‖T‖_F²"  # its definition, as the pages write it
SKI_ERROR_NAME = "SKI error (sample)"  # the atlas's low_rank and the report's sample_error
DEFAULT_RANK = 32  # the largest default r (``default_rank``): the atlas's, the report's
RANK_SHARE = 4  # the default r is at most n // RANK_SHARE
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


def _band_share(t: torch.Tensor, layout: AtlasLayout) -> tuple[torch.Tensor, torch.Tensor]:
    """(band energy share [C], NaN for T = 0; ||T||_F² [C]) of kernels t [C, 2n-1]: the
    weighted sums Σ (n - |k|) t_k² over the band's lags and over every lag."""
    energy = layout.copies * t * t  # (C, 2n-1)
    norm_sq = energy.sum(-1)
    share = torch.where(norm_sq > 0, (energy * layout.inside).sum(-1) / norm_sq, torch.nan)
    return share, norm_sq


def _ski_error(t: torch.Tensor, norm_sq: torch.Tensor, layout: AtlasLayout,
               method: str) -> torch.Tensor:
    """||T - band - W A Wᵀ||_F / ||T||_F [C] of kernels t [C, 2n-1], A sampled (SKI-TNN's)
    or fitted (``method``); NaN for T = 0 or where SKI has no decomposition."""
    if layout.sample is None:
        return torch.full_like(norm_sq, torch.nan)
    b = t @ layout.projection  # (C, R)
    a = t @ layout.sample if method == "sample" else \
        (b - t[:, layout.band] @ layout.band_sums) @ layout.solver.T
    return torch.where(norm_sq > 0, _residual(t, a, b, layout) / norm_sq.sqrt(), torch.nan)


def _chunk_statistics(t: torch.Tensor, layout: AtlasLayout, causal: bool) -> torch.Tensor:
    """[3, C] locality, decay, low_rank of kernels t [C, 2n-1] (float64)."""
    n = layout.n
    locality, norm_sq = _band_share(t, layout)
    tails = (1 - locality) >= BAND_ONLY_MASS  # False for NaN: a zero kernel
    absolute = t.abs()  # (C, 2n-1)
    forward = absolute[:, n - 1 :]  # (C, n) lags 0..n-1
    magnitude = forward if causal else torch.maximum(forward, absolute[:, :n].flip(-1))
    decay = torch.where(tails, _decay(magnitude), torch.nan)
    return torch.stack([locality, decay, _ski_error(t, norm_sq, layout, "sample")])


def default_rank(n: int) -> int:
    """SKI's r for a layer without a rank of its own at length n, in the atlas and the
    report alike: min(DEFAULT_RANK, n // RANK_SHARE), at least 2. At r = n every lag holds
    an inducing point, W is the identity and SKI's error is 0 whatever the kernel, so a
    default of r = n measures nothing; n // 4 keeps the inducing points at least about 4
    lags apart (h = (n-1)/(r-1)), where SKI saves work, and from n = 128 on it is the
    compression plans' 32. Only n < 8 reaches r = 2, which is r = n (exact, and said so:
    ``exact_by_construction``) at n = 2 alone."""
    return max(2, min(DEFAULT_RANK, n // RANK_SHARE))


def exact_by_construction(n: int, band: int, rank: int, causal: bool) -> str:
    """Why SKI's band + W A Wᵀ reproduces every T of length n at (m, r) exactly, so that its
    error is 0 whatever the kernel, in words; "" when it does not."""
    if len(band_lags(n, band, causal)) >= (n if causal else 2 * n - 1):
        return f"exact by construction: the band m = {band} holds every lag at n = {n}"
    if rank >= n:
        return (f"exact by construction: r = {rank} ≥ n = {n} puts an inducing point on "
                f"every lag (W is the identity)")
    return ""


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

        band_mass      the band energy share Σ_band (n - |k|) t_k² / ||T||_F², the atlas's
                       locality (``spectral_summary.band_mass``)
        sample_error   ||T - band - W A Wᵀ||_F / ||T||_F, A sampled as SKI-TNN does: the
                       atlas's low_rank
        fit_error      the same with A fitted (``curves.error_curve``'s sample and fit)

    The errors are NaN where SKI has no decomposition (r outside [2, n], m above 2n - 2)."""
    t = torch.as_tensor(kernels).detach().to("cpu", torch.float64)
    if t.dim() != 2 or t.shape[-1] % 2 == 0:
        raise ValueError(f"kernels must have shape [C, 2n-1]; got {tuple(t.shape)}")
    layout = atlas_layout((t.shape[-1] + 1) // 2, band, rank, causal)
    parts = []
    for chunk in torch.split(t, CHUNK_CHANNELS):
        share, norm_sq = _band_share(chunk, layout)
        parts.append(torch.stack([share, _ski_error(chunk, norm_sq, layout, "sample"),
                                  _ski_error(chunk, norm_sq, layout, "fit")]))
    out = torch.cat(parts or [torch.empty(3, 0)], dim=-1)
    return {name: out[i].numpy() for i, name in
            enumerate(("band_mass", "sample_error", "fit_error"))}
