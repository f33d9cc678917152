"""One process's part of a training run: its model, optimizer and batch generator.

``Updater.update(step, lr)`` makes one optimizer update: a batch drawn from this rank's
generator, the forward pass (under ``evaluate.autocast``), the task loss averaged over
the ranks, backward of the objective, clipping by global norm, the AdamW step. A
non-finite loss or gradient norm stops it before the step; ``LastGood`` holds the
weights of the last update whose loss was finite, for the run to go back to.

``state`` and ``restore`` are the resumable part (training/resume.py): AdamW's tensors
and every rank's batch generator; the learning rate needs none, it is a function of
the step (``objective.learning_rate``).

Letters: B batch, n length, V vocabulary, C classes.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tnn_core.training.config import TrainConfig
from tnn_core.training.evaluate import autocast
from tnn_core.training.objective import adamw, objective, task_loss
from tnn_core.training.resume import Resume, TrainState, load_optimizer_tensors, optimizer_tensors
from tnn_core.training.tasks import Task

__all__ = ["LastGood", "Updater"]

_RANK_STRIDE = 7919  # rank r draws its batches from a generator seeded with seed + 7919 r


class LastGood:
    """The weights after the last update whose loss was finite, and its step."""

    def __init__(self, params: list[torch.Tensor], step: int):
        self.params = params
        self.weights = [p.detach().clone() for p in params]
        self.step = step

    def keep(self, step: int) -> None:
        """The weights now are those after ``step`` updates, and good."""
        for kept, p in zip(self.weights, self.params, strict=True):
            kept.copy_(p.detach())
        self.step = step

    def restore(self) -> None:
        with torch.no_grad():
            for kept, p in zip(self.weights, self.params, strict=True):
                p.copy_(kept)


class Updater:
    """Optimizer updates of ``model`` on ``task`` for rank ``rank`` of ``world``."""

    def __init__(self, config: TrainConfig, task: Task, model: nn.Module,
                 device: torch.device, rank: int, world: int):
        self.config, self.task, self.model, self.device = config, task, model, device
        self.rank, self.world = rank, world
        self.net = model  # what the batches go through: DDP's wrapper under torchrun
        self.optimizer = adamw(model, config)
        self.generator = torch.Generator().manual_seed(config.seed + _RANK_STRIDE * rank)

    def distribute(self) -> None:
        """Under torchrun: wrap the model in DistributedDataParallel (it broadcasts rank
        0's weights and averages the gradients)."""
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)

    def update(self, step: int, lr: float, last_good: LastGood) -> tuple[float, int, str]:
        """Update ``step`` (0-based) at learning rate ``lr``: (the loss averaged over ranks,
        the tokens of this rank's batch, "" or why the run diverged; then no step was
        taken)."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        tokens, targets = self.task.batch("train", self.config.batch_size, self.generator)
        tokens, targets = tokens.to(self.device), targets.to(self.device)
        with autocast(self.device, self.config.dtype):
            logits = self.net(tokens)  # (B, n, V) or (B, C)
        loss = task_loss(logits, targets)  # logged: comparable with the validation loss
        mean_loss = loss.detach().clone()
        if self.world > 1:
            torch.distributed.all_reduce(mean_loss)
            mean_loss /= self.world
        value = mean_loss.item()
        if not math.isfinite(value):
            return value, tokens.numel(), (
                f"loss became {value} at step {step + 1}; stopped and kept the weights after "
                f"step {last_good.step}, the last with a finite loss")
        last_good.keep(step)
        self.optimizer.zero_grad(set_to_none=True)
        objective(self.model, loss).backward()
        max_norm = self.config.clip if self.config.clip > 0 else math.inf
        grad_norm = float(nn.utils.clip_grad_norm_(last_good.params, max_norm))
        if not math.isfinite(grad_norm):
            return value, tokens.numel(), (
                f"gradient norm became {grad_norm} at step {step + 1}; stopped and kept the "
                f"weights after step {last_good.step}")
        self.optimizer.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return value, tokens.numel(), ""

    def state(self, step: int) -> TrainState:
        """The resumable state after ``step`` updates; under torchrun a collective (every
        rank's generator is gathered), so every rank calls it at the same step."""
        generators = [self.generator.get_state()]  # [5056] uint8
        if self.world > 1:
            generators = [torch.empty_like(generators[0]) for _ in range(self.world)]
            torch.distributed.all_gather(generators, self.generator.get_state())
        return TrainState(step, optimizer_tensors(self.model, self.optimizer), generators,
                          self.config.to_dict(), self.task.info())

    def restore(self, resume: Resume) -> None:
        """Weights, AdamW's state and this rank's generator as ``resume`` saved them."""
        if len(resume.state.generators) != self.world:
            raise ValueError(f"cannot resume a run of {len(resume.state.generators)} "
                             f"process(es) with {self.world}: the batches would differ")
        with torch.no_grad():
            self.model.load_state_dict(resume.weights, strict=True)
        load_optimizer_tensors(self.model, self.optimizer, resume.state.optimizer,
                               "the resume file")
        self.generator.set_state(resume.state.generators[self.rank])
