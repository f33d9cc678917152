"""How ``python -m tnn_core.training`` ends: every failure is one sentence on stderr and an
exit status of cli.py's docstring (2 bad input, 4 disk full, ...), never a traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tnn_core.training import cli
from tnn_core.training.checkpoint import load
from tnn_core.training.resume import read_state, resume_path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--task", "recall", "--seq-len", "16", "--num-pairs", "2", "--num-queries", "2",
        "--dim", "8", "--layers", "1", "--eval-every", "1000", "--eval-batches", "1",
        "--batch-size", "4", "--device", "cpu", "--no-progress"]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def one_error(capsys) -> str:
    """The single line the command wrote to stderr."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("threads", ["0", "-1"])
@pytest.mark.slow  # a training process per case: 3 s of CPU each
def test_threads_below_one_are_refused(threads):
    """Through the real entry point: torch.set_num_threads(0) would raise a RuntimeError."""
    done = subprocess.run([sys.executable, "-m", "tnn_core.training", "--threads", threads,
                           "--steps", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: --threads must be an integer in [1, inf); got " \
                                  f"{threads}"


def test_an_option_of_another_task_is_bad_input(capsys):
    assert cli.main(["--task", "listops", "--size", "8", "--steps", "1"]) == 2
    assert one_error(capsys) == "error: --size applies to digits, not listops"


@pytest.mark.parametrize("error, expected", [
    (MemoryError(), "error: ran out of memory: try a smaller --batch-size, --seq-len, --dim "
                    "or --layers"),
    (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                            "total capacity of 139 GiB"),
     "error: ran out of memory (CUDA out of memory): try a smaller --batch-size, --seq-len, "
     "--dim or --layers"),
    (KeyError("kernel"), "error: unexpected KeyError in broken_train (test_training_exits.py:"),
])
def test_unforeseen_errors_are_a_sentence_and_status_2(monkeypatch, capsys, error, expected):
    def broken_train(*args, **kwargs):
        raise error

    monkeypatch.setattr(cli, "train", broken_train)
    assert cli.main(ARGS + ["--steps", "1"]) == 2
    line = one_error(capsys)
    assert line.startswith(expected), line
    assert "Traceback" not in line


class FullDisk:
    """A file that takes half of what is written to it, then fails as a full disk does."""

    def __init__(self, file, code: int, folder: Path, seen: list):
        self.file, self.code, self.folder, self.seen = file, code, folder, seen

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data: bytes):
        self.file.write(data[:len(data) // 2])
        self.file.flush()
        self.seen.extend(p.name for p in self.folder.iterdir())
        raise OSError(self.code, os.strerror(self.code))

    def __getattr__(self, name):
        return getattr(self.file, name)


# a run of 5 steps saving every 2 writes: 1 resume (step 2), 2 checkpoint (step 2),
# 3 resume (step 4), 4 checkpoint (step 4), 5 resume (final, step 5), 6 checkpoint (final)
@pytest.mark.parametrize("failing_write, code, last_good", [
    (1, errno.ENOSPC, None),
    (3, errno.ENOSPC, 2),
    (4, errno.EDQUOT, 2),
    (6, errno.ENOSPC, 4),
])
def test_a_full_disk_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, capsys,
                                                    failing_write, code, last_good):
    out = tmp_path / "run.safetensors"
    fdopen, writes, seen = os.fdopen, [], []

    def fill_the_disk_at_one_write(fd, mode="r", *args, **kwargs):
        file = fdopen(fd, mode, *args, **kwargs)
        if "w" in mode:
            writes.append(fd)
            if len(writes) == failing_write:
                return FullDisk(file, code, tmp_path, seen)
        return file

    monkeypatch.setattr(os, "fdopen", fill_the_disk_at_one_write)
    run = ARGS + ["--steps", "5", "--checkpoint-every", "2", "--out", str(out)]
    assert cli.main(run) == 4
    monkeypatch.undo()

    assert any(name.endswith(".tmp") for name in seen)  # the write was cut off half-way ...
    left = sorted(p.name for p in tmp_path.iterdir())
    expected = [] if last_good is None else ["run.resume.safetensors", "run.safetensors"]
    assert left == expected  # ... and its temp file is gone, and no .next either
    line = one_error(capsys)
    assert line.startswith(f"error: the disk is full ({os.strerror(code)}) while saving {out}; ")
    if last_good is None:
        assert line.endswith("; no checkpoint was saved yet")
        return
    assert line.endswith(f"; the last good checkpoint is {out} (step {last_good}, with its "
                         f"resume file): free some space, then add --resume to continue "
                         f"from it")
    _, info = load(out)
    assert info.history["steps"] == last_good == read_state(resume_path(out)).step
    assert cli.main(run + ["--resume"]) == 0  # the space is back
    _, info = load(out)
    assert info.history["steps"] == 5 and info.history["resumed_at"] == [last_good]
