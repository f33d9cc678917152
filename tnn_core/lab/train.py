"""Page "Train": the run its form describes, and what the progress charts draw.

Letters: S snapshots, L layers, C channels, K lags.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.background import Progress
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.snapshots import KernelSnapshots
from tnn_core.training.tasks import CharLMConfig, CharLMTask, Task, get_task

__all__ = ["SIZES", "TASK_SETTINGS", "TRAINING_THREADS", "TRAINING_NICE",
           "app_task", "app_config",
           "ProgressView", "progress_view", "SnapshotView", "snapshot_view"]

SIZES = {"tiny": (32, 1), "small": (64, 2), "medium": (128, 2)}  # name -> (dim d, layers)
TASK_SETTINGS = {"charlm": {"seq_len": 128}, "listops": {"seq_len": 128, "max_depth": 2},
                 "digits": {}, "recall": {}}  # shorter than the CLI's, for a laptop CPU
# torch threads of a run started from the app: every core but one, which stays with the
# pages and the browser (on 2 cores a run with both took a slider move from 1 s to 3-5 s).
TRAINING_THREADS = max(1, (os.cpu_count() or 1) - 1)
TRAINING_NICE = 10  # and the run's thread yields the CPU to page scripts when both want it


def app_task(name: str, text: bytes | None = None, text_name: str = "") -> Task:
    """Task ``name`` at the app's settings; charlm on ``text`` (an upload) when given."""
    settings = TASK_SETTINGS[name]
    if text is not None:
        return CharLMTask.from_bytes(text, text_name or "upload",
                                     config=CharLMConfig(**settings))
    return get_task(name, settings)


def app_config(task: Task, operator: str, size: str, steps: int, lr: float, decay: float,
               rank: int, band: int, device: str, seed: int) -> TrainConfig:
    """The run: warm-up over the first 10 % of the steps, 10 evaluations of 4 batches.

    The operator is causal for language-model tasks (charlm, recall)."""
    dim, layers = SIZES[size]
    op = OperatorConfig(kind=operator, causal=task.kind == "lm", decay=decay, rank=rank,
                        band=band)
    model = model_for_task(ModelConfig(dim=dim, layers=layers, operator=op), task)
    return TrainConfig(task=task.name, steps=steps, lr=lr, warmup=max(1, steps // 10),
                       eval_every=max(10, steps // 10), eval_batches=4, device=device,
                       seed=seed, model=model)


@dataclass(frozen=True)
class ProgressView:
    """A run's progress as the charts draw it."""

    fraction: float  # step / steps, at most 1
    loss_steps: np.ndarray  # [s] the steps with a training loss
    losses: np.ndarray  # [s] training loss (nats)
    eval_steps: np.ndarray  # [e] the steps evaluated
    eval_losses: np.ndarray  # [e] validation loss (nats)
    eval_metrics: np.ndarray  # [e] the task's validation metric
    last_loss: float | None  # the latest training loss; None before the first step
    last_metric: float | None  # the latest validation metric; None before the first


def progress_view(progress: Progress) -> ProgressView:
    losses = np.array(progress.losses, dtype=np.float64).reshape(-1, 2)  # (s, [step, loss])
    evals = progress.evals
    metrics = np.array([e["metric"] for e in evals], dtype=np.float64)
    return ProgressView(
        fraction=min(progress.step / max(progress.steps, 1), 1.0),
        loss_steps=losses[:, 0].astype(np.int64), losses=losses[:, 1],
        eval_steps=np.array([e["step"] for e in evals], dtype=np.int64),
        eval_losses=np.array([e["loss"] for e in evals], dtype=np.float64),
        eval_metrics=metrics,
        last_loss=float(losses[-1, 1]) if len(losses) else None,
        last_metric=float(metrics[-1]) if len(metrics) else None)


# -- kernels forming during training (shown by Train and Inspect) ----------------------------
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
