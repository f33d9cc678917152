"""Issue 21's hostile corpus, end to end through the command lines.

Each case is built at test time in tmp_path (nothing large in git) and run in a fresh
process under an audit hook (``sys.addaudithook`` on ``open``) by ``RUNNER``. Every case
must end within 30 s and 600 MB above the process's baseline (after its imports), with
its documented exit status and, on failure, exactly one ``error:`` sentence on stderr and
no traceback; and no file outside the project, the Python installation and the test's
own files (the user's) may be opened: the paths a hostile file names least of all.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forked_cases import CaseServer  # noqa: E402
from hostile import TASK_INFO, split, tiny_model, with_json  # noqa: E402

from tnn_core.files import exclusive_output  # noqa: E402
from tnn_core.models import ModelConfig, build_model  # noqa: E402
from tnn_core.operators import OperatorConfig  # noqa: E402
from tnn_core.training.checkpoint import save  # noqa: E402
from tnn_core.training.tasks import CharLMConfig, CharLMTask  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SECONDS, MEGABYTES = 30, 600
pytestmark = pytest.mark.slow  # a process per case (1.5 to 3 s each)
# tempfile.gettempdir() finds a writable folder by creating and removing a file of a random
# 8-character name there (the standard library's probe; nothing is read)
TEMP_PROBE = re.compile(rf"^{re.escape(tempfile.gettempdir())}/[a-z0-9_]{{8}}$")

TEXT = ("The quick brown fox jumps over the lazy dog. " * 60).encode()  # 2,700 bytes


def _allowed_roots(tmp_path: Path) -> tuple[str, ...]:
    """The project, the Python installation, and the test session's folders (the user's files)."""
    return (str(ROOT), sys.prefix, sys.base_prefix, str(tmp_path.parent), "/dev/null",
            "/proc/self/maps")


@pytest.fixture(scope="module")
def cases():
    """The process the cases are forked from (``forked_cases``): torch and tnn_core imported
    once, not once per case."""
    server = CaseServer({**os.environ, "PYTHONPATH": str(ROOT)})
    yield server
    server.close()


def run_case(cases: CaseServer, tmp_path: Path, module: str, *argv: str,
             seconds: float = SECONDS) -> tuple[int, str, str]:
    """``python -m module argv`` in a fresh child of ``cases``; assert the budgets (the
    wall-clock one, ``seconds``, catches a hang) and the audit."""
    result, stdout, stderr = cases.run(tmp_path, [module, *argv], seconds)
    assert "Traceback" not in stderr, stderr[-2000:]
    assert result["grew_mb"] < MEGABYTES, result["grew_mb"]
    outside = [p for p in result["opened"]
               if not p.startswith(_allowed_roots(tmp_path)) and not TEMP_PROBE.match(p)]
    assert not outside, outside
    return result["code"], stdout, stderr


def one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


# -- the files ----------------------------------------------------------------------------
def charlm_checkpoint(path: Path, *, settings: dict | None = None, source: dict | None = None,
                      vocab: str | None = None, layers: int = 1, dim: int = 8,
                      seq_len: int = 32) -> Path:
    """A small charlm model of TEXT, its task info edited as asked."""
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    config = ModelConfig(task="lm", vocab_size=task.vocab_size, dim=dim, layers=layers,
                         operator=OperatorConfig(causal=True))
    info = task.info()
    info["settings"] = {**info["settings"], "seq_len": seq_len, **(settings or {})}
    info["source"] = source or info["source"]
    info["vocab"] = vocab if vocab is not None else info["vocab"]
    return save(path, build_model(config), info)


def scaled_checkpoint(path: Path, scale: float) -> Path:
    """The hostile corpus's tiny recall model with every weight set to ``scale``."""
    model = tiny_model()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(scale)
    return save(path, model, TASK_INFO)


def ski_checkpoint(path: Path, rank: int) -> Path:
    config = ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=16, layers=1,
                         operator=OperatorConfig(kind="ski", rank=rank, band=9))
    return save(path, build_model(config), {"name": "digits", "settings": {"size": 8}})


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return save(tmp_path_factory.mktemp("good") / "tiny.safetensors", tiny_model(), TASK_INFO)


# -- 1. a checkpoint names no file ---------------------------------------------------------
@pytest.mark.parametrize("target", ["/etc/passwd", "/proc/self/environ", "/dev/zero", "fifo"])
@pytest.mark.parametrize("module", ["tnn_core.training.evaluate", "tnn_core.compress"])
def test_a_text_path_in_a_checkpoint_is_never_opened(cases, tmp_path, target, module):
    if target == "fifo":
        target = str(tmp_path / "text.fifo")
        os.mkfifo(target)
    path = charlm_checkpoint(tmp_path / "lm.safetensors", settings={"text": target},
                             source={"kind": "file", "name": "x.txt", "sha256": "0" * 64})
    extra = ["--band", "3", "--rank", "4"] if module == "tnn_core.compress" else []
    code, _, stderr = run_case(cases, tmp_path, module, str(path), *extra)
    assert code == 2
    assert "which the checkpoint does not hold; give that text again" in one_error(stderr)
    assert target not in stderr


# -- 2. reads are bounded and regular -------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory", "broken link"])
def test_a_checkpoint_that_is_not_a_regular_file_is_refused_unread(cases, tmp_path, kind):
    path = tmp_path / "x.safetensors"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "broken link":
        path.symlink_to(tmp_path / "missing")
    else:
        path.symlink_to("/dev/zero")
    for module in ("tnn_core.training.evaluate", "tnn_core.compress"):
        extra = ["--band", "3", "--rank", "4"] if module == "tnn_core.compress" else []
        code, _, stderr = run_case(cases, tmp_path, module, str(path), *extra)
        assert code == 2
        assert "checkpoint" in one_error(stderr)


def test_a_plan_that_is_a_fifo_is_refused(cases, tmp_path, good):
    plan = tmp_path / "plan.json"
    os.mkfifo(plan)
    code, _, stderr = run_case(cases, tmp_path, "tnn_core.compress", str(good), "--plan", str(plan))
    assert code == 2
    assert "a FIFO (named pipe), not a regular file" in one_error(stderr)


# -- 3. a source is never overwritten; one writer per output --------------------------------
def test_compress_never_replaces_its_source(cases, tmp_path, good):
    source = tmp_path / "src.safetensors"
    source.write_bytes(good.read_bytes())
    (tmp_path / "alias.safetensors").symlink_to(source)
    for out in (source, tmp_path / "alias.safetensors"):
        code, _, stderr = run_case(cases, tmp_path, "tnn_core.compress", str(source), "--band", "3",
                                   "--rank", "4", "--out", str(out))
        assert code == 2
        assert "it would be replaced" in one_error(stderr)
    assert source.read_bytes() == good.read_bytes()


def test_a_second_writer_of_one_output_is_refused(cases, tmp_path, good):
    out = tmp_path / "out.safetensors"
    with exclusive_output(out):
        code, _, stderr = run_case(cases, tmp_path, "tnn_core.compress", str(good), "--band", "3",
                                   "--rank", "4", "--out", str(out))
    assert code == 2
    assert "is being written by another run" in one_error(stderr)
    assert not out.exists()


# -- 4. memory and time bounded by what the model will do -----------------------------------
def test_a_rank_65536_ski_checkpoint_is_refused_by_the_budget(cases, tmp_path):
    """One sequence of it fits the memory limit, so it loads (its evaluation would go in
    chunks within MEMORY_LIMIT); a command's time limit refuses it before any pass."""
    path = ski_checkpoint(tmp_path / "ski.safetensors", 65536)
    assert 12e6 < path.stat().st_size < 14e6  # the 12.8 MB upload of the corpus
    code, _, stderr = run_case(cases, tmp_path, "tnn_core.training.evaluate", str(path),
                               "--time-limit", "1")
    assert code == 2
    assert "the limit is 1 s" in one_error(stderr)


def test_a_deep_long_model_whose_evaluation_never_ended_is_refused(cases, tmp_path):
    """Its time is no refusal at load any more (the app runs long work in the background):
    each command reads it and ends at the next thing it lacks, in one sentence, within the
    budgets."""
    path = charlm_checkpoint(tmp_path / "deep.safetensors", layers=48, dim=44, seq_len=1700)
    assert 5e6 < path.stat().st_size < 7e6
    for module in ("tnn_core.training.evaluate", "tnn_core.compress"):
        extra = ["--band", "3", "--rank", "4"] if module == "tnn_core.compress" else []
        code, _, stderr = run_case(cases, tmp_path, module, str(path), *extra)
        assert code == 2
        assert "which the checkpoint does not hold" in one_error(stderr)


# -- 5. numbers that cannot be trusted are said ---------------------------------------------
def test_overflowing_weights_give_no_number(cases, tmp_path):
    path = scaled_checkpoint(tmp_path / "huge.safetensors", 1e30)
    code, stdout, stderr = run_case(cases, tmp_path, "tnn_core.training.evaluate", str(path))
    assert code == 2 and not stdout.strip()
    assert "its outputs overflow, so no metric is reported" in one_error(stderr)
    code, _, stderr = run_case(cases, tmp_path, "tnn_core.compress", str(path), "--band", "3",
                               "--rank", "4", "--out", str(tmp_path / "out.safetensors"))
    assert code == 2
    assert "reaches |w| = 1e+30" in one_error(stderr)
    assert not (tmp_path / "out.safetensors").exists()


def test_a_shuffled_vocabulary_is_refused(cases, tmp_path):
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    path = charlm_checkpoint(tmp_path / "lm.safetensors", vocab=task.vocab[::-1])
    code, _, stderr = run_case(cases, tmp_path, "tnn_core.training.evaluate", str(path), "--text",
                               str(tmp_path / "fox.txt"))
    assert code == 2
    assert "vocab must be in code-point order" in one_error(stderr)


def test_a_users_text_is_read_from_the_command_line_and_checked(cases, tmp_path):
    """The text comes from the user, never from the file, and must be the one trained on."""
    path = charlm_checkpoint(tmp_path / "lm.safetensors")
    (tmp_path / "fox.txt").write_bytes(TEXT)
    code, stdout, _ = run_case(cases, tmp_path, "tnn_core.training.evaluate", str(path), "--text",
                               str(tmp_path / "fox.txt"))
    assert code == 0 and json.loads(stdout)["metric_name"] == "bpc"
    (tmp_path / "other.txt").write_bytes(TEXT.replace(b"fox", b"cat"))
    code, _, stderr = run_case(cases, tmp_path, "tnn_core.training.evaluate", str(path), "--text",
                               str(tmp_path / "other.txt"))
    assert code == 2
    assert "is not the one this model was trained on" in one_error(stderr)


# -- 6. command lines: one sentence, exit 2 --------------------------------------------------
@pytest.mark.parametrize("threads", ["0", "-1"])
@pytest.mark.parametrize("module", ["tnn_core.training.evaluate", "tnn_core.compress"])
def test_a_nonsense_thread_count_is_one_sentence(cases, tmp_path, good, module, threads):
    extra = ["--band", "3", "--rank", "4"] if module == "tnn_core.compress" else []
    code, _, stderr = run_case(cases, tmp_path, module, str(good), "--threads", threads, *extra)
    assert code == 2
    assert f"--threads must be an integer in [1, 1024]; got {threads}" in one_error(stderr)


def test_the_corpus_helpers_build_what_they_say(tmp_path):
    """The builders above make what their cases need (a broken builder would pass for the
    wrong reason)."""
    header, _ = split(charlm_checkpoint(tmp_path / "a.safetensors",
                                        settings={"text": "/etc/passwd"}).read_bytes())
    task = json.loads(header["__metadata__"]["task"])
    assert task["settings"]["text"] == "/etc/passwd"
    scaled = scaled_checkpoint(tmp_path / "b.safetensors", 1e30).read_bytes()
    assert b"recall" in split(scaled)[0]["__metadata__"]["task"].encode()
    assert with_json(scaled, "task", TASK_INFO)  # the hostile helpers accept our files
