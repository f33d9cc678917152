"""The checkpoints the app knows, by key, and opening one.

Keys: "NAME" (shipped, in ``SHIPPED_DIR``), "user/NAME" (saved from the Train or Compress
page into a user folder: ``saving``), "upload:SHA" (uploaded in one browser session:
``uploads``). A checkpoint holds its task's record; ``task_from_info`` rebuilds the task.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from tnn_core.training import checkpoint
from tnn_core.training.checkpoint import SHIPPED_DIR, CheckpointError, CheckpointInfo
from tnn_core.training.tasks import Task, task_from_info

__all__ = ["NAME_PATTERN", "SHIPPED_ORDER", "SHIPPED_DIR", "CheckpointError", "CheckpointInfo",
           "Task", "task_from_info", "saved_checkpoints", "checkpoint_path", "Opened",
           "open_bytes", "open_file"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # a file name, never a path

# The shipped checkpoints in the order a first visit learns most from, each with what it shows
# (medians of the atlas at the training length, band m = 9: energy off the band).
SHIPPED_ORDER = (
    ("digits-tno", "spike plus smooth: ~85 % of the energy in smooth, low-rank tails"),
    ("listops-tno", "long range: ~80 % of the energy beyond the band"),
    ("digits-ski", "SKI-TNN: learned band + W A Wᵀ"),
    ("listops-ski", "SKI-TNN on ListOps"),
    ("digits-fd", "FD-TNN: kernels from a frequency response, more local"),
    ("listops-fd", "FD-TNN on ListOps"),
    ("charlm-tno", "causal language model: most mass on the last few characters"),
    ("charlm-tno-decay099", "TNN Table 10 pair: decay λ = 0.99"),
    ("charlm-tno-nodecay", "TNN Table 10 pair: no decay, λ = 1"),
    ("charlm-fd", "causal FD-TNN: short local filters"),
)


def saved_checkpoints(user_dir: Path) -> dict[str, str]:
    """Checkpoints on disk, key -> label: the shipped ones (in ``SHIPPED_ORDER``, any other
    after them by name), then those saved in ``user_dir``."""
    on_disk = {p.stem for p in SHIPPED_DIR.glob("*.safetensors")}
    hints = dict(SHIPPED_ORDER)
    order = [name for name, _ in SHIPPED_ORDER if name in on_disk] + sorted(on_disk - set(hints))
    out = {name: f"{name} · {hints[name]}" if name in hints else f"{name} (shipped)"
           for name in order}
    if user_dir.is_dir():
        out |= {f"user/{p.stem}": f"{p.stem} (saved by you)"
                for p in sorted(user_dir.glob("*.safetensors"))}
    return out


def checkpoint_path(key: str, user_dir: Path) -> Path:
    """The file of a "NAME" or "user/NAME" key; anything but a plain name raises ValueError."""
    name, folder = ((key.removeprefix("user/"), user_dir) if key.startswith("user/")
                    else (key, SHIPPED_DIR))
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"checkpoint must be a plain name (letters, digits, _ and -); "
                         f"got {key!r}")
    return folder / f"{name}.safetensors"


@dataclass(frozen=True)
class Opened:
    """A loaded checkpoint and the keys its views are cached under."""

    digest: str  # SHA-256 of the file's bytes: the same content, the same views
    model: nn.Module  # evaluation mode; shared between sessions, so used for inference only
    info: CheckpointInfo

    @property
    def task_key(self) -> str:
        """Its task record as canonical JSON: checkpoints trained on one task share it."""
        return json.dumps(self.info.task, sort_keys=True)


def open_bytes(data: bytes, source: str) -> Opened:
    """Validate and load checkpoint bytes (``checkpoint.load_bytes``: CheckpointError)."""
    model, info = checkpoint.load_bytes(data, source)
    return Opened(digest=hashlib.sha256(data).hexdigest(), model=model, info=info)


def open_file(path: Path) -> Opened:
    """``open_bytes`` of a checkpoint file (``checkpoint.load`` reads it within its limits)."""
    model, info = checkpoint.load(path)
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    return Opened(digest=digest, model=model, info=info)
