"""The resume file: what a checkpoint lacks for a run to continue exactly where it stopped.

``python -m tnn_core.training --out run.safetensors`` writes ``run.safetensors`` (the
checkpoint, ``checkpoint.save``) and beside it ``run.resume.safetensors``, both every
``checkpoint_every`` steps and at the end; ``--resume`` reads them back. The resume file
is safetensors too, never pickle:

    tensors   optimizer.<parameter name>.<exp_avg | exp_avg_sq | step>   AdamW's state
              generator.<rank>   each rank's batch generator (torch.Generator.get_state(),
                                 uint8); every random draw of training comes from it
    metadata  format "toeplitz-lab-resume/1", step, world_size, train_config and task
              (JSON), compared with the run that resumes

The learning rate needs no state: ``learning_rate(step, config)`` recomputes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save as save_tensors
from torch import nn

from tnn_core.training.checkpoint import load, read_info, write_atomically
from tnn_core.training.config import TrainConfig

__all__ = ["TrainState", "Resume", "load_resume", "resume_path", "pending_path",
           "complete_save", "write_state", "read_state",
           "check_matches", "optimizer_tensors", "load_optimizer_tensors", "FREE_FIELDS"]

FORMAT = "toeplitz-lab-resume/1"
# TrainConfig fields a resumed run may change: the rest must equal the stopped run's
FREE_FIELDS = ("steps", "device", "checkpoint_every", "ddp_timeout")
_ADAM_KEYS = ("exp_avg", "exp_avg_sq", "step")


@dataclass(frozen=True)
class TrainState:
    """A run after ``step`` updates, as the resume file holds it (weights and history are
    in the checkpoint beside it)."""

    step: int
    optimizer: dict[str, torch.Tensor]  # see optimizer_tensors
    generators: list[torch.Tensor]  # [world_size] uint8 states, one per rank
    train_config: dict  # TrainConfig.to_dict()
    task: dict  # Task.info()


@dataclass(frozen=True)
class Resume:
    """What ``train(..., resume=...)`` continues from: the checkpoint and its resume file."""

    weights: dict[str, torch.Tensor]  # the checkpoint's state dict
    history: dict  # the checkpoint's history (losses and evaluations so far)
    state: TrainState


def load_resume(checkpoint: str | os.PathLike, train_config: dict, task: dict) -> Resume:
    """The checkpoint at ``checkpoint`` and its resume file, checked against the run that
    continues them (``TrainConfig.to_dict()``, ``Task.info()``); a mismatch raises ValueError.
    A save cut off before its last rename is completed first (``complete_save``)."""
    complete_save(checkpoint)
    model, info = load(checkpoint)  # CheckpointError is a ValueError
    state = read_state(resume_path(checkpoint))
    check_matches(state, train_config, task, str(resume_path(checkpoint)))
    if info.model_config.to_dict() != train_config["model"]:
        raise ValueError(f"cannot resume from {checkpoint}: its model config differs from "
                         f"this run's")
    if info.history.get("steps") != state.step:
        raise ValueError(f"cannot resume from {checkpoint}: it holds step "
                         f"{info.history.get('steps')} but its resume file step {state.step} "
                         f"(a save was cut off between the two)")
    return Resume(model.state_dict(), info.history, state)


def resume_path(checkpoint: str | os.PathLike) -> Path:
    """``run.safetensors`` -> ``run.resume.safetensors``."""
    path = Path(checkpoint)
    return path.with_name(f"{path.stem}.resume{path.suffix or '.safetensors'}")


def pending_path(checkpoint: str | os.PathLike) -> Path:
    """``run.safetensors`` -> ``run.resume.safetensors.next``: a save's new resume file
    before the checkpoint beside it is (``cli.save_run`` writes it first, renames it last)."""
    resume = resume_path(checkpoint)
    return resume.with_name(f"{resume.name}.next")


def complete_save(checkpoint: str | os.PathLike) -> bool:
    """Finish a save killed between its checkpoint and its last rename: when the pending
    resume file holds the checkpoint's step, rename it into place. True when it did.

    Any other pending file belongs to a save killed before its checkpoint was replaced
    (the previous pair is whole): it is left alone, and the next save overwrites it."""
    pending = pending_path(checkpoint)
    if not pending.is_file() or not Path(checkpoint).is_file():
        return False
    try:
        step = read_info(checkpoint).history.get("steps")
        pending_step = read_state(pending).step
    except ValueError:  # either damaged: nothing to complete; load_resume names the damage
        return False
    if step != pending_step:
        return False
    os.replace(pending, resume_path(checkpoint))
    return True


def _parameter_order(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The names of the optimizer's parameters in its state_dict's index order."""
    names = {id(p): name for name, p in model.named_parameters()}
    return [names[id(p)] for group in optimizer.param_groups for p in group["params"]]


def optimizer_tensors(model: nn.Module, optimizer: torch.optim.Optimizer
                      ) -> dict[str, torch.Tensor]:
    """AdamW's per-parameter state keyed by parameter name (empty before the first step)."""
    state = optimizer.state_dict()["state"]
    out = {}
    for index, name in enumerate(_parameter_order(model, optimizer)):
        for key, value in state.get(index, {}).items():
            out[f"optimizer.{name}.{key}"] = value.detach().to("cpu").contiguous().clone()
    return out


def load_optimizer_tensors(model: nn.Module, optimizer: torch.optim.Optimizer,
                           tensors: dict[str, torch.Tensor], source: str) -> None:
    """Put ``optimizer_tensors``' output back; names or shapes that differ raise."""
    order = _parameter_order(model, optimizer)
    expected = {f"optimizer.{name}.{key}" for name in order for key in _ADAM_KEYS}
    if tensors and set(tensors) != expected:
        wrong = sorted(set(tensors) ^ expected)[:3]
        raise ValueError(f"{source}: its optimizer state does not match this model "
                         f"(e.g. {wrong})")
    params = dict(model.named_parameters())
    state = {}
    for index, name in enumerate(order):
        if not tensors:
            break
        entry = {key: tensors[f"optimizer.{name}.{key}"] for key in _ADAM_KEYS}
        if entry["exp_avg"].shape != params[name].shape:
            raise ValueError(f"{source}: optimizer state of {name} has shape "
                             f"{tuple(entry['exp_avg'].shape)}; the model needs "
                             f"{tuple(params[name].shape)}")
        state[index] = entry
    groups = optimizer.state_dict()["param_groups"]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def write_state(path: str | os.PathLike, state: TrainState) -> Path:
    """Write ``state`` to ``path`` atomically (temp file, fsync, os.replace, fsync of the
    folder), as ``checkpoint.save`` writes a checkpoint."""
    path = Path(path)
    tensors = dict(state.optimizer)
    tensors.update({f"generator.{rank}": g for rank, g in enumerate(state.generators)})
    metadata = {"format": FORMAT, "step": str(state.step),
                "world_size": str(len(state.generators)),
                "train_config": json.dumps(state.train_config), "task": json.dumps(state.task)}
    write_atomically(path, save_tensors(tensors, metadata=metadata))
    return path


def read_state(path: str | os.PathLike) -> TrainState:
    """The state in ``path``; a missing, foreign or damaged file raises ValueError."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"cannot resume: {path} does not exist (it is written beside the "
                         f"checkpoint every --checkpoint-every steps and at the end)")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
        if meta.get("format") != FORMAT:
            raise ValueError(f"format must be {FORMAT!r}; got {meta.get('format')!r}")
        step, world = int(meta["step"]), int(meta["world_size"])
        train_config, task = json.loads(meta["train_config"]), json.loads(meta["task"])
        generators = [tensors.pop(f"generator.{rank}") for rank in range(world)]
    except Exception as err:  # safetensors, json and int each raise their own kind
        raise ValueError(f"cannot resume from {path}: it is not a valid resume file "
                         f"({type(err).__name__}: {err})") from None
    if not isinstance(train_config, dict) or not isinstance(task, dict) or step < 0:
        raise ValueError(f"cannot resume from {path}: its metadata is damaged")
    return TrainState(step, tensors, generators, train_config, task)


def _today(train_config: dict) -> dict:
    """A stored train config with the fields added since it was written at their defaults
    (a file from before ``ModelConfig.layer_operators`` resumes); as stored if it does not
    parse (the comparison then names what differs)."""
    try:
        return TrainConfig.from_dict(train_config).to_dict()
    except (TypeError, ValueError):
        return train_config


def check_matches(state: TrainState, train_config: dict, task: dict, source: str) -> None:
    """Raise ValueError unless ``state`` was written by a run of the same config and task."""
    stored = _today(state.train_config)
    if state.task != task:
        raise ValueError(f"cannot resume from {source}: it was trained on "
                         f"{state.task.get('name')!r} with other task settings than this run")
    for name in sorted(set(stored) | set(train_config)):
        if name in FREE_FIELDS:
            continue
        old, new = stored.get(name), train_config.get(name)
        if old != new:
            raise ValueError(f"cannot resume from {source}: its {name} is {old!r}, this run's "
                             f"is {new!r} (only {', '.join(FREE_FIELDS)} may change)")
    if train_config["steps"] < state.step:
        raise ValueError(f"cannot resume from {source}: steps must be at least its "
                         f"{state.step} steps; got {train_config['steps']}")
