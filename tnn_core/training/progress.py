"""Progress of a long command on stderr: a tqdm bar that reads in a terminal and in a log.

Commands keep stdout for their answer (JSON, markdown, text) and show progress on stderr,
whether or not it is a terminal: in a terminal the bar redraws in place (at most every
0.5 s); in a log file or pipe it is plain ASCII, written at most every LOG_SECONDS, so a
log of a long run shows where it was without thousands of redraws.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["LOG_SECONDS", "progress_bar", "say"]

LOG_SECONDS = 10.0  # the shortest time between two progress lines when stderr is no terminal


def progress_bar(total: int | None, what: str, unit: str) -> tqdm:
    """A bar of ``total`` ``unit``s described by ``what`` ("spectra"), on stderr; with
    ``total`` None it counts them and their rate."""
    terminal = sys.stderr.isatty()
    return tqdm(total=total, desc=what, unit=unit, file=sys.stderr, ascii=not terminal,
                dynamic_ncols=terminal, ncols=None if terminal else 80,
                mininterval=0.5 if terminal else LOG_SECONDS)


def say(line: str) -> None:
    """One line of what a command is doing, on stderr (never an ``error:`` line)."""
    print(line, file=sys.stderr, flush=True)
