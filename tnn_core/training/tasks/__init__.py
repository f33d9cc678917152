"""Training tasks, all offline and seeded: ``get_task(name, settings)``.

    charlm    character LM on the Python stdlib's source or any UTF-8 text   lm, bpc
    listops   LRA ListOps expressions, label = their value                    classify, accuracy
    digits    scikit-learn's 8 × 8 digits read pixel by pixel (n = 64 or 1024) classify, accuracy
    recall    multi-query associative recall (MQAR)                           lm, accuracy

Each task is a ``Task`` (``base``): ``batch(split, batch_size, generator, length=None)``,
fixed ``validation(batch_size, batches, length=None)`` batches, ``chance``,
``baselines()``, and ``info()``, the dict that ``task_from_info`` rebuilds it from
(it goes into checkpoint metadata, with charlm's vocabulary).
"""

from __future__ import annotations

from dataclasses import is_dataclass

from tnn_core.checks import check_choice, config_from_dict
from tnn_core.training.tasks.base import IGNORE, Task
from tnn_core.training.tasks.charlm import CharLMConfig, CharLMTask
from tnn_core.training.tasks.digits import DigitsConfig, DigitsTask
from tnn_core.training.tasks.listops import ListOpsConfig, ListOpsTask
from tnn_core.training.tasks.recall import RecallConfig, RecallTask

__all__ = ["IGNORE", "TASKS", "Task", "get_task", "task_from_info", "task_config",
           "CharLMConfig", "CharLMTask", "DigitsConfig", "DigitsTask", "ListOpsConfig",
           "ListOpsTask", "RecallConfig", "RecallTask"]

TASKS: dict[str, tuple[type[Task], type]] = {  # name -> (task class, its config dataclass)
    "charlm": (CharLMTask, CharLMConfig),
    "listops": (ListOpsTask, ListOpsConfig),
    "digits": (DigitsTask, DigitsConfig),
    "recall": (RecallTask, RecallConfig),
}


def _entry(name: str) -> tuple[type[Task], type]:
    return TASKS[check_choice("task", name, tuple(TASKS))]


def task_config(name: str, settings=None):
    """The config dataclass of task ``name`` from a dict (unknown keys raise) or itself."""
    _, config_cls = _entry(name)
    if settings is None or isinstance(settings, dict):
        return config_from_dict(config_cls, settings)
    if is_dataclass(settings) and isinstance(settings, config_cls):
        return settings
    raise ValueError(f"settings for task {name} must be a dict or a {config_cls.__name__}; "
                     f"got {type(settings).__name__}")


def get_task(name: str, settings=None) -> Task:
    """Task ``name`` with ``settings`` (a dict of its config's fields, or the config)."""
    task_cls, _ = _entry(name)
    return task_cls(task_config(name, settings))


def task_from_info(info: dict, data: bytes | None = None) -> Task:
    """Rebuild a task from ``Task.info()`` (e.g. checkpoint metadata).

    charlm keeps the stored vocabulary. A charlm trained on an uploaded text needs that
    text again as ``data``; one trained on a file reads the file when it still exists.
    """
    if not isinstance(info, dict) or "name" not in info:
        raise ValueError(f"task info must be a dict with a 'name'; got {info!r}")
    name = info["name"]
    config = task_config(name, info.get("settings"))
    if name != "charlm":
        return get_task(name, config)
    source = info.get("source") or {"kind": "stdlib"}
    if data is not None:
        return CharLMTask(config, vocab=info.get("vocab"), data=data,
                          data_name=source.get("name"))
    if source.get("kind") == "bytes":
        raise ValueError(f"this charlm model was trained on the uploaded text "
                         f"{source.get('name')!r}; pass that text again to evaluate it")
    return CharLMTask(config, vocab=info.get("vocab"))
