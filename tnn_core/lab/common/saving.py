"""Saving a model under a new name in the user folder (the Train page's finished run, the
Compress page's converted model), never over another.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable
from pathlib import Path

from tnn_core.lab.common.checkpoints import NAME_PATTERN
from tnn_core.training import checkpoint

__all__ = ["save_new", "save_as"]

_SAVING = threading.Lock()  # one save at a time: the name check and the write are one step


def save_new(name: str, user_dir: Path, write: Callable[[Path], object]) -> str:
    """``write(user_dir/NAME.safetensors)`` for a name not yet taken; returns its key.

    The folder is shared by every session of the server, so a name already taken is
    refused (ValueError), never overwritten; the check and the write are one step. A write
    that fails (a full disk) keeps no part of the file and raises ValueError, a sentence
    without paths."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError("name must be 1 to 64 letters, digits, _ or -, starting with a letter "
                         f"or digit (no paths); got {name!r}")
    path = user_dir / f"{name}.safetensors"
    with _SAVING:
        if path.exists():
            raise ValueError(f"name {name!r} is already taken by a saved model (perhaps "
                             "someone else's); choose another name")
        try:
            user_dir.mkdir(parents=True, exist_ok=True)
            write(path)
        except OSError as err:
            path.unlink(missing_ok=True)  # the name was free: nothing of it is kept
            raise ValueError(_not_written(name, err)) from None
    return f"user/{name}"


def _not_written(name: str, err: OSError) -> str:
    """Why ``name`` was not saved, in words without the server's paths."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the server's disk is full"
    else:
        why = f"the server could not write it ({err.strerror or type(err).__name__})"
    return (f"{name!r} was not saved: {why}. Nothing was kept under that name and "
            "nothing else was lost; try again once there is space, or ask the server's "
            "keeper")


def save_as(result, name: str, user_dir: Path) -> str:
    """Save a finished training run as ``user_dir``/NAME.safetensors (``save_new``)."""
    return save_new(name, user_dir, lambda path: checkpoint.save(
        path, result.model, result.task.info(), result.history, result.model_config))
