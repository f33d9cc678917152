"""Page "Toeplitz basics": a kernel, its matrix, and the FFT product.

coeffs [2n-1] holds t_{-(n-1)} .. t_{n-1}: coeffs[n-1+k] = t_k. ``figure_kernel`` is what the
Toeplitz figure (``pages/figures/toeplitz.js``, which draws T and the kernel in the browser)
gets for one kernel: the name of a formula it evaluates itself, or the coefficients only the
server computes. ``circulant_embedding`` is the FFT product's why, step by step (TNN paper
§3.1): the 2n - 1 coefficients, the circulant's first column c [N] with its zero padding,
the circulant C [N, N], and its top-left block, T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.presets import (
    MAX_TYPED_CHARS,
    MAX_TYPED_LENGTH,
    OPERATOR_CHANNELS,
    SYNTHETIC,
    operator_kernel,
    parse_coefficients,
    synthetic_kernel,
)
from tnn_core.bench import timing
from tnn_core.bench.harness import order
from tnn_core.bench.timing import format_flops, format_ms, format_ratio
from tnn_core.core.toeplitz import causal_part, circulant_column, fft_size
from tnn_core.lab.common.browser_data import packed
from tnn_core.lab.common.figure_controls import TOEPLITZ

__all__ = ["FIGURE_CELLS", "TYPED", "FigureKernel", "packed", "figure_kernel",
           "CIRCULANT_CELLS", "CirculantEmbedding", "circulant_embedding", "FftCheck",
           "fft_difference", "fft_check",
           # what the page and its figures show beside them
           "MAX_TYPED_CHARS", "MAX_TYPED_LENGTH", "OPERATOR_CHANNELS", "format_flops",
           "format_ms", "format_ratio", "TOEPLITZ"]

FIGURE_CELLS = 256  # rows and columns the Toeplitz figure draws at most (every k-th beyond)
CIRCULANT_CELLS = 128  # slots of c (rows and columns of C) drawn at most, padding aside
TYPED = "custom"  # the kernel typed as coefficients


@dataclass(frozen=True)
class FigureKernel:
    """One kernel as the Toeplitz figure gets it, and as the page's other parts use it."""

    browser: dict  # the figure's ``kernel`` (its data contract): {"formula": name}, or
    # {"coefficients": [2n-1] as base64 float64, "n", "decay", "causal", "channel"} with
    # None where the kernel does not depend on it
    inactive: tuple[str, ...]  # the figure's controls this kernel ignores
    coeffs: np.ndarray  # [2n-1] t_k at the settled setting (float64)


def figure_kernel(name: str, n: int, decay: float, causal: bool, seed: int = 0,
                  channel: int = 0, text: str = "") -> FigureKernel:
    """Preset ``name`` (``presets.PRESETS``, or ``TYPED`` with ``text``) at length n, decay λ,
    causal, and for an operator's kernel the sidebar seed and channel. A synthetic preset
    goes to the browser as its formula's name; an operator's kernel as its coefficients at
    this setting; typed coefficients as typed (n is theirs, causal is applied there too).
    ValueError naming the field when the setting or the text cannot be used."""
    if name == TYPED:
        typed = parse_coefficients(text)  # (2n-1,)
        coeffs = causal_part(typed) if causal else typed
        return FigureKernel({"coefficients": packed(typed.numpy()), "n": None, "decay": None,
                             "causal": None, "channel": None}, ("n", "decay", "channel"),
                            coeffs.numpy())
    if name in SYNTHETIC:
        return FigureKernel({"formula": name}, ("channel",),
                            synthetic_kernel(name, n, decay, causal).numpy())
    coeffs = operator_kernel(name, n, decay, causal, seed, channel)  # (2n-1,)
    decays = name != "fd"  # FD-TNN has no decay bias
    return FigureKernel({"coefficients": packed(coeffs.numpy()), "n": n,
                         "decay": decay if decays else None, "causal": causal,
                         "channel": channel}, () if decays else ("decay",), coeffs.numpy())


@dataclass(frozen=True)
class CirculantEmbedding:
    """T inside a circulant C of size N = ``core.toeplitz.fft_size(n)``, at the slots drawn:
    every ``step``-th slot of 0..N-1 and every padding slot (so the padding always shows)."""

    n: int
    N: int  # FFT size, >= 2n
    padding: int  # N - 2n + 1 zeros between t_{n-1} and t_{-(n-1)} in c
    step: int  # one slot in ``step`` drawn (1: all of them), padding slots aside
    lag_slots: np.ndarray  # [a] positions in coeffs drawn, every ``step``-th
    coeffs: np.ndarray  # [a] coeffs[lag_slots]: t_{-(n-1)} .. t_{n-1}
    slots: np.ndarray  # [S] slots of c, rows and columns of C drawn (sorted)
    column: np.ndarray  # [S] c[slots], c = core.toeplitz.circulant_column
    column_padding: np.ndarray  # [S] bool: the slot is zero padding
    circulant: np.ndarray  # [S, S] C[i, j] = c[(i - j) mod N] at slots
    circulant_padding: np.ndarray  # [S, S] bool: C[i, j] is a padding zero
    block_slots: np.ndarray  # [b] slots below n: rows and columns of T drawn
    block: np.ndarray  # [b, b] C at block_slots: equal to T there


def circulant_embedding(coeffs: np.ndarray, max_cells: int = CIRCULANT_CELLS
                        ) -> CirculantEmbedding:
    """The embedding of kernel coeffs [2n-1] in its circulant, at most about ``max_cells``
    slots a side plus the padding."""
    coeffs = np.asarray(coeffs, dtype=np.float64)
    n = (len(coeffs) + 1) // 2
    N = fft_size(n)
    c = circulant_column(torch.tensor(coeffs), N).numpy()  # (N,)
    step = max(1, -(-N // max_cells))
    pad = np.arange(n, N - n + 1)  # (N - 2n + 1,) the zero slots
    slots = np.union1d(np.arange(0, N, step), pad)  # (S,)
    is_pad = (slots >= n) & (slots <= N - n)  # (S,)
    wrapped = (slots[:, None] - slots[None, :]) % N  # (S, S) slot of c at C[i, j]
    circulant = c[wrapped]
    block = slots < n
    return CirculantEmbedding(
        n=n, N=N, padding=len(pad), step=step, lag_slots=np.arange(0, 2 * n - 1, step),
        coeffs=coeffs[::step], slots=slots, column=c[slots], column_padding=is_pad,
        circulant=circulant, circulant_padding=(wrapped >= n) & (wrapped <= N - n),
        block_slots=slots[block], block=circulant[np.ix_(block, block)])


@dataclass(frozen=True)
class FftCheck:
    """The FFT product against the dense matmul on one random input (float64), both from
    the coefficients: the FFT product transforms the kernel, the dense one builds T."""

    n: int
    batch: int  # B columns pushed through both products
    repeats: int  # timed rounds, interleaved
    warmup: int  # untimed runs of each product before them
    max_abs_diff: float  # max |FFT − dense| over the outputs (NaN or inf: see ``finite``)
    finite: bool  # both products are finite (False: the product overflows float64)
    fft_ms: float  # median over the rounds
    fft_iqr: tuple[float, float]  # (first, third) quartile of the rounds, ms
    dense_ms: float
    dense_iqr: tuple[float, float]
    fft_flops: float  # tnn_core.bench.flops, kernel transform included
    dense_flops: float  # 2 n² B
    flop_crossover_n: int | None  # the FFT product needs fewer flops from this n on
    speedup: float  # dense_ms / fft_ms: > 1 means the FFT product was faster here
    flop_ratio: float  # dense_flops / fft_flops: > 1 means the FFT product needs fewer flops
    times_separate: bool  # the two IQRs do not overlap: the ordering is outside the noise
    flop_sentence: str  # where the FFT product wins in flops, and how it stands at this n
    time_sentence: str  # what the timings say, or that they are within each other's spread


def fft_difference(coeffs: np.ndarray, seed: int, device: str) -> float:
    """max |FFT product − dense product| on the input ``fft_check`` times (float64): the
    exactness half of the check, cheap enough for every rerun."""
    return timing.fft_dense_difference(torch.tensor(coeffs), seed=seed,
                                       device=device)


def fft_check(coeffs: np.ndarray, seed: int, device: str) -> FftCheck:
    """Time both products now, on this machine (a measurement: do not cache it)."""
    r = timing.fft_vs_dense(torch.tensor(coeffs), seed=seed, device=device)
    n, batch = r["n"], r["batch"]
    fft_iqr, dense_iqr = (r["fft_p25_ms"], r["fft_p75_ms"]), (r["dense_p25_ms"],
                                                               r["dense_p75_ms"])
    separate = order((fft_iqr[0], r["fft_ms"], fft_iqr[1]),
                     (dense_iqr[0], r["dense_ms"], dense_iqr[1])) != 0
    speedup = r["dense_ms"] / r["fft_ms"]
    flop_ratio = r["dense_flops"] / r["fft_flops"]
    cross = r["flop_crossover_n"]
    cheaper = "the FFT product" if flop_ratio > 1 else "the dense product"
    flop_sentence = (
        f"Counted in flops (batch of {batch}, the kernel's transform included), the FFT "
        f"product needs fewer than the dense one from n = {cross} on. At n = {n} "
        f"{cheaper} needs fewer: {format_flops(r['fft_flops'])} (FFT) against "
        f"{format_flops(r['dense_flops'])} (dense).")
    if not separate:
        time_sentence = (
            f"Measured here, the two times overlap within their spread (IQR over "
            f"{r['repeats']} rounds): at n = {n} neither product is faster beyond the noise.")
    else:
        faster = "FFT product" if speedup > 1 else "dense product"
        factor = speedup if speedup > 1 else 1 / speedup
        time_sentence = (f"Measured here, the {faster} is {format_ratio(factor)} "
                         f"faster, outside the spread of {r['repeats']} rounds.")
        if (speedup > 1) != (flop_ratio > 1):
            time_sentence += (" The measurement and the flop count disagree at this n: fixed "
                              "per-call costs (Python, allocation, FFT set-up) outweigh the "
                              "arithmetic.")
    return FftCheck(n=n, batch=batch, repeats=r["repeats"], warmup=r["warmup"],
                    max_abs_diff=r["max_abs_diff"], finite=bool(np.isfinite(r["max_abs_diff"])),
                    fft_ms=r["fft_ms"], fft_iqr=fft_iqr, dense_ms=r["dense_ms"],
                    dense_iqr=dense_iqr, fft_flops=r["fft_flops"], dense_flops=r["dense_flops"],
                    flop_crossover_n=cross, speedup=speedup, flop_ratio=flop_ratio,
                    times_separate=separate, flop_sentence=flop_sentence,
                    time_sentence=time_sentence)
