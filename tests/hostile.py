"""A corpus of hostile checkpoints, built in memory from a tiny valid one (nothing in git).

``tiny_checkpoint()`` is a real file written by ``checkpoint.save`` (a 2-layer tno
language model of width 8 on the recall task, about 20 KB). Every case edits its header
or metadata and keeps its small tensors, so a loader that builds the model from the
metadata before comparing it with the tensors allocates what the metadata asks for:
``MEMORY_CASES`` are the ones that cost gigabytes (or minutes) that way.

    python tests/hostile.py NAME     # loads case NAME in this process and prints
                                     # {"case", "outcome", "seconds", "peak_mb", "base_mb"}

Letters: V vocabulary.
"""

from __future__ import annotations

import json
import resource
import struct
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tnn_core.models import ModelConfig, build_model  # noqa: E402
from tnn_core.operators import OperatorConfig  # noqa: E402

TASK_INFO = {"name": "recall", "settings": {"seq_len": 16, "num_pairs": 2, "num_queries": 2,
                                            "num_keys": 6, "num_values": 10}}  # V = 17
HISTORY = {"command": "python -m tnn_core.training --task recall", "metric_name": "accuracy",
           "evals": [{"step": 0, "metric": 0.5}], "wall_s": 1.0}
# the costly ones: what each asks the loader (or Inspect, for seq_len) to allocate
MEMORY_CASES = ("dim 8000", "dim 20000", "layers 10^6", "togeipi max_length 20000",
                "seq_len 200000")


def tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    config = ModelConfig(task="lm", vocab_size=17, num_classes=2, dim=8, layers=2,
                         operator=OperatorConfig(kind="tno", causal=True))
    return build_model(config).eval()


def tiny_checkpoint() -> bytes:
    """The bytes of a valid checkpoint written by our own ``save``."""
    from tnn_core.training.checkpoint import save

    with tempfile.TemporaryDirectory() as folder:
        return save(Path(folder) / "tiny.safetensors", tiny_model(), TASK_INFO,
                    HISTORY).read_bytes()


def split(data: bytes) -> tuple[dict, bytes]:
    """(header dict, data section) of a safetensors file."""
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def assemble(header, body: bytes) -> bytes:
    """A safetensors file from a header (any JSON value, or raw bytes) and a data section."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


def with_metadata(data: bytes, **values) -> bytes:
    """``data`` with metadata entries replaced (None removes one); values go in as they are."""
    header, body = split(data)
    meta = dict(header["__metadata__"])
    for key, value in values.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return assemble({**header, "__metadata__": meta}, body)


def with_json(data: bytes, key: str, value) -> bytes:
    """``data`` with metadata ``key`` (model_config, task, history) set to JSON of ``value``."""
    return with_metadata(data, **{key: json.dumps(value)})


def with_config(data: bytes, operator: dict | None = None, **fields) -> bytes:
    """``data`` with model config fields (and operator fields) changed."""
    config = json.loads(split(data)[0]["__metadata__"]["model_config"])
    config.update(fields)
    config["operator"].update(operator or {})
    return with_json(data, "model_config", config)


def with_entry(data: bytes, **changes) -> bytes:
    """``data`` with the first tensor's header entry changed."""
    header, body = split(data)
    name = next(k for k in header if k != "__metadata__")
    return assemble({**header, name: {**header[name], **changes}}, body)


def with_tensor_dtype(data: bytes, dtype: torch.dtype) -> bytes:
    """The same model and metadata with every tensor stored as ``dtype``."""
    from safetensors.torch import load, save

    meta = split(data)[0]["__metadata__"]
    return save({k: v.to(dtype) for k, v in load(data).items()}, metadata=meta)


def with_seq_len(task: dict, seq_len) -> dict:
    return {**task, "settings": {**task["settings"], "seq_len": seq_len}}


# One table of every hostile variant, read top to bottom: split, it would hide which cases
# exist.
def cases(data: bytes) -> dict[str, bytes]:
    """Every hostile variant of the valid checkpoint ``data``, by name."""
    header, body = split(data)
    meta = header["__metadata__"]
    task = json.loads(meta["task"])
    history = json.loads(meta["history"])
    deep = b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    out = {
        # -- memory and time: sizes taken from the metadata -----------------------------
        "dim 8000": with_config(data, dim=8000),
        "dim 20000": with_config(data, dim=20000),
        "layers 10^6": with_config(data, layers=10**6),
        "togeipi max_length 20000": with_config(
            data, operator={"kind": "togeipi", "max_length": 20000, "heads": 8}),
        "seq_len 200000": with_json(data, "task", with_seq_len(task, 200000)),
        "seq_len 20000": with_json(data, "task", with_seq_len(task, 20000)),
        "vocab 10^7": with_config(data, vocab_size=10**7),
        "classes 10^7": with_config(data, task="classify", num_classes=10**7),
        "expand_ratio 10^4": with_config(data, expand_ratio=10_000),
        "glu_dim 10^8": with_config(data, glu_dim=10**8),
        "ski rank 10^9": with_config(data, operator={"kind": "ski", "rank": 10**9}),
        "ski band 10^9": with_config(data, operator={"kind": "ski", "band": 10**9}),
        "rpe_dim 10^8": with_config(data, operator={"rpe_dim": 10**8}),
        "rpe_layers 10^5": with_config(data, operator={"rpe_layers": 10**5}),
        "heads 10^6": with_config(data, operator={"kind": "togeipi", "heads": 10**6}),
        # -- header structure -------------------------------------------------------------
        "json nested 100000 deep": assemble(deep, body),
        "metadata nested 100000 deep": with_metadata(data, history=deep.decode()),
        "header a list": assemble([1, 2], body),
        "header a string": assemble("hello", body),
        "header 5 MB": assemble({**header, "__metadata__": {**meta, "junk": "x" * 5_000_000}},
                                body),
        "header length 2^63": struct.pack("<Q", 2**63) + data[8:],
        "dtype a list": with_entry(data, dtype=["F32"]),
        "dtype unknown": with_entry(data, dtype="I64"),
        "dtype a number": with_entry(data, dtype=32),
        "data_offsets a string": with_entry(data, data_offsets="ab"),
        "data_offsets floats": with_entry(data, data_offsets=[0.0, 4.5]),
        "data_offsets three": with_entry(data, data_offsets=[0, 4, 8]),
        "data_offsets negative": with_entry(data, data_offsets=[-8, 4]),
        "data_offsets reversed": with_entry(data, data_offsets=[8, 0]),
        "data_offsets past the end": with_entry(data, data_offsets=[0, 10**12]),
        "data_offsets bools": with_entry(data, data_offsets=[False, True]),
        "shape a string": with_entry(data, shape="3x3"),
        "shape negative": with_entry(data, shape=[-1, 8]),
        "shape huge": with_entry(data, shape=[2**40, 2**40]),
        "shape floats": with_entry(data, shape=[8.0, 17.0]),
        "entry with an extra key": with_entry(data, extra=1),
        "entry missing dtype": assemble(
            {**header, next(k for k in header if k != "__metadata__"): {"shape": [1]}}, body),
        "metadata a string": assemble({**header, "__metadata__": "format"}, body),
        "metadata a list": assemble({**header, "__metadata__": ["format"]}, body),
        "metadata non-string value": assemble(
            {**header, "__metadata__": {**meta, "format": 1}}, body),
        "metadata non-string history": assemble(
            {**header, "__metadata__": {**meta, "history": {"evals": []}}}, body),
        "format a list": with_metadata(data, format='["toeplitz-lab/1"]'),
        "model_config not json": with_metadata(data, model_config="{dim: 8"),
        "model_config a list": with_json(data, "model_config", [8, 2]),
        "model_config operator a list": with_json(
            data, "model_config", {**json.loads(meta["model_config"]), "operator": [1]}),
        "dim a string": with_config(data, dim="8"),
        "dim a float": with_config(data, dim=8.0),
        "dim a bool": with_config(data, dim=True),
        "decay nan": with_metadata(data, model_config=meta["model_config"].replace(
            '"decay": 0.99', '"decay": NaN')),
        "sparse_l1 inf": with_metadata(data, model_config=meta["model_config"].replace(
            '"kind": "tno"', '"kind": "tno", "sparse_l1": Infinity')),  # one tno ignores
        "causal a string": with_config(data, operator={"causal": "yes"}),
        "kind unknown": with_config(data, operator={"kind": "attention"}),
        "task a list": with_json(data, "task", ["recall"]),
        "task a string": with_json(data, "task", "recall"),
        "task unknown name": with_json(data, "task", {**task, "name": "imagenet"}),
        "task name a list": with_json(data, "task", {**task, "name": ["recall"]}),
        "task settings a list": with_json(data, "task", {**task, "settings": [16]}),
        "seq_len abc": with_json(data, "task", with_seq_len(task, "abc")),
        "seq_len negative": with_json(data, "task", with_seq_len(task, -5)),
        "seq_len a large nested value": with_json(data, "task", with_seq_len(
            task, {f"key {i}": {"x" * 50: [1e300] * 20} for i in range(20)})),
        "task unknown setting": with_json(data, "task", {**task, "settings": {"rows": 3}}),
        "charlm vocab a list": with_json(data, "task", {"name": "charlm",
                                                        "settings": {"seq_len": 16},
                                                        "vocab": ["a", "b"]}),
        "charlm source a string": with_json(data, "task", {"name": "charlm",
                                                           "settings": {"seq_len": 16},
                                                           "vocab": "a" * 16,
                                                           "source": "stdlib"}),
        "history a string": with_json(data, "history", "trained"),
        "history a list": with_json(data, "history", [1, 2]),
        "evals a dict": with_json(data, "history", {**history, "evals": {"step": 0}}),
        "evals missing step": with_json(data, "history", {**history, "evals": [{"metric": 1}]}),
        "evals step a string": with_json(data, "history", {
            **history, "evals": [{"step": "0", "metric": 0.5}]}),
        "evals metric a string": with_json(data, "history", {
            **history, "evals": [{"step": 0, "metric": "good"}]}),
        "wall_s a string": with_json(data, "history", {**history, "wall_s": "long"}),
        "train_config a list": with_json(data, "history", {**history, "train_config": [1]}),
        "classes disagree with the task": with_config(data, task="classify", num_classes=3),
        "vocab disagrees with the task": with_config(data, vocab_size=5),
        "version a number": with_metadata(data, version="1" * 10_000),
        "f16 tensors": with_tensor_dtype(data, torch.float16),
    }
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory (MB): VmHWM, which starts afresh at exec.
    (``ru_maxrss`` does not: a child keeps the high-water mark of the parent it forked
    from, so under a large pytest process it reads the parent's peak.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def _measure(name: str) -> dict:
    """Load case ``name`` here; its outcome, seconds and peak resident memory (MB)."""
    from tnn_core.training.checkpoint import CheckpointError, load_bytes

    torch.set_num_threads(1)
    data = cases(tiny_checkpoint())[name]
    load_bytes(tiny_checkpoint())  # warm up: imports and first-call costs are baseline
    base = peak_rss_mb()
    start = time.perf_counter()
    try:
        load_bytes(data)
        outcome = "loaded"
    except CheckpointError as err:
        outcome = f"CheckpointError: {err}"
    except Exception as err:  # noqa: BLE001 - this script reports what escapes
        outcome = f"{type(err).__name__}: {str(err)[:200]}"
    seconds = time.perf_counter() - start
    peak = peak_rss_mb()
    return {"case": name, "outcome": outcome[:300], "seconds": round(seconds, 3),
            "peak_mb": round(peak), "base_mb": round(base)}


if __name__ == "__main__":
    print(json.dumps(_measure(sys.argv[1])))
