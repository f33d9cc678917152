"""The reader of the authors' checkpoints (issue 36): what it reads, exactly, and what it
refuses, in one sentence, without running anything (corpus: tests/hostile_pickles.py)."""

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from tests.hostile_pickles import Evil, build, fake_omegaconf, small_state_dict
from tnn_core.convert.reader import read_foreign
from tnn_core.training.checkpoint_header import CheckpointError

ROOT = Path(__file__).resolve().parents[1]
FORMATS = {"zip": True, "legacy": False}  # _use_new_zipfile_serialization
CONTAINER = {"zip": "torch.save state dict", "legacy": "torch.save legacy state dict"}


def state_dict() -> dict[str, torch.Tensor]:
    """Every kind of tensor a state dict holds: dtypes, a view into a larger storage, two
    tensors sharing one storage, a Parameter, an integer buffer, a scalar, an empty one."""
    torch.manual_seed(0)
    base = torch.randn(6, 5, dtype=torch.float64)
    shared = torch.randn(4, 3)
    return {"w32": torch.randn(3, 4), "w64": base, "view": base[1:, ::2].float(),
            "strided": torch.randn(8, 6)[2:5, 1::2], "half": torch.randn(5).half(),
            "bf16": torch.randn(2, 3).bfloat16(), "tied.a": shared, "tied.b": shared[1:],
            "param": torch.nn.Parameter(torch.randn(2, 2)), "steps": torch.tensor(7),
            "mask": torch.tensor([True, False, True]), "empty": torch.zeros(0, 3),
            "scalar": torch.tensor(2.5)}


def expected(tensor: torch.Tensor) -> torch.Tensor:
    widened = tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor
    return widened.detach()


def assert_same_tensors(read: dict, saved: dict, ordered: bool = True) -> None:
    assert list(read) == list(saved) if ordered else sorted(read) == sorted(saved)
    for name, tensor in saved.items():
        want = expected(tensor)
        assert read[name].dtype == want.dtype, name
        assert read[name].shape == want.shape, name
        assert torch.equal(read[name], want), name


def save(obj, path: Path, fmt: str = "zip") -> Path:
    torch.save(obj, path, _use_new_zipfile_serialization=FORMATS[fmt])
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_state_dict_is_read_exactly(tmp_path, fmt):
    saved = state_dict()
    path = save(saved, tmp_path / "model.pt", fmt)
    foreign = read_foreign(path, "model.pt")
    assert_same_tensors(foreign.tensors, saved)
    assert foreign.container == CONTAINER[fmt]
    assert foreign.settings == {}
    assert foreign.size_bytes == path.stat().st_size
    assert foreign.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("key", ["state_dict", "model"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_state_dict_nested_under_a_key(tmp_path, key, fmt):
    saved = state_dict()
    path = save({key: saved, "epoch": 3}, tmp_path / "model.pt", fmt)
    foreign = read_foreign(path, "model.pt")
    assert_same_tensors(foreign.tensors, saved)
    assert (foreign.container, foreign.settings) == (CONTAINER[fmt], {})


def test_bytes_read_like_the_file(tmp_path):
    path = save(state_dict(), tmp_path / "model.pt")
    from_path, from_bytes = read_foreign(path, "a"), read_foreign(path.read_bytes(), "b")
    assert_same_tensors(from_bytes.tensors, from_path.tensors)
    assert (from_bytes.sha256, from_bytes.size_bytes) == (from_path.sha256, from_path.size_bytes)


FAIRSEQ_ARGS = argparse.Namespace(causal=True, rpe_layers=6, tno_type="tno", gamma=0.99,
                                  decoder_layers=2, arch="tnn_decoder_lm", lr=[0.0005],
                                  betas="(0.9, 0.98)", max_tokens=None)
OPTIMIZER_FLOATS = 8_000_000  # 32 MB of Adam moments: far more than the model


def fairseq_file(path: Path, fmt: str, **saved) -> Path:
    moments = torch.zeros(OPTIMIZER_FLOATS)
    return save({"model": small_state_dict(), **saved,
                 "optimizer_history": [{"criterion_name": "CrossEntropyCriterion",
                                        "optimizer_name": "FairseqAdam", "num_updates": 10}],
                 "last_optimizer_state": {"state": {0: {"exp_avg": moments,
                                                        "exp_avg_sq": moments + 1,
                                                        "step": torch.tensor(10.0)}},
                                          "param_groups": [{"lr": 5e-4, "params": [0]}]},
                 "extra_state": {"epoch": 2}}, path, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fairseq_args_are_the_settings_and_the_optimizer_is_never_read(tmp_path, fmt):
    path = fairseq_file(tmp_path / "checkpoint_best.pt", fmt, args=FAIRSEQ_ARGS)
    tracemalloc.start()
    try:
        foreign = read_foreign(path, "checkpoint_best.pt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert foreign.container == "fairseq checkpoint (args)"
    assert foreign.settings == vars(FAIRSEQ_ARGS)
    assert_same_tensors(foreign.tensors, small_state_dict())
    # the optimizer's two storages hold 64 MB; what the reader built stayed far below one
    assert peak < OPTIMIZER_FLOATS * 4 / 8, peak


def test_fairseq_cfg_is_its_model_section_over_its_top_level(tmp_path):
    cfg = {"_name": None, "common": {"seed": 1}, "task": {"_name": "language_modeling",
                                                         "tokens_per_sample": 512},
           "model": {"_name": "tnn_decoder_lm", "causal": True, "rpe_layers": 6,
                     "common": "the model's own"}}
    path = fairseq_file(tmp_path / "checkpoint.pt", "zip", args=None, cfg=cfg)
    foreign = read_foreign(path, "checkpoint.pt")
    assert foreign.container == "fairseq checkpoint (cfg)"
    assert foreign.settings == {"_name": "tnn_decoder_lm", "common": "the model's own",
                                "task": cfg["task"], "causal": True, "rpe_layers": 6}


def test_fairseq_cfg_of_omegaconf_containers_is_plain_data(tmp_path):
    model = {"_name": "tnn_decoder_lm", "causal": False, "rpe": {"layers": 3, "dim": 32}}
    with fake_omegaconf() as DictConfig:
        path = fairseq_file(tmp_path / "checkpoint.pt", "zip",
                            cfg=DictConfig({"task": {"_name": "mlm"}, "model": model}))
    foreign = read_foreign(path, "checkpoint.pt")
    assert foreign.container == "fairseq checkpoint (cfg)"
    assert foreign.settings == {"task": {"_name": "mlm"}, **model}


def test_safetensors_are_read_and_widened(tmp_path):
    saved = {"toep.rpe.pos_proj.weight": torch.randn(4, 1).half(),
             "toep.gamma": torch.rand(3).half()}
    save_file(saved, tmp_path / "model.safetensors")
    foreign = read_foreign(tmp_path / "model.safetensors", "model.safetensors")
    assert_same_tensors(foreign.tensors, saved, ordered=False)  # safetensors sorts them
    assert (foreign.container, foreign.settings) == ("safetensors state dict", {})


def plain_only(value) -> bool:
    if isinstance(value, dict):
        return all(map(plain_only, value)) and all(map(plain_only, value.values()))
    if isinstance(value, list | tuple):
        return all(map(plain_only, value))
    return value is None or isinstance(value, bool | int | float | str | bytes)


def test_a_namespace_holding_calls_keeps_them_as_records(tmp_path):
    marker = tmp_path / "MARKER"
    path = save({"model": small_state_dict(), "args": argparse.Namespace(
        causal=True, evil=Evil(f"touch {marker}"))}, tmp_path / "checkpoint.pt")
    settings = read_foreign(path, "checkpoint.pt").settings
    assert settings == {"causal": True, "evil": {"__call__": "posix.system",
                                                 "args": [f"touch {marker}"]}}
    assert plain_only(settings)
    assert not marker.exists()


def test_the_settings_nest_at_most_max_depth(tmp_path):
    deep: list = []
    for _ in range(300):
        deep = [deep]
    path = save({"model": small_state_dict(), "args": argparse.Namespace(deep=deep)},
                tmp_path / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="saved args nest deeper than MAX_DEPTH = 200"):
        read_foreign(path, "checkpoint.pt")


# -- the hostile corpus ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("hostile")
    return folder, build(folder)


def one_sentence(message: str, source: str) -> bool:
    return (message.startswith(source) and "\n" not in message and "Traceback" not in message
            and "tnn_core" not in message and not re.search(r"\.\s+[A-Z]", message))


def test_every_hostile_case_is_refused_in_one_sentence(corpus):
    folder, cases = corpus
    wrong = []
    for case, (path, words) in cases.items():
        try:
            read_foreign(path, case)
            outcome = "read"
        except CheckpointError as err:
            outcome = str(err)
        if outcome != "read" if words is None else not (
                words in outcome and one_sentence(outcome, case)):
            wrong.append(f"{case}: {outcome}")
    assert not wrong, "\n".join(wrong)
    assert not (folder / "MARKER").exists()


@pytest.mark.slow
def test_nothing_in_the_hostile_corpus_ran(corpus):
    """Read in a child process under sys.addaudithook, the only audit events while a case
    is read are opens of its own file (by path, then by descriptor): no import, exec,
    system, Popen, find_class, socket or other open."""
    folder, cases = corpus
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "hostile_pickles.py"),
                          str(folder)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout)
    assert [r["case"] for r in results] == list(cases)
    assert [r["outcome"] == "read" for r in results] == [w is None for _, w in cases.values()]
    ran = [f"{r['case']}: {event}" for r in results for event in r["events"]
           if not (event[0] == "open" and event[1][0] in (r["path"], 3, 4, 5))]
    assert not ran, "\n".join(ran)
    assert not (folder / "MARKER").exists()
