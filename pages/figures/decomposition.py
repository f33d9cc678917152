"""The band + W A Wᵀ figure (decomposition.js) and the error against r (error_curve.js),
mounted by the Decomposition page and by lesson steps: the kernel sources, the controls and
the server's side of the two figures' data contracts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from pages import figures
from pages._ui import checkpoints, frame, kernels
from pages._ui.memo import memo
from tnn_core.lab import decomposition as lab

__all__ = ["CONTROLS", "STATE", "DEFAULT_DECAY", "KernelSource", "Mounted", "mount", "show_curve"]

TARGET = ("the Toeplitz target kernel(n) = band + k(t) of SKI; the operator applies band + "
          "W A Wᵀ with its own A, which is not Toeplitz")
CONTROLS = lab.DECOMPOSITION  # r, m, λ (declared once: lab.common.figure_controls)
STATE = tuple(c.name for c in CONTROLS)  # the figure's own controls, lockable
DEFAULT_DECAY = lab.DECAY.default  # λ of a kernel drawn without its slider


@dataclass(frozen=True)
class KernelSource:
    """What the Source selector chose; ``kernel(n, decay, causal)`` gives its coefficients."""

    name: str
    channel: int = 0
    text: str = ""  # custom coefficients t_{-(n-1)} .. t_{n-1}
    checkpoint: str = ""  # checkpoint key (see checkpoints.checkpoint_choices)
    layer: int = 0

    @property
    def browser_decay(self) -> bool:
        """Whether the figure moves λ itself: t_k = base_k λ^|k| + extra_k is known."""
        return self.name in lab.SYNTHETIC

    @property
    def has_decay(self) -> bool:
        return self.name not in ("custom", "checkpoint", "fd")

    def kernel(self, n: int, decay: float, causal: bool) -> tuple:
        """(coeffs [2n-1], a one-line description without n). Custom coefficients fix n."""
        if self.name == "custom":
            return kernels.parse_coefficients(self.text, causal), "your coefficients"
        if self.name == "checkpoint":
            coeffs = checkpoints.checkpoint_kernel(self.checkpoint, n, self.layer, self.channel)
            operator = checkpoints.load_checkpoint(self.checkpoint)[0].config.operator
            applied = ("; this bidirectional SKI layer applies band + W A Wᵀ, which is not "
                       "Toeplitz, so T is its nearest Toeplitz matrix, the means of the applied "
                       "matrix's diagonals" if operator.kind == "ski" and not operator.causal
                       else "")
            return coeffs, (f"checkpoint {self.checkpoint}, layer {self.layer}, channel "
                            f"{self.channel} (λ does not apply: the kernel is learned{applied})")
        coeffs = kernels.preset_kernel(self.name, n, decay, causal, frame.seed(), self.channel)
        label = kernels.SOURCE_LABELS[self.name]
        if self.name in ("tno", "ski", "fd"):
            label += f", channel {self.channel}"
        return coeffs, label + (f": {TARGET}" if self.name == "ski" else "")


@memo(max_entries=64)
def synthetic_parts(name: str, n: int, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    return lab.synthetic_parts(name, n, causal)


@dataclass(frozen=True)
class Mounted:
    """What the figure drew, for the sections that follow it."""

    coeffs: np.ndarray  # [2n-1] the kernel at the drawn λ
    label: str  # the source in words
    length: int  # n of the kernel (typed coefficients set their own)
    band: int  # m and r, clamped to n (lab.fit_to_length)
    rank: int
    decay: float | None  # λ (None: the kernel has none)
    view: lab.DecompositionView


def mount(source: KernelSource, n: int, causal: bool, method: str, key: str,
          link: bool = True, settings: Mapping | None = None,
          locked: tuple[str, ...] = (), factors: bool = True,
          compact: bool = False) -> Mounted | None:
    """The figure for ``source`` at length n, its r, m and λ under ``key``: from the browser,
    else the link (``link``), else ``settings``, else the defaults; ``factors``: "Where
    W A Wᵀ comes from" open; ``compact``: no sentence on the colours (a lesson's screen).
    None, with a sentence on the page, when there is nothing to decompose (n = 1, a
    refused kernel)."""
    settings = settings or {}
    controls = tuple(replace(c, default=settings.get(c.name, c.default))
                     for c in (CONTROLS if source.has_decay else (lab.RANK, lab.BAND)))
    values = figures.values(controls, key, link)
    decay = values.get("decay")  # None: this kernel has no λ
    try:
        coeffs, label = source.kernel(n, DEFAULT_DECAY if decay is None else decay, causal)
    except ValueError as err:
        frame.show_error(err)
        return None
    length = (len(coeffs) + 1) // 2
    if length < 2:
        st.info(f"n = 1: T is the 1 × 1 matrix [t₀] = [{coeffs[0]:.4g}]. The band holds it "
                "exactly and nothing is left for a low-rank part (r needs two inducing "
                "points). Set n ≥ 2, or type three or more coefficients, to decompose.",
                icon=":material/info:")
        return None
    fitted = lab.fit_to_length(length, values["band"], values["rank"])
    try:
        view = kernels.decomposition_view(coeffs, fitted.band, fitted.rank, causal, method)
    except ValueError as err:
        frame.show_error(err)
        return None
    figures.show("decomposition", {
        **figure_payload(source, length, causal, method, view, fitted.band, decay),
        "locked": list(locked), "factors": factors, "compact": compact}, controls, key=key,
        link=link)
    return Mounted(coeffs, label, length, fitted.band, fitted.rank, decay, view)


def figure_payload(source: KernelSource, length: int, causal: bool, method: str,
                   view: lab.DecompositionView, band: int, decay: float | None) -> dict:
    """The band + W A Wᵀ figure's data (its contract: pages/figures/decomposition.js)."""
    parts = synthetic_parts(source.name, length, causal) if source.browser_decay else None
    label = "T (SKI's target)" if source.name == "ski" else "T"
    return lab.figure_data(view, parts, causal, label, decay, method,
                           lab.drawn(length, band, view.rank, decay, method))


def curve_payload(curve, length: int, band: int, rank: int) -> dict:
    """The error-against-r figure's data (its contract: pages/figures/error_curve.js)."""
    return {"id": lab.kernel_id(curve.sample, curve.fit, curve.optimal),
            "n": length, "band": band, "rank": rank, "ranks": curve.ranks.tolist(),
            "sample": lab.json_floats(curve.sample),
            "fit": lab.json_floats(curve.fit),
            "optimal": lab.json_floats(curve.optimal),
            "floor": lab.CURVE_FLOOR, "exact": curve.exact.tolist()}


def show_curve(drawn: Mounted, causal: bool, key: str, height: int = 300) -> None:
    """The error against r of the drawn kernel and band, the current r marked; its plot
    ``height`` CSS pixels tall."""
    curve = kernels.rank_curve(drawn.coeffs, drawn.band, causal)
    figures.show("error_curve", {**curve_payload(curve, drawn.length, drawn.band, drawn.rank),
                                 "height": height}, (), key=key, link=False)
