"""Page-level computations: one call per view, plain values in, numpy out.

A slider move on a page travels: widget -> one (cached) function here -> figures.
Nothing here knows about Streamlit; the pages cache these calls.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tnn_core.analysis import (
    causality_leakage,
    decay_profile,
    decompose,
    error_curve,
    frequency_response,
)

__all__ = ["CURVE_RANKS", "display_indices", "decomposition_view", "rank_curve", "page_latency"]

CURVE_RANKS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


def display_indices(n: int, max_cells: int) -> np.ndarray:
    """Rows/columns drawn in a heatmap: all of them, or every step-th for large n."""
    step = max(1, math.ceil(n / max_cells))
    return np.arange(0, n, step)


def decomposition_view(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                       max_cells: int = 192) -> dict:
    """Everything the Decomposition page draws for one setting.

    coeffs: [2n-1]. Heatmaps are evaluated only at ``display_indices`` (never n × n
    for large n): T and the band from their coefficients, the low-rank part as
    W[idx] A W[idx]ᵀ.
    """
    dec = decompose(torch.as_tensor(coeffs, dtype=torch.float64), band, rank, causal=causal,
                    method=method)
    n = dec.n
    idx = display_indices(n, max_cells)
    lag_index = (n - 1) + idx[:, None] - idx[None, :]  # (s, s)
    T = dec.coeffs.numpy()[lag_index]
    B = dec.band_coeffs.numpy()[lag_index]
    W = dec.W.numpy()[idx]  # (s, r)
    L = W @ dec.A.numpy() @ W.T
    h = (n - 1) / (rank - 1)
    a_lags = np.arange(-(rank - 1), rank) * h
    keep = np.abs(a_lags) <= n - 1
    errors = dict(dec.errors)
    nan = float("nan")
    relative_optimal = {
        kind: errors[f"optimal_{kind}"] / errors[f"norm_{kind}"] if errors[f"norm_{kind}"] > 0
        else nan for kind in ("spectral", "frobenius")
    }
    gap = errors["spectral"] / errors["optimal_spectral"] if errors["optimal_spectral"] > 0 else nan
    return {
        "n": n,
        "idx": idx,
        "T": T,
        "band": B,
        "low_rank": L,
        "residual": T - B - L,
        "errors": errors,
        "relative_optimal": relative_optimal,
        "gap": gap,
        "theorem1": dec.theorem1_factor,
        "spacing": h,
        "singular_values": np.asarray(dec.singular_values),
        "a_lags": a_lags[keep],
        "a_values": dec.A_coeffs.numpy()[keep],
        "band_coeffs": dec.band_coeffs.numpy(),
        "decay": decay_profile(coeffs, causal=causal),
        "frequency": frequency_response(coeffs),
        "leakage": causality_leakage(coeffs),
    }


def rank_curve(coeffs: np.ndarray, band: int, causal: bool) -> dict:
    """Relative Frobenius error against r for "sample", "fit" and the optimum."""
    n = (len(coeffs) + 1) // 2
    ranks = [r for r in CURVE_RANKS if r <= n]
    return error_curve(torch.as_tensor(coeffs, dtype=torch.float64), band, ranks, causal=causal)


def page_latency(ns=(1024, 4096), repeats: int = 7, rank: int = 32, band: int = 9,
                 method: str = "fit") -> list[dict]:
    """Compute time of one Decomposition page rerun after a slider move (no caches hit).

    Times, per n, the three calls the page makes for a new setting: the decomposition
    view (errors, singular values, profiles, heatmap samples), the error-against-r curve,
    and the live speed readout (``bench.live_speed``). Kernel: spike plus smooth, λ = 0.99.
    Returns dicts: n, stage, ms (median of ``repeats``)."""
    from tnn_core.analysis.presets import synthetic_kernel
    from tnn_core.bench import live_speed
    from tnn_core.bench.timing import median_ms

    rows = []
    for n in ns:
        coeffs = synthetic_kernel("spike_smooth", n, 0.99).numpy()
        stages = {
            "decomposition view": lambda c=coeffs: decomposition_view(c, band, rank, False, method),
            "error-against-r curve": lambda c=coeffs: rank_curve(c, band, False),
            "live speed readout": lambda n=n: live_speed(n, rank, band),
        }
        stages["page total"] = lambda stages=dict(stages): [f() for f in stages.values()]
        for stage, fn in stages.items():
            rows.append({"n": n, "stage": stage, "ms": median_ms(fn, repeats, warmup=1)})
    return rows
