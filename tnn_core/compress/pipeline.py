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
    EVAL_BATCH_SIZE,
    EVAL_BATCHES,
    Speedup,
    finetune,
    parameter_count,
    speedup,
    task_metric,
)
from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import SPEED_FACTORS
from tnn_core.training.checkpoint import CheckpointInfo, save
from tnn_core.training.evaluate import evaluate_model
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
    source_metric: float
    converted_metric: float  # before fine-tuning
    errors: list[float | None]  # per layer, relative to the off-band part; None: kept
    speedups: dict[int, Speedup]  # factor of the training length -> timing
    parameters: tuple[int, int]  # (source, converted)
    model: nn.Module  # the converted model (fine-tuned if asked)
    finetuned_metric: float | None = None
    finetune_steps: int = 0  # steps actually run (a stop ends early)
    finetune_losses: list[float] = field(default_factory=list)
    stopped: bool = False
    final_eval: dict = field(default_factory=dict)  # evaluate_model of the final model

    @property
    def final_metric(self) -> float:
        return self.converted_metric if self.finetuned_metric is None else self.finetuned_metric

    def summary(self) -> dict:
        return {"task": self.task, "metric_name": self.metric_name,
                "higher_is_better": self.higher_is_better, "chance": self.chance,
                "source_metric": self.source_metric, "converted_metric": self.converted_metric,
                "finetuned_metric": self.finetuned_metric, "finetune_steps": self.finetune_steps,
                "speedup": {str(f): s.to_dict() for f, s in self.speedups.items()},
                "parameters": {"source": self.parameters[0], "converted": self.parameters[1]},
                "layers": [{**layer.__dict__, "error": error}
                           for layer, error in zip(self.plan.layers, self.errors, strict=True)],
                "plan": self.plan.to_dict(), "stopped": self.stopped}


def compress(model: nn.Module, task: Task, plan: CompressionPlan, finetune_steps: int = 0,
             finetune_lr: float = 3e-4, finetune_parameters: str = "all",
             factors=SPEED_FACTORS, repeats: int = 15, on_progress: Progress | None = None,
             stop_event: threading.Event | None = None) -> CompressionResult:
    """Convert ``model`` with ``plan`` at the task's training length and measure it.

    Refused before anything runs (ValueError): a source with weights no trained model has,
    and a compression whose passes do not fit the budget (``guard``).

    Progress items: ("converted", errors), ("metric", source, converted), ("speedup",
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
                      next(model.parameters()).element_size())
    converted, errors = convert(model, plan, task.seq_len)
    check_converted(converted)
    report(0.1, ("converted", errors))
    source_metric = task_metric(model, task)
    converted_eval = evaluate_model(converted, task, None, EVAL_BATCHES, EVAL_BATCH_SIZE)
    report(0.3, ("metric", source_metric, converted_eval["metric"]))
    result = CompressionResult(plan, task.name, task.metric_name, task.higher_is_better,
                               task.chance, source_metric, converted_eval["metric"], errors, {},
                               (parameter_count(model), parameter_count(converted)), converted,
                               final_eval=converted_eval)
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
        result.final_eval = evaluate_model(converted, task, None, EVAL_BATCHES, EVAL_BATCH_SIZE)
        result.finetuned_metric = result.final_eval["metric"]
        report(1.0, ("finetuned", result.finetuned_metric))
    result.stopped = stopping()
    return result


def save_converted(path: str | os.PathLike, result: CompressionResult, info: CheckpointInfo,
                   command: str = "") -> Path:
    """Write the converted model as an ordinary checkpoint of the source's task.

    Its history is the source's, with the fine-tuning's losses appended, one evaluation
    entry for the converted model (on the same windows) and ``compression``: the source
    file and the command that trained it, the plan, the per-layer errors and the metrics
    before and after fine-tuning. ``command``: what converted it (the history's command)."""
    history = dict(info.history)
    steps = int(history.get("steps") or 0) + result.finetune_steps
    entry = result.final_eval
    history["evals"] = [*history.get("evals", []),
                        {"step": steps, "metric": entry["metric"], "loss": entry["loss"],
                         "accuracy": entry["accuracy"]}]
    history["train_loss"] = [*history.get("train_loss", []), *result.finetune_losses]
    history["steps"] = steps
    history["command"] = command or f"tnn_core.compress: {result.plan.describe()}"
    history["compression"] = {
        "source": os.path.basename(info.source), "source_command": info.history.get("command"),
        "plan": result.plan.to_dict(),
        "errors": result.errors, "source_metric": result.source_metric,
        "converted_metric": result.converted_metric,
        "finetuned_metric": result.finetuned_metric, "finetune_steps": result.finetune_steps}
    return save(path, result.model, info.task, history)

