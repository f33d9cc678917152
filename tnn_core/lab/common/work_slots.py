"""Bounded concurrent work on one app server: a place must be claimed before heavy work
starts (a training run, a band ablation, a plan search, a timing sweep, a conversion).

    slot = WORK_SLOTS.claim("training", owner="session-id", label="a training run",
                            seconds_left=run.seconds_left)   # NoPlace: a sentence
    ...                                                     # the work holds it
    slot.release()                                          # once it ends (idempotent)

Two limits hold at once: places of a kind per server (a 2-core server cannot train ten
models at once and still draw pages: issue 35 saw ten runs take 1.35 GB and an eleventh
session's page not open within 180 s), and heavy work per session (one student cannot
take every place). A refusal is a sentence that says what is busy and, when the holders
can tell, when the first place frees up. A ``BackgroundThread`` given a slot releases it
when its work ends, however it ends.

Limits: ``TOEPLITZ_LAB_TRAINING_PLACES`` and ``TOEPLITZ_LAB_HEAVY_PLACES`` override the
defaults below (a larger server can train more at once).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["NoPlace", "Slot", "WorkSlots", "WORK_SLOTS", "default_places"]

PER_SESSION = 2  # heavy work one browser session may hold at once (say a run and a search)


class NoPlace(RuntimeError):
    """No place is free for the work asked for; ``str()`` is the sentence to show."""


@dataclass(eq=False)
class Slot:
    """One claimed place; ``release()`` gives it back (a second call does nothing)."""

    kind: str
    owner: str
    label: str
    seconds_left: Callable[[], float | None] | None = None
    _slots: WorkSlots | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._slots is not None:
            self._slots._release(self)
            self._slots = None

    def eta(self) -> float | None:
        """Seconds until this work ends, if it can tell; None otherwise."""
        if self.seconds_left is None:
            return None
        try:
            left = self.seconds_left()
        except Exception:  # noqa: BLE001 - an estimate, never a reason to fail a refusal
            return None
        return left if left is not None and math.isfinite(left) and left >= 0 else None


def default_places(cores: int | None = None) -> dict[str, int]:
    """Places per kind on a server with ``cores`` CPU cores: training runs share every core
    but one (JOB_THREADS each, at low priority), so more than about one a core only slows
    each; other heavy work (an ablation, a search, a sweep) gets as many places again."""
    cores = cores or os.cpu_count() or 1
    training = int(os.environ.get("TOEPLITZ_LAB_TRAINING_PLACES", max(2, cores)))
    heavy = int(os.environ.get("TOEPLITZ_LAB_HEAVY_PLACES", max(2, cores)))
    if training < 1 or heavy < 1:
        raise ValueError(f"work places must be at least 1; got training {training}, "
                         f"heavy {heavy}")
    return {"training": training, "heavy": heavy}


def _in_words(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {math.ceil(seconds / 60):.0f} min"


class WorkSlots:
    """The server's places, thread-safe: every session's scripts and threads share one."""

    def __init__(self, places: dict[str, int], per_session: int = PER_SESSION):
        for kind, count in places.items():
            if not isinstance(count, int) or count < 1:
                raise ValueError(f"places[{kind!r}] must be an integer ≥ 1; got {count!r}")
        if per_session < 1:
            raise ValueError(f"per_session must be at least 1; got {per_session}")
        self.places = dict(places)
        self.per_session = per_session
        self._lock = threading.Lock()
        self._held: list[Slot] = []

    def claim(self, kind: str, owner: str, label: str,
              seconds_left: Callable[[], float | None] | None = None) -> Slot:
        """A place of ``kind`` for ``owner`` (a session's id), or NoPlace saying why not."""
        if kind not in self.places:
            raise ValueError(f"kind must be one of {sorted(self.places)}; got {kind!r}")
        with self._lock:
            mine = [s for s in self._held if s.owner == owner]
            if len(mine) >= self.per_session:
                doing = " and ".join(s.label for s in mine)
                raise NoPlace(f"This session already runs {doing}; a session may run "
                              f"{self.per_session} such jobs at once. Stop one, or wait "
                              f"for it to end, to start {label}.")
            busy = [s for s in self._held if s.kind == kind]
            if len(busy) >= self.places[kind]:
                raise NoPlace(self._full_sentence(kind, busy, label))
            slot = Slot(kind, owner, label, seconds_left, self)
            self._held.append(slot)
            return slot

    def held(self, kind: str | None = None) -> int:
        """How many places (of ``kind``, or of any) are taken now."""
        with self._lock:
            return sum(1 for s in self._held if kind is None or s.kind == kind)

    def _full_sentence(self, kind: str, busy: list[Slot], label: str) -> str:
        count = self.places[kind]
        etas = [eta for eta in (s.eta() for s in busy) if eta is not None]
        when = (f"the first frees up in {_in_words(min(etas))}" if len(etas) == len(busy)
                else "a place frees up as soon as one of them ends")
        what = "training runs" if kind == "training" else "heavy computations"
        return (f"The server is busy: all {count} places for {what} are taken, so "
                f"{label} cannot start now; {when}. Try again then.")

    def _release(self, slot: Slot) -> None:
        with self._lock:
            self._held = [s for s in self._held if s is not slot]


WORK_SLOTS = WorkSlots(default_places())  # the server's one
