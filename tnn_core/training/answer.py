"""How a command line ends: its output and exit 0, or one sentence and exit 2.

``evaluate`` and ``compress`` answer with one JSON line (``answer``), ``report`` with its
text (``answer_text``). A ValueError (CheckpointError, BudgetError, FileRefused) or
OSError is bad input and prints its own sentence; a MemoryError gets a sentence with what
to make smaller; anything unforeseen is named in one line. Each is ``error: ...`` on
stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

__all__ = ["answer", "answer_text", "one_line"]


def one_line(text: str) -> str:
    """``text`` on one line, at most 500 characters."""
    return " ".join(text.split())[:500]


def answer(run: Callable[[], dict], what: str, smaller: str) -> int:
    """Print ``run()`` as one JSON line and return 0, or one error line and return 2.

    what: the command's work ("the evaluation"); smaller: what to reduce when it runs out
    of memory ("--batch-size or --length")."""
    return answer_text(lambda: json.dumps(run()) + "\n", what, smaller)


def answer_text(run: Callable[[], str], what: str, smaller: str | None = None) -> int:
    """Write ``run()`` to stdout and return 0, or one error line and return 2 (``answer``;
    no ``smaller``: the memory error names nothing to reduce)."""
    try:
        output = run()
    except (ValueError, OSError) as err:  # bad input: its own sentence
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except MemoryError:
        hint = f"; use a smaller {smaller}" if smaller else ""
        print(f"error: {what} ran out of memory{hint}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a command-line tool answers with one line
        print(f"error: {what} failed ({type(err).__name__}: {one_line(str(err))})",
              file=sys.stderr)
        return 2
    sys.stdout.write(output)
    return 0
