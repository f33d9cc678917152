"""What a recurrent fit of one causal kernel holds (``recurrent_fit.RecurrentFit``): the
fits by s damped complex exponentials for every s of ``LADDER``.

Its own module so that the lesson store's codecs (``measurement_codecs``) can build one
while ``recurrent_fit`` reads that store.

Letters: n length, q the ladder's length, s modes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LADDER", "RecurrentFit"]

LADDER = tuple(range(1, 33))  # s = 1..32: every value the figure's slider takes


@dataclass(frozen=True)
class RecurrentFit:
    """The fits of one causal kernel, one per s of ``modes``."""

    n: int
    column: np.ndarray  # [n] k_0 .. k_{n-1}, the kernel fitted
    modes: np.ndarray  # [q] s, ascending
    poles: tuple[np.ndarray, ...]  # q arrays, complex [s]: z (0 where a mode is unused)
    residues: tuple[np.ndarray, ...]  # q arrays, complex [s]: c
    direct: float  # d = k_0, fitted exactly
    errors: np.ndarray  # [q] ||T - T̂||_F / ||T||_F at each s (nan when T = 0)
    undamped: np.ndarray  # [q] modes on |z| = 1 at each s: they never decay
