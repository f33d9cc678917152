"""The recurrent fit of a causal kernel (recurrent_fit.js): the kernel as a sum of s damped
complex exponentials, i.e. an SSM, for every s of a ladder, beside band + W A Wᵀ's error
against r. Mounted by the Decomposition page (a section for causal kernels) and by lesson
steps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import streamlit as st

from pages import figures
from pages._ui import kernels
from pages._ui.memo import memo
from tnn_core.lab import decomposition as lab

__all__ = ["MODES", "show", "section", "payload", "cached_recurrent_fit", "decay_kernels",
           "decay_table"]

MODES = lab.MODES  # declared once: lab.common.figure_controls
CONTROLS = (MODES,)  # its slider, in the URL under its name

CAPTION = (
    "A time-invariant SSM (S4, S4D; not a selective one such as Mamba, whose A and B change "
    "with the input) with s complex modes applies the lower-triangular Toeplitz matrix of "
    "k₀ = d, k_l = Re Σⱼ cⱼ zⱼ^(l−1) = C A^(l−1) B for l ≥ 1 (TNN §4). The poles z start "
    "from the matrix pencil of the kernel's Hankel matrix (Hua and Sarkar 1990) and are "
    "refined by variable projection (Golub and Pereyra 1973), |z| ≤ 1 kept, the residues c "
    "by least squares weighted by the n − l entries lag l fills; the refined fit is never "
    "worse than the pencil's. "
    "Right: ‖T − T̂‖_F / ‖T‖_F of the n × n matrices, the same number as the band + W A Wᵀ "
    "curve above, against s for the SSM and against r for band + W A Wᵀ at this band m. The "
    "counts are not costs: a mode keeps one complex state (2 real numbers) and holds 4 real "
    "parameters (z and c); r inducing points give A 2r − 1 numbers beside the band's m taps.")
ABSENT = (
    "**Why no recurrent fit here:** this kernel has nonzero negative lags, so T has entries "
    "above the diagonal: output t reads inputs after t. A recurrence runs forward, one token "
    "at a time, and its matrix is lower triangular; a bidirectional kernel would need a "
    "second SSM run backwards. Switch *Causal* on to see the kernel as a recurrence.")


@memo(max_entries=16, spinner="Fitting s exponentials for every s…")
def cached_recurrent_fit(coeffs: np.ndarray) -> lab.RecurrentFit:
    return lab.recurrent_fit(coeffs)


def payload(fit: lab.RecurrentFit, curve: lab.RankCurve, band: int) -> dict:
    """The figure's data (its contract: pages/figures/recurrent_fit.js)."""
    def pairs(values: np.ndarray) -> str:  # complex [s] -> packed re, im pairs [2s]
        return lab.packed(np.stack([values.real, values.imag], axis=1).ravel())
    floored = np.where(fit.errors >= lab.CURVE_FLOOR, fit.errors, np.nan)
    return {"id": lab.kernel_id(fit.column), "n": fit.n, "column": lab.packed(fit.column),
            "direct": fit.direct, "modes": fit.modes.tolist(),
            "poles": [pairs(z) for z in fit.poles], "residues": [pairs(c) for c in fit.residues],
            "errors": lab.json_floats(floored), "floor": lab.CURVE_FLOOR,
            "undamped": fit.undamped.tolist(),
            "exact": fit.modes[fit.errors < lab.CURVE_FLOOR].tolist(),
            "band": band, "ranks": curve.ranks.tolist(), "ski": lab.json_floats(curve.fit),
            "optimal": lab.json_floats(curve.optimal)}


def show(coeffs: np.ndarray, band: int, causal: bool, key: str, link: bool = True,
         settings: dict | None = None, locked: tuple[str, ...] = ()) -> int | None:
    """The figure for causal kernel coeffs [2n-1] beside band + W A Wᵀ's curve at ``band``
    (its band causal or not, as the page's curve above); returns the drawn s (None, with a
    sentence, when it cannot be fitted)."""
    control = replace(MODES, default=(settings or {}).get("modes", MODES.default))
    try:
        fit = cached_recurrent_fit(coeffs)
    except ValueError as err:
        st.info(f"No recurrent fit: {err}.", icon=":material/info:")
        return None
    curve = kernels.rank_curve(coeffs, band, causal)
    chosen = figures.show("recurrent_fit", {**payload(fit, curve, band),
                                            "locked": list(locked)}, (control,), key=key,
                          link=link)
    return chosen["modes"]


def section(coeffs: np.ndarray, band: int, causal: bool, key: str) -> None:
    """The Decomposition page's section: the figure for a causal kernel, else why not."""
    st.subheader("The same kernel as a recurrence (an SSM)")
    if not lab.is_causal(coeffs):
        st.markdown(ABSENT)
        return
    if show(coeffs, band, causal, key) is not None:
        st.caption(CAPTION)


def decay_kernels(source, n: int, causal: bool) -> dict[float, np.ndarray]:
    """{λ: the source's kernel [2n-1] at λ} for lesson 6's λ of ``lab.RECURRENT_DECAYS``
    (``source``: a ``decomposition.KernelSource`` with a decay)."""
    return {decay: source.kernel(n, decay, causal)[0] for decay in lab.RECURRENT_DECAYS}


@memo(max_entries=8, spinner="Fitting the kernel at each λ…")
def _modes_by_decay(kernels: tuple[np.ndarray, ...]) -> dict:
    return lab.modes_by_decay(dict(zip(lab.RECURRENT_DECAYS, kernels, strict=True)))


def decay_table(source, n: int, causal: bool) -> None:
    """A step's measurement: the smallest s reaching each error of ``lab.RECURRENT_TARGETS``
    for the source's kernel at each λ."""
    kernels = decay_kernels(source, n, causal)
    found = _modes_by_decay(tuple(kernels.values()))
    with st.container(key="lesson-modes_against_decay", border=True):
        st.markdown(f"**The smallest s reaching an error, at each λ** (n = {n}, the same "
                    "RPE)")
        st.table({"λ": [f"{decay:g}" for decay in found]} | {
            f"s for {target:.1%}": ["over 32" if s is None else s for s in (
                row[i] for row in found.values())]
            for i, target in enumerate(lab.RECURRENT_TARGETS)}, hide_index=True)
        st.caption("Error: ‖T − T̂‖_F / ‖T‖_F of the n × n matrices, as in the recurrent "
                   "fit's figure. λ^l Re c z^(l−1) = Re (λc)(λz)^(l−1) holds for an exact sum "
                   "of exponentials only; a fitted kernel is none, and λ decides how much the "
                   "far lags weigh in the error, so the s needed can grow with λ.")
