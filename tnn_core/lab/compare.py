"""The Compare A/B page: two settings of one decomposition side by side, and B − A.

Each side is one kernel (the shared preset, n and causal at its own λ) split as
T ≈ band + W A Wᵀ at its own band m, rank r and method (Algorithm 1 of "SKI to go
Faster", ``analysis.decompose``). The browser draws each side with the band + W A Wᵀ
figure (``pages/figures/decomposition.js``), mounted twice with the control prefixes
"a_" and "b_"; ``compare_side`` gives what only the server computes for a side (spectral
norms, optima, the least-squares A of "fit") and ``side_figure_data`` that side's figure
data. ``difference`` gives the strip between the sides: B − A of every number, in words,
and the difference of the two approximations, drawn by ``pages/figures/difference.js``
from ``difference_figure_data``.

Letters: n length, r rank (inducing points), s rows and columns drawn.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

import numpy as np

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import display_indices
from tnn_core.analysis.presets import PRESETS, SYNTHETIC
from tnn_core.lab.common import decomposition_figures
from tnn_core.lab.common.browser_data import json_floats
from tnn_core.lab.common.decomposition_figures import SIDES, Settings, fit_to_length
from tnn_core.lab.common.figure_controls import side_controls

__all__ = ["DIFFERENCE_CELLS", "SIDES", "SideView", "compare_side", "side_drawn",
           "side_figure_data", "change_text", "NumberChange", "Difference", "difference",
           "difference_words", "difference_figure_data",
           # the kernels a side may show, and the sliders clamped to n
           "PRESETS", "SYNTHETIC", "Settings", "fit_to_length", "side_controls"]

DIFFERENCE_CELLS = 128  # rows and columns the strip B − A draws at most


@dataclass(frozen=True)
class SideView:
    """What the server computes for one side (A or B) at its setting."""

    n: int
    band: int
    rank: int
    method: str
    decay: float  # λ the kernel was built with
    relative_spectral: float  # ||T - approx||_2 / ||T||_2 (nan: all-zero kernel)
    relative_frobenius: float  # ||T - approx||_F / ||T||_F
    relative_optimal_spectral: float  # σ_{r+1}(T - band) / ||T||_2
    relative_optimal_frobenius: float  # Eckart–Young optimum with this band, over ||T||_F
    gap: float  # ||T - approx||_2 / σ_{r+1}(T - band) (nan when the optimum is 0)
    note: str  # why relative errors are undefined, or ""
    coeffs: np.ndarray  # [2n-1] t_k, k = -(n-1)..n-1
    inducing_values: np.ndarray  # [2r-1] A's coefficients a_{i-j} (the fitted ones for "fit")
    idx: np.ndarray  # [s] rows and columns the difference draws
    approximation: np.ndarray  # [s, s] band + W A Wᵀ


def compare_side(coeffs: np.ndarray, band: int, rank: int, causal: bool, method: str,
                 decay: float) -> SideView:
    """One side for kernel coeffs [2n-1] (built at λ = ``decay``); ValueError naming the
    field when band, rank or method do not fit n (``decompose``'s checks)."""
    dec = decompose(coeffs, band, rank, causal=causal, method=method)
    n, errors = dec.n, dec.errors
    idx = display_indices(n, DIFFERENCE_CELLS)
    approximation = dec.band_matrix(idx) + dec.low_rank_matrix(idx)  # (s, s)
    gap = (errors.spectral / errors.optimal_spectral if errors.optimal_spectral > 0
           else float("nan"))
    return SideView(n=n, band=dec.band, rank=dec.rank, method=method, decay=float(decay),
                    relative_spectral=errors.relative_spectral,
                    relative_frobenius=errors.relative_frobenius,
                    relative_optimal_spectral=errors.relative_optimal_spectral,
                    relative_optimal_frobenius=errors.relative_optimal_frobenius, gap=gap,
                    note=errors.note, coeffs=dec.coeffs, inducing_values=dec.A_coeffs,
                    idx=idx, approximation=approximation)


def side_drawn(side: str, n: int, band: int, rank: int, decay: float | None,
               method: str) -> str:
    """The side's figure's ``data-drawn`` for a view: ``decomposition_figures.drawn`` with
    every name but n after the side's prefix, ``n=256&a_band=9&a_rank=32&a_decay=0.99&
    a_method=sample``."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}; got {side!r}")
    plain = decomposition_figures.drawn(n, band, rank, decay, method)
    return urlencode([(name if name == "n" else f"{side}_{name}", value)
                      for name, value in parse_qsl(plain)])


def side_figure_data(side: str, view: SideView, causal: bool, decay: float | None,
                     parts: tuple[np.ndarray, np.ndarray] | None) -> dict:
    """The band + W A Wᵀ figure's data for one side (its contract: the header of
    pages/figures/decomposition.js), less its controls: the kernel as ``parts`` (base,
    extra) [2n-1] for a synthetic preset, so λ moves in the browser, else as the
    coefficients at λ = ``decay`` (None: the kernel has no λ); the server's numbers and
    fitted A labelled with the view they belong to; the prefix, and the other side's prefix
    for one residual colour scale."""
    drawn = side_drawn(side, view.n, view.band, view.rank, decay, view.method)
    other = next(s for s in SIDES if s != side)
    return decomposition_figures.figure_data(view, parts, causal, "T", decay, view.method,
                                             drawn) | {
        "prefix": f"{side}_", "scaleWith": f"{other}_", "factors": False}


def change_text(a: float, b: float) -> str:
    """B against A in words: "B is 3.2× smaller", "B is 1.5× larger", "B equals A"; two
    significant figures (three below 1.1×, so a change of a few percent never reads "1.0×")."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return "undefined on one side"
    if a == b:
        return "B equals A"
    if a == 0 or b == 0:
        return "A is 0, B is not" if a == 0 else "B is 0, A is not"
    if np.sign(a) != np.sign(b):
        return "B and A have opposite signs"
    factor = max(abs(a), abs(b)) / min(abs(a), abs(b))
    if factor < 1.005:
        return "B is within 0.5 % of A"
    decimals = 2 if factor < 1.1 else 1 if factor < 10 else 0
    return f"B is {factor:.{decimals}f}× {'smaller' if abs(b) < abs(a) else 'larger'}"


@dataclass(frozen=True)
class NumberChange:
    """One number of both sides and B − A, with the change in words."""

    label: str
    a: float
    b: float
    delta: float  # b - a
    words: str  # ``change_text(a, b)``


@dataclass(frozen=True)
class Difference:
    """The strip below the sides."""

    numbers: tuple[NumberChange, ...]
    idx: np.ndarray  # [s] rows and columns drawn (the same on both sides)
    approximation: np.ndarray  # [s, s] (band + W A Wᵀ) of B minus that of A
    limit: float  # colour range ±limit: max|approximation difference| (1 when 0)
    kernel_gap: float  # max_k |t_k of B − t_k of A|: the kernels differ when λ does


def difference(a: SideView, b: SideView) -> Difference:
    """B − A of two sides over the same n (ValueError when their n differ)."""
    if a.n != b.n:
        raise ValueError(f"both sides must have the same n to be compared; got n = {a.n} "
                         f"and n = {b.n}")
    numbers = tuple(
        NumberChange(label, x, y, y - x, change_text(x, y)) for label, x, y in (
            ("spectral error", a.relative_spectral, b.relative_spectral),
            ("Frobenius error", a.relative_frobenius, b.relative_frobenius),
            ("SVD optimum", a.relative_optimal_frobenius, b.relative_optimal_frobenius)))
    change = b.approximation - a.approximation  # (s, s)
    return Difference(numbers=numbers, idx=a.idx, approximation=change,
                      limit=float(np.abs(change).max(initial=0.0)) or 1.0,
                      kernel_gap=float(np.abs(b.coeffs - a.coeffs).max(initial=0.0)))


def difference_words(diff: Difference, n: int) -> str:
    """What the difference picture shows, in one paragraph."""
    step = int(diff.idx[1] - diff.idx[0]) if len(diff.idx) > 1 else 1
    sampled = (f"one row and column in {step} of the {n} × {n} matrices" if step > 1 else
               f"all {n} × {n} entries")
    kernels = ("The two kernels are the same (same λ), so this is the difference of two "
               "approximations of one matrix T." if diff.kernel_gap == 0 else
               f"The two kernels differ too (λ differs): max |t_k of B − t_k of A| = "
               f"{diff.kernel_gap:.3g}, so part of this picture is T itself changing.")
    return (f"Each cell is entry (i, j) of B's band + W A Wᵀ minus A's. White: the two "
            f"settings agree there. {kernels} Row 0 at the top, column 0 at the left; "
            f"{sampled}.")


def difference_figure_data(diff: Difference, n: int, drawn: tuple[str, str]) -> dict:
    """The difference figure's data (its contract: pages/figures/difference.js): B − A
    of the approximations as float32 (a picture: the last digits do not show), the numbers
    in words, and the settings it is for, ``drawn`` = both sides' ``side_drawn``."""
    params = [("n", str(n))] + [(name, value) for text in drawn
                                for name, value in parse_qsl(text) if name != "n"]
    values = np.asarray(diff.approximation, dtype="<f4")  # (s, s) row-major
    return {"drawn": [list(p) for p in params], "follows": "decomposition",
            "rows": diff.idx.tolist(),
            "values": base64.b64encode(values.tobytes()).decode("ascii"),
            "limit": diff.limit, "words": difference_words(diff, n),
            "numbers": [{"label": c.label, "a": json_floats([c.a])[0],
                         "b": json_floats([c.b])[0], "words": c.words}
                        for c in diff.numbers]}
