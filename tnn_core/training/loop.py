"""The training loop shared by the CLI (``python -m tnn_core.training``) and the app.

    config = TrainConfig(task="listops", steps=2000, model=model)   # training/config.py
    result = train(config, callbacks=Callbacks(on_step=..., on_eval=...), stop_event=event)
    result.model, result.history, result.status   # "completed" | "stopped" | "diverged"

* The loss is the task's cross-entropy; togeipi models add their ``l1_penalty()``
  (``objective``).
* AdamW (weight decay on matrices only), linear warm-up then cosine (down to 10 % of
  ``lr``) or inverse square root, gradient clipping by global norm.
* Evaluation on the task's fixed validation batches at step 0, every ``eval_every``
  steps and at the last step.
* Seeded: the model from ``seed`` (under ``torch.random.fork_rng``, so the caller's
  global RNG is left as it was), the batches from a generator seeded with ``seed`` and
  the rank.
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
  rank stopped or hung) raises ``CollectiveTimeout`` on the ranks still running.

The data flow is model-agnostic: a task gives (tokens [B, n], targets), the model maps
tokens to logits ([B, n, V] for lm, [B, C] for classify), cross-entropy skips IGNORE.
"""

from __future__ import annotations

import logging
import math
import os
import re
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core import __version__
from tnn_core.checks import check_choice
from tnn_core.models import ModelConfig, build_model
from tnn_core.training.budget import TRAINING_MEMORY_LIMIT, check_cost, check_sweep, pass_cost
from tnn_core.training.config import DEVICES, SCHEDULES, TrainConfig
from tnn_core.training.evaluate import autocast, evaluate
from tnn_core.training.resume import Resume, TrainState, load_optimizer_tensors, optimizer_tensors
from tnn_core.training.snapshots import KernelSnapshots, every_for, snapshot_layout, take_snapshot
from tnn_core.training.tasks import IGNORE, Task, get_task, task_shape

__all__ = ["Callbacks", "TrainResult", "CollectiveTimeout", "train", "learning_rate",
           "task_loss", "objective", "resolve_device"]

log = logging.getLogger(__name__)
_THROUGHPUT_WARMUP = 5  # steps left out of the median tokens/s


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """auto: CUDA (this rank's GPU) when available, else CPU; cuda without a GPU raises."""
    check_choice("device", name, DEVICES)
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device must be 'cpu' or 'auto' here: CUDA is not available")
    if name == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", local_rank)


@dataclass
class Callbacks:
    """Hooks called on rank 0 from the training thread; keep them quick and thread-safe."""

    on_step: Callable[[int, float, float, float], None] | None = None  # (step, loss, tok/s, lr)
    on_eval: Callable[[int, dict], None] | None = None  # (step, metrics)
    # (model, history so far, state) every config.checkpoint_every steps
    on_checkpoint: Callable[[nn.Module, dict, TrainState], None] | None = None
    # (the kernel snapshots' record so far, a fresh dict) after each snapshot
    on_snapshot: Callable[[dict], None] | None = None


class CollectiveTimeout(RuntimeError):
    """Under torchrun: a collective waited longer than ``ddp_timeout`` for another rank."""


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
        evals = self.history.get("evals") or [{}]
        return evals[-1]


def learning_rate(step: int, config: TrainConfig) -> float:
    """The learning rate for update ``step`` (0-based): warm-up, then the schedule."""
    lr, warmup = config.lr, config.warmup
    if step < warmup:
        return lr * (step + 1) / warmup
    if config.schedule == "cosine":
        progress = (step - warmup) / max(1, config.steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))
    if config.schedule == "inverse_sqrt":
        return lr * math.sqrt(max(warmup, 1) / (step + 1))
    raise ValueError(f"schedule must be one of {SCHEDULES}; got {config.schedule!r}")


def task_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the targets that are not IGNORE.

    logits [B, n, V] with targets [B, n] (lm), or logits [B, C] with targets [B]."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                           ignore_index=IGNORE)


def objective(model: nn.Module, loss: torch.Tensor) -> torch.Tensor:
    """What the optimizer minimises: the task loss plus the model's ``l1_penalty()``.

    For togeipi that is sparse_l1 · Σ|S_ij| of every layer's sparse matrix (the Togeipi
    project's regularisation, which pushes the dropped entries towards zero); the
    Toeplitz kinds add 0."""
    return loss + model.l1_penalty()


def _distributed() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's environment; (0, 1, 0) alone."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0"))


def _build(config: TrainConfig, task: Task, device: torch.device) -> tuple[ModelConfig, nn.Module]:
    model_config = config.model_config(task)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = build_model(model_config)
    if config.dtype == "float64":
        model = model.double()
    return model_config, model.to(device)


def _optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98))


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
    # refused now, not after the run: the loader refuses a model it cannot evaluate
    check_sweep(model_config, shape.seq_len, shape.extrapolates)
    check_cost(f"a training step of {config.batch_size} sequences of {task.seq_len}",
               pass_cost(model_config, config.batch_size, task.seq_len, grad=True),
               memory_limit=TRAINING_MEMORY_LIMIT, seconds_limit=None)
    callbacks = callbacks or Callbacks()
    rank, world, local_rank = _distributed()
    device = resolve_device(config.device, local_rank)
    own_group = False
    if world > 1 and not torch.distributed.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        backend = "nccl" if device.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend,
                                             timeout=timedelta(seconds=config.ddp_timeout))
        own_group = True
    try:
        result = _loop(config, task, callbacks, stop_event, command, resume, rank, world,
                       device)
        if own_group:  # leave together: gloo can abort a rank whose peer tears down first
            torch.distributed.barrier()
        return result
    except RuntimeError as err:
        # gloo: "Timed out waiting 10000ms for recv ..."; nccl's watchdog: "... timeout"
        if world <= 1 or not re.search(r"timed out|timeout", str(err), re.IGNORECASE):
            raise
        others = ", ".join(str(r) for r in range(world) if r != rank)
        raise CollectiveTimeout(
            f"rank {rank} of {world}: a collective waited more than ddp_timeout="
            f"{config.ddp_timeout:g} s, so rank {others} has stopped or hung "
            f"({str(err).splitlines()[0]})") from None
    finally:
        if own_group:
            torch.distributed.destroy_process_group()


def _stop_requested(stop_event: threading.Event | None, world: int,
                    device: torch.device) -> bool:
    """Whether any rank's ``stop_event`` is set (one all-reduce under torchrun)."""
    asked = stop_event is not None and stop_event.is_set()
    if world <= 1:
        return asked
    flag = torch.tensor([float(asked)], device=device)
    torch.distributed.all_reduce(flag)
    return bool(flag.item() > 0)


def _state(model, optimizer, generator, step, config, task, world) -> TrainState:
    """The resumable state after ``step`` updates; under torchrun a collective (every
    rank's generator is gathered), so every rank calls it at the same step."""
    generators = [generator.get_state()]  # [5056] uint8
    if world > 1:
        generators = [torch.empty_like(generators[0]) for _ in range(world)]
        torch.distributed.all_gather(generators, generator.get_state())
    return TrainState(step, optimizer_tensors(model, optimizer), generators, config.to_dict(),
                      task.info())


def _loop(config, task, callbacks, stop_event, command, resume, rank, world,
          device) -> TrainResult:
    model_config, model = _build(config, task, device)
    optimizer = _optimizer(model, config)
    generator = torch.Generator().manual_seed(config.seed + 7919 * rank)
    history = {"command": command, "device": str(device), "dtype": config.dtype,
               "world_size": world, "torch": torch.__version__, "version": __version__,
               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "metric_name": task.metric_name,
               "train_loss": [], "evals": []}
    step, elapsed = 0, 0.0
    if resume is not None:
        if len(resume.state.generators) != world:
            raise ValueError(f"cannot resume a run of {len(resume.state.generators)} "
                             f"process(es) with {world}: the batches would differ")
        with torch.no_grad():
            model.load_state_dict(resume.weights, strict=True)
        load_optimizer_tensors(model, optimizer, resume.state.optimizer, "the resume file")
        generator.set_state(resume.state.generators[rank])
        step, elapsed = resume.state.step, float(resume.history.get("wall_s") or 0.0)
        history.update(started=resume.history.get("started"),
                       train_loss=list(resume.history.get("train_loss", []))[:step],
                       evals=[e for e in resume.history.get("evals", []) if e["step"] <= step],
                       resumed_at=[*resume.history.get("resumed_at", []), step])
    layout = snapshot_layout(model, task.seq_len) if rank == 0 else None
    snapshots = None if layout is None else KernelSnapshots(layout, every_for(config.steps))
    if snapshots is not None and resume is not None and "kernel_snapshots" in resume.history:
        stored = KernelSnapshots.from_record(resume.history["kernel_snapshots"])
        if stored.layout == layout:
            snapshots = stored
            snapshots.until(step)
    net = model
    if world > 1:
        ids = [device.index] if device.type == "cuda" else None
        net = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    params = list(model.parameters())
    good = [p.detach().clone() for p in params]  # the last weights with a finite loss
    kept = step  # ... after this many updates
    lead = rank == 0
    tokens_per_s: list[float] = []
    start = time.perf_counter() - elapsed
    last_eval = history["evals"][-1]["step"] if history["evals"] else 0
    window: list[float] = history["train_loss"][last_eval:]  # losses since the last eval

    def history_now(status: str, message: str) -> dict:
        recorded = {} if snapshots is None else {"kernel_snapshots": snapshots.to_record()}
        return {**history, **recorded, "status": status, "message": message, "steps": step,
                "wall_s": time.perf_counter() - start,
                "tokens_per_s": statistics.median(tokens_per_s[_THROUGHPUT_WARMUP:]
                                                  or tokens_per_s or [0.0]),
                "train_config": config.to_dict()}

    def run_eval(step: int, lr: float) -> None:
        if not lead:
            return
        metrics = evaluate(model, task, config.eval_batches, config.eval_batch_size,
                           dtype=config.dtype)
        rate = statistics.median(tokens_per_s[_THROUGHPUT_WARMUP:] or tokens_per_s or [0.0])
        entry = {"step": step, **metrics, "train_loss": statistics.fmean(window) if window
                 else None, "lr": lr, "wall_s": time.perf_counter() - start,
                 "tokens_per_s": rate}
        window.clear()
        history["evals"].append(entry)
        log.info("step %d: %s %.4f, loss %.4f", step, task.metric_name, entry["metric"],
                 entry["loss"])
        if callbacks.on_eval is not None:
            callbacks.on_eval(step, dict(entry))

    def snapshot(step: int) -> None:
        snapshots.add(step, take_snapshot(model, layout))
        if callbacks.on_snapshot is not None:
            callbacks.on_snapshot(snapshots.to_record())

    status, message, lr = "completed", f"trained {config.steps} steps", 0.0
    if step == 0:
        run_eval(0, learning_rate(0, config))
        if snapshots is not None:
            snapshot(0)
    model.train()
    while step < config.steps:
        if _stop_requested(stop_event, world, device):
            status, message = "stopped", f"stopped by request after {step} steps"
            break
        t0 = time.perf_counter()
        lr = learning_rate(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        tokens, targets = task.batch("train", config.batch_size, generator)
        tokens, targets = tokens.to(device), targets.to(device)
        with autocast(device, config.dtype):
            logits = net(tokens)  # (B, n, V) or (B, C)
        loss = task_loss(logits, targets)  # logged: comparable with the validation loss
        mean_loss = loss.detach().clone()
        if world > 1:
            torch.distributed.all_reduce(mean_loss)
            mean_loss /= world
        loss_value = mean_loss.item()
        if not math.isfinite(loss_value):
            status = "diverged"
            message = (f"loss became {loss_value} at step {step + 1}; stopped and kept the "
                       f"weights after step {kept}, the last with a finite loss")
            break
        for g, p in zip(good, params, strict=True):
            g.copy_(p.detach())
        kept = step
        optimizer.zero_grad(set_to_none=True)
        objective(model, loss).backward()
        max_norm = config.clip if config.clip > 0 else math.inf
        grad_norm = float(nn.utils.clip_grad_norm_(params, max_norm))
        if not math.isfinite(grad_norm):
            status = "diverged"
            message = (f"gradient norm became {grad_norm} at step {step + 1}; stopped and kept "
                       f"the weights after step {kept}")
            break
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        step += 1
        rate = tokens.numel() * world / max(time.perf_counter() - t0, 1e-9)
        tokens_per_s.append(rate)
        history["train_loss"].append(loss_value)
        window.append(loss_value)
        if lead and callbacks.on_step is not None:
            callbacks.on_step(step, loss_value, rate, lr)
        if snapshots is not None and snapshots.due(step):
            snapshot(step)
        if step % config.eval_every == 0 and step < config.steps:
            run_eval(step, lr)
        wanted = callbacks.on_checkpoint is not None or world > 1  # other ranks: no callbacks
        if wanted and config.checkpoint_every and step % config.checkpoint_every == 0 \
                and step < config.steps:
            state = _state(model, optimizer, generator, step, config, task, world)
            if lead and callbacks.on_checkpoint is not None:
                message_now = f"checkpoint after {step} of {config.steps} steps"
                callbacks.on_checkpoint(model, history_now("checkpoint", message_now), state)

    finite = all(bool(torch.isfinite(p).all()) for p in params)
    if status == "diverged" or not finite:
        if status != "diverged":
            status = "diverged"
            message = (f"weights became non-finite at step {step}; kept the weights after "
                       f"step {kept}, the last with a finite loss")
        with torch.no_grad():
            for g, p in zip(good, params, strict=True):
                p.copy_(g)
        step = kept
        if snapshots is not None:
            snapshots.until(step)
        log.warning("%s", message)
    state = None
    if status != "diverged":
        state = _state(model, optimizer, generator, step, config, task, world)
    if not history["evals"] or history["evals"][-1]["step"] != step:
        run_eval(step, lr)
    if snapshots is not None and (not snapshots.steps or snapshots.steps[-1] != step):
        snapshot(step)
    model.eval()
    return TrainResult(model, task, config, model_config, status, message,
                       history_now(status, message), state)
