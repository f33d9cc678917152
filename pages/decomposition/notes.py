"""Decomposition's words about one setting: the warnings beside the errors (aliasing, an
error above 1) and where Theorem 1's hypotheses fail, from the facts the lab measured."""

from __future__ import annotations

import math

from tnn_core.lab import decomposition as lab

__all__ = ["warnings", "theorem1_caveats"]


def warnings(view: lab.DecompositionView, method: str) -> list[str]:
    """Sentences for aliasing (h > period/2) and for a relative error above 1."""
    out = []
    if view.aliasing_rank is not None:
        out.append(
            f"Aliasing: the inducing points are h = {view.spacing:.3g} lags apart, more than "
            f"half the smooth part's dominant period ({view.dominant_period:.3g} lags). Sampled "
            f"every h lags, the oscillation looks like a slower one (Nyquist: h < period/2), "
            f"and W A Wᵀ interpolates that instead. Use r ≥ {view.aliasing_rank}"
            + (" (more than n allows)." if view.aliasing_rank > view.n else "."))
    worst = max(view.relative_spectral, view.relative_frobenius)
    if math.isfinite(worst) and worst > 1:
        cause = ("aliasing, above" if view.aliasing_rank is not None else
                 "A sampled from the kernel, not fitted: its entry errors add up over the "
                 "n × n matrix; try fit or a larger r" if method == "sample" else
                 "too few inducing points for this kernel; try a larger r")
        out.append(f"The relative error is {worst:.3g} > 1: band + W A Wᵀ is further from T "
                   f"than the zero matrix is (‖T − 0‖ / ‖T‖ = 1). The cause here: {cause}.")
    return out


def theorem1_caveats(panel: lab.Theorem1Panel, method: str) -> list[str]:
    """Which of Theorem 1's hypotheses fail at this setting, and what that means for the
    terms shown."""
    out = ["Theorem 1 assumes k twice continuously differentiable, A non-singular, and a band "
           "that holds the sparse part exactly. Every preset has a kink or a jump at lag 0 (a "
           "causal kernel jumps from 0 to t₀); the band takes it, and k̃ bridges the band "
           "with a straight line."]
    if panel.kink_lag is not None:
        out.append(f"max|k̃''| sits at lag {panel.kink_lag}, where that straight line meets the "
                   "kernel: k̃ has a kink there, so it is not C² and L is the kink's second "
                   "difference, not a derivative.")
    if panel.a_singular:
        out.append("A is singular (σ_r(A) ≈ 0): the theorem does not apply, its right-hand "
                   "side is infinite.")
    if method == "fit":
        out.append("The theorem is about A sampled from the kernel, A_ij = k̃(p_i − p_j): "
                   "these terms use that A, not the fitted one.")
    if panel.sides_dense_max_n is not None:
        out.append("The two sides of the bound need dense n × n SVDs: shown up to "
                   f"n = {panel.sides_dense_max_n}.")
    return out
