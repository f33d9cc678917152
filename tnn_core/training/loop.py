"""The training loop shared by the CLI (``python -m tnn_core.training``) and the app.

    config = TrainConfig(task="listops", steps=2000, model=model)   # training/config.py
    result = train(config, callbacks=Callbacks(on_step=..., on_eval=...), stop_event=event)
    result.model, result.history, result.status   # "completed" | "stopped" | "diverged"

* The loss is the task's cross-entropy; togeipi models add their ``l1_penalty()``.
  AdamW (weight decay on matrices only), linear warm-up then cosine (down to 10 % of
  ``lr``) or inverse square root (training/objective.py), gradient clipping by global
  norm; one update of one process: training/update.py.
* Evaluation on the task's fixed validation batches at step 0, every ``eval_every``
  steps and at the last step.
* Seeded: the model from ``seed`` (``operators.seeded_weights``: the caller's global
  generator is left as it was, and no other thread builds a model meanwhile), the
  batches from a generator seeded with ``seed`` and the rank.
* A non-finite loss or gradient stops the run: the weights go back to the last ones
  whose loss was finite (never the diverged ones), status "diverged"; the final
  evaluation is of those weights.
* ``stop_event`` (a ``threading.Event``) ends the run after the current step; under
  torchrun the ranks agree to stop when any rank's event is set.
* Resumable: every ``checkpoint_every`` steps ``on_checkpoint`` gets the model, the
  history and a ``TrainState`` (AdamW's state, every rank's batch generator; see
  training/resume.py; under torchrun every rank builds it, a collective), and so does the
  result at the end; ``train(..., resume=...)`` continues from one exactly as the run
  would have gone on (the learning rate is a function of the step, and every random draw
  comes from the batch generator).
* Kernel snapshots (training/snapshots.py): a few channels' kernels at the training
  length, every few steps and at the last, in ``history["kernel_snapshots"]`` (bounded,
  thinning as the run goes); ``on_snapshot`` gets the record after each. Taking one
  records no gradient and draws no random number, so the run is the same without them.
  Models without Toeplitz kernels (togeipi) have none.
* Under ``torchrun`` (WORLD_SIZE > 1) the model is wrapped in DistributedDataParallel
  (gloo on CPU, nccl on CUDA; DDP broadcasts rank 0's initial weights); every rank draws
  different batches, the loss is averaged over ranks, and only rank 0 evaluates and
  calls the callbacks. A collective that waits longer than ``ddp_timeout`` seconds (a
  rank stopped or hung) raises ``distributed.CollectiveTimeout`` on the ranks still
  running.

The data flow is model-agnostic: a task gives (tokens [B, n], targets), the model maps
tokens to logits ([B, n, V] for lm, [B, C] for classify), cross-entropy skips IGNORE.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from tnn_core import __version__
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import seeded_weights
from tnn_core.training.budget import TRAINING_MEMORY_LIMIT, check_cost, pass_cost, view_notes
from tnn_core.training.config import TrainConfig
from tnn_core.training.distributed import process_group, resolve_device, torchrun_ranks
from tnn_core.training.evaluate import evaluate
from tnn_core.training.history import final_metrics
from tnn_core.training.objective import learning_rate
from tnn_core.training.resume import Resume, TrainState
from tnn_core.training.snapshots import KernelSnapshots, every_for, snapshot_layout, take_snapshot
from tnn_core.training.tasks import Task, get_task, task_shape
from tnn_core.training.update import LastGood, Updater

__all__ = ["Callbacks", "TrainResult", "train"]

log = logging.getLogger(__name__)
_THROUGHPUT_WARMUP = 5  # steps left out of the median tokens/s


@dataclass
class Callbacks:
    """Hooks called on rank 0 from the training thread; keep them quick and thread-safe."""

    on_step: Callable[[int, float, float, float], None] | None = None  # (step, loss, tok/s, lr)
    on_eval: Callable[[int, dict], None] | None = None  # (step, metrics)
    # (model, history so far, state) every config.checkpoint_every steps
    on_checkpoint: Callable[[nn.Module, dict, TrainState], None] | None = None
    # (the kernel snapshots' record so far, a fresh dict) after each snapshot
    on_snapshot: Callable[[dict], None] | None = None


@dataclass
class TrainResult:
    model: nn.Module  # the trained model (unwrapped from DDP), last good weights
    task: Task
    config: TrainConfig
    model_config: ModelConfig
    status: str  # "completed", "stopped" (stop_event) or "diverged" (non-finite loss)
    message: str
    history: dict = field(default_factory=dict)
    state: TrainState | None = None  # what a resumed run continues from; None if diverged

    @property
    def final_metrics(self) -> dict:
        return final_metrics(self.history)


def train(config: TrainConfig, task: Task | None = None, callbacks: Callbacks | None = None,
          stop_event: threading.Event | None = None, command: str | None = None,
          resume: Resume | None = None) -> TrainResult:
    """Train a model of ``config`` on ``task`` (default: ``get_task(config.task)``).

    ``command`` is recorded in the history (the CLI passes its command line).
    ``resume`` (``resume.load_resume``) continues a stopped run of the same config."""
    if task is None:
        task = get_task(config.task)
    elif task.name != config.task:
        raise ValueError(f"task must match config.task={config.task!r}; got {task.name!r}")
    model_config = config.model_config(task)
    shape = task_shape(task.info())
    # refused now, not after the run: the loader refuses a model it cannot evaluate; what a
    # view will refuse or run in the background is said now, not found out after the run
    for note in view_notes(model_config, shape.seq_len, shape.extrapolates):
        log.warning("Note: %s.", note)
    check_cost(f"a training step of {config.batch_size} sequences of {task.seq_len}",
               pass_cost(model_config, config.batch_size, task.seq_len, grad=True),
               memory_limit=TRAINING_MEMORY_LIMIT, seconds_limit=None)
    rank, world, local_rank = torchrun_ranks()
    device = resolve_device(config.device, local_rank)
    with process_group(rank, world, device, config.ddp_timeout):
        result = _loop(config, task, callbacks or Callbacks(), stop_event, command, resume,
                       rank, world, device)
    return result


def _build(config: TrainConfig, task: Task, device: torch.device) -> tuple[ModelConfig, nn.Module]:
    """The model of ``config`` for ``task``, its weights drawn from ``config.seed`` alone."""
    model_config = config.model_config(task)
    with seeded_weights(config.seed):
        model = build_model(model_config)
    if config.dtype == "float64":
        model = model.double()
    return model_config, model.to(device)


def _stop_requested(stop_event: threading.Event | None, world: int,
                    device: torch.device) -> bool:
    """Whether any rank's ``stop_event`` is set (one all-reduce under torchrun)."""
    asked = stop_event is not None and stop_event.is_set()
    if world <= 1:
        return asked
    flag = torch.tensor([float(asked)], device=device)
    torch.distributed.all_reduce(flag)
    return bool(flag.item() > 0)


class _Record:
    """What a run records as it goes (schema: training/history.py): the history (losses,
    evaluations, wall time, throughput) and, on rank 0, the kernel snapshots; rank 0
    evaluates and hands each record on to the callbacks."""

    def __init__(self, config: TrainConfig, task: Task, model: nn.Module, callbacks: Callbacks,
                 history: dict, elapsed: float, snapshots: KernelSnapshots | None, lead: bool):
        self.config, self.task, self.model, self.callbacks = config, task, model, callbacks
        self.history = history
        self.snapshots = snapshots  # None: not rank 0, or a model without Toeplitz kernels
        self.lead = lead  # rank 0
        self.tokens_per_s: list[float] = []
        self.start = time.perf_counter() - elapsed
        last_eval = history["evals"][-1]["step"] if history["evals"] else 0
        self.window = history["train_loss"][last_eval:]  # losses since the last evaluation

    def throughput(self) -> float:
        """Median tokens/s, the first few steps left out."""
        return statistics.median(self.tokens_per_s[_THROUGHPUT_WARMUP:] or self.tokens_per_s
                                 or [0.0])

    def now(self, status: str, message: str, step: int) -> dict:
        """The history after ``step`` updates, as a checkpoint stores it."""
        recorded = {} if self.snapshots is None else {"kernel_snapshots":
                                                      self.snapshots.to_record()}
        return {**self.history, **recorded, "status": status, "message": message,
                "steps": step, "wall_s": time.perf_counter() - self.start,
                "tokens_per_s": self.throughput(), "train_config": self.config.to_dict()}

    def evaluate(self, step: int, lr: float) -> None:
        if not self.lead:
            return
        metrics = evaluate(self.model, self.task, self.config.eval_batches,
                           self.config.eval_batch_size, dtype=self.config.dtype)
        entry = {"step": step, **metrics,
                 "train_loss": statistics.fmean(self.window) if self.window else None,
                 "lr": lr, "wall_s": time.perf_counter() - self.start,
                 "tokens_per_s": self.throughput()}
        self.window.clear()
        self.history["evals"].append(entry)
        log.info("step %d: %s %.4f, loss %.4f", step, self.task.metric_name, entry["metric"],
                 entry["loss"])
        if self.callbacks.on_eval is not None:
            self.callbacks.on_eval(step, dict(entry))

    def snapshot(self, step: int) -> None:
        if self.snapshots is None:
            return
        self.snapshots.add(step, take_snapshot(self.model, self.snapshots.layout))
        if self.callbacks.on_snapshot is not None:
            self.callbacks.on_snapshot(self.snapshots.to_record())

    def update(self, step: int, loss: float, rate: float, lr: float) -> None:
        """After update ``step``: its loss and tokens/s, then the snapshot and the
        evaluation if one is due (the last step's come at the end, ``finish``)."""
        self.tokens_per_s.append(rate)
        self.history["train_loss"].append(loss)
        self.window.append(loss)
        if self.lead and self.callbacks.on_step is not None:
            self.callbacks.on_step(step, loss, rate, lr)
        if self.snapshots is not None and self.snapshots.due(step):
            self.snapshot(step)
        if step % self.config.eval_every == 0 and step < self.config.steps:
            self.evaluate(step, lr)

    def finish(self, step: int, lr: float) -> None:
        """The evaluation and the snapshot of the final weights, unless taken already."""
        evals = self.history["evals"]
        if not evals or evals[-1]["step"] != step:
            self.evaluate(step, lr)
        if self.snapshots is not None and (not self.snapshots.steps
                                           or self.snapshots.steps[-1] != step):
            self.snapshot(step)


def _history(config: TrainConfig, task: Task, command: str | None, device: torch.device,
             world: int, resume: Resume | None, step: int) -> dict:
    """The history a run starts from: a new one, or the resumed run's up to ``step``."""
    history = {"command": command, "device": str(device), "dtype": config.dtype,
               "world_size": world, "torch": torch.__version__, "version": __version__,
               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "metric_name": task.metric_name, "train_loss": [], "evals": []}
    if resume is not None:
        old = resume.history
        history.update(started=old.get("started"),
                       train_loss=list(old.get("train_loss", []))[:step],
                       evals=[e for e in old.get("evals", []) if e["step"] <= step],
                       resumed_at=[*old.get("resumed_at", []), step])
    return history


def _snapshots(model: nn.Module, task: Task, config: TrainConfig, resume: Resume | None,
               step: int) -> KernelSnapshots | None:
    """Rank 0's kernel snapshots: the resumed run's (cut at ``step``) when their layout is
    this model's, else new ones; None for a model without Toeplitz kernels."""
    layout = snapshot_layout(model, task.seq_len)
    if layout is None:
        return None
    if resume is not None and "kernel_snapshots" in resume.history:
        stored = KernelSnapshots.from_record(resume.history["kernel_snapshots"])
        if stored.layout == layout:
            stored.until(step)
            return stored
    return KernelSnapshots(layout, every_for(config.steps))


def _checkpoint(updater: Updater, record: _Record, step: int) -> None:
    """Every ``checkpoint_every`` steps before the last, the resumable state (a collective
    under torchrun: every rank takes part) to ``on_checkpoint``."""
    config, on_checkpoint = updater.config, record.callbacks.on_checkpoint
    wanted = on_checkpoint is not None or updater.world > 1  # other ranks: no callbacks
    if not (wanted and config.checkpoint_every and step % config.checkpoint_every == 0
            and step < config.steps):
        return
    state = updater.state(step)
    if record.lead and on_checkpoint is not None:
        message = f"checkpoint after {step} of {config.steps} steps"
        on_checkpoint(updater.model, record.now("checkpoint", message, step), state)


def _settle(status: str, message: str, step: int, last_good: LastGood,
            record: _Record) -> tuple[str, str, int]:
    """(status, message, step) at the end: a diverged run, or one whose weights are not
    finite, goes back to the last weights whose loss was finite."""
    if status != "diverged":
        if all(bool(torch.isfinite(p).all()) for p in last_good.params):
            return status, message, step
        message = (f"weights became non-finite at step {step}; kept the weights after "
                   f"step {last_good.step}, the last with a finite loss")
    last_good.restore()
    if record.snapshots is not None:
        record.snapshots.until(last_good.step)
    log.warning("%s", message)
    return "diverged", message, last_good.step


def _loop(config: TrainConfig, task: Task, callbacks: Callbacks,
          stop_event: threading.Event | None, command: str | None, resume: Resume | None,
          rank: int, world: int, device: torch.device) -> TrainResult:
    model_config, model = _build(config, task, device)
    updater = Updater(config, task, model, device, rank, world)
    step, elapsed = 0, 0.0
    if resume is not None:
        updater.restore(resume)
        step, elapsed = resume.state.step, float(resume.history.get("wall_s") or 0.0)
    snapshots = _snapshots(model, task, config, resume, step) if rank == 0 else None
    record = _Record(config, task, model, callbacks,
                     _history(config, task, command, device, world, resume, step), elapsed,
                     snapshots, lead=rank == 0)
    updater.distribute()
    last_good = LastGood(list(model.parameters()), step)
    status, message, lr = "completed", f"trained {config.steps} steps", 0.0
    if step == 0:
        record.evaluate(0, learning_rate(0, config))
        record.snapshot(0)
    model.train()
    while step < config.steps:
        if _stop_requested(stop_event, world, device):
            status, message = "stopped", f"stopped by request after {step} steps"
            break
        t0 = time.perf_counter()
        lr = learning_rate(step, config)
        loss, tokens, diverged = updater.update(step, lr, last_good)
        if diverged:
            status, message = "diverged", diverged
            break
        step += 1
        record.update(step, loss, tokens * world / max(time.perf_counter() - t0, 1e-9), lr)
        _checkpoint(updater, record, step)
    status, message, step = _settle(status, message, step, last_good, record)
    state = None if status == "diverged" else updater.state(step)
    record.finish(step, lr)
    model.eval()
    return TrainResult(model, task, config, model_config, status, message,
                       record.now(status, message, step), state)
