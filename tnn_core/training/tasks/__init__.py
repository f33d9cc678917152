"""Training tasks, all offline and seeded: ``get_task(name, settings)``.

    charlm    character LM on the Python stdlib's source or any UTF-8 text   lm, bpc
    listops   LRA ListOps expressions, label = their value                    classify, accuracy
    digits    scikit-learn's 8 × 8 digits read pixel by pixel (n = 64 or 1024) classify, accuracy
    recall    multi-query associative recall (MQAR)                           lm, accuracy

Each task is a ``Task`` (``base``): ``batch(split, batch_size, generator, length=None)``,
fixed ``validation(batch_size, batches, length=None)`` batches, ``chance``,
``baselines()``, and ``info()``, the dict that ``task_from_info`` rebuilds it from
(it goes into checkpoint metadata, with charlm's vocabulary).

A checkpoint of token mixers alone (``models.MixerStack``, imported by ``tnn_core.convert``)
has no task: its task record is ``{"name": "kernels", "settings": {"seq_len": n},
"source": {...}}`` (``kernels_only_info``), where n is the length its kernels are looked at
by default (the source's training length). ``is_kernels_only`` tells it; ``task_from_info``
refuses it with the sentence a view that needs a task shows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, is_dataclass

from tnn_core.checks import check_choice, check_int, config_from_dict, short_repr
from tnn_core.training.tasks.base import IGNORE, Task
from tnn_core.training.tasks.charlm import CharLMConfig, CharLMTask
from tnn_core.training.tasks.digits import LEVELS, DigitsConfig, DigitsTask
from tnn_core.training.tasks.listops import TOKENS, ListOpsConfig, ListOpsTask
from tnn_core.training.tasks.recall import RecallConfig, RecallTask

__all__ = ["IGNORE", "TASKS", "Task", "TaskShape", "get_task", "task_from_info", "task_config",
           "task_shape", "KERNELS_ONLY", "MAX_KERNEL_LENGTH", "is_kernels_only",
           "kernels_only_info", "kernels_only_reason",
           "CharLMConfig", "CharLMTask", "DigitsConfig", "DigitsTask", "ListOpsConfig",
           "ListOpsTask", "RecallConfig", "RecallTask"]

TASKS: dict[str, tuple[type[Task], type]] = {  # name -> (task class, its config dataclass)
    "charlm": (CharLMTask, CharLMConfig),
    "listops": (ListOpsTask, ListOpsConfig),
    "digits": (DigitsTask, DigitsConfig),
    "recall": (RecallTask, RecallConfig),
}


KERNELS_ONLY = "kernels"  # the task name of a checkpoint of token mixers alone
MAX_KERNEL_LENGTH = 65_536  # its seq_len, as OperatorConfig's sizes
_SOURCE_TEXT = 300  # characters of a kernels-only source's name, format or module


def is_kernels_only(info) -> bool:
    """Whether a checkpoint's task record is that of token mixers alone (no task)."""
    return isinstance(info, dict) and info.get("name") == KERNELS_ONLY


def kernels_only_info(seq_len: int, source: dict) -> dict:
    """The task record of a kernels-only checkpoint: its default length and where it came
    from (strings: ``name``, ``format``, ``sha256``)."""
    info = {"name": KERNELS_ONLY, "settings": {"seq_len": seq_len}, "source": dict(source)}
    _kernels_shape(info)
    return info


def kernels_only_reason(info: dict) -> str:
    """One sentence: why a view that needs a task is not shown for this checkpoint."""
    source = info.get("source") or {}
    where = f" (imported from {source['format']})" if source.get("format") else ""
    return (f"This checkpoint holds token mixers only{where}: its embedding and head are not "
            f"the lab's, so it has no task to score, evaluate or generate with; every view of "
            f"its kernels works.")


def _kernels_shape(info: dict) -> TaskShape:
    settings = info.get("settings")
    if not isinstance(settings, dict) or set(settings) != {"seq_len"}:
        raise ValueError(f"kernels task settings must be {{'seq_len': n}}; got "
                         f"{short_repr(settings)}")
    seq_len = check_int("kernels task seq_len", settings["seq_len"], 1, MAX_KERNEL_LENGTH)
    source = info.get("source", {})
    if not (isinstance(source, dict) and all(
            isinstance(k, str) and isinstance(v, str) and len(v) <= _SOURCE_TEXT
            for k, v in source.items())):
        raise ValueError(f"kernels task source must be a dict of strings of at most "
                         f"{_SOURCE_TEXT} characters; got {short_repr(source)}")
    return TaskShape(KERNELS_ONLY, KERNELS_ONLY, 1, None, seq_len, True)


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


@dataclass(frozen=True)
class TaskShape:
    """What a model needs from a task, known from ``Task.info()`` without building its data."""

    name: str
    kind: str  # "lm", "classify" or "kernels" (token mixers alone: no task)
    vocab_size: int
    num_classes: int | None  # classify only
    seq_len: int  # the training length n
    extrapolates: bool  # False: the task exists at seq_len only


_SOURCE_KINDS = ("stdlib", "file", "bytes")  # file: a path, dropped (tnn_core <= 0.2 wrote it)
_USER_TEXT = ("file", "bytes")  # trained on a user's text: evaluating it needs the text again
_SHA256 = frozenset("0123456789abcdef")


def _settings(info: dict) -> dict | None:
    """``info["settings"]`` without charlm's legacy ``text``: a path, which is never opened."""
    settings = info.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise ValueError(f"task settings must be a dict; got {type(settings).__name__}")
    if info.get("name") == "charlm" and settings is not None and "text" in settings:
        settings = {k: v for k, v in settings.items() if k != "text"}
    return settings


def task_shape(info) -> TaskShape:
    """Validate ``Task.info()`` read from an untrusted file and return its shape.

    Every field's type is checked: the settings by their config's bounds, charlm's
    vocabulary (required) as at most ``max_vocab - 1`` distinct characters in code-point
    order (as ``build_vocab`` makes it: a shuffled vocabulary would silently read every
    character as another), its source as a dict of strings. A bad one is a ValueError
    naming it. Nothing is built, so this is cheap, and nothing is opened: charlm's legacy
    ``settings.text`` path is dropped."""
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        raise ValueError(f"task info must be a dict with a string 'name'; got "
                         f"{short_repr(info)}")
    name = info["name"]
    if name == KERNELS_ONLY:
        return _kernels_shape(info)
    task_cls, _ = _entry(name)
    config = task_config(name, _settings(info))
    if name == "charlm":
        vocab, source = info.get("vocab"), info.get("source")
        if not (isinstance(vocab, str) and len(vocab) < config.max_vocab
                and len(set(vocab)) == len(vocab)):
            raise ValueError(f"charlm vocab must be a string of at most max_vocab - 1 = "
                             f"{config.max_vocab - 1} distinct characters; got {short_repr(vocab)}")
        if list(vocab) != sorted(vocab):
            raise ValueError(f"charlm vocab must be in code-point order, as the task builds it; "
                             f"got {short_repr(vocab)} (a reordered vocabulary maps every "
                             f"character to another)")
        if source is not None and not (
                isinstance(source, dict) and source.get("kind", "stdlib") in _SOURCE_KINDS
                and all(isinstance(source.get(k, ""), str) and len(source.get(k, "")) <= 4096
                        for k in ("name", "sha256"))):
            raise ValueError(f"charlm source must be a dict with kind in {_SOURCE_KINDS} and "
                             f"string name and sha256; got {short_repr(source)}")
        vocab_size = len(vocab) + 1  # as CharLMTask.__init__: UNK, then the vocabulary
    elif name == "recall":
        vocab_size = 1 + config.num_keys + config.num_values  # as RecallTask.__init__
    else:
        vocab_size = len(TOKENS) if name == "listops" else LEVELS
    seq_len = config.size**2 if name == "digits" else config.seq_len
    return TaskShape(name, task_cls.kind, vocab_size, task_cls.num_classes, seq_len,
                     task_cls.extrapolates)


def task_from_info(info: dict, data: bytes | None = None) -> Task:
    """Rebuild a task from ``Task.info()`` (e.g. checkpoint metadata), checked by ``task_shape``.

    charlm keeps the stored vocabulary. A charlm trained on a user's text needs that text
    again as ``data`` (its SHA-256 must match the stored one); the info never names a
    file to read. ``data`` for a model of the stdlib corpus is refused.
    """
    name = task_shape(info).name
    if name == KERNELS_ONLY:
        raise ValueError(kernels_only_reason(info))
    config = task_config(name, _settings(info))
    if name != "charlm":
        if data is not None:
            raise ValueError(f"a text was given, but task {name} has no text")
        return get_task(name, config)
    source = info.get("source") or {"kind": "stdlib"}
    kind, text_name = source.get("kind", "stdlib"), short_repr(source.get("name", ""))
    if kind not in _USER_TEXT:
        if data is not None:
            raise ValueError("a text was given, but this charlm model was trained on the Python "
                             "stdlib's source, which it reads itself; give no text")
        return CharLMTask(config, vocab=info.get("vocab"))
    if data is None:
        raise ValueError(f"this charlm model was trained on the text {text_name}, which the "
                         f"checkpoint does not hold; give that text again to evaluate it")
    wanted = source.get("sha256", "")
    if len(wanted) == 64 and set(wanted) <= _SHA256:
        got = hashlib.sha256(data).hexdigest()
        if got != wanted:
            raise ValueError(f"the text given (SHA-256 {got[:12]}…) is not the one this model "
                             f"was trained on, {text_name} (SHA-256 {wanted[:12]}…)")
    return CharLMTask(config, vocab=info.get("vocab"), data=data, data_name=source.get("name"))
