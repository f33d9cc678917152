"""tnn_core.checkpoint: bit-exact round trips, and every bad file refused without unpickling."""

from __future__ import annotations

import json
import math
import os
import pickle
import shlex
import struct
import uuid
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as save_tensors

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.arguments import config_from_args, parser
from tnn_core.training.checkpoint import (
    FORMAT,
    SHIPPED_DIR,
    CheckpointError,
    load,
    load_bytes,
    migrate_train_config,
    read_info,
    save,
)
from tnn_core.training.config import TrainConfig
from tnn_core.training.tasks import get_task

KINDS = ["tno", "ski", "fd"]
# the tasks of config(kind, "lm") (V = 1 + 9 keys + 10 values) and config(kind, "classify")
TASK_INFO = {"name": "recall", "settings": {"seq_len": 16, "num_pairs": 2, "num_queries": 2,
                                            "num_keys": 9, "num_values": 10}}
CLASSIFY_INFO = {"name": "listops", "settings": {"seq_len": 16}}
TASK_INFOS = {"lm": TASK_INFO, "classify": CLASSIFY_INFO}
HISTORY = {"command": "python -m tnn_core.training --task recall", "evals": [{"step": 0}]}


def config(kind: str, task: str) -> ModelConfig:
    operator = OperatorConfig(kind=kind, causal=task == "lm", rank=8, band=5)
    vocab_size = 20 if task == "lm" else 16  # recall's and listops' vocabularies
    return ModelConfig(task=task, vocab_size=vocab_size, num_classes=10, dim=8, layers=2,
                       operator=operator)


def model_of(kind: str = "tno", task: str = "lm", seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = build_model(config(kind, task))
    with torch.no_grad():  # move every weight off its initial value
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return model.eval()


@pytest.fixture
def saved(tmp_path) -> Path:
    return save(tmp_path / "model.safetensors", model_of(), TASK_INFO, HISTORY)


@pytest.mark.parametrize("task", ["lm", "classify"])
@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_is_bit_exact(tmp_path, kind, task):
    model = model_of(kind, task)
    path = save(tmp_path / f"{kind}.safetensors", model, TASK_INFOS[task], HISTORY)
    loaded, info = load(path)
    assert type(loaded) is type(model)
    assert info.model_config == model.config
    assert info.task == TASK_INFOS[task] and info.history == HISTORY and info.version
    a, b = model.state_dict(), loaded.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    tokens = torch.randint(0, 16, (3, 11))
    assert torch.equal(model(tokens), loaded(tokens))
    from_bytes, _ = load_bytes(path.read_bytes())
    assert torch.equal(model(tokens), from_bytes(tokens))


def test_tied_head_is_saved_once_and_stays_tied(tmp_path):
    model = model_of("tno", "lm")
    assert not any("head" in name for name in model.state_dict())
    loaded, _ = load(save(tmp_path / "lm.safetensors", model, TASK_INFO))
    tokens = torch.randint(0, 20, (2, 7))
    assert torch.equal(loaded(tokens), loaded.features(tokens) @ loaded.embed.weight.T)


def test_float64_round_trip(tmp_path):
    model = model_of("fd", "classify").double()
    loaded, _ = load(save(tmp_path / "f64.safetensors", model, CLASSIFY_INFO))
    assert next(loaded.parameters()).dtype == torch.float64


def test_save_is_atomic_and_refuses_nan(saved):
    before = saved.read_bytes()
    broken = model_of()
    with torch.no_grad():
        broken.embed.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="refusing to save non-finite weights: embed.weight"):
        save(saved, broken, TASK_INFO)
    assert saved.read_bytes() == before  # the old file is untouched
    save(saved, model_of(seed=1), TASK_INFO)
    assert saved.read_bytes() != before
    assert sorted(p.name for p in saved.parent.iterdir()) == ["model.safetensors"]  # no temp


def rewrite(path: Path, tensors: dict | None = None, metadata: dict | None = None) -> bytes:
    """The file at ``path`` with its tensors and/or metadata replaced."""
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        old_meta = f.metadata()
        old = {k: f.get_tensor(k) for k in f.keys()}
    return save_tensors(tensors if tensors is not None else old,
                        metadata=metadata if metadata is not None else old_meta)


def meta_with(path: Path, **changes) -> dict:
    info = read_info(path)
    meta = {"format": FORMAT, "model_config": json.dumps(info.model_config.to_dict()),
            "task": json.dumps(info.task), "history": "{}", "version": "0"}
    meta.update(changes)
    return meta


def bad_cases(path: Path) -> dict[str, tuple[bytes, str]]:
    good = path.read_bytes()
    tensors = load_bytes(good)[0].state_dict()
    config = read_info(path).model_config.to_dict()
    first = next(iter(tensors))
    extra = {**tensors, "extra.weight": torch.zeros(2)}
    missing = {k: v for k, v in tensors.items() if k != first}
    reshaped = {**tensors, first: torch.zeros(3, 3)}
    nan = {**tensors, first: torch.full_like(tensors[first], float("nan"))}
    return {
        "empty": (b"", "only 0 bytes"),
        "text": (b"hello, this is not a checkpoint at all", "not a safetensors file"),
        "pickle": (pickle.dumps({"w": [1.0, 2.0]}, protocol=4), "is a pickle file"),
        "zip": (b"PK\x03\x04" + good[4:], "zip archive .*torch.save"),
        "truncated": (good[: len(good) - 100], "truncated"),
        "truncated header": (good[:40], "truncated: its header needs"),
        "header not json": (struct.pack("<Q", 20) + b"{" + b"\xff" * 19 + good[28:],
                            "corrupt: its header is not JSON"),
        "no metadata": (save_tensors(tensors), "not a Toeplitz Lab checkpoint"),
        "wrong format": (rewrite(path, metadata=meta_with(path, format="other/9")),
                         "format must be 'toeplitz-lab/1'; got 'other/9'"),
        "missing tensor": (rewrite(path, missing), rf"missing \['{first}'\]"),
        "unexpected tensor": (rewrite(path, extra), r"unexpected \['extra.weight'\]"),
        "shape mismatch": (rewrite(path, reshaped), rf"{first} has shape \(3, 3\)"),
        "nan weights": (rewrite(path, nan), f"{first} has NaN or Inf"),
        "unknown config field": (
            rewrite(path, metadata=meta_with(path, model_config=json.dumps(
                {**config, "heads": 4}))), r"unknown ModelConfig fields \['heads'\]"),
        "bad config value": (
            rewrite(path, metadata=meta_with(path, model_config=json.dumps(
                {**config, "dim": 0}))), r"dim must be an integer in \[1, 8192\]; got 0"),
    }


def test_every_bad_file_raises_checkpoint_error(saved, tmp_path):
    for case, (data, message) in bad_cases(saved).items():
        path = tmp_path / f"{case.replace(' ', '_')}.safetensors"
        path.write_bytes(data)
        with pytest.raises(CheckpointError, match=message):
            load(path)
        with pytest.raises(CheckpointError, match=message):
            load_bytes(data)
    with pytest.raises(CheckpointError, match="cannot read"):
        load(tmp_path / "absent.safetensors")
    assert issubclass(CheckpointError, ValueError)


class _Touch:
    """A pickle payload that creates a file when unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


class _Open:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        import builtins

        return builtins.open, (self.path, "w")


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
@pytest.mark.parametrize("payload", [_Touch, _Open])
def test_a_malicious_pickle_leaves_no_trace(tmp_path, payload, protocol):
    target = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"
    data = pickle.dumps(payload(str(target)), protocol=protocol)
    path = tmp_path / "evil.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError):
        load(path)
    with pytest.raises(CheckpointError):
        load_bytes(data)
    assert not target.exists()


def test_torch_save_of_a_malicious_object_is_refused(tmp_path):
    target = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"
    path = tmp_path / "evil.pt"
    torch.save({"state": _Touch(str(target))}, path)
    assert not target.exists()
    with pytest.raises(CheckpointError, match="zip archive"):
        load(path)
    assert not target.exists()


def test_shipped_checkpoints_load_and_beat_chance():
    paths = sorted(SHIPPED_DIR.glob("*.safetensors"))
    if not paths:
        pytest.skip("no checkpoints shipped yet")
    for info in map(read_info, paths):  # each one valid
        assert info.size_bytes <= 5_000_000, info.source
        # written by tnn_core 0.1.0, whose CLI was ``python -m tnn_core.train``
        assert info.history["command"].startswith("python -m tnn_core.train")
        # ... with a flat train config, migrated on load to one holding the model
        assert TrainConfig.from_dict(info.history["train_config"]).model == info.model_config
        assert info.history["status"] == "completed"
        final = info.final_metrics["metric"]
        if info.history["metric_name"] == "bpc":  # uniform guess: log2 V bits per character
            assert final < math.log2(info.model_config.vocab_size) - 2, info.source
        else:  # accuracy of a uniform guess: 1 / classes
            assert final > 3 / info.model_config.num_classes, info.source
        model, _ = load(info.source)
        assert sum(p.numel() for p in model.parameters()) > 0


# What tnn_core 0.1.0 wrote into listops-ski.safetensors: a flat train config (model
# fields beside the optimisation ones), the file's model config and the command.
OLD_COMMAND = ("python -m tnn_core.train --threads 2 --device cpu --seed 0 --task listops "
               "--seq-len 128 --max-depth 2 --batch-size 32 --dim 64 --layers 2 --steps 2000 "
               "--lr 3e-3 --warmup 100 --eval-every 250 --eval-batches 8 --eval-batch-size 64 "
               "--operator ski --rank 32 --band 9 --out checkpoints/listops-ski.safetensors")
OLD_TRAIN_CONFIG = {
    "task": "listops", "steps": 2000, "batch_size": 32, "lr": 0.003, "weight_decay": 0.01,
    "warmup": 100, "schedule": "cosine", "clip": 1.0, "eval_every": 250, "eval_batches": 8,
    "eval_batch_size": 64, "seed": 0, "device": "cpu", "dtype": "float32", "operator": "ski",
    "causal": None, "dim": 64, "layers": 2, "expand_ratio": 3, "decay": 0.99, "rank": 32,
    "band": 9, "rpe_dim": None, "rpe_layers": 1, "activation": "relu"}
OLD_MODEL_CONFIG = {
    "task": "classify", "vocab_size": 16, "num_classes": 10, "dim": 64, "layers": 2,
    "expand_ratio": 3, "glu_dim": None, "operator": {
        "kind": "ski", "causal": False, "decay": 0.99, "rank": 32, "band": 9, "rpe_dim": None,
        "rpe_layers": 1, "activation": "relu", "heads": 8, "sparse_density": 0.3,
        "max_length": 1024, "sparse_l1": 1e-05, "psf_activation": "none"}}


def test_a_0_1_0_train_config_migrates_to_what_the_cli_builds_today():
    """listops-ski's flat 0.1.0 train config becomes the nested one that today's CLI
    builds from the same command line."""
    model_config = ModelConfig.from_dict(OLD_MODEL_CONFIG)
    migrated = TrainConfig.from_dict(migrate_train_config(OLD_TRAIN_CONFIG, model_config))
    prefix = "python -m tnn_core.train "
    args = parser().parse_args(shlex.split(OLD_COMMAND[len(prefix):]))
    task = get_task("listops", {"seq_len": 128, "max_depth": 2})
    assert migrated == config_from_args(args, task)
    op = migrated.model.operator
    assert (op.kind, op.rank, op.band, op.causal, migrated.steps) == ("ski", 32, 9, False, 2000)


def test_a_nested_train_config_is_left_as_it_is():
    nested = TrainConfig().to_dict()
    assert migrate_train_config(nested, config("fd", "lm")) is nested


def test_opening_a_digits_tno_checkpoint_imports_neither_dynamo_nor_sklearn():
    """The app's default Inspect view: validating the file must not import torch._dynamo
    (a random initialiser on the meta device did) and building its task must not import
    scikit-learn (its digits file is read directly); each cost the first visitor ~0.8 s."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from tnn_core.training import checkpoint\n"
            "from tnn_core.training.tasks import task_from_info\n"
            "model, info = checkpoint.load('checkpoints/digits-tno.safetensors')\n"
            "task_from_info(info.task)\n"
            "print(sorted(m for m in ('torch._dynamo', 'sklearn') if m in sys.modules))\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
