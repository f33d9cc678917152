"""The circulant embedding drawn step by step (the Basics page and lesson steps): the
coefficients, the padded column c, the circulant C = circ(c) with T framed in its corner,
and that block. Pictures drawn on the server (``cells_image``): they depend on the kernel
only, never on a slider being dragged."""

from __future__ import annotations

import numpy as np
import streamlit as st

from pages._ui import charts
from pages._ui.memo import memo
from tnn_core.lab import basics as lab
from tnn_core.lab.common.cells_image import cells_image

__all__ = ["show"]

EMBED_PIXELS = 256  # C's side in image pixels; the strips are as tall
STRIP = 0.16  # a strip's width on screen, as a fraction of C's


@memo(max_entries=16)
def embedding(coeffs: np.ndarray):
    return lab.circulant_embedding(coeffs)


def padded(values: np.ndarray, padding: np.ndarray) -> np.ndarray:
    """values with the zero padding as NaN: drawn grey, apart from the kernel's own zeros."""
    return np.where(padding, np.nan, values)


def outlined(image: np.ndarray, rows: int) -> np.ndarray:
    """image with a black frame around its top-left ``rows`` × ``rows`` pixels."""
    image = image.copy()
    edge = min(rows, image.shape[0] - 1)
    image[edge, : edge + 1] = image[: edge + 1, edge] = 0
    image[0, : edge + 1] = image[: edge + 1, 0] = 0
    return image


def show(coeffs: np.ndarray, limit: float) -> None:
    """The four steps as pictures: coefficients, padded column c, circulant C, its block T."""
    e = embedding(coeffs)
    colours = charts.colour_table("RdBu_r")  # as the figure: blue negative
    side = EMBED_PIXELS
    strip = round(side * STRIP)
    C = cells_image(padded(e.circulant, e.circulant_padding), limit, colours, side, side)
    cell = C.shape[0] // len(e.slots)  # pixels per drawn slot
    last = e.n - 1
    pictures = (
        (cells_image(e.coeffs[:, None], limit, colours, side, strip), "1 · t_k"),
        (cells_image(padded(e.column, e.column_padding)[:, None], limit, colours, side, strip),
         "2 · c"),
        (outlined(C, cell * len(e.block_slots)), f"3 · C = circ(c), {e.N} × {e.N}"),
        (cells_image(e.block, limit, colours, side, side),
         f"4 · C's top-left {e.n} × {e.n} block = T"))
    with st.container(key="circulant-steps"):
        columns = st.columns([STRIP, STRIP, 1, 1], vertical_alignment="top")
        for column, (image, caption) in zip(columns, pictures, strict=True):
            column.image(image, caption=caption, width="stretch")
    shown = (f"Drawn: 1 slot in {e.step} of the {e.N} (every padding slot kept) and 1 "
             f"coefficient in {e.step}: samples of the whole, as the picture of T above is. "
             if e.step > 1 else "")
    negative = f", t_−{last} … t_−1" if e.n > 1 else ""
    st.caption(f"1: the {2 * e.n - 1} coefficients t_−{last} … t_{last}, top to bottom. 2: "
               f"c, C's first column, N = {e.N} slots: t_0 … t_{last}, then {e.padding} "
               f"zero{'s' * (e.padding > 1)} of padding (grey){negative}. 3: each column of "
               f"C is the one before shifted down by one, wrapping around; framed, its "
               f"top-left {e.n} × {e.n} block. 4: that block, equal to T. {shown}Colours as "
               f"T above: −{limit:.3g} blue … 0 white … +{limit:.3g} red; grey is the padding, "
               f"zeros the kernel does not have. N = {e.N} is the "
               f"smallest even size ≥ 2n = {2 * e.n} whose only prime factors are 2, 3 and 5 "
               f"(the FFT is fast there).")
