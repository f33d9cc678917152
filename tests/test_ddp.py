"""``torchrun --nproc_per_node=2 -m tnn_core.training`` on the CPU (gloo): the ranks agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tnn_core.training.checkpoint import load
from tnn_core.training.cli import main as train_main
from tnn_core.training.cli import weights_digest

ROOT = Path(__file__).resolve().parent.parent


def test_two_process_torchrun_ends_with_identical_weights(tmp_path):
    out = tmp_path / "ddp.safetensors"
    digests = tmp_path / "digests"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", "-m", "tnn_core.training", "--task", "recall",
               "--seq-len", "16", "--num-pairs", "2", "--num-queries", "2", "--dim", "8",
               "--layers", "1", "--steps", "3", "--eval-every", "2", "--eval-batches", "1",
               "--batch-size", "4", "--device", "cpu", "--threads", "1", "--no-progress",
               "--out", str(out), "--weights-digest", str(digests)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"torchrun did not finish in 120 s:\n{err.stdout}\n{err.stderr}")
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"

    rank0 = (digests / "rank0.sha256").read_text()
    rank1 = (digests / "rank1.sha256").read_text()
    assert rank0 == rank1, "the two ranks ended with different weights"
    model, info = load(out)
    assert weights_digest(model) == rank0  # the checkpoint rank 0 wrote holds those weights
    assert info.history["world_size"] == 2
    assert info.history["command"].startswith("torchrun --nproc_per_node=2 -m tnn_core.training")
    assert [e["step"] for e in info.history["evals"]] == [0, 2, 3]
    assert done.stdout.count("saved ") == 1  # only rank 0 prints and saves
    json.dumps(info.history)  # plain JSON throughout

    # The same run in one process: had both ranks drawn the same batches, DDP's averaged
    # gradient would equal this run's and so would the weights. They differ.
    single = tmp_path / "single"
    args = command[command.index("--task"):-4]
    args = [a for i, a in enumerate(args) if "--threads" not in args[max(i - 1, 0):i + 1]]
    assert train_main(args + ["--weights-digest", str(single)]) == 0
    assert (single / "rank0.sha256").read_text() != rank0
