"""Uploaded checkpoints, held once per content for the whole server, within byte budgets.

The Inspect page lets anyone upload a checkpoint of up to the widget's limit. Without a
bound, every upload of every session stays in memory until the session ends. Here the
bytes are kept once per SHA-256 (two sessions uploading one file share it), the server
keeps at most ``server_budget`` bytes and each session at most ``session_budget``; the
oldest uploads go first, and the caller is told which, so the page can say so.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["SESSION_BUDGET", "SERVER_BUDGET", "upload_key", "UploadStore", "SessionUploads"]

SESSION_BUDGET = 200 * 2**20  # bytes of uploads one browser session keeps: one of MAX_BYTES
SERVER_BUDGET = 400 * 2**20  # bytes of uploads the server keeps for all sessions


def upload_key(data: bytes) -> str:
    """The key of an upload: "upload:" and the first 12 hex digits of its SHA-256."""
    return "upload:" + hashlib.sha256(data).hexdigest()[:12]


class UploadStore:
    """Upload bytes by key for every session, at most ``budget`` bytes, oldest out first.

    Shared between the server's sessions (threads), so every method holds a lock."""

    def __init__(self, budget: int = SERVER_BUDGET):
        self.budget = budget
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        if len(data) > self.budget:
            raise ValueError(f"upload must be at most {self.budget:,} bytes; got {len(data):,}")
        with self._lock:
            self._items[key] = data
            self._items.move_to_end(key)
            while sum(len(v) for v in self._items.values()) > self.budget:
                self._items.popitem(last=False)

    def get(self, key: str) -> bytes | None:
        """The bytes, or None once the budget has pushed them out."""
        with self._lock:
            return self._items.get(key)

    @property
    def size(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._items.values())


@dataclass
class SessionUploads:
    """One session's uploads, key -> (file name, bytes counted), oldest first."""

    budget: int = SESSION_BUDGET
    items: OrderedDict[str, tuple[str, int]] = field(default_factory=OrderedDict)

    def add(self, key: str, name: str, size: int) -> list[str]:
        """Remember an upload; returns the names dropped to stay within the budget."""
        self.items[key] = (name, size)
        self.items.move_to_end(key)
        dropped = []
        while sum(s for _, s in self.items.values()) > self.budget and len(self.items) > 1:
            _, (old_name, _) = self.items.popitem(last=False)
            dropped.append(old_name)
        return dropped

    def names(self) -> dict[str, str]:
        return {key: name for key, (name, _) in self.items.items()}
