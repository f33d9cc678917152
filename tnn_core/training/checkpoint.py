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

``load`` / ``load_bytes`` check the bytes before anything parses them: a pickle
(protocol 2+ starts with 0x80) or a ``torch.save`` zip ("PK") is refused without ever
unpickling, since unpickling can run code. Then the safetensors header is validated
(length, JSON, dtypes, offsets inside the file), the config rebuilt, and the tensors
compared with the model's names and shapes and checked finite. Every failure is a
``CheckpointError`` (a ValueError) that says what is wrong.

CausalLM ties its head to the embedding by reusing ``embed.weight``, so the state dict
holds no second, shared tensor and safetensors saves it as is.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import nn

from tnn_core import __version__
from tnn_core.models import ModelConfig, build_model

__all__ = ["CheckpointError", "CheckpointInfo", "FORMAT", "MAX_BYTES", "SHIPPED_DIR", "save",
           "load", "load_bytes", "read_info", "shipped", "migrate_train_config"]

log = logging.getLogger(__name__)

FORMAT = "toeplitz-lab/1"
MAX_BYTES = 200_000_000  # larger files are refused before they are read
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "checkpoints"
_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32,
           "F64": torch.float64}
_REQUIRED = ("format", "model_config", "task")
# the model fields a 0.1.0 TrainConfig repeated beside the optimisation ones
_FLAT_MODEL_FIELDS = ("operator", "causal", "dim", "layers", "expand_ratio", "decay", "rank",
                      "band", "rpe_dim", "rpe_layers", "activation")


class CheckpointError(ValueError):
    """A file that is not a valid Toeplitz Lab checkpoint; the message says why."""


@dataclass
class CheckpointInfo:
    model_config: ModelConfig
    task: dict  # Task.info()
    history: dict = field(default_factory=dict)
    version: str = ""
    source: str = ""  # the path, or "<bytes>"
    size_bytes: int = 0

    @property
    def final_metrics(self) -> dict:
        evals = self.history.get("evals") or [{}]
        return evals[-1]


def save(path: str | os.PathLike, model: nn.Module, task_info: dict, history: dict | None = None,
         model_config: ModelConfig | None = None) -> Path:
    """Write ``model`` and its metadata to ``path`` atomically (temp file, then os.replace).

    Refuses non-finite weights. ``model_config`` defaults to ``model.config``."""
    path = Path(path)
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
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644  # mkstemp makes 0600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    log.info("saved %s (%d bytes)", path, len(data))
    return path


def _read(path: str | os.PathLike) -> bytes:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise CheckpointError(f"{path}: {size:,} bytes is above the {MAX_BYTES:,} limit")
        return path.read_bytes()
    except OSError as err:
        raise CheckpointError(f"cannot read {path}: {err.strerror}") from None


def _header(data: bytes, source: str) -> dict:
    """The safetensors header of ``data``, validated against its length."""
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise CheckpointError(f"{source} is a pickle file (protocol {data[1]}); pickles can "
                              f"run code, so it is never opened. Use a .safetensors file")
    if data[:4] == b"PK\x03\x04":
        raise CheckpointError(f"{source} is a zip archive (the torch.save format, which holds "
                              f"a pickle); it is never opened. Use a .safetensors file")
    if len(data) < 10:
        raise CheckpointError(f"{source} is not a safetensors file: only {len(data)} bytes "
                              f"(truncated or empty)")
    (length,) = struct.unpack("<Q", data[:8])
    if data[8:9] != b"{" or length > 100_000_000:
        raise CheckpointError(f"{source} is not a safetensors file (no JSON header after the "
                              f"8-byte length)")
    if 8 + length > len(data):
        raise CheckpointError(f"{source} is truncated: its header needs {8 + length:,} bytes, "
                              f"the file has {len(data):,}")
    try:
        header = json.loads(data[8 : 8 + length])
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{source} is corrupt: its header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{source} is corrupt: its header is not a JSON object")
    body = len(data) - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = entry["data_offsets"]
            dtype = entry["dtype"]
        except (TypeError, KeyError, ValueError):
            raise CheckpointError(f"{source} is corrupt: bad header entry for {name}") from None
        if dtype not in _DTYPES:
            raise CheckpointError(f"{source}: tensor {name} has dtype {dtype}; allowed: "
                                  f"{sorted(_DTYPES)}")
        if not 0 <= start <= end or end > body:
            raise CheckpointError(f"{source} is truncated or corrupt: tensor {name} spans bytes "
                                  f"{start}..{end} of a {body:,}-byte data section")
    return header


def _metadata(header: dict, source: str) -> dict:
    meta = header.get("__metadata__") or {}
    missing = [key for key in _REQUIRED if key not in meta]
    if missing:
        raise CheckpointError(f"{source} is a safetensors file but not a Toeplitz Lab "
                              f"checkpoint: metadata {missing} missing")
    if meta["format"] != FORMAT:
        raise CheckpointError(f"{source}: format must be {FORMAT!r}; got {meta['format']!r}")
    out = {}
    for key in ("model_config", "task", "history"):
        try:
            out[key] = json.loads(meta.get(key, "{}"))
        except json.JSONDecodeError as err:
            raise CheckpointError(f"{source}: metadata {key} is not JSON ({err})") from None
    out["version"] = meta.get("version", "")
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


def _info(header: dict, source: str, size: int) -> CheckpointInfo:
    meta = _metadata(header, source)
    try:
        config = ModelConfig.from_dict(meta["model_config"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: bad model config: {err}") from None
    history = meta["history"]
    if isinstance(history, dict) and isinstance(history.get("train_config"), dict):
        history["train_config"] = migrate_train_config(history["train_config"], config)
    return CheckpointInfo(config, meta["task"], history, meta["version"], source, size)


def read_info(path: str | os.PathLike) -> CheckpointInfo:
    """The metadata of a checkpoint file, validated, without building the model."""
    data = _read(path)
    return _info(_header(data, str(path)), str(path), len(data))


def load_bytes(data: bytes, source: str = "<bytes>") -> tuple[nn.Module, CheckpointInfo]:
    """Rebuild the model from checkpoint bytes (e.g. an upload); nothing is written to disk."""
    if not isinstance(data, bytes | bytearray):
        raise CheckpointError(f"{source}: expected bytes; got {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_BYTES:
        raise CheckpointError(f"{source}: {len(data):,} bytes is above the {MAX_BYTES:,} limit")
    header = _header(data, source)
    info = _info(header, source, len(data))
    try:
        tensors = load_tensors(data)
    except Exception as err:  # safetensors raises its own SafetensorError
        raise CheckpointError(f"{source} is corrupt: {err}") from None
    model = build_model(info.model_config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{source}: tensors do not match the model config: missing "
                              f"{missing[:5]}, unexpected {unexpected[:5]}")
    dtypes = {t.dtype for t in tensors.values()}
    for name, tensor in tensors.items():
        if tensor.shape != expected[name].shape:
            raise CheckpointError(f"{source}: tensor {name} has shape {tuple(tensor.shape)}; "
                                  f"the model config needs {tuple(expected[name].shape)}")
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"{source}: tensor {name} has NaN or Inf values")
    if len(dtypes) > 1:
        raise CheckpointError(f"{source}: tensors must share one dtype; "
                              f"got {sorted(map(str, dtypes))}")
    model = model.to(dtypes.pop() if dtypes else torch.float32)
    model.load_state_dict(tensors, strict=True)
    model.eval()
    return model, info


def load(path: str | os.PathLike) -> tuple[nn.Module, CheckpointInfo]:
    """Rebuild the model stored at ``path``; any problem raises CheckpointError."""
    return load_bytes(_read(path), str(path))


def shipped(directory: str | os.PathLike | None = None) -> list[CheckpointInfo]:
    """The checkpoints in the repository's ``checkpoints/`` folder, by file name.

    Files that fail validation are logged and left out."""
    folder = Path(directory) if directory is not None else SHIPPED_DIR
    out = []
    for path in sorted(folder.glob("*.safetensors")):
        try:
            out.append(read_info(path))
        except CheckpointError as err:
            log.warning("skipping %s: %s", path, err)
    return out
