"""TrainConfig: one training run, holding the ModelConfig it trains (passed whole).

    task = get_task("recall")
    model = model_for_task(ModelConfig(dim=32, operator=OperatorConfig(kind="togeipi",
                                                                        causal=True)), task)
    config = TrainConfig(task="recall", steps=500, model=model)

The model config says everything about the model, the operator kind (tno, ski, fd or
togeipi) and its settings included; its ``task`` (lm or classify), ``vocab_size`` and
``num_classes`` must be the task's, which ``model_for_task`` fills in (they depend on the
task's settings, e.g. charlm's corpus). A language-model task needs a causal operator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from tnn_core.checks import check_choice, check_fields, check_int, check_number
from tnn_core.models import ModelConfig
from tnn_core.training.tasks import TASKS, Task

__all__ = ["TrainConfig", "model_for_task", "SCHEDULES", "DEVICES", "DTYPES"]

SCHEDULES = ("cosine", "inverse_sqrt")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64", "bfloat16")


def model_for_task(model: ModelConfig, task: Task) -> ModelConfig:
    """``model`` with the task's kind (lm or classify), vocabulary and classes.

    A language model has no classes; its unused ``num_classes`` is 2, the least allowed."""
    return replace(model, task=task.kind, vocab_size=task.vocab_size,
                   num_classes=task.num_classes or 2)


@dataclass(frozen=True)
class TrainConfig:
    """One training run: optimisation, runtime, and the model. Unknown fields raise."""

    task: str = "listops"  # a name in tnn_core.training.tasks.TASKS
    steps: int = 1000  # optimizer updates
    batch_size: int = 32  # sequences per update (per rank under torchrun)
    lr: float = 3e-3  # peak learning rate
    weight_decay: float = 0.01  # AdamW decay, weight matrices only
    warmup: int = 100  # linear warm-up steps
    schedule: str = "cosine"  # after warm-up: cosine down to 10 % of lr, or inverse_sqrt
    clip: float = 1.0  # max global gradient norm; 0 disables clipping
    eval_every: int = 100  # evaluate every k steps (and at step 0 and the last step)
    eval_batches: int = 8  # fixed validation batches per evaluation
    eval_batch_size: int = 32  # sequences per validation batch
    seed: int = 0  # seeds the model and the batches
    device: str = "auto"  # auto (CUDA when available), cpu or cuda
    dtype: str = "float32"  # float32, float64, or bfloat16 (autocast; weights stay float32)
    checkpoint_every: int = 500  # hand on_checkpoint a resumable state every k steps; 0: never
    ddp_timeout: float = 300.0  # seconds a collective may wait under torchrun before failing
    model: ModelConfig = field(default_factory=ModelConfig)  # see model_for_task

    def __post_init__(self):
        check_choice("task", self.task, tuple(TASKS))
        check_choice("schedule", self.schedule, SCHEDULES)
        check_choice("device", self.device, DEVICES)
        check_choice("dtype", self.dtype, DTYPES)
        for name, low in (("steps", 0), ("batch_size", 1), ("warmup", 0), ("eval_every", 1),
                          ("eval_batches", 1), ("eval_batch_size", 1), ("seed", 0),
                          ("checkpoint_every", 0)):
            check_int(name, getattr(self, name), low)
        for name in ("lr", "weight_decay", "clip"):
            check_number(name, getattr(self, name), 0)
        check_number("ddp_timeout", self.ddp_timeout, 1, 86_400)
        if not isinstance(self.model, ModelConfig):
            raise ValueError(f"model must be a ModelConfig; got {self.model!r}")
        kind = TASKS[self.task][0].kind
        if self.model.task != kind:
            raise ValueError(f"model.task must be {kind!r} for task {self.task!r}; "
                             f"got {self.model.task!r}")

    def model_config(self, task: Task) -> ModelConfig:
        """``model``, checked against ``task``'s vocabulary and classes."""
        expected = model_for_task(self.model, task)
        names = ("task", "vocab_size") + (("num_classes",) if task.kind == "classify" else ())
        for name in names:
            if getattr(self.model, name) != getattr(expected, name):
                raise ValueError(f"model.{name} must be {getattr(expected, name)!r} for this "
                                 f"{task.name} task (see model_for_task); "
                                 f"got {getattr(self.model, name)!r}")
        return self.model

    def to_dict(self) -> dict:
        return {**asdict(self), "model": self.model.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        """Build from a plain dict (``model`` nested as a dict); unknown fields raise."""
        data = check_fields(cls, data)
        if isinstance(data.get("model"), dict):
            data["model"] = ModelConfig.from_dict(data["model"])
        return cls(**data)
