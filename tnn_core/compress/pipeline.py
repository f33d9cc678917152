"""One compression, start to end: convert, evaluate, time, fine-tune, save.

    result = compress(model, task, plan, finetune_steps=200)
    result.summary()               # the JSON the CLI prints
    save_converted("out.safetensors", result, info)

The command line (``python -m tnn_core.compress``) and the app's Compress page both run
this, so they report the same numbers for the same plan.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from tnn_core.compress.convert import check_convertible, convert
from tnn_core.compress.guard import check_compression, check_converted, check_source
from tnn_core.compress.measure import (
    Speedup,
    finetune,
    parameter_count,
    speedup,
    task_scores,
)
from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import SPEED_FACTORS
from tnn_core.training.checkpoint import CheckpointInfo, save
from tnn_core.training.evaluate import evaluation_size
from tnn_core.training.history import MAX_COMMANDS
from tnn_core.training.scores import Difference, Scores, difference
from tnn_core.training.tasks import Task

__all__ = ["CompressionResult", "compress", "save_converted"]

Progress = Callable[[float, object], None]


@dataclass
class CompressionResult:
    plan: CompressionPlan
    task: str
    metric_name: str
    higher_is_better: bool
    chance: float
    source: Scores  # the evaluation set, per sequence: every stage scores the same sequences
    converted: Scores  # before fine-tuning
    errors: list[float | None]  # per layer, ||T - T̂||_F / ||T||_F; None: kept
    speedups: dict[int, Speedup]  # factor of the training length -> timing
    parameters: tuple[int, int]  # (source, converted)
    model: nn.Module  # the converted model (fine-tuned if asked)
    finetuned: Scores | None = None
    finetune_steps: int = 0  # steps actually run (a stop ends early)
    finetune_lr: float = 0.0
    finetune_parameters: str = "all"
    finetune_losses: list[float] = field(default_factory=list)
    stopped: bool = False

    @property
    def final(self) -> Scores:
        return self.converted if self.finetuned is None else self.finetuned

    def change(self, stage: Scores) -> Difference:
        """``stage`` against the source, paired on the evaluation set."""
        return difference(self.source, stage, paired=True)

    def summary(self) -> dict:
        def scored(stage: Scores | None) -> dict | None:
            if stage is None:
                return None
            change = self.change(stage)
            return {**stage.to_dict(), "worse_by": change.worse_by,
                    "worse_by_ci95": [change.low, change.high]}

        return {"task": self.task, "metric_name": self.metric_name,
                "higher_is_better": self.higher_is_better, "chance": self.chance,
                "source": self.source.to_dict(), "converted": scored(self.converted),
                "finetuned": scored(self.finetuned), "finetune_steps": self.finetune_steps,
                "speedup": {str(f): s.to_dict() for f, s in self.speedups.items()},
                "parameters": {"source": self.parameters[0], "converted": self.parameters[1]},
                "layers": [{**layer.to_dict(), "error": error}
                           for layer, error in zip(self.plan.layers, self.errors, strict=True)],
                "plan": self.plan.to_dict(), "stopped": self.stopped}


def compress(model: nn.Module, task: Task, plan: CompressionPlan, finetune_steps: int = 0,
             finetune_lr: float = 3e-4, finetune_parameters: str = "all",
             factors=SPEED_FACTORS, repeats: int = 15, on_progress: Progress | None = None,
             stop_event: threading.Event | None = None,
             source_scores: Scores | None = None) -> CompressionResult:
    """Convert ``model`` with ``plan`` at the task's training length and measure it.

    ``source_scores``: the source's ``task_scores`` when the caller has them already (the
    app scores every checkpoint it opens); None: scored here.

    Refused before anything runs (ValueError): a source with weights no trained model has,
    and a compression whose passes do not fit the budget (``guard``).

    Progress items: ("converted", errors), ("metric", source, converted) (Scores),
    ("speedup",
    Speedup), ("finetune", step, loss), ("finetuned", metric). A stop ends the
    fine-tuning after its current step (the metric is then taken as it stands) and skips
    what has not started."""
    def report(fraction: float, item) -> None:
        if on_progress is not None:
            on_progress(fraction, item)

    def stopping() -> bool:
        return stop_event is not None and stop_event.is_set()

    check_convertible(model.config, plan, task.seq_len)
    check_source(model)
    check_compression(model.config, plan, task.seq_len, factors, finetune_steps,
                      evaluation_size(task), next(model.parameters()).element_size())
    converted, errors = convert(model, plan, task.seq_len)
    check_converted(converted)
    report(0.1, ("converted", errors))
    source = task_scores(model, task) if source_scores is None else source_scores
    converted_scores = task_scores(converted, task)
    report(0.3, ("metric", source, converted_scores))
    result = CompressionResult(plan, task.name, task.metric_name, task.higher_is_better,
                               task.chance, source, converted_scores, errors, {},
                               (parameter_count(model), parameter_count(converted)), converted,
                               finetune_lr=finetune_lr, finetune_parameters=finetune_parameters)
    for k, factor in enumerate(factors):
        if stopping():
            result.stopped = True
            return result
        result.speedups[factor] = speedup(model, converted, model.config.vocab_size,
                                          factor * task.seq_len, repeats=repeats)
        report(0.3 + 0.2 * (k + 1) / len(factors), ("speedup", result.speedups[factor]))
    if finetune_steps and not stopping():
        def step_done(step: int, loss: float) -> None:
            result.finetune_steps = step
            report(0.5 + 0.45 * step / finetune_steps, ("finetune", step, loss))

        result.finetune_losses = finetune(converted, task, finetune_steps, finetune_lr,
                                          finetune_parameters, on_step=step_done,
                                          stop_event=stop_event)
        result.finetuned = task_scores(converted, task)
        report(1.0, ("finetuned", result.finetuned))
    result.stopped = stopping()
    return result


def save_converted(path: str | os.PathLike, result: CompressionResult, info: CheckpointInfo,
                   command: str = "") -> Path:
    """Write the converted model as an ordinary checkpoint of the source's task.

    Its history is its own: the fine-tuning's losses and steps, one evaluation of the
    converted model (step 0) and one after fine-tuning, each with its interval, and its
    ``lineage``: the source file's name and SHA-256, the plan, the fine-tuning, the
    metrics of every stage and the commands (the source's lineage's, the source's, this
    one). ``command``: what converted it."""
    command = command or f"tnn_core.compress: {result.plan.describe()}"
    stages = [(0, result.converted)]
    if result.finetuned is not None:
        stages.append((result.finetune_steps, result.finetuned))
    history = {"metric_name": result.metric_name, "command": command,
               "steps": result.finetune_steps, "train_loss": result.finetune_losses,
               "evals": [{"step": step, "loss": scores.loss_mean, "accuracy": scores.accuracy,
                          **scores.to_dict()} for step, scores in stages],
               "lineage": _lineage(result, info, command)}
    return save(path, result.model, info.task, history)


def _lineage(result: CompressionResult, info: CheckpointInfo, command: str) -> dict:
    earlier = info.history.get("lineage", {}).get("commands", [])
    own = info.history.get("command")
    commands = [*earlier, *([own] if own else []), command][-MAX_COMMANDS:]
    metrics = {"source": result.source.to_dict(), "converted": result.converted.to_dict()}
    if result.finetuned is not None:
        metrics["finetuned"] = result.finetuned.to_dict()
    return {"source": {"name": os.path.basename(info.source), "sha256": info.sha256},
            "plan": result.plan.to_dict(),
            "finetune": {"steps": result.finetune_steps, "lr": result.finetune_lr,
                         "parameters": result.finetune_parameters},
            "metrics": metrics, "commands": commands}
