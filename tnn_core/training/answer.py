"""How a command line that prints one JSON line ends: the line and exit 0, or one sentence.

``evaluate`` and ``compress`` both answer this way: a ValueError (CheckpointError,
BudgetError, FileRefused) or OSError is bad input and prints its own sentence; a
MemoryError gets a sentence with what to make smaller; anything unforeseen is named in one
line. Each is ``error: ...`` on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

__all__ = ["answer", "one_line"]


def one_line(text: str) -> str:
    """``text`` on one line, at most 500 characters."""
    return " ".join(text.split())[:500]


def answer(run: Callable[[], dict], what: str, smaller: str) -> int:
    """Print ``run()`` as one JSON line and return 0, or one error line and return 2.

    what: the command's work ("the evaluation"); smaller: what to reduce when it runs out
    of memory ("--batch-size or --length")."""
    try:
        result = run()
    except (ValueError, OSError) as err:  # bad input: its own sentence
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"error: {what} ran out of memory; use a smaller {smaller}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a command-line tool answers with one line
        print(f"error: {what} failed ({type(err).__name__}: {one_line(str(err))})",
              file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0
