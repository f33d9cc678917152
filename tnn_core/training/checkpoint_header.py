"""A checkpoint's bytes and its safetensors header, checked before anything is built.

Steps 1 and 2 of loading a checkpoint (``checkpoint`` has the whole list):

1. the bytes: a pickle (protocol 2+ starts with 0x80) or a ``torch.save`` zip ("PK") is
   refused without ever unpickling, since unpickling can run code; only a regular file
   is read (no FIFO, device or directory), and never more than ``MAX_BYTES`` + 1 bytes;
2. the safetensors header: at most ``MAX_HEADER_BYTES`` (metadata included), JSON nested
   at most ``MAX_JSON_DEPTH`` deep (counted before ``json.loads`` recurses), every tensor
   entry exactly {dtype, shape, data_offsets} of the right types, one dtype for all, byte
   ranges that match dtype × shape and tile the data section exactly.

Every refusal is a ``CheckpointError`` (a ValueError) of one sentence naming the field,
the value and the limit.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.checks import is_integer, short_repr
from tnn_core.files import FileRefused, read_bounded

__all__ = ["CheckpointError", "MAX_BYTES", "MAX_HEADER_BYTES", "MAX_JSON_DEPTH", "DTYPES",
           "TensorEntry", "read_bytes", "parse_json", "read_header"]

MAX_BYTES = 200_000_000  # larger files are refused before they are read
# The header JSON, metadata included. The history holds one training loss per step
# (about 20 bytes each), so this allows runs of some 150 000 steps.
MAX_HEADER_BYTES = 4_000_000
MAX_JSON_DEPTH = 64  # nesting of the header and of each metadata value; ours nest 4 deep
DTYPES = {"F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2), "F32": (torch.float32, 4),
          "F64": (torch.float64, 8)}  # safetensors name -> (dtype, bytes per element)
_MAX_RANK = 8  # dimensions of one tensor
_MAX_NAME = 300  # characters of a tensor name
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


class CheckpointError(ValueError):
    """A file that is not a valid Toeplitz Lab checkpoint; the message says why."""


def read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes: a regular file of at most MAX_BYTES, never more read
    (``files.read_bounded``)."""
    try:
        return read_bounded(path, MAX_BYTES, "checkpoint")
    except FileRefused as err:
        raise CheckpointError(str(err)) from None


def parse_json(text: bytes, what: str, source: str):
    """``text`` parsed as JSON after its bracket nesting is checked (json.loads recurses)."""
    brackets = np.frombuffer(_JSON_STRING.sub(b"", text).translate(None, _NOT_BRACKET),
                             np.uint8)  # the [ ] { } outside strings, in order
    if brackets.size:
        opens = (brackets == ord("[")) | (brackets == ord("{"))
        depth = int(np.cumsum(np.where(opens, 1, -1)).max())
        if depth > MAX_JSON_DEPTH:
            raise CheckpointError(f"{source}: {what} nests {depth} levels deep; the limit is "
                                  f"{MAX_JSON_DEPTH}")
    try:
        return json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CheckpointError(f"{source} is corrupt: {what} is not JSON ({err})") from None


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of the header: its dtype name, shape and byte range in the data section."""

    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int


def read_header(data: bytes, source: str) -> tuple[dict, dict[str, TensorEntry]]:
    """(metadata, tensor entries) of the safetensors file ``data``, validated."""
    # a safetensors header length can start with the bytes of a pickle's protocol marker
    # (a length of 0x0380 + 65536 k reads as 80 03): byte 8 opens its JSON header
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05") and \
            data[8:9] != b"{":
        raise CheckpointError(f"{source} is a pickle file (protocol {data[1]}); pickles can "
                              f"run code, so it is never opened. Use a .safetensors file")
    if data[:4] == b"PK\x03\x04":
        raise CheckpointError(f"{source} is a zip archive (the torch.save format, which holds "
                              f"a pickle); it is never opened. Use a .safetensors file")
    if len(data) < 10:
        raise CheckpointError(f"{source} is not a safetensors file: only {len(data)} bytes "
                              f"(truncated or empty)")
    (length,) = struct.unpack("<Q", data[:8])
    if data[8:9] != b"{":
        raise CheckpointError(f"{source} is not a safetensors file (no JSON header after the "
                              f"8-byte length)")
    if length > MAX_HEADER_BYTES:
        raise CheckpointError(f"{source}: its header has {length:,} bytes; the limit is "
                              f"MAX_HEADER_BYTES = {MAX_HEADER_BYTES:,}")
    if 8 + length > len(data):
        raise CheckpointError(f"{source} is truncated: its header needs {8 + length:,} bytes, "
                              f"the file has {len(data):,}")
    header = parse_json(data[8 : 8 + length], "its header", source)
    if not isinstance(header, dict):
        raise CheckpointError(f"{source} is corrupt: its header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise CheckpointError(f"{source} is corrupt: its __metadata__ must map strings to "
                              f"strings; got {short_repr(metadata)}")
    entries = {name: _entry(name, value, source) for name, value in header.items()}
    dtypes = sorted({e.dtype for e in entries.values()})
    if len(dtypes) > 1:
        raise CheckpointError(f"{source}: tensors must share one dtype; got {dtypes}")
    body, offset = len(data) - 8 - length, 0
    for name, entry in sorted(entries.items(), key=lambda item: item[1].start):
        if entry.start != offset:
            raise CheckpointError(f"{source} is corrupt: tensor {name} starts at byte "
                                  f"{entry.start:,} of the data section; the one before it "
                                  f"ends at {offset:,}")
        offset = entry.end
    if offset != body:
        raise CheckpointError(f"{source} is truncated or corrupt: its tensors span "
                              f"{offset:,} bytes of a {body:,}-byte data section")
    return metadata, entries


def _entry(name: str, value, source: str) -> TensorEntry:
    """One tensor's header entry, checked: types, dtype, shape and a consistent byte range."""
    where = f"{source} is corrupt: tensor {name[:_MAX_NAME]!r}"
    if len(name) > _MAX_NAME:
        raise CheckpointError(f"{where}: its name has {len(name)} characters; the limit is "
                              f"{_MAX_NAME}")
    if not isinstance(value, dict) or set(value) != _ENTRY_KEYS:
        raise CheckpointError(f"{where}: its entry must hold exactly {sorted(_ENTRY_KEYS)}; "
                              f"got {short_repr(value)}")
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise CheckpointError(f"{where}: dtype must be one of {sorted(DTYPES)}; got "
                              f"{short_repr(dtype)}")
    if not (isinstance(shape, list) and len(shape) <= _MAX_RANK
            and all(is_integer(s) and 0 <= s <= MAX_BYTES for s in shape)):
        raise CheckpointError(f"{where}: shape must be a list of at most {_MAX_RANK} integers "
                              f"in [0, {MAX_BYTES:,}]; got {short_repr(shape)}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(is_integer, offsets))
            and 0 <= offsets[0] <= offsets[1] <= MAX_BYTES):
        raise CheckpointError(f"{where}: data_offsets must be two integers 0 <= start <= end "
                              f"<= {MAX_BYTES:,}; got {short_repr(offsets)}")
    size = math.prod(shape) * DTYPES[dtype][1]
    if offsets[1] - offsets[0] != size:
        raise CheckpointError(f"{where}: data_offsets {offsets} span {offsets[1] - offsets[0]:,} "
                              f"bytes; {dtype} of shape {shape} needs {size:,}")
    return TensorEntry(dtype, tuple(shape), offsets[0], offsets[1])
