"""A power law fitted to the upper tail of positive values, and how plausible it is.

Clauset, Shalizi & Newman (2009), "Power-law distributions in empirical data", SIAM
Review 51(4) (CSN below):

- the fit (§3): ρ(x) ∝ x^-α above a threshold xmin. Each value x_(k+1) (descending order
  statistics x_(1) >= x_(2) >= ...) with at least ``min_tail`` values strictly above it is
  a candidate xmin; α is the Hill estimate on those k exceedances, the continuous MLE of
  their eq. (3.1),
      α = 1 + k / Σ_{i<=k} ln(x_(i) / x_(k+1)),
  (Hill 1975, Ann. Statist. 3(5)), and D the Kolmogorov–Smirnov distance between the
  exceedances' empirical CDF and P(x) = 1 - (x/xmin)^(1-α). The fit is the xmin with the
  smallest D (their §3.3).
- the goodness of fit (§4.1): the semi-parametric bootstrap. Each synthetic set has the
  data's N values: each one, with probability k/N, drawn from the fitted law above xmin,
  else drawn with replacement from the N - k observed values at or below xmin. Each set is
  fitted the same way, xmin included, and p is the share of sets whose KS distance is at
  least the data's. CSN rule out the power law when p <= 0.1. B draws give p to within
  about 0.5 / sqrt(B) (their eq. 4.1: B = 2500 for ±0.01); the report uses GOF_DRAWS.

Every set of one call is fitted at once: an O(N²) scan per set, batched.

Letters: B sets, N values, k tail size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.checks import check_int

__all__ = ["MIN_TAIL", "GOF_DRAWS", "PowerLawFit", "csn_power_law_fit", "csn_p_value"]

MIN_TAIL = 10  # fewest exceedances a power-law tail is fitted to; fewer give α = nan
GOF_DRAWS = 100  # synthetic sets for the p-value: its Monte Carlo error is at most ±0.05
_GOF_SEED = 0  # the synthetic sets' generator: a p-value is a function of the values alone
_CHUNK_ENTRIES = 2**22  # B × N × N entries scanned at once: 32 MB of float64 per array


@dataclass(frozen=True)
class PowerLawFit:
    """ρ(λ) ∝ λ^-α for λ > xmin, fitted to the ``tail`` largest values (nan, 0 if none)."""

    alpha: float  # the density's exponent α > 1
    ks: float  # Kolmogorov–Smirnov distance between the tail and the fitted law
    tail: int  # k: values fitted, the exceedances (strictly above xmin)
    xmin: float  # the threshold: the (k+1)-th largest value


def csn_power_law_fit(values: np.ndarray, min_tail: int = MIN_TAIL) -> PowerLawFit:
    """The CSN fit (module docstring) of positive, finite values [N]. No candidate (too
    few values, or all equal) gives alpha nan."""
    x = np.sort(_checked(values))[::-1]  # (N,) descending
    alpha, ks, tail, xmin = _scan(x[None], min_tail)
    return PowerLawFit(float(alpha[0]), float(ks[0]), int(tail[0]), float(xmin[0]))


def csn_p_value(values: np.ndarray, fit: PowerLawFit | None = None, draws: int = GOF_DRAWS,
                min_tail: int = MIN_TAIL, seed: int = _GOF_SEED) -> float:
    """CSN's goodness-of-fit p-value (§4.1, module docstring) of ``fit`` (by default the
    values' own CSN fit) to positive values [N], from ``draws`` synthetic sets, seeded;
    nan when there is no fit."""
    x = np.sort(_checked(values))[::-1]  # (N,) descending
    check_int("draws", draws, 1, 100_000)
    fit = fit or csn_power_law_fit(x, min_tail)
    if not math.isfinite(fit.alpha):
        return math.nan
    rng = np.random.default_rng(seed)
    N, body = len(x), x[fit.tail:]  # (N - k,) the values at or below xmin
    in_tail = rng.random((draws, N)) < fit.tail / N  # (B, N)
    pareto = fit.xmin * (1 - rng.random((draws, N))) ** (-1 / (fit.alpha - 1))  # (B, N)
    resampled = body[rng.integers(0, len(body), (draws, N))]  # (B, N)
    sets = -np.sort(-np.where(in_tail, pareto, resampled), axis=1)  # (B, N) descending
    per_chunk = max(1, _CHUNK_ENTRIES // (N * N))
    ks = np.concatenate([_scan(sets[i: i + per_chunk], min_tail)[1]
                         for i in range(0, draws, per_chunk)])  # (B,) nan: no fit
    return float(np.mean(np.nan_to_num(ks, nan=np.inf) >= fit.ks))


def _checked(values) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()  # (N,)
    if np.any(x <= 0) or not np.all(np.isfinite(x)):
        raise ValueError(f"values must be positive and finite; got min {x.min(initial=0)!r}")
    return x


def _scan(x: np.ndarray, min_tail: int):
    """For sets of values x [B, N], each sorted descending: per set, the α, KS distance,
    tail size k and xmin of the candidate threshold with the smallest KS distance (nan, nan,
    0, nan where none has ``min_tail`` exceedances and a positive log spread)."""
    B, N = x.shape
    if N <= min_tail:  # no candidate: min_tail values above the threshold need N > min_tail
        return np.full(B, np.nan), np.full(B, np.nan), np.zeros(B, np.int64), np.full(B, np.nan)
    i = np.arange(N)  # (N,) position in the descending order
    starts = np.concatenate([np.ones((B, 1), bool), x[:, 1:] != x[:, :-1]], axis=1)  # (B, N)
    k = np.maximum.accumulate(np.where(starts, i, 0), axis=1)  # (B, N) values > x[:, j]
    logs = np.log(x)  # (B, N)
    cumulative = np.concatenate([np.zeros((B, 1)), np.cumsum(logs, axis=1)], axis=1)
    spread = np.take_along_axis(cumulative, k, axis=1) - k * logs  # (B, N) Σ ln(x_i / x_j)
    valid = (k >= min_tail) & (spread > 0)  # (B, N)
    alpha = np.where(valid, 1 + k / np.where(valid, spread, 1), np.nan)  # (B, N)
    inside = i[None, None, :] < k[:, :, None]  # (B, N, N): value i exceeds threshold j
    excess = logs[:, None, :] - logs[:, :, None]  # (B, N, N) ln(x_i / xmin), > 0 inside
    excess *= (1 - np.nan_to_num(alpha, nan=2.0))[:, :, None]
    cdf = -np.expm1(excess, out=excess)  # (B, N, N) fitted P(x_i) = 1 - (x_i/xmin)^(1-α)
    size = np.maximum(k, 1)[:, :, None]  # (B, N, 1)
    above = (k[:, :, None] - i) / size  # (B, N, N) empirical CDF just at x_i
    gap = np.maximum(above - cdf, cdf - above + 1 / size)  # and just below it
    gap[~inside] = -np.inf
    ks = np.where(valid, gap.max(axis=2, initial=-np.inf), np.inf)  # (B, N)
    best = np.argmin(ks, axis=1)  # (B,)
    found = valid.any(axis=1)  # (B,)
    rows = np.arange(B)
    return (np.where(found, alpha[rows, best], np.nan), np.where(found, ks[rows, best], np.nan),
            np.where(found, k[rows, best], 0), np.where(found, x[rows, best], np.nan))
