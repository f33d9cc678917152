"""The authors' checkpoint files, read without running anything in them (issue 36).

``read_foreign`` reads tnn-pytorch's state dicts (``torch.save``, zip or legacy format,
perhaps under "state_dict" or "model"; or ``safetensors.torch.save_file``) and ski-tnn's
fairseq checkpoints (a ``torch.save``d dict: "model", the state dict; "args", an
``argparse.Namespace``, or "cfg", a dict perhaps of omegaconf containers; and the
optimizer's state, Adam's moments, as large as the model).

A pickle is read by ``pickle_data``'s inert unpickler only: nothing is imported or called,
and the storages it names are records. Then only the tensors of the model's state dict
are built, from records of ``torch._utils._rebuild_tensor_v2`` (or ``_rebuild_parameter``),
each storage read alone, by seeking: a zip member ``*/data/{key}``, or its place in the
legacy file's storage section. The optimizer's storages are never read.

Bounds, each checked before the bytes it guards are read:

- the file: a regular file (no FIFO, device or directory) of at most
  ``FOREIGN_MAX_BYTES``; a safetensors file, read whole, at most ``MAX_BYTES``;
- a zip: its 22-byte end record last (no comment), at most ``MAX_ZIP_MEMBERS`` members in
  a central directory of at most ``MAX_ZIP_DIRECTORY``, every member stored (torch never
  compresses) and inside the file, by the central directory, before any member is read;
- the pickles: ``pickle_data``'s bounds on bytes, objects and the settings' nesting;
- a storage: elements times element size equal its bytes in the file exactly; a tensor:
  rank at most ``MAX_RANK``, offset and strided extent inside its storage, a name of at
  most ``MAX_NAME`` characters; the storages read, and the tensors built, ``MAX_BYTES``.

Float16 and bfloat16 tensors are widened to float32 (exactly); other dtypes are kept.
Every failure is a ``CheckpointError`` of one sentence naming the source, what was wrong
and the limit; a last safety net turns anything unforeseen into one too.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import pickle
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from safetensors.torch import load as load_safetensors

from tnn_core.checks import short_repr
from tnn_core.convert.pickle_data import (
    MAX_NAME,
    Budget,
    Call,
    StorageRef,
    as_mapping,
    describe,
    load_inert,
    plain,
)
from tnn_core.files import FileRefused, open_regular
from tnn_core.training.checkpoint_header import MAX_BYTES, CheckpointError, read_header

__all__ = ["CONTAINERS", "FOREIGN_MAX_BYTES", "MAX_RANK", "MAX_ZIP_DIRECTORY", "MAX_ZIP_MEMBERS",
           "ForeignFile", "read_foreign"]

FOREIGN_MAX_BYTES = 4 * 2**30  # a fairseq file holds the optimizer's moments beside the model
MAX_ZIP_MEMBERS = 65_534  # torch writes one per storage, plus six; 0xFFFF means "zip64"
MAX_ZIP_DIRECTORY = 16 * 2**20  # bytes; torch's entries take about 70 each
MAX_RANK = 8  # dimensions of one tensor
CONTAINERS = ("torch.save state dict", "torch.save legacy state dict", "safetensors state dict",
              "fairseq checkpoint (args)", "fairseq checkpoint (cfg)")
_TORCH_MAGIC, _TORCH_PROTOCOL = 0x1950A86A20F9469CFC6C, 1001  # the legacy format's header
_STORAGES = {"FloatStorage": torch.float32, "DoubleStorage": torch.float64,
             "HalfStorage": torch.float16, "BFloat16Storage": torch.bfloat16,
             "LongStorage": torch.int64, "IntStorage": torch.int32, "ShortStorage": torch.int16,
             "CharStorage": torch.int8, "ByteStorage": torch.uint8, "BoolStorage": torch.bool}
_WIDENED = (torch.float16, torch.bfloat16)  # read as float32
_TENSOR = "torch._utils._rebuild_tensor_v2"
_PARAMETERS = ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state")
_CORRUPT = (pickle.UnpicklingError, EOFError, zipfile.BadZipFile, UnicodeDecodeError)


@dataclass(frozen=True)
class ForeignFile:
    """A foreign checkpoint's model and settings, as data."""

    tensors: dict[str, torch.Tensor]  # the model's state dict; float16/bfloat16 -> float32
    settings: dict  # a Namespace's attributes, a cfg's "model" section over its top level
    container: str  # one of CONTAINERS
    sha256: str  # of the file's bytes
    size_bytes: int


def read_foreign(path_or_bytes: str | os.PathLike | bytes, source: str) -> ForeignFile:
    """The state dict and the training settings of an authors' checkpoint (a path or its
    bytes); ``source`` names it in messages. Raises CheckpointError, one sentence."""
    with _opened(path_or_bytes, source) as (handle, size):
        try:
            return _read(handle, size, source)
        except CheckpointError:
            raise
        except _CORRUPT as err:
            raise CheckpointError(f"{source} is corrupt: {short_repr(str(err))}") from err
        except Exception as err:  # noqa: BLE001 - the documented safety net
            raise CheckpointError(f"{source} is corrupt or not a checkpoint this reader "
                                  f"knows (it failed with {type(err).__name__})") from err


@contextlib.contextmanager
def _opened(path_or_bytes, source: str) -> Iterator[tuple[io.BufferedIOBase, int]]:
    """(a binary stream, its size) of the bytes, or of the path: a regular file (links
    followed, checked on the open descriptor) of at most FOREIGN_MAX_BYTES."""
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        handle = io.BytesIO(path_or_bytes)
    else:
        handle = _open_regular(path_or_bytes, source)
    with handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0 or size > FOREIGN_MAX_BYTES:
            raise CheckpointError(f"{source} has {size:,} bytes; a checkpoint has at least 1 "
                                  f"and at most FOREIGN_MAX_BYTES = {FOREIGN_MAX_BYTES:,}")
        handle.seek(0)
        yield handle, size


def _open_regular(path, source: str) -> io.BufferedReader:
    try:
        return open_regular(path, "the checkpoint")
    except FileRefused as err:
        raise CheckpointError(f"{source}: {err}") from None


def _read(handle, size: int, source: str) -> ForeignFile:
    sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
    handle.seek(0)
    head = handle.read(16)
    handle.seek(0)
    if len(head) >= 9 and head[8:9] == b"{":
        tensors, settings, container = _safetensors(handle, size, source), {}, CONTAINERS[2]
    elif head.startswith((b"PK\x03\x04", b"\x80")):
        zipped = head.startswith(b"PK")
        budget = Budget(source)
        with (_zip_archive if zipped else _legacy_file)(handle, size, budget) as (root, fetch):
            state, settings, container = _select(root, CONTAINERS[0 if zipped else 1], source)
            tensors = _tensors(state, fetch, source)
    else:
        raise CheckpointError(f"{source} is not a checkpoint this reader knows: neither a "
                              f"torch.save file (zip or legacy pickle) nor safetensors")
    return ForeignFile(tensors, settings, container, sha256, size)


def _safetensors(handle, size: int, source: str) -> dict[str, torch.Tensor]:
    if size > MAX_BYTES:
        raise CheckpointError(f"{source} is a safetensors file of {size:,} bytes; the limit "
                              f"is MAX_BYTES = {MAX_BYTES:,}")
    data = handle.read(MAX_BYTES + 1)
    read_header(data, source)
    return {name: _widened(t) for name, t in load_safetensors(data).items()}


def _widened(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.float() if tensor.dtype in _WIDENED else tensor


# -- the two torch.save formats: (the records of the pickle, a reader of one storage) -------
def _end_record(handle, size: int, source: str) -> tuple[int, int]:
    """(members, central directory bytes) of a zip, from its end record: the last 22 bytes
    (a zip64 count, 0xFFFF, is above MAX_ZIP_MEMBERS: refused without reading further)."""
    handle.seek(max(size - 22, 0))
    end = handle.read(22)
    if len(end) < 22 or end[:4] != b"PK\x05\x06" or end[20:22] != b"\0\0":
        raise CheckpointError(f"{source} is a truncated zip archive, or one with a comment "
                              f"(torch.save writes none): no end record in its last 22 bytes")
    members, directory = struct.unpack_from("<HI", end, 10)
    return members, directory


def _check_members(archive: zipfile.ZipFile, size: int, source: str) -> None:
    if len(set(archive.namelist())) != len(archive.namelist()):
        raise CheckpointError(f"{source} is a corrupt zip archive: a member name repeats")
    for info in archive.infolist():
        where = f"{source}: zip member {info.filename[:MAX_NAME]!r}"
        if info.compress_type != zipfile.ZIP_STORED:
            raise CheckpointError(f"{where} is compressed (method {info.compress_type}); "
                                  f"torch.save stores members uncompressed, the only kind read")
        if info.file_size != info.compress_size or \
                info.header_offset + info.compress_size > size:
            raise CheckpointError(f"{where} claims {info.file_size:,} bytes, beyond the "
                                  f"{size:,}-byte file")


@contextlib.contextmanager
def _zip_archive(handle, size: int, budget: Budget):
    source = budget.source
    members, directory = _end_record(handle, size, source)
    if members > MAX_ZIP_MEMBERS or directory > MAX_ZIP_DIRECTORY:
        raise CheckpointError(f"{source}: its zip directory lists {members:,} members in "
                              f"{directory:,} bytes; the limits are MAX_ZIP_MEMBERS = "
                              f"{MAX_ZIP_MEMBERS:,} and MAX_ZIP_DIRECTORY = {MAX_ZIP_DIRECTORY:,}")
    with zipfile.ZipFile(handle) as archive:
        _check_members(archive, size, source)
        names = set(archive.namelist())
        pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise CheckpointError(f"{source} is a zip archive but not a torch.save file: it "
                                  f"has {len(pickles)} members named */data.pkl, not 1")
        prefix = pickles[0][: -len("/data.pkl")]
        order = f"{prefix}/byteorder"
        if order in names and (archive.getinfo(order).file_size > 16
                               or archive.read(order) != b"little"):
            raise CheckpointError(f"{source} was written on a big-endian machine; only "
                                  f"little-endian files are read")
        with archive.open(pickles[0]) as stream:
            root = load_inert(stream, budget)

        def fetch(ref: StorageRef, nbytes: int) -> bytearray:
            name = f"{prefix}/data/{ref.key}"
            if name not in names:
                raise CheckpointError(f"{source}: storage {ref.key} has no zip member {name}")
            stored = archive.getinfo(name).file_size
            if stored != nbytes:
                raise CheckpointError(f"{source}: storage {ref.key} claims {ref.numel:,} "
                                      f"elements ({nbytes:,} bytes); its zip member holds "
                                      f"{stored:,} bytes")
            with archive.open(name) as member:
                return _read_exactly(member, nbytes, source)

        yield root, fetch


@contextlib.contextmanager
def _legacy_file(handle, size: int, budget: Budget):
    source = budget.source  # three small pickles first: torch's magic number, 1001, sys info
    if load_inert(handle, budget) != _TORCH_MAGIC:
        raise CheckpointError(f"{source} is a pickle but not a torch.save file (no torch "
                              f"magic number); a bare pickle is never read")
    protocol, info = load_inert(handle, budget), load_inert(handle, budget)
    if protocol != _TORCH_PROTOCOL or not isinstance(info, dict) or \
            info.get("little_endian") is not True:
        raise CheckpointError(f"{source}: its torch.save protocol is not {_TORCH_PROTOCOL} "
                              f"or it was not written on a little-endian machine")
    root = load_inert(handle, budget)
    keys = load_inert(handle, budget)
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise CheckpointError(f"{source} is corrupt: its storage keys are not a list of "
                              f"strings")
    starts, at = {}, handle.tell()
    for key in keys:  # each storage: its element count (8 bytes), then its bytes
        ref = budget.storages.get(key)
        if ref is None:
            raise CheckpointError(f"{source} is corrupt: storage {key[:MAX_NAME]} is listed "
                                  f"but no tensor names it")
        handle.seek(at)
        count = handle.read(8)
        if len(count) < 8:
            raise CheckpointError(f"{source} is truncated: storage {key} is missing")
        numel, nbytes = int.from_bytes(count, "little"), ref.numel * _dtype(ref, source).itemsize
        if numel != ref.numel or at + 8 + nbytes > size:
            raise CheckpointError(f"{source}: storage {key} claims {ref.numel:,} elements "
                                  f"({nbytes:,} bytes); the file says {numel:,} there and "
                                  f"holds {size - at - 8:,} bytes from there on")
        starts[key], at = at + 8, at + 8 + nbytes

    def fetch(ref: StorageRef, nbytes: int) -> bytearray:
        if ref.key not in starts:
            raise CheckpointError(f"{source}: storage {ref.key} is not in the file's storage "
                                  f"section")
        handle.seek(starts[ref.key])
        return _read_exactly(handle, nbytes, source)

    yield root, fetch


def _read_exactly(stream, nbytes: int, source: str) -> bytearray:
    buffer = bytearray(nbytes)
    view, done = memoryview(buffer), 0
    while done < nbytes:
        chunk = stream.read(min(nbytes - done, 1 << 20))
        if not chunk:
            raise CheckpointError(f"{source} is truncated: a storage of {nbytes:,} bytes "
                                  f"ends after {done:,}")
        view[done : done + len(chunk)] = chunk
        done += len(chunk)
    return buffer


# -- which dict is the model, and its settings ----------------------------------------------
def _select(root, bare: str, source: str) -> tuple[dict, dict, str]:
    """(the state dict's items, the settings, the container) of the unpickled ``root``."""
    top = as_mapping(root)
    if top is None:
        raise CheckpointError(f"{source} holds {describe(root)}, not a state dict or a "
                              f"fairseq checkpoint")
    args, cfg = top.get("args"), top.get("cfg")
    if "model" in top and (args is not None or cfg is not None):
        model = as_mapping(top["model"])
        if model is None:
            raise CheckpointError(f"{source}: its \"model\" is {describe(top['model'])}, not "
                                  f"a state dict")
        what = "args" if args is not None else "cfg"
        settings = plain(args if args is not None else cfg, source, f"saved {what}")
        if not isinstance(settings, dict):
            raise CheckpointError(f"{source}: its \"{what}\" is {describe(settings)}, not a "
                                  f"Namespace or a dict")
        if what == "cfg" and isinstance(settings.get("model"), dict):
            settings = {k: v for k, v in settings.items() if k != "model"} | settings["model"]
        return model, settings, f"fairseq checkpoint ({what})"
    for key in ("state_dict", "model"):
        inner = as_mapping(top.get(key))
        if inner is not None:
            return inner, {}, bare
    return top, {}, bare


# -- the model's tensors --------------------------------------------------------------------
def _dtype(ref: StorageRef, source: str) -> torch.dtype:
    kind = ref.storage_type
    if kind.module != "torch" or kind.name not in _STORAGES:
        raise CheckpointError(f"{source}: storage {ref.key} has the type {kind.qualified[:80]}, "
                              f"which the reader does not know; it reads "
                              f"{', '.join(_STORAGES)}")
    return _STORAGES[kind.name]


def _counts(value) -> bool:
    return isinstance(value, tuple) and all(type(i) is int and i >= 0 for i in value)


def _tensor_record(name: str, value, source: str) -> tuple:
    """(storage, offset, size, stride) of a tensor's record, its types checked."""
    where = f"{source}: tensor {name!r}"
    if isinstance(value, Call) and value.callee.qualified in _PARAMETERS and value.args:
        value = value.args[0]
    if not (isinstance(value, Call) and value.callee.qualified == _TENSOR):
        raise CheckpointError(f"{where} is {describe(value)}, not a tensor "
                              f"({_TENSOR} or a Parameter)")
    args = value.args
    if len(args) not in (6, 7) or not isinstance(args[0], StorageRef):
        raise CheckpointError(f"{where}: its record is not (storage, offset, size, stride, "
                              f"requires_grad, hooks[, metadata])")
    ref, offset, size, stride = args[:4]
    if not (type(offset) is int and offset >= 0 and _counts(size) and _counts(stride)
            and len(size) == len(stride) <= MAX_RANK):
        raise CheckpointError(f"{where}: its size {short_repr(size)} and stride "
                              f"{short_repr(stride)} must be tuples of one length of at most "
                              f"{MAX_RANK} non-negative integers, its offset "
                              f"{short_repr(offset)} one")
    reach = sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    extent = 0 if 0 in size else offset + 1 + reach
    if extent > ref.numel:
        raise CheckpointError(f"{where} of size {list(size)}, stride {list(stride)} and "
                              f"offset {offset} reaches element {extent:,} of a storage of "
                              f"{ref.numel:,}")
    return ref, offset, size, stride


def _too_large(source: str, nbytes: int):
    raise CheckpointError(f"{source}: its model's tensors need {nbytes:,} bytes or more; the "
                          f"limit is MAX_BYTES = {MAX_BYTES:,}")


def _tensors(state: dict, fetch, source: str) -> dict[str, torch.Tensor]:
    """The state dict's tensors, each storage read once (by ``fetch``), bounds first."""
    if not state:
        raise CheckpointError(f"{source}: its state dict holds no tensors")
    storages: dict[str, torch.Tensor] = {}
    read_bytes = built_bytes = 0
    tensors = {}
    for name, value in state.items():
        if not isinstance(name, str) or len(name) > MAX_NAME:
            raise CheckpointError(f"{source}: a state dict key is {short_repr(name)}, not a "
                                  f"name of at most {MAX_NAME} characters")
        ref, offset, size, stride = _tensor_record(name, value, source)
        dtype = _dtype(ref, source)
        built_bytes += math.prod(size) * (4 if dtype in _WIDENED else dtype.itemsize)
        if built_bytes > MAX_BYTES:
            _too_large(source, built_bytes)
        if ref.key not in storages:
            read_bytes += ref.numel * dtype.itemsize
            if read_bytes > MAX_BYTES:
                _too_large(source, read_bytes)
            storages[ref.key] = _storage(fetch(ref, ref.numel * dtype.itemsize), dtype)
        tensors[name] = _widened(torch.as_strided(storages[ref.key], size, stride, offset))
    return tensors


def _storage(buffer: bytearray, dtype: torch.dtype) -> torch.Tensor:
    if not buffer:
        return torch.empty(0, dtype=dtype)
    if dtype == torch.bool:  # a byte other than 0 or 1 is not a valid bool
        return torch.frombuffer(buffer, dtype=torch.uint8) != 0
    return torch.frombuffer(buffer, dtype=dtype)
