"""A killed or stopped run resumes from its checkpoint and resume file exactly as if it had
never stopped: the same weights, bit for bit (float64, one process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import load, read_info
from tnn_core.training.cli import save_run
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.loop import Callbacks, train
from tnn_core.training.resume import Resume, load_resume, read_state, resume_path, write_state
from tnn_core.training.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
TASK = get_task("recall", {"seq_len": 16, "num_pairs": 2, "num_queries": 2})
STEPS = 7


def tiny_config(**changes) -> TrainConfig:
    # a short warm-up, so the cosine schedule (which depends on steps) is in play
    model = ModelConfig(dim=8, layers=1, operator=OperatorConfig(kind="tno", causal=True))
    config = TrainConfig(task="recall", steps=STEPS, batch_size=4, warmup=2, eval_every=3,
                         eval_batches=1, eval_batch_size=4, device="cpu", dtype="float64",
                         model=model_for_task(model, TASK))
    return replace(config, **changes)


class Killed(Exception):
    """Stands in for the process dying between two steps."""


def test_a_run_killed_after_a_checkpoint_resumes_to_the_same_weights(tmp_path):
    straight = train(tiny_config(), TASK)

    out = tmp_path / "run.safetensors"

    def die_after_step_5(step, *_):
        if step == 5:
            raise Killed

    callbacks = Callbacks(on_step=die_after_step_5,
                          on_checkpoint=lambda m, h, s: save_run(out, m, TASK, h, s))
    with pytest.raises(Killed):  # the checkpoint at step 4 is on disk; step 5 is lost
        train(tiny_config(checkpoint_every=2), TASK, callbacks)
    assert read_info(out).history["steps"] == 4
    assert read_state(resume_path(out)).step == 4

    config = tiny_config(checkpoint_every=2)
    resume = load_resume(out, config.to_dict(), TASK.info())
    resumed = train(config, TASK, resume=resume)

    assert resumed.status == "completed" and resumed.history["steps"] == STEPS
    weights, expected = resumed.model.state_dict(), straight.model.state_dict()
    assert list(weights) == list(expected)
    for name in expected:
        assert torch.equal(weights[name], expected[name]), name
    assert resumed.history["train_loss"] == straight.history["train_loss"]
    assert resumed.history["resumed_at"] == [4]
    steps = [e["step"] for e in resumed.history["evals"]]
    assert steps == [e["step"] for e in straight.history["evals"]] == [0, 3, 6, 7]


def test_a_stopped_run_resumes_to_the_same_weights():
    straight = train(tiny_config(), TASK)
    stop = threading.Event()
    first = train(tiny_config(), TASK, Callbacks(on_step=lambda step, *_: step == 2
                                                 and stop.set()), stop_event=stop)
    assert first.status == "stopped" and first.history["steps"] == 2 and first.state.step == 2

    resume = Resume(first.model.state_dict(), first.history, first.state)
    resumed = train(tiny_config(), TASK, resume=resume)
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], tensor), name
    # the stopped run evaluated at its last step, 2; the history keeps that evaluation
    assert [e["step"] for e in resumed.history["evals"]] == [0, 2, 3, 6, 7]


@pytest.fixture
def saved_run(tmp_path) -> Path:
    out = tmp_path / "run.safetensors"
    result = train(tiny_config(steps=3), TASK)
    save_run(out, result.model, TASK, result.history, result.state)
    return out


@pytest.mark.parametrize(("change", "field"), [
    ({"lr": 1e-3}, "lr"),
    ({"seed": 5}, "seed"),
    ({"steps": 2}, "steps"),
])
def test_resume_refuses_a_different_config(saved_run, change, field):
    with pytest.raises(ValueError, match=field):
        load_resume(saved_run, tiny_config(**change).to_dict(), TASK.info())


def test_resume_refuses_a_different_model_or_task(saved_run):
    other_model = replace(tiny_config().model, dim=16)
    with pytest.raises(ValueError, match="model"):
        load_resume(saved_run, tiny_config(model=other_model).to_dict(), TASK.info())
    other_task = get_task("recall", {"seq_len": 16, "num_pairs": 3, "num_queries": 2})
    with pytest.raises(ValueError, match="task settings"):
        load_resume(saved_run, tiny_config().to_dict(), other_task.info())


def test_resume_refuses_files_of_different_steps_or_a_missing_resume_file(saved_run):
    later = train(tiny_config(steps=4), TASK)
    save_run(saved_run, later.model, TASK, later.history, None)  # a save cut off halfway
    with pytest.raises(ValueError, match="does not exist"):
        load_resume(saved_run, tiny_config().to_dict(), TASK.info())
    stale = train(tiny_config(steps=3), TASK).state
    write_state(resume_path(saved_run), stale)
    with pytest.raises(ValueError, match="cut off"):
        load_resume(saved_run, tiny_config().to_dict(), TASK.info())


CLI = [sys.executable, "-m", "tnn_core.training", "--task", "recall", "--seq-len", "16",
       "--num-pairs", "2", "--num-queries", "2", "--dim", "8", "--layers", "1",
       "--eval-every", "1000", "--eval-batches", "1", "--batch-size", "4", "--device", "cpu",
       "--threads", "1", "--no-progress", "--checkpoint-every", "5"]


@pytest.mark.slow  # two training processes
def test_sigterm_saves_and_resume_completes(tmp_path):
    out = tmp_path / "run.safetensors"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = CLI + ["--steps", "100000", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert out.exists(), "no checkpoint within 120 s"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, f"stdout:\n{stdout}\nstderr:\n{stderr}"
    info = read_info(out)
    stopped = info.history["steps"]
    assert info.history["status"] == "stopped" and 5 <= stopped < 100000
    assert read_state(resume_path(out)).step == stopped

    command = CLI + ["--steps", str(stopped + 3), "--out", str(out), "--resume"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    model, info = load(out)
    assert info.history["status"] == "completed" and info.history["steps"] == stopped + 3
    assert info.history["resumed_at"] == [stopped]
    assert len(info.history["train_loss"]) == stopped + 3


def test_a_resume_file_from_before_per_layer_operators_still_matches():
    """Files written before ModelConfig.layer_operators existed lack the field."""
    from tnn_core.training.config import TrainConfig
    from tnn_core.training.resume import TrainState, check_matches

    config = TrainConfig(task="digits", steps=4).to_dict()
    old = {**config, "model": {k: v for k, v in config["model"].items()
                               if k != "layer_operators"}}
    check_matches(TrainState(2, {}, [], old, {"name": "digits"}), config, {"name": "digits"},
                  "old.resume.safetensors")
    changed = {**old, "model": {**old["model"], "dim": 8}}
    with pytest.raises(ValueError, match="its model is"):
        check_matches(TrainState(2, {}, [], changed, {"name": "digits"}), config,
                      {"name": "digits"}, "old.resume.safetensors")


# -- a save killed part way: every state it can leave on disk resumes --------------------------
@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[int, Path]:
    """{step: a folder holding that step's whole pair} of one run saved every 2 steps."""
    root = tmp_path_factory.mktemp("pairs")

    def keep(model, history, state):
        (root / str(state.step)).mkdir()
        save_run(root / str(state.step) / "run.safetensors", model, TASK, history, state)

    train(tiny_config(checkpoint_every=2), TASK, Callbacks(on_checkpoint=keep))
    return {step: root / str(step) for step in (4, 6)}


def save_killed(pairs: dict[int, Path], out: Path, point: str) -> int:
    """Put at ``out`` what a save of step 6 over the pair of step 4 leaves when killed at
    ``point`` (``save_run``'s order: the resume file's ``.next``, the checkpoint, the
    rename); returns the step it must resume from."""
    def put(step: int, name: str, as_name: str | None = None) -> None:
        (out.parent / (as_name or name)).write_bytes((pairs[step] / name).read_bytes())

    checkpoint, resume = "run.safetensors", "run.resume.safetensors"
    temp = out.parent / f".{checkpoint}.999999.abc.tmp"  # a writer killed mid-write
    first_save = point.startswith("first ")
    if not first_save:
        put(4, checkpoint)
        put(4, resume)
    if point.endswith("writing .next"):
        temp.write_bytes(b"partial")
        return 4
    put(6, resume, f"{resume}.next")
    if point.endswith("after .next"):
        return 4
    if point.endswith("writing the checkpoint"):
        temp.write_bytes(b"partial")
        return 4
    put(6, checkpoint)
    if point.endswith("after the checkpoint"):
        return 6
    (out.parent / f"{resume}.next").rename(out.parent / resume)  # "whole"
    return 6


KILL_POINTS = ["writing .next", "after .next", "writing the checkpoint",
               "after the checkpoint", "whole", "first after the checkpoint"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_save_killed_at_any_point_resumes_to_the_same_weights(pairs, tmp_path, point):
    straight = train(tiny_config(), TASK)
    out = tmp_path / "run.safetensors"
    step = save_killed(pairs, out, point)
    if point.startswith("first "):  # the run's first save: nothing older to fall back to
        assert not out.exists() or read_info(out).history["steps"] == step
    config = tiny_config(checkpoint_every=2)
    resume = load_resume(out, config.to_dict(), TASK.info())
    assert resume.state.step == step
    assert read_state(resume_path(out)).step == read_info(out).history["steps"] == step
    resumed = train(config, TASK, resume=resume)
    weights, expected = resumed.model.state_dict(), straight.model.state_dict()
    for name in expected:
        assert torch.equal(weights[name], expected[name]), name
    assert resumed.history["train_loss"] == straight.history["train_loss"]


def test_the_cli_completes_a_save_killed_before_its_rename(tmp_path, capsys):
    from tnn_core.training import cli

    def cli_run(steps: int, out: Path, *more: str) -> int:
        return cli.main(CLI[3:] + ["--steps", str(steps), "--out", str(out), *more])

    assert cli_run(4, tmp_path / "4" / "run.safetensors") == 0
    assert cli_run(6, tmp_path / "6" / "run.safetensors") == 0
    out = tmp_path / "run.safetensors"
    assert save_killed({4: tmp_path / "4", 6: tmp_path / "6"}, out,
                       "after the checkpoint") == 6
    assert cli_run(8, out, "--resume") == 0, capsys.readouterr().err
    assert read_info(out).history["resumed_at"] == [6]
    assert read_state(resume_path(out)).step == read_info(out).history["steps"] == 8
    assert not (tmp_path / "run.resume.safetensors.next").exists()
