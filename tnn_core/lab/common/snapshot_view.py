"""Kernels forming during training, as the replay draws them (the Train page while a run
goes, Inspect for a checkpoint that kept them): ``training.snapshots`` decoded.

Letters: S snapshots, L layers, C channels, K lags.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tnn_core.training.snapshots import KernelSnapshots

__all__ = ["SnapshotView", "snapshot_view"]

Y_MARGIN = 0.05  # of the value range, above and below the replay's fixed y-range


@dataclass(frozen=True)
class SnapshotView:
    """A run's kernel snapshots (``training.snapshots``), decoded for the replay."""

    n: int  # the length the kernels were evaluated at
    steps: np.ndarray  # [S] increasing
    lags: np.ndarray  # [K] the lags k kept
    layers: tuple[int, ...]  # [L] the layer indices kept
    channels: tuple[int, ...]  # [C] the channel indices kept
    kernels: np.ndarray  # [S, L, C, K] float32 t_k

    def y_range(self, layer: int) -> tuple[float, float]:
        """One y-range for every step of the ``layer``-th kept layer, so the motion shows."""
        values = self.kernels[:, layer]  # (S, C, K)
        low, high = float(values.min()), float(values.max())
        pad = Y_MARGIN * (high - low) or 1.0
        return low - pad, high + pad

    @property
    def caption(self) -> str:
        last = self.channels[-1]
        return (f"Kernels t_k at the training length n = {self.n}, lags {self.lags[0]} .. "
                f"{self.lags[-1]}, channels {self.channels[0]}–{last} of each kept layer, "
                f"at {len(self.steps)} steps from {self.steps[0]} to {self.steps[-1]}; the "
                "y-axis is the same at every step, so the motion shows.")


def snapshot_view(record: dict) -> SnapshotView:
    """The record of ``history["kernel_snapshots"]`` decoded (ValueError names a bad field)."""
    snapshots = KernelSnapshots.from_record(record)
    layout = snapshots.layout
    return SnapshotView(n=layout.n, steps=np.array(snapshots.steps, dtype=np.int64),
                        lags=layout.lag_values(), layers=layout.layers,
                        channels=layout.channels, kernels=snapshots.kernels())
