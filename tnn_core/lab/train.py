"""Page "Train": the run its form describes, its autosave, and what the progress charts draw.

Nothing is lost: every run the page starts is autosaved under the user folder, in
``autosave/RUN_ID.safetensors`` with the CLI's resume file beside it (``cli.save_run``),
every ``checkpoint_every`` steps, when it stops (Stop, or its owner's browser session
ended) and at the end; a run on an uploaded text keeps that text beside them
(``RUN_ID.text``), as a resumed run needs it. A run starts only in a training place of
the server (``claim_training_place``), and belongs to the page that started it (its
owner key); ``LiveRuns`` finds a run still running for a reloaded page;
``autosaves`` lists the rest, and ``resumed_run`` continues one exactly as it would have
gone on (``resume.load_resume``). Inspect's list of saved models does not look into the
autosave folder.

The kernels forming during training are drawn from ``common.snapshot_view``.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tnn_core.lab.common.background import JOB_THREADS, BackgroundRun, Progress
from tnn_core.lab.common.snapshot_view import SnapshotView, snapshot_view
from tnn_core.lab.common.work_slots import WORK_SLOTS, NoPlace, Slot
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import read_info
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.resume import (
    complete_save,
    load_resume,
    pending_path,
    read_state,
    resume_path,
)
from tnn_core.training.tasks import CharLMConfig, CharLMTask, Task, get_task, task_from_info
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["SIZES", "TASK_SETTINGS", "TRAINING_NICE",
           "app_task", "app_config", "form_values",
           "AUTOSAVE_FOLDER", "autosave_path", "new_run", "resumed_run", "Autosave", "autosaves",
           "discard_autosave", "claim_training_place", "NoPlace", "new_owner_key",
           "LiveRuns", "LIVE_RUNS",
           "ProgressView", "progress_view", "SnapshotView", "snapshot_view",
           # the run itself, and the largest text a run may be given
           "BackgroundRun", "MAX_TEXT_BYTES"]

log = logging.getLogger(__name__)

SIZES = {"tiny": (32, 1), "small": (64, 2), "medium": (128, 2)}  # name -> (dim d, layers)
TASK_SETTINGS = {"charlm": {"seq_len": 128}, "listops": {"seq_len": 128, "max_depth": 2},
                 "digits": {}, "recall": {}}  # shorter than the CLI's, for a laptop CPU
# a run gets JOB_THREADS torch threads (every core but one), and its thread yields the CPU
# to page scripts when both want it
TRAINING_NICE = 10


def app_task(name: str, text: bytes | None = None, text_name: str = "") -> Task:
    """Task ``name`` at the app's settings; charlm on ``text`` (an upload) when given."""
    settings = TASK_SETTINGS[name]
    if text is not None:
        return CharLMTask.from_bytes(text, text_name or "upload",
                                     config=CharLMConfig(**settings))
    return get_task(name, settings)


def app_config(task: Task, operator: str, size: str, steps: int, lr: float, decay: float,
               rank: int, band: int, device: str, seed: int) -> TrainConfig:
    """The run: warm-up over the first 10 % of the steps, 10 evaluations of 4 batches.

    The operator is causal for language-model tasks (charlm, recall)."""
    dim, layers = SIZES[size]
    op = OperatorConfig(kind=operator, causal=task.kind == "lm", decay=decay, rank=rank,
                        band=band)
    model = model_for_task(ModelConfig(dim=dim, layers=layers, operator=op), task)
    every = max(10, steps // 10)
    return TrainConfig(task=task.name, steps=steps, lr=lr, warmup=max(1, steps // 10),
                       eval_every=every, eval_batches=4, checkpoint_every=every,
                       device=device, seed=seed, model=model)


def _size_name(model: ModelConfig) -> str | None:
    """The name in SIZES of ``model``'s width and depth; None for another size."""
    return next((name for name, shape in SIZES.items() if shape == (model.dim, model.layers)),
                None)


def form_values(config: TrainConfig) -> dict:
    """The Train form's widget values (by key) that start ``config``: a reloaded or resumed
    run shows its settings (a size the form does not offer is left out)."""
    op, size = config.model.operator, _size_name(config.model)
    return {"task": config.task, "operator": op.kind, "steps": config.steps, "lr": config.lr,
            "train_decay": op.decay, "train_rank": op.rank, "train_band": op.band,
            **({"size": size} if size is not None else {})}


# -- autosaves -------------------------------------------------------------------------------
AUTOSAVE_FOLDER = "autosave"  # under the user folder
RUN_ID = re.compile(r"[a-z]+-[a-z]+-\d{8}-\d{6}-[0-9a-f]{4}")  # recall-fd-20250101-120000-1a2b


def autosave_path(user_dir: Path, run_id: str) -> Path:
    """The checkpoint that keeps run ``run_id`` resumable; ValueError for a malformed id."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run must be an id such as recall-fd-20250101-120000-1a2b; "
                         f"got {run_id[:80]!r}")
    return user_dir / AUTOSAVE_FOLDER / f"{run_id}.safetensors"


def _text_path(autosave: Path) -> Path:
    return autosave.with_suffix(".text")


def _app_run(config: TrainConfig, task: Task, autosave: Path, resume=None) -> BackgroundRun:
    return BackgroundRun(config, task, command=f"app: {config.to_dict()}",
                         threads=JOB_THREADS, nice=TRAINING_NICE, autosave=autosave,
                         resume=resume)


def new_run(config: TrainConfig, task: Task, text: bytes | None,
            user_dir: Path) -> tuple[str, BackgroundRun]:
    """(a fresh run id, the run of ``config``, not started) autosaving under ``user_dir``;
    ``text``: charlm's uploaded text, kept for a resume."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_id = f"{config.task}-{config.model.operator.kind}-{stamp}-{secrets.token_hex(2)}"
    path = autosave_path(user_dir, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        _text_path(path).write_bytes(text)
    return run_id, _app_run(config, task, path)


def resumed_run(user_dir: Path, run_id: str, device: str) -> BackgroundRun:
    """The run ``run_id`` continued from its autosave to its steps, on ``device``; not
    started. A save cut off before its last rename is completed first; ValueError says, in
    words without the server's paths, why it cannot (no resume file, a damaged file, ...)."""
    path = autosave_path(user_dir, run_id)
    try:
        complete_save(path)
        if not resume_path(path).is_file():
            raise ValueError(f"run {run_id} cannot be resumed: its resume file is missing "
                             "(a run that diverged keeps none)")
        state = read_state(resume_path(path))
        config = replace(TrainConfig.from_dict(state.train_config), device=device)
        text = _text_path(path).read_bytes() if _text_path(path).is_file() else None
        task = task_from_info(state.task, text)
        resume = load_resume(path, config.to_dict(), task.info())
    except OSError as err:
        raise ValueError(f"run {run_id} cannot be resumed: its files cannot be read "
                         f"({err.strerror or type(err).__name__})") from None
    except ValueError as err:
        raise ValueError(_without_paths(str(err), user_dir, run_id)) from None
    return _app_run(config, task, path, resume)


def _without_paths(sentence: str, user_dir: Path, run_id: str) -> str:
    """``sentence`` with run ``run_id``'s files named in words: the page shows no server
    path."""
    path = autosave_path(user_dir, run_id)
    names = {pending_path(path): f"the pending resume file of run {run_id}",
             resume_path(path): f"the resume file of run {run_id}",
             _text_path(path): f"the text of run {run_id}", path: f"run {run_id}",
             user_dir: "the user folder"}
    for file, words in names.items():  # each after the paths it begins
        sentence = sentence.replace(str(file), words)
    return sentence


def discard_autosave(user_dir: Path, run_id: str) -> None:
    """Delete run ``run_id``'s autosave: its checkpoint, resume file (and one pending) and
    text."""
    path = autosave_path(user_dir, run_id)
    for file in (path, resume_path(path), pending_path(path), _text_path(path)):
        file.unlink(missing_ok=True)


@dataclass(frozen=True)
class Autosave:
    """One autosaved run, as the Train page lists it."""

    run_id: str
    description: str  # task, operator and size, e.g. "recall, fd, tiny"
    step: int  # updates done
    steps: int  # updates asked for
    status: str  # the save's: checkpoint (saved while running), stopped, completed, diverged
    resumable: bool  # its resume file, or one pending, is there (a diverged run has none)
    saved_at: float  # the checkpoint's modification time (seconds since the epoch)


def autosaves(user_dir: Path) -> list[Autosave]:
    """The autosaved runs under ``user_dir``, newest first; an unreadable file is skipped."""
    found = []
    for path in (user_dir / AUTOSAVE_FOLDER).glob("*.safetensors"):
        if path.name.endswith(".resume.safetensors") or not RUN_ID.fullmatch(path.stem):
            continue
        try:
            history = read_info(path).history
            config = TrainConfig.from_dict(history["train_config"])
            saved_at = path.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("autosave %s is unreadable: %s", path, err)
            continue
        model = config.model
        size = _size_name(model) or f"d = {model.dim}, {model.layers} layers"
        found.append(Autosave(
            path.stem, f"{config.task}, {model.operator.kind}, {size}",
            history["steps"], config.steps, history["status"],
            resume_path(path).is_file() or pending_path(path).is_file(), saved_at))
    return sorted(found, key=lambda save: save.saved_at, reverse=True)


def claim_training_place(session_id: str) -> Slot:
    """A training place of the server (``work_slots``) for a run of session ``session_id``;
    NoPlace (its ``str()`` the sentence to show) when every place is taken."""
    return WORK_SLOTS.claim("training", session_id, "a training run")


def new_owner_key() -> str:
    """An unguessable key that proves a page's session started (or resumed) a run: the
    page keeps it in its address, so a reload still owns the run."""
    return secrets.token_urlsafe(16)


class LiveRuns:
    """The page's runs by id, shared by every session of the server, so a reloaded page
    finds its run still running. Holds the unfinished runs and those finished since the
    last start; the autosave folder holds the rest. Each run has an owner key: only a
    page that holds it may stop or save the run; any other page only watches it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[BackgroundRun, str]] = {}  # id -> (run, owner key)

    def start(self, run_id: str, run: BackgroundRun, owner_key: str,
              slot: Slot) -> BackgroundRun:
        """Start ``run`` as ``run_id``, owned by ``owner_key``, in training place ``slot``
        (released when it ends). If a run of that id is still running (a second Resume of
        one autosave), that one is returned: ``run`` is never started and ``slot`` is
        released."""
        with self._lock:
            running, _ = self._runs.get(run_id, (None, ""))
            if running is not None and not running.snapshot().finished:
                slot.release()
                return running
            self._runs = {key: kept for key, kept in self._runs.items()
                          if not kept[0].snapshot().finished}
            self._runs[run_id] = run, owner_key
            slot.seconds_left = run.seconds_left  # a refusal says when a place frees up
            run.hold(slot)
            run.start()
            return run

    def get(self, run_id: str) -> BackgroundRun | None:
        with self._lock:
            return self._runs.get(run_id, (None, ""))[0]

    def owns(self, run_id: str, owner_key: str | None) -> bool:
        """Whether ``owner_key`` is the key run ``run_id`` was started with."""
        with self._lock:
            _, key = self._runs.get(run_id, (None, ""))
        return bool(key and owner_key) and secrets.compare_digest(key, owner_key)

    def running(self) -> set[str]:
        """The ids of the runs not finished yet."""
        with self._lock:
            return {key for key, (run, _) in self._runs.items()
                    if not run.snapshot().finished}


LIVE_RUNS = LiveRuns()  # the server's one: every session's Train page reads it


@dataclass(frozen=True)
class ProgressView:
    """A run's progress as the charts draw it."""

    fraction: float  # step / steps, at most 1
    loss_steps: np.ndarray  # [s] the steps with a training loss
    losses: np.ndarray  # [s] training loss (nats)
    eval_steps: np.ndarray  # [e] the steps evaluated
    eval_losses: np.ndarray  # [e] validation loss (nats)
    eval_metrics: np.ndarray  # [e] the task's validation metric
    eval_intervals: np.ndarray  # [e, 2] its 95 % interval (NaN where none was recorded)
    last_loss: float | None  # the latest training loss; None before the first step
    last_metric: float | None  # the latest validation metric; None before the first
    last_sequences: int | None  # the sequences that evaluation scored

    @property
    def last_interval(self) -> tuple[float, float] | None:
        """The latest evaluation's 95 % interval; None when it recorded none."""
        if not len(self.eval_intervals) or not np.isfinite(self.eval_intervals[-1]).all():
            return None
        low, high = self.eval_intervals[-1]
        return float(low), float(high)


def progress_view(progress: Progress) -> ProgressView:
    losses = np.array(progress.losses, dtype=np.float64).reshape(-1, 2)  # (s, [step, loss])
    evals = progress.evals
    metrics = np.array([e["metric"] for e in evals], dtype=np.float64)
    intervals = np.array([e.get("ci95") or (np.nan, np.nan) for e in evals],
                         dtype=np.float64).reshape(-1, 2)
    return ProgressView(
        fraction=min(progress.step / max(progress.steps, 1), 1.0),
        loss_steps=losses[:, 0].astype(np.int64), losses=losses[:, 1],
        eval_steps=np.array([e["step"] for e in evals], dtype=np.int64),
        eval_losses=np.array([e["loss"] for e in evals], dtype=np.float64),
        eval_metrics=metrics, eval_intervals=intervals,
        last_loss=float(losses[-1, 1]) if len(losses) else None,
        last_metric=float(metrics[-1]) if len(metrics) else None,
        last_sequences=evals[-1].get("sequences") if evals else None)
