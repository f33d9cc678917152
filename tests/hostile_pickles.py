"""A corpus of hostile foreign checkpoints for ``tnn_core.convert.reader`` (issue 36).

``build(folder)`` writes every case into ``folder`` (nothing in git) and returns
{case: (path, the words its refusal must hold, or None where it must be read)}. Each
payload that would run something names ``folder/MARKER`` ("touch MARKER", an ``open`` of
it), so a marker left behind, or an audit event, shows that it ran.

    python tests/hostile_pickles.py FOLDER   # reads every case of FOLDER's manifest under
                                             # sys.addaudithook and prints, per case, its
                                             # outcome and the audit events it raised

Pickles are assembled from protocol-2 opcodes (``call``, ``text``...) so a case says
exactly what the stream asks for.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile
from pathlib import Path

import numpy as np
import torch

WATCHED = ("open", "os.system", "subprocess.Popen", "exec", "compile", "import",
           "pickle.find_class", "os.posix_spawn", "os.exec", "os.fork", "os.spawn",
           "ctypes.dlopen", "socket.connect", "os.remove", "os.mkdir")
MANIFEST = "manifest.json"


# -- pickle opcodes (protocol 2) -------------------------------------------------------------
def text(value: str) -> bytes:
    raw = value.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def number(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8 or 1, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def name(module: str, attribute: str) -> bytes:
    return b"c" + module.encode() + b"\n" + attribute.encode() + b"\n"


def tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def listing(*items: bytes) -> bytes:
    return b"]" + (b"(" + b"".join(items) + b"e" if items else b"")


def mapping(**items: bytes) -> bytes:
    return b"}" + (b"(" + b"".join(text(k) + v for k, v in items.items()) + b"u")


def call(function: bytes, *args: bytes) -> bytes:
    return function + tup(*args) + b"R"


def stream(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def storage(type_name: str, key: str, numel: int) -> bytes:
    return tup(text("storage"), name("torch", type_name), text(key), text("cpu"),
               number(numel)) + b"Q"


def tensor(stored: bytes, offset: int, size: tuple, stride: tuple) -> bytes:
    return call(name("torch._utils", "_rebuild_tensor_v2"), stored, number(offset),
                tup(*map(number, size)), tup(*map(number, stride)), b"\x89",
                call(name("collections", "OrderedDict")))


def namespace(**attributes: bytes) -> bytes:
    return name("argparse", "Namespace") + b")\x81" + mapping(**attributes) + b"b"


# -- containers: torch's zip and legacy formats around any pickle ----------------------------
def torch_zip(pickled: bytes, storages: dict[str, bytes] | None = None,
              compressed: str | None = None, claims: dict[str, int] | None = None) -> bytes:
    """A zip laid out as torch.save writes it; ``compressed`` names a member to deflate,
    ``claims`` sets members' sizes in the central directory (what a reader trusts)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        members = {"archive/data.pkl": pickled, "archive/byteorder": b"little",
                   **{f"archive/data/{k}": v for k, v in (storages or {}).items()},
                   "archive/version": b"3\n"}
        for member, data in members.items():
            method = zipfile.ZIP_DEFLATED if member == compressed else zipfile.ZIP_STORED
            archive.writestr(member, data, compress_type=method)
        for member, size in (claims or {}).items():
            archive.getinfo(member).file_size = size
    return out.getvalue()


def torch_legacy(pickled: bytes, storages: dict[str, tuple[int, bytes]] | None = None) -> bytes:
    """torch's legacy format: magic, protocol, system info, ``pickled``, the keys, then
    each storage as (its element count, its bytes)."""
    storages = storages or {}
    head = b"".join(pickle.dumps(v, protocol=2) for v in (
        0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True,
                                       "type_sizes": {"short": 2, "int": 4, "long": 4}}))
    body = b"".join(struct.pack("<q", n) + data for n, data in storages.values())
    return head + pickled + pickle.dumps(sorted(storages), protocol=2) + body


def float_bytes(*values: float) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


# -- a fairseq-like file whose Namespace holds calls ------------------------------------------
class Evil:
    """Pickles as a call of os.system: what runs if a loader calls what a pickle names."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@contextlib.contextmanager
def fake_omegaconf():
    """Modules omegaconf.dictconfig and omegaconf.nodes, with DictConfig and AnyNode whose
    state is what omegaconf pickles (``_content``, ``_val``, ``_parent``), while inside."""
    class DictConfig:
        def __init__(self, content: dict, parent=None):
            self._parent, self._metadata = parent, {"ref_type": "Any"}
            self._content = {k: DictConfig(v, self) if isinstance(v, dict) else AnyNode(v, self)
                             for k, v in content.items()}

    class AnyNode:
        def __init__(self, value, parent):
            self._val, self._parent, self._metadata = value, parent, {"optional": True}

    names = {"omegaconf": None, "omegaconf.dictconfig": DictConfig, "omegaconf.nodes": AnyNode}
    for module, cls in names.items():
        sys.modules[module] = types.ModuleType(module)
        if cls is not None:
            cls.__module__, cls.__qualname__ = module, cls.__name__
            setattr(sys.modules[module], cls.__name__, cls)
    try:
        yield DictConfig
    finally:
        for module in names:
            del sys.modules[module]


def small_state_dict() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {"toep.rpe.pos_proj.weight": torch.randn(4, 1), "toep.gamma": torch.ones(2, 1, 3)}


def _hostile_namespace(folder: Path) -> bytes:
    args = argparse.Namespace(causal=True, evil=Evil(f"touch {folder / 'MARKER'}"),
                              array=np.arange(3))
    out = io.BytesIO()
    torch.save({"model": small_state_dict(), "args": args}, out)
    return out.getvalue()


def _claiming_members(count: int) -> bytes:
    data = torch_zip(stream(mapping()))  # the end record's last 22 bytes: members at 10
    return data[:-12] + struct.pack("<H", count) + data[-10:]


# -- the corpus -------------------------------------------------------------------------------
# One table of every case, read top to bottom: split, it would hide which cases exist.
def _cases(folder: Path) -> dict[str, tuple[bytes, str | None]]:
    marker = str(folder / "MARKER")
    system = call(name("os", "system"), text(f"touch {marker}"))
    opened = call(name("builtins", "open"), text(marker), text("w"))
    deep = b"]" * 100_000 + b"a" * 99_999
    one = tensor(storage("FloatStorage", "0", 6), 0, (3, 2), (2, 1))
    real = io.BytesIO()
    torch.save(small_state_dict(), real)
    return {
        # -- pickles that would run something ------------------------------------------------
        "os.system, a bare pickle": (stream(system), "not a torch.save file"),
        "os.system in a zip": (torch_zip(stream(system)), "holds a call of os.system"),
        "os.system in a legacy file": (torch_legacy(stream(system)), "a call of os.system"),
        "open(...).read()": (torch_zip(stream(call(call(
            name("builtins", "getattr"), opened, text("read"))))),
            "calls what a call of builtins.getattr would return"),
        "eval": (torch_zip(stream(call(name("builtins", "eval"), text(
            f"open({marker!r}, 'w')")))), "holds a call of builtins.eval"),
        "subprocess.Popen": (torch_zip(stream(call(name("subprocess", "Popen"), listing(
            text("touch"), text(marker))))), "a call of subprocess.Popen"),
        "torch.load of another file": (torch_zip(stream(call(name("torch", "load"), text(
            marker)))), "holds a call of torch.load"),
        "numpy array": (torch_zip(pickle.dumps(np.arange(3), protocol=2)), "a call of numpy"),
        "__import__": (torch_zip(stream(call(name("builtins", "__import__"), text("os")))),
                       "holds a call of builtins.__import__"),
        "os.system as a state dict entry": (torch_zip(stream(mapping(w=system))),
                                            "tensor 'w' is a call of os.system, not a tensor"),
        "BUILD on a list": (torch_zip(stream(b"]}b")), "sets the state of a value of type list"),
        "a persistent id not torch's": (torch_zip(stream(text("x") + b"Q")),
                                        "persistent id is not torch's"),
        "a Namespace holding calls": (_hostile_namespace(folder), None),
        # -- sizes claimed ---------------------------------------------------------------------
        "storage claiming 100 GB": (torch_zip(stream(mapping(w=tensor(storage(
            "FloatStorage", "0", 25_000_000_000), 0, (4,), (1,)))), {"0": float_bytes(1, 2, 3, 4)}),
            "the limit is MAX_BYTES"),
        "storage of 8 in a member of 4": (torch_zip(stream(mapping(w=tensor(storage(
            "FloatStorage", "0", 8), 0, (4,), (1,)))), {"0": float_bytes(1, 2, 3, 4)}),
            "claims 8 elements (32 bytes); its zip member holds 16 bytes"),
        "deflate bomb claiming 100 GB": (torch_zip(stream(mapping(w=one)), {"0": bytes(24)},
                                                   compressed="archive/data/0",
                                                   claims={"archive/data/0": 100 * 2**30}),
                                         "is compressed"),
        "stored member claiming 100 GB": (torch_zip(stream(mapping(w=one)), {"0": bytes(24)},
                                                    claims={"archive/data/0": 100 * 2**30}),
                                          "claims 107,374,182,400 bytes, beyond"),
        "legacy storage claiming 25e9 elements": (torch_legacy(stream(mapping(w=tensor(storage(
            "FloatStorage", "0", 25_000_000_000), 0, (4,), (1,)))), {"0": (
                25_000_000_000, float_bytes(1, 2, 3, 4))}), "claims 25,000,000,000 elements"),
        "a zip end record claiming 65,535 members": (_claiming_members(0xFFFF), "lists 65,535"),
        "pickle claiming 65 MiB": (torch_legacy(stream(b"X" + struct.pack("<I", 65 * 2**20)
                                                       + b"abc")), "MAX_PICKLE_BYTES"),
        "lists nested 10^5 deep": (torch_zip(stream(mapping(
            model=mapping(), args=namespace(deep=deep)))), "nest deeper than MAX_DEPTH"),
        "a dict key of tuples 10^5 deep": (torch_zip(stream(b"}" + b")" + b"\x85" * 100_000
                                                            + number(1) + b"s")),
                                           "a dict key is a value of type tuple"),
        "10^7 objects": (torch_zip(stream(b"](" + b"]" * 10**7 + b"e")), "MAX_OBJECTS"),
        # -- broken or not a checkpoint ----------------------------------------------------------
        "a stride past the storage": (torch_zip(stream(mapping(w=tensor(storage(
            "FloatStorage", "0", 6), 0, (3, 2), (4, 1)))), {"0": bytes(24)}),
            "reaches element 10 of a storage of 6"),
        "an unknown storage type": (torch_zip(stream(mapping(w=tensor(storage(
            "EvilStorage", "0", 6), 0, (6,), (1,)))), {"0": bytes(24)}),
            "torch.EvilStorage, which the reader does not know"),
        "a truncated zip": (real.getvalue()[: len(real.getvalue()) // 2], "truncated zip"),
        "a truncated pickle": (torch_zip(stream(mapping(w=one))[:-9]), "is corrupt: "),
        "a pickle popping an empty stack": (torch_zip(stream(b"0")), "failed with IndexError"),
        "not a pickle": (b"a text file, not a checkpoint\n" * 10, "not a checkpoint this"),
        "an empty file": (b"", "has 0 bytes; a checkpoint has at least 1"),
    }


def build(folder: Path) -> dict[str, tuple[str, str | None]]:
    """Every case written into ``folder``: {case: (path, refusal words or None)}; the
    manifest is saved beside them for ``python tests/hostile_pickles.py FOLDER``."""
    from tnn_core.convert.reader import FOREIGN_MAX_BYTES

    corpus = {}
    for index, (case, (data, words)) in enumerate(_cases(folder).items()):
        path = folder / f"case{index}.pt"
        path.write_bytes(data)
        corpus[case] = (str(path), words)
    (folder / "a directory").mkdir()
    os.mkfifo(folder / "a FIFO")
    with open(folder / "huge.pt", "wb") as huge:  # sparse: no disk used
        huge.truncate(FOREIGN_MAX_BYTES + 1)
    corpus |= {"a directory": (str(folder / "a directory"), "is a directory"),
               "a FIFO": (str(folder / "a FIFO"), "is a FIFO"),
               "a file above FOREIGN_MAX_BYTES": (str(folder / "huge.pt"),
                                                  "at most FOREIGN_MAX_BYTES = 4,294,967,296")}
    (folder / MANIFEST).write_text(json.dumps(corpus))
    return corpus


def audited_run(folder: Path) -> list[dict]:
    """Read every case of ``folder`` under an audit hook: outcome and events per case."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tnn_core.convert.reader import read_foreign
    from tnn_core.training.checkpoint_header import CheckpointError

    corpus = json.loads((folder / MANIFEST).read_text())
    for case in ("a Namespace holding calls", "os.system in a zip"):  # lazy imports first
        with contextlib.suppress(CheckpointError):  # (zipfile's cp437 for Python's zips)
            read_foreign(corpus[case][0], "warm-up")
    events: list = []
    sys.addaudithook(lambda event, args: events.append(
        [event, [a if isinstance(a, int | str) else repr(a) for a in args]])
        if event.startswith(WATCHED) else None)
    results = []
    for case, (path, _) in corpus.items():
        events.clear()
        try:
            settings = read_foreign(path, case).settings
            outcome = {"outcome": "read", "settings": repr(settings)}
        except CheckpointError as err:
            outcome = {"outcome": "refused", "message": str(err)}
        results.append({"case": case, "path": path, **outcome, "events": list(events)})
    return results


if __name__ == "__main__":
    print(json.dumps(audited_run(Path(sys.argv[1]))))
