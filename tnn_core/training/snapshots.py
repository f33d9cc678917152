"""Kernel snapshots: a few channels' kernels t_k kept every few steps of a run, so the app
can replay how they formed.

    layout = snapshot_layout(model, n)            # None for a model without kernels (togeipi)
    snapshots = KernelSnapshots(layout, every_for(steps))
    if snapshots.due(step): snapshots.add(step, take_snapshot(model, layout))
    history["kernel_snapshots"] = snapshots.to_record()
    KernelSnapshots.from_record(record)           # validated; ValueError names the field

What is kept: ``operators()[l].kernel(n)`` at the training length n, for up to
MAX_LAYERS layers (evenly spaced, first and last included) × the first MAX_CHANNELS
channels, at the lags of a window of at most MAX_LAGS (|k| ≤ 32, or 0..64 for a causal
model). For bidirectional SKI, ``kernel(n)`` is the Toeplitz target of band + W A Wᵀ.

When: at every multiple of ``every`` and at the run's last step. ``every_for(steps)``
keeps a run of ``steps`` within MAX_SNAPSHOTS; a run that goes on longer (resumed with
more steps) doubles ``every`` and drops the snapshots off the new multiples, so the kept
steps stay evenly spaced and their number bounded.

The record (JSON, in the training history of a checkpoint):

    n         the length the kernels were evaluated at
    layers    [L] layer indices;  channels [C] channel indices
    lags      [first, last]: the K = last - first + 1 lags kept
    every     the spacing of the regular snapshots
    steps     [S] increasing; scales [S] max |t_k| of each snapshot
    kernels   [S] base64 of int16 little-endian [L, C, K]: t = q · scale / 32767

One snapshot of 4 × 4 × 65 values is 2,080 bytes, 2,776 in base64; MAX_SNAPSHOTS of them
about 140 kB of the header's MAX_HEADER_BYTES.

Letters: S snapshots, L layers, C channels, K lags.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from tnn_core.checks import is_integer, is_number, short_repr

__all__ = ["MAX_SNAPSHOTS", "MAX_LAYERS", "MAX_CHANNELS", "MAX_LAGS", "MAX_SCALE",
           "SnapshotLayout", "snapshot_layout", "take_snapshot", "every_for",
           "KernelSnapshots"]

MAX_SNAPSHOTS = 50  # kept at once, the last step's included
MAX_LAYERS = 4  # layers kept (evenly spaced)
MAX_CHANNELS = 4  # the first channels of each kept layer
MAX_LAGS = 65  # lags kept: |k| <= 32, or 0..64 for a causal model
MAX_SCALE = 1e6  # the largest |t_k| a stored snapshot may hold
MAX_STEP = 10**9
MAX_N = 2**20  # core.toeplitz.MAX_LENGTH
_LEVELS = 32767  # int16 quantisation: t = q * scale / _LEVELS
_KEYS = ("n", "layers", "channels", "lags", "every", "steps", "scales", "kernels")


@dataclass(frozen=True)
class SnapshotLayout:
    """Which kernels a snapshot holds: layers [L], channels [C], lags first..last at n."""

    n: int  # the length the kernels are evaluated at (the training length)
    layers: tuple[int, ...]
    channels: tuple[int, ...]
    lags: tuple[int, int]  # the first and the last lag kept

    @property
    def shape(self) -> tuple[int, int, int]:
        """(L, C, K) of one snapshot."""
        return len(self.layers), len(self.channels), self.lags[1] - self.lags[0] + 1

    def lag_values(self) -> np.ndarray:
        """[K] the lags k kept."""
        return np.arange(self.lags[0], self.lags[1] + 1)

    def to_dict(self) -> dict:
        return {"n": self.n, "layers": list(self.layers), "channels": list(self.channels),
                "lags": list(self.lags)}


def snapshot_layout(model: nn.Module, n: int) -> SnapshotLayout | None:
    """The kernels to keep of ``model`` trained at length n; None when no layer has a
    Toeplitz kernel (togeipi)."""
    config = model.config
    toeplitz = [i for i in range(config.layers) if config.layer_operator(i).kind != "togeipi"]
    if not toeplitz:
        return None
    picks = np.linspace(0, len(toeplitz) - 1, min(MAX_LAYERS, len(toeplitz)))
    layers = tuple(toeplitz[int(round(p))] for p in picks)
    dim = model.operators()[layers[0]].dim
    half = (MAX_LAGS - 1) // 2
    lags = (0, min(2 * half, n - 1)) if config.operator.causal else \
        (-min(half, n - 1), min(half, n - 1))
    return SnapshotLayout(n, layers, tuple(range(min(MAX_CHANNELS, dim))), lags)


def take_snapshot(model: nn.Module, layout: SnapshotLayout) -> np.ndarray:
    """The kernels of ``layout`` now: float32 [L, C, K]. No gradient is recorded and no
    random number drawn, so taking one leaves the training run as it was."""
    operators = model.operators()
    first, last = (lag + layout.n - 1 for lag in layout.lags)  # kernel(n) index of lag k
    with torch.no_grad():
        rows = [operators[layer].kernel(layout.n)[list(layout.channels), first:last + 1]
                for layer in layout.layers]  # L x (C, K)
        return torch.stack(rows).float().cpu().numpy()  # (L, C, K)


def every_for(steps: int) -> int:
    """The spacing that keeps a run of ``steps`` within MAX_SNAPSHOTS: the multiples of it
    in [0, steps] number at most MAX_SNAPSHOTS - 1, leaving room for the last step."""
    return max(1, math.ceil(steps / (MAX_SNAPSHOTS - 2)))


def _encode(kernels: np.ndarray) -> tuple[float, str]:
    """(scale, base64 of int16 [L, C, K]) of float kernels [L, C, K]."""
    scale = float(np.abs(kernels).max()) if kernels.size else 0.0
    q = np.round(kernels / scale * _LEVELS) if scale > 0 else np.zeros(kernels.shape)
    return scale, base64.b64encode(q.astype("<i2").tobytes()).decode("ascii")


def _int_list(record: dict, key: str, longest: int, low: int, high: int) -> list[int]:
    value = record[key]
    if not (isinstance(value, list) and 1 <= len(value) <= longest
            and all(is_integer(v) and low <= v <= high for v in value)
            and all(a < b for a, b in itertools.pairwise(value))):
        raise ValueError(f"kernel_snapshots.{key} must be 1 to {longest} increasing integers "
                         f"in [{low}, {high:,}]; got {short_repr(value)}")
    return value


class KernelSnapshots:
    """A bounded, thinning series of snapshots of one layout (see the module docstring)."""

    def __init__(self, layout: SnapshotLayout, every: int):
        self.layout = layout
        self.every = every
        self.steps: list[int] = []
        self.scales: list[float] = []
        self.encoded: list[str] = []

    def due(self, step: int) -> bool:
        """Whether ``step`` is one of the regular snapshots."""
        return step % self.every == 0

    def add(self, step: int, kernels: np.ndarray) -> None:
        """Keep ``kernels`` [L, C, K] of ``step``: it replaces any kept at ``step`` or later,
        and the previous one off the multiples of ``every`` (the last step is kept until
        the next); then ``every`` doubles until at most MAX_SNAPSHOTS are kept. Kernels
        that are not finite or above MAX_SCALE are not kept."""
        if kernels.shape != self.layout.shape:
            raise ValueError(f"kernels must have shape {self.layout.shape}; got "
                             f"{kernels.shape}")
        if not (np.isfinite(kernels).all() and np.abs(kernels).max(initial=0) <= MAX_SCALE):
            return  # a file holding it could not be opened again
        self.regular()  # the previous last step's, unless it is a regular one
        self.until(step - 1)
        scale, encoded = _encode(kernels)
        self.steps.append(step)
        self.scales.append(scale)
        self.encoded.append(encoded)
        while len(self.steps) > MAX_SNAPSHOTS:
            self.every *= 2
            self._keep([s % self.every == 0 or s == step for s in self.steps])

    def until(self, step: int) -> None:
        """Drop the snapshots after ``step`` (weights put back to it, or a resume from it)."""
        self._keep([s <= step for s in self.steps])

    def regular(self) -> None:
        """Drop the snapshots off the multiples of ``every`` (the last step's of a run that
        goes on)."""
        self._keep([self.due(s) for s in self.steps])

    def _keep(self, mask: list[bool]) -> None:
        self.steps, self.scales, self.encoded = (
            [v for v, keep in zip(values, mask, strict=True) if keep]
            for values in (self.steps, self.scales, self.encoded))

    def kernels(self) -> np.ndarray:
        """float32 [S, L, C, K], every snapshot decoded."""
        out = np.empty((len(self.steps), *self.layout.shape), np.float32)  # (S, L, C, K)
        for i, (scale, encoded) in enumerate(zip(self.scales, self.encoded, strict=True)):
            q = np.frombuffer(base64.b64decode(encoded), "<i2").reshape(self.layout.shape)
            out[i] = q.astype(np.float32) * np.float32(scale / _LEVELS)
        return out

    def to_record(self) -> dict:
        """The JSON record of the module docstring (new lists: safe to hand to a thread)."""
        return {**self.layout.to_dict(), "every": self.every, "steps": list(self.steps),
                "scales": list(self.scales), "kernels": list(self.encoded)}

    @classmethod
    def from_record(cls, record) -> KernelSnapshots:
        """A record read back, validated before anything is decoded: ValueError naming the
        field (``kernel_snapshots.FIELD``), the value and the allowed range."""
        if not isinstance(record, dict) or sorted(record) != sorted(_KEYS):
            raise ValueError(f"kernel_snapshots must be an object with exactly {list(_KEYS)}; "
                             f"got {short_repr(record)}")
        n = record["n"]
        if not (is_integer(n) and 1 <= n <= MAX_N):
            raise ValueError(f"kernel_snapshots.n must be an integer in [1, {MAX_N:,}]; got "
                             f"{short_repr(n)}")
        layers = _int_list(record, "layers", MAX_LAYERS, 0, 100_000)
        channels = _int_list(record, "channels", MAX_CHANNELS, 0, 100_000)
        lags = record["lags"]
        if not (isinstance(lags, list) and len(lags) == 2 and all(map(is_integer, lags))
                and -(n - 1) <= lags[0] <= lags[1] <= n - 1
                and lags[1] - lags[0] < MAX_LAGS):
            raise ValueError(f"kernel_snapshots.lags must be [first, last], integers with "
                             f"-(n-1) <= first <= last <= n-1 and at most {MAX_LAGS} lags; "
                             f"got {short_repr(lags)}")
        every = record["every"]
        if not (is_integer(every) and 1 <= every <= MAX_STEP):
            raise ValueError(f"kernel_snapshots.every must be an integer in [1, {MAX_STEP:,}]; "
                             f"got {short_repr(every)}")
        steps, scales, encoded = record["steps"], record["scales"], record["kernels"]
        if not (isinstance(steps, list) and len(steps) <= MAX_SNAPSHOTS):
            raise ValueError(f"kernel_snapshots.steps must be a list of at most "
                             f"{MAX_SNAPSHOTS} steps; got {short_repr(steps)}")
        if steps:
            _int_list(record, "steps", MAX_SNAPSHOTS, 0, MAX_STEP)
        for key, values in (("scales", scales), ("kernels", encoded)):
            if not (isinstance(values, list) and len(values) == len(steps)):
                raise ValueError(f"kernel_snapshots.{key} must be a list of one entry per "
                                 f"step ({len(steps)}); got {short_repr(values)}")
        for i, scale in enumerate(scales):
            if not (is_number(scale) and 0 <= scale <= MAX_SCALE):  # NaN fails every comparison
                raise ValueError(f"kernel_snapshots.scales[{i}] must be a finite number in "
                                 f"[0, {MAX_SCALE:g}]; got {short_repr(scale)}")
        layout = SnapshotLayout(n, tuple(layers), tuple(channels), (lags[0], lags[1]))
        size = 2 * math.prod(layout.shape)  # bytes of int16 [L, C, K]
        length = 4 * math.ceil(size / 3)  # its base64
        for i, text in enumerate(encoded):
            if not (isinstance(text, str) and len(text) == length):
                raise ValueError(f"kernel_snapshots.kernels[{i}] must be {length} characters "
                                 f"of base64 (int16 {list(layout.shape)}); got "
                                 f"{short_repr(text)}")
            try:
                decoded = len(base64.b64decode(text, validate=True))
            except binascii.Error:
                decoded = -1
            if decoded != size:
                raise ValueError(f"kernel_snapshots.kernels[{i}] must be base64 of {size} "
                                 f"bytes; got {short_repr(text)}")
        snapshots = cls(layout, every)
        snapshots.steps, snapshots.scales, snapshots.encoded = list(steps), \
            [float(s) for s in scales], list(encoded)
        return snapshots
