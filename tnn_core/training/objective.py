"""What training minimises, and with what: the task loss, the objective, AdamW and the
learning-rate schedule.

* The loss is the task's cross-entropy over the targets that are not IGNORE; togeipi
  models add their ``l1_penalty()`` (``objective``).
* AdamW with weight decay on matrices only, betas (0.9, 0.98).
* A linear warm-up, then cosine (down to 10 % of ``lr``) or inverse square root: the
  learning rate is a function of the step alone, so a resumed run needs no state for it.

Letters: B batch, n length, V vocabulary, C classes.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.training.config import SCHEDULES, TrainConfig
from tnn_core.training.tasks import IGNORE

__all__ = ["task_loss", "objective", "adamw", "learning_rate"]


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


def adamw(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW over ``model``'s parameters, weight decay on the matrices (ndim >= 2) only."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98))


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
