"""Saving a model under a new name in the user folder (the Train page's finished run, the
Compress page's converted model), never over another.
"""

from __future__ import annotations

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
    refused (ValueError), never overwritten; the check and the write are one step."""
    if not NAME_PATTERN.fullmatch(name or ""):
        raise ValueError("name must be 1 to 64 letters, digits, _ or -, starting with a letter "
                         f"or digit (no paths); got {name!r}")
    path = user_dir / f"{name}.safetensors"
    with _SAVING:
        if path.exists():
            raise ValueError(f"name {name!r} is already taken by a saved model (perhaps "
                             "someone else's); choose another name")
        user_dir.mkdir(parents=True, exist_ok=True)
        write(path)
    return f"user/{name}"


def save_as(result, name: str, user_dir: Path) -> str:
    """Save a finished training run as ``user_dir``/NAME.safetensors (``save_new``)."""
    return save_new(name, user_dir, lambda path: checkpoint.save(
        path, result.model, result.task.info(), result.history, result.model_config))
