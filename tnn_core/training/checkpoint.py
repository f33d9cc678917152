"""Checkpoints: one ``.safetensors`` file per model, never pickle.

The file holds the weights (``model.state_dict()``) and string metadata, each value JSON:

    format        "toeplitz-lab/1"
    model_config  ModelConfig.to_dict(), enough to rebuild the model
    task          Task.info(): name, settings, and for charlm the vocabulary and source
    history       the training history (evaluations, wall time, device, exact command,
                  ``train_config``: TrainConfig.to_dict())
    version       tnn_core.__version__ that wrote it

Files written by tnn_core 0.1.0 store a flat train config; ``migrate_train_config``
turns it into today's nested one on load.

``load`` / ``load_bytes`` validate before they allocate. In order:

1. the bytes: never a pickle or a ``torch.save`` zip, a regular file only, at most
   ``MAX_BYTES`` (``checkpoint_header``);
2. the safetensors header: bounded in size and nesting, every tensor entry well typed,
   byte ranges that tile the data section exactly (``checkpoint_header``);
3. the metadata: a dict of strings, each JSON value depth-checked, then typed: the model
   config by ``ModelConfig`` (every field bounded above and below, floats finite), the
   task by ``tasks.task_shape`` (it must be the model's: kind, vocabulary, classes; it
   names no file), the history by ``history.validated_history`` (the one schema every
   reader of a history reads);
4. the budgets: at most ``MAX_PARAMETERS`` parameters, and the length sweep (the
   evaluation Inspect runs, up to 4x the training length) within ``budget``'s memory and
   time limits, counted by every dimension that allocates (width, layers, length, r, m,
   heads, max_length);
5. the tensors: names and shapes compared with the model built on the meta device (no
   memory), and only then the data read, checked finite, and the real model built.

Every failure is a ``CheckpointError`` (a ValueError, defined with the header checks) of
one sentence naming the field, the value and the limit. Steps 2–4 run inside a last
safety net that turns an exception nobody foresaw into a CheckpointError too: they parse
untrusted data and allocate nothing large, so there is nothing to leak.

Tensors stored in float16 or bfloat16 are widened to float32 on load (exactly): the
operators compute in float32 or float64.

``save`` writes a temp file ``.NAME.PID.RANDOM.tmp`` beside the target, fsyncs it,
renames it over the target and fsyncs the folder, so a crash leaves the old file or the
new one. The temp file is removed on any failure; one left by a killed writer (its
process gone, or older than ``STALE_TEMP_SECONDS``) is removed by the next save into
that folder.

CausalLM ties its head to the embedding by reusing ``embed.weight``, so the state dict
holds no second, shared tensor and safetensors saves it as is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import nn

from tnn_core import __version__
from tnn_core.checks import short_repr
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import build_operator
from tnn_core.training.budget import BudgetError, check_sweep, meta_layers, parameter_count
from tnn_core.training.checkpoint_header import (
    DTYPES,
    MAX_BYTES,
    MAX_HEADER_BYTES,
    CheckpointError,
    TensorEntry,
    parse_json,
    read_bytes,
    read_header,
)
from tnn_core.training.history import final_metrics, validated_history
from tnn_core.training.tasks import KERNELS_ONLY, TASKS, task_shape

__all__ = ["CheckpointError", "CheckpointInfo", "FORMAT", "MAX_PARAMETERS", "SHIPPED_DIR",
           "STALE_TEMP_SECONDS", "save", "to_bytes", "write_atomically", "load",
           "load_bytes", "read_info", "migrate_train_config"]

log = logging.getLogger(__name__)

FORMAT = "toeplitz-lab/1"
MAX_PARAMETERS = 50_000_000  # 200 MB of float32, as large as MAX_BYTES allows
STALE_TEMP_SECONDS = 600  # a temp file this old is stale even if its pid is alive (reused)
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "checkpoints"
_WIDENED = {"F16", "BF16"}  # loaded as float32
_POLE_SLACK = 1e-5  # an SSM pole on the unit circle, rounded to float16/32, may read above 1
_REQUIRED = ("format", "model_config", "task")
_TEMP = re.compile(r"^\..+\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")  # save's temp file names
# the model fields a 0.1.0 TrainConfig repeated beside the optimisation ones
_FLAT_MODEL_FIELDS = ("operator", "causal", "dim", "layers", "expand_ratio", "decay", "rank",
                      "band", "rpe_dim", "rpe_layers", "activation")


@dataclass
class CheckpointInfo:
    model_config: ModelConfig
    task: dict  # Task.info()
    history: dict = field(default_factory=dict)
    version: str = ""
    source: str = ""  # the path, or "<bytes>"
    size_bytes: int = 0
    sha256: str = ""  # of the file's bytes: what a converted model's lineage names

    @property
    def final_metrics(self) -> dict:
        return final_metrics(self.history)


# -- save ------------------------------------------------------------------------------------
def save(path: str | os.PathLike, model: nn.Module, task_info: dict, history: dict | None = None,
         model_config: ModelConfig | None = None) -> Path:
    """Write ``model`` and its metadata to ``path`` atomically (temp file, then os.replace).

    Refuses non-finite weights and a header above MAX_HEADER_BYTES. ``model_config``
    defaults to ``model.config``."""
    path = Path(path)
    write_atomically(path, to_bytes(model, task_info, history, model_config))
    log.info("saved %s", path)
    return path


def to_bytes(model: nn.Module, task_info: dict, history: dict | None = None,
             model_config: ModelConfig | None = None) -> bytes:
    """The checkpoint file's bytes (``save`` writes them; an upload keeps them in memory)."""
    config = model_config or getattr(model, "config", None)
    if not isinstance(config, ModelConfig):
        raise ValueError("model_config must be a ModelConfig (or the model must carry one); "
                         f"got {type(config).__name__}")
    tensors = {}
    for name, tensor in model.state_dict().items():
        if not torch.isfinite(tensor).all():
            raise ValueError(f"refusing to save non-finite weights: {name} has NaN or Inf")
        tensors[name] = tensor.detach().to("cpu").contiguous().clone()
    metadata = {"format": FORMAT, "model_config": json.dumps(config.to_dict()),
                "task": json.dumps(task_info), "history": json.dumps(history or {}),
                "version": __version__}
    data = save_tensors(tensors, metadata=metadata)
    (header_bytes,) = struct.unpack("<Q", data[:8])
    if header_bytes > MAX_HEADER_BYTES:
        raise ValueError(f"refusing to save a header of {header_bytes:,} bytes: the loader "
                         f"reads at most MAX_HEADER_BYTES = {MAX_HEADER_BYTES:,} (shorten the "
                         f"history)")
    return data


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never
    a part: a temp file beside it (removed on any failure; ones left by killed writers are
    removed first), fsynced, renamed over ``path``, then the folder fsynced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path.parent)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644  # mkstemp makes 0600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                               dir=path.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)  # gone after os.replace; removes it on failure
    _fsync_folder(path.parent)


def _remove_stale_temps(folder: Path) -> None:
    """Remove temp files of ``save`` whose writer is gone (killed mid-write)."""
    now = time.time()
    for candidate in folder.glob(".*.tmp"):
        match = _TEMP.match(candidate.name)
        if match is None:
            continue
        try:
            stale = (not _alive(int(match["pid"]))
                     or now - candidate.stat().st_mtime > STALE_TEMP_SECONDS)
            if stale:
                candidate.unlink()
                log.info("removed %s, a temp file left by a killed save", candidate)
        except OSError:  # another save removed it first, or it is not ours to remove
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # a process of another user, or not a pid: leave it to the age test
    return True


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable: fsync the folder's entry table."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- load: the metadata, typed -----------------------------------------------------------------
def _metadata(meta: dict, source: str) -> dict:
    missing = [key for key in _REQUIRED if key not in meta]
    if missing:
        raise CheckpointError(f"{source} is a safetensors file but not a Toeplitz Lab "
                              f"checkpoint: metadata {missing} missing")
    if meta["format"] != FORMAT:
        raise CheckpointError(f"{source}: format must be {FORMAT!r}; got "
                              f"{short_repr(meta['format'])}")
    out = {key: parse_json(meta.get(key, "{}").encode(), f"metadata {key}", source)
           for key in ("model_config", "task", "history")}
    out["version"] = meta.get("version", "")
    if len(out["version"]) > 100:
        raise CheckpointError(f"{source}: metadata version has {len(out['version']):,} "
                              f"characters; the limit is 100")
    return out


def migrate_train_config(train_config: dict, model_config: ModelConfig) -> dict:
    """A history's ``train_config`` in today's form: ``TrainConfig.from_dict`` reads it.

    Up to tnn_core 0.1.0 (the shipped checkpoints) TrainConfig repeated 11 model fields
    (operator, causal, dim, ..., activation) beside the optimisation ones; now it holds
    ``model``, a ModelConfig. The file's own ``model_config`` is that model (it is what
    the weights were built from, with causal and the vocabulary resolved), so the flat
    fields give way to it. A nested config is returned unchanged."""
    if "model" in train_config:
        return train_config
    kept = {k: v for k, v in train_config.items() if k not in _FLAT_MODEL_FIELDS}
    return {**kept, "model": model_config.to_dict()}


def _expected_tensors(config: ModelConfig, source: str) -> dict[str, torch.Size]:
    """The state dict's names and shapes for ``config``, without data or a full build.

    A one-layer model is built on the meta device, and one more layer for each distinct
    operator of ``layer_operators``; layers with the same operator are identical, so layer
    i's entries are its operator's layer renamed. A config with 10^6 layers thus costs
    one layer's construction before it is refused."""
    if config.task == KERNELS_ONLY:
        return _expected_mixers(config, source)
    one, layers = meta_layers(config)
    count = parameter_count(config)
    if count > MAX_PARAMETERS:
        raise CheckpointError(f"{source}: its model config asks for {count:,} parameters; the "
                              f"limit is MAX_PARAMETERS = {MAX_PARAMETERS:,}")
    expected = {name: t.shape for name, t in one.state_dict().items()
                if not name.startswith("layers.")}
    for i in range(config.layers):
        layer = layers[config.layer_operator(i)]
        expected.update({f"layers.{i}.{name}": t.shape for name, t in layer.state_dict().items()})
    return expected


def _expected_mixers(config: ModelConfig, source: str) -> dict[str, torch.Size]:
    """``_expected_tensors`` of a kernels-only model (``models.MixerStack``): layer i's
    operator alone, each distinct operator built once on the meta device."""
    with torch.device("meta"):
        built = {op: build_operator(op, config.dim)
                 for op in {config.layer_operator(i) for i in range(config.layers)}}
    sizes = {op: sum(p.numel() for p in m.state_dict().values()) for op, m in built.items()}
    count = sum(sizes[config.layer_operator(i)] for i in range(config.layers))
    if count > MAX_PARAMETERS:
        raise CheckpointError(f"{source}: its model config asks for {count:,} parameters; the "
                              f"limit is MAX_PARAMETERS = {MAX_PARAMETERS:,}")
    return {f"layers.{i}.{name}": t.shape for i in range(config.layers)
            for name, t in built[config.layer_operator(i)].state_dict().items()}


def _validated(data: bytes, source: str) -> tuple[CheckpointInfo, dict[str, TensorEntry]]:
    """Steps 2-5 of the module docstring, all but reading the tensors' data."""
    raw_meta, entries = read_header(data, source)
    meta = _metadata(raw_meta, source)
    try:
        config = ModelConfig.from_dict(meta["model_config"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: bad model config: {err}") from None
    try:
        shape = task_shape(meta["task"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: bad task metadata: {err}") from None
    checks = [("task", shape.kind)]
    if shape.kind != KERNELS_ONLY:
        checks.append(("vocab_size", shape.vocab_size))
    if shape.kind == "classify":
        checks.append(("num_classes", shape.num_classes))
    for name, wanted in checks:
        if getattr(config, name) != wanted:
            raise CheckpointError(f"{source}: model config {name} is "
                                  f"{getattr(config, name)!r}, but its task {shape.name} "
                                  f"needs {wanted!r}")
    history = meta["history"]
    if isinstance(history, dict) and "metric_name" in history and shape.name in TASKS:
        # its numbers are the task's metric
        history = {**history, "metric_name": TASKS[shape.name][0].metric_name}
    try:
        meta["history"] = validated_history(history)  # training/history.py
    except ValueError as err:
        raise CheckpointError(f"{source}: bad history metadata: {err}") from None
    expected = _expected_tensors(config, source)
    element = DTYPES[next(iter(entries.values())).dtype][1] if entries else 4
    try:
        if shape.kind != KERNELS_ONLY:  # token mixers alone are never evaluated
            check_sweep(config, shape.seq_len, shape.extrapolates, max(element, 4))
    except BudgetError as err:
        raise CheckpointError(f"{source}: task seq_len {shape.seq_len} with this model: "
                              f"{err}") from None
    missing = sorted(set(expected) - set(entries))
    unexpected = sorted(set(entries) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{source}: tensors do not match the model config: missing "
                              f"{missing[:5]}, unexpected {unexpected[:5]}")
    for name, entry in entries.items():
        if entry.shape != tuple(expected[name]):
            raise CheckpointError(f"{source}: tensor {name} has shape {entry.shape}; "
                                  f"the model config needs {tuple(expected[name])}")
    history = meta["history"]
    if isinstance(history.get("train_config"), dict):
        history["train_config"] = migrate_train_config(history["train_config"], config)
    info = CheckpointInfo(config, meta["task"], history, meta["version"], source, len(data),
                          hashlib.sha256(data).hexdigest())
    return info, entries


def _checked(data: bytes, source: str) -> tuple[CheckpointInfo, dict[str, TensorEntry]]:
    """``_validated``, with any exception it did not foresee turned into a CheckpointError.

    The net is this wide on purpose: everything inside parses untrusted bytes with small
    allocations only, and a reader must get one sentence, never a traceback."""
    try:
        return _validated(data, source)
    except CheckpointError:
        raise
    except Exception as err:  # noqa: BLE001 - the documented safety net
        raise CheckpointError(f"{source} could not be validated ({type(err).__name__}: "
                              f"{short_repr(str(err))})") from err


def read_info(path: str | os.PathLike) -> CheckpointInfo:
    """The metadata of a checkpoint file, validated (tensor shapes too), without its data."""
    data = read_bytes(path)
    return _checked(data, str(path))[0]


def load_bytes(data: bytes, source: str = "<bytes>") -> tuple[nn.Module, CheckpointInfo]:
    """Rebuild the model from checkpoint bytes (e.g. an upload); nothing is written to disk."""
    if not isinstance(data, bytes | bytearray):
        raise CheckpointError(f"{source}: expected bytes; got {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_BYTES:
        raise CheckpointError(f"{source}: {len(data):,} bytes is above the {MAX_BYTES:,} limit")
    info, entries = _checked(data, source)
    try:
        tensors = load_tensors(data)
    except Exception as err:  # noqa: BLE001 - safetensors raises its own SafetensorError
        raise CheckpointError(f"{source} is corrupt: {err}") from None
    for name, tensor in tensors.items():
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"{source}: tensor {name} has NaN or Inf values")
        if name.endswith(".gtu.op.poles"):  # an SSM's (re, im) pairs [D, s, 2]
            radius = float(torch.linalg.vector_norm(tensor.double(), dim=-1).max()) \
                if tensor.numel() else 0.0
            if radius > 1 + _POLE_SLACK:
                raise CheckpointError(f"{source}: tensor {name}: every SSM pole must have "
                                      f"|z| <= 1 (a recurrence that never grows); got a "
                                      f"pole with |z| = {radius:.6g}")
    stored = next(iter(entries.values())).dtype if entries else "F32"
    dtype = torch.float32 if stored in _WIDENED else DTYPES[stored][0]
    model = build_model(info.model_config).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    model.eval()
    return model, info


def load(path: str | os.PathLike) -> tuple[nn.Module, CheckpointInfo]:
    """Rebuild the model stored at ``path``; any problem raises CheckpointError."""
    return load_bytes(read_bytes(path), str(path))

