"""``torchrun --nproc_per_node=2 -m tnn_core.training`` on the CPU (gloo): the ranks agree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tnn_core.training.checkpoint import load
from tnn_core.training.cli import main as train_main
from tnn_core.training.cli import weights_digest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
# torchrun starts in seconds (its agent and each rank import torch), so every test here is
# slow; each waits for torchrun only as long as the outcome takes: a finished run exits
# within a second, and a stopped rank ends the run at --ddp-timeout (no 30 s SIGTERM grace).
pytestmark = pytest.mark.slow
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
# A tiny run, float64 so that a stop and --resume reproduce it bit for bit.
ARGS = ["--task", "recall", "--seq-len", "16", "--num-pairs", "2", "--num-queries", "2",
        "--dim", "8", "--layers", "1", "--steps", "6", "--warmup", "1", "--eval-every", "2",
        "--eval-batches", "1", "--batch-size", "4", "--device", "cpu", "--dtype", "float64",
        "--threads", "1", "--no-progress"]


def torchrun(target: list[str], args: list[str]) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node=2 TARGET ARGS``, which must exit 0."""
    try:
        done = subprocess.run(TORCHRUN + target + args, cwd=ROOT, env=ENV, capture_output=True,
                              text=True, timeout=120)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"torchrun did not finish in 120 s:\n{err.stdout}\n{err.stderr}")
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """One uninterrupted two-rank run of ARGS, shared by the tests that only read it: its
    folder (ddp.safetensors, digests/rank<R>.sha256) and what torchrun printed."""
    folder = tmp_path_factory.mktemp("straight")
    done = torchrun(["-m", "tnn_core.training"], ARGS + [
        "--out", str(folder / "ddp.safetensors"), "--weights-digest", str(folder / "digests")])
    return folder, done


def test_two_process_torchrun_ends_with_identical_weights(straight, tmp_path):
    folder, done = straight
    digests = folder / "digests"
    rank0 = (digests / "rank0.sha256").read_text()
    rank1 = (digests / "rank1.sha256").read_text()
    assert rank0 == rank1, "the two ranks ended with different weights"
    model, info = load(folder / "ddp.safetensors")
    assert weights_digest(model) == rank0  # the checkpoint rank 0 wrote holds those weights
    assert info.history["world_size"] == 2
    assert info.history["command"].startswith("torchrun --nproc_per_node=2 -m tnn_core.training")
    assert [e["step"] for e in info.history["evals"]] == [0, 2, 4, 6]
    assert done.stdout.count("saved ") == 1  # only rank 0 prints and saves
    json.dumps(info.history)  # plain JSON throughout

    # The same run in one process: had both ranks drawn the same batches, DDP's averaged
    # gradient would equal this run's and so would the weights. They differ.
    single = tmp_path / "single"
    args = [a for i, a in enumerate(ARGS) if "--threads" not in ARGS[max(i - 1, 0):i + 1]]
    assert train_main(args + ["--weights-digest", str(single)]) == 0
    assert (single / "rank0.sha256").read_text() != rank0


# Run by torchrun in the test below: rank 1 stops itself (SIGSTOP, as a rank stopped in a
# debugger or by Ctrl-Z would be) in its third all-reduce, the start of its second step.
# Each rank writes its pid to DIR/rank<R>.pid, rank 1 the time it stops to DIR/stopped and
# rank 0 its exit status to DIR/rank0.exit. DIR is argv[1].
STOP_RANK_1 = """
import os, signal, sys, time
from pathlib import Path
import torch.distributed

folder, rank = Path(sys.argv.pop(1)), os.environ["RANK"]
(folder / f"rank{rank}.pid").write_text(str(os.getpid()))

if rank == "1":
    all_reduce, calls = torch.distributed.all_reduce, []

    def stop_on_third_call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            (folder / "stopped").write_text(str(time.time()))
            os.kill(os.getpid(), signal.SIGSTOP)
        return all_reduce(*args, **kwargs)

    torch.distributed.all_reduce = stop_on_third_call

from tnn_core.training.cli import main

status = main()
if rank == "0":
    (folder / "rank0.exit").write_text(str(status))
sys.exit(status)
"""


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # dead, not yet reaped by whoever adopted it


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_stopped_rank_ends_the_whole_run_within_the_ddp_timeout(tmp_path):
    """Rank 0 times out, prints one line, kills rank 1 and torchrun's agent and exits 3:
    no ChildFailedError traceback, and no 30 s wait for a SIGTERM rank 1 cannot answer.
    The time is taken from rank 1's stop to torchrun's exit (when a user's shell returns):
    the start-up before it (4 s on an idle 2-core machine, 10 s on a busy one) is the
    machine's, and so is rank 0's own interpreter exit after it."""
    timeout = 5
    script = tmp_path / "stop_rank_1.py"
    script.write_text(STOP_RANK_1)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", str(script), str(tmp_path), "--task", "recall",
               "--seq-len", "16", "--num-pairs", "2", "--num-queries", "2", "--dim", "8",
               "--layers", "1", "--steps", "50", "--eval-batches", "1", "--batch-size", "4",
               "--device", "cpu", "--threads", "1", "--no-progress",
               "--ddp-timeout", str(timeout)]
    start = time.time()
    logs = {name: tmp_path / f"torchrun.{name}" for name in ("stdout", "stderr")}
    with open(logs["stdout"], "w") as out, open(logs["stderr"], "w") as err:
        run = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=out, stderr=err)
    try:  # the run has ended when torchrun has: its caller's shell returns then
        run.wait(timeout=120)
        end = time.time()
        rank0 = int((tmp_path / "rank0.pid").read_text())
        for _ in range(300):  # rank 0 ends itself after ending torchrun: its last lines
            if gone(rank0):
                break
            time.sleep(0.1)
    finally:  # torchrun starts each rank in a session of its own: kill them one by one
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid_file in tmp_path.glob("rank*.pid"):
            pid = int(pid_file.read_text())
            try:  # only while it is still this test's rank
                if str(script).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except OSError:  # gone
                pass
    stdout, stderr = logs["stdout"].read_text(), logs["stderr"].read_text()
    output = f"stdout:\n{stdout}\nstderr:\n{stderr}"
    assert "error: rank 0 of 2: a collective waited more than ddp_timeout=5 s, so rank 1 " \
           "has stopped or hung" in stderr, output
    assert "Traceback" not in stderr and "ChildFailedError" not in stderr, output
    assert (tmp_path / "rank0.exit").read_text() == "3", output
    assert run.returncode == -signal.SIGKILL, output  # torchrun's agent, ended by rank 0
    assert gone(rank0), "rank 0 did not end"
    assert gone(int((tmp_path / "rank1.pid").read_text())), "the stopped rank 1 was left"
    stopped = float((tmp_path / "stopped").read_text())
    # 10 s of slack for a loaded machine (8.4 s was seen at load 10); torchrun's grace, the
    # wait this guards against, is 30 s
    assert end - stopped < timeout + 10, (f"the run ended {end - stopped:.1f} s after rank 1 "
                                          f"stopped ({end - start:.1f} s in all)\n{output}")


# Run by torchrun: both ranks' stop events are set before their fourth step, as SIGTERM
# from torchrun would set them.
STOP_AFTER_3_STEPS = """
import sys
import tnn_core.training.loop as loop

stop_requested, calls = loop._stop_requested, []


def stop_before_fourth_step(event, world, device):
    calls.append(1)
    if len(calls) == 4:
        event.set()
    return stop_requested(event, world, device)


loop._stop_requested = stop_before_fourth_step
from tnn_core.training.cli import main

sys.exit(main())
"""


def test_a_stopped_torchrun_resumes_to_the_uninterrupted_weights(straight, tmp_path):
    """Each rank draws its own batches, so each rank's generator is saved and restored."""
    script = tmp_path / "stop_after_3_steps.py"
    script.write_text(STOP_AFTER_3_STEPS)
    stopped = tmp_path / "stopped.safetensors"
    done = torchrun([str(script)], ARGS + ["--out", str(stopped)])
    assert "stopped by request after 3 steps" in done.stdout
    torchrun(["-m", "tnn_core.training"], ARGS + ["--out", str(stopped), "--resume"])
    resumed, info = load(stopped)
    assert info.history["resumed_at"] == [3] and info.history["steps"] == 6
    assert weights_digest(resumed) == weights_digest(load(straight[0] / "ddp.safetensors")[0])
