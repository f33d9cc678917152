"""Train a TNN on a task and save it as a checkpoint.

    python -m tnn_core.training --task listops --operator ski --steps 2000 \\
        --out checkpoints/listops-ski.safetensors
    torchrun --nproc_per_node=2 -m tnn_core.training --task charlm --steps 500 --out lm.safetensors

Under torchrun every rank trains with DistributedDataParallel on its own batches; only
rank 0 prints, shows the progress bar and writes the checkpoint. A collective that waits
longer than --ddp-timeout seconds (a rank stopped or hung) ends the run: the rank that
waited prints a message naming the others, kills this run's other ranks on its machine
(torchrun would give them 30 s to answer a SIGTERM that a stopped rank never answers) and
torchrun's agent (which would print a ChildFailedError traceback), and exits 3. torchrun
itself then ends by that SIGKILL (status 137, -9 in Python) within a second of the
timeout: its own status can only be 0, 1 with a traceback, or a signal's. With
--max-restarts left, the agent is spared and restarts the ranks as asked.

Nothing is lost: with --out, the checkpoint and OUT.resume.safetensors (optimizer state,
batch generators; safetensors, never pickle) are written every --checkpoint-every steps,
at the end, and when the run is stopped by SIGTERM or Ctrl-C (it ends after the current
step, saves, and exits 0). The same command with --resume continues from them to --steps
with the updates the uninterrupted run would have made (bit for bit on the CPU); --steps,
--device, --checkpoint-every and --ddp-timeout may change, any other setting must be the
same.
Exit status (of each rank under torchrun), with one sentence on stderr for each failure:

    0  completed, or stopped and saved
    1  diverged (the last finite weights are saved)
    2  bad settings or input, an unreadable file, out of memory, or an unforeseen error
    3  DDP timeout: a rank stopped or hung
    4  disk full (ENOSPC or EDQUOT) while saving: the message names the last good
       checkpoint on disk, the previous save, kept with its resume file so that the same
       command with --resume continues once there is space (or says none was saved)
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import os
import re
import shlex
import signal
import sys
import threading
import traceback
from pathlib import Path

import torch

from tnn_core.allocator import keep_freed_memory
from tnn_core.checks import check_int
from tnn_core.training.arguments import config_from_args, parser, task_from_args
from tnn_core.training.checkpoint import save
from tnn_core.training.config import TrainConfig
from tnn_core.training.distributed import CollectiveTimeout
from tnn_core.training.loop import Callbacks, train
from tnn_core.training.resume import Resume, load_resume, pending_path, resume_path, write_state
from tnn_core.training.tasks import Task


def command_line(argv: list[str]) -> str:
    """The command as typed: python -m tnn_core.training ..., torchrun-prefixed under DDP."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    prefix = f"torchrun --nproc_per_node={world} -m" if world > 1 else "python -m"
    return f"{prefix} tnn_core.training {shlex.join(argv)}".strip()


def weights_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def save_run(out: Path, model: torch.nn.Module, task: Task, history: dict, state) -> Path:
    """The checkpoint at ``out`` and, when the run can go on (``state``), its resume file.

    The previous save's pair stays whole until the new one is: the new resume file is
    written beside its place (``resume.pending_path``), the checkpoint replaced, then the
    resume file renamed into place. A save that fails (a full disk) or is killed before
    the checkpoint is replaced leaves the previous pair, which ``--resume`` continues; one
    killed before the rename leaves the new checkpoint and its pending resume file, which
    ``--resume`` renames into place (``resume.complete_save``) and continues."""
    resume = resume_path(out)
    pending = pending_path(out)
    if state is None:  # the run cannot go on (diverged): no resume file, none pending
        resume.unlink(missing_ok=True)
        pending.unlink(missing_ok=True)
        return save(out, model, task.info(), history)
    try:
        write_state(pending, state)
        save(out, model, task.info(), history)
    except BaseException:
        pending.unlink(missing_ok=True)
        raise
    os.replace(pending, resume)
    return out


class StopOnSignal:
    """While active, SIGTERM and Ctrl-C (SIGINT) set ``event`` (the run ends after its
    step and saves) instead of killing the process; a second Ctrl-C interrupts at once.
    The previous handlers are put back on exit."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, event: threading.Event):
        self.event = event
        self.previous: dict = {}

    def _handle(self, signum, frame) -> None:
        if signum == signal.SIGINT and self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


# exit statuses (module docstring)
COMPLETED, DIVERGED, BAD_INPUT, DDP_TIMEOUT, DISK_FULL = 0, 1, 2, 3, 4
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class Run:
    """What the exits need to know of a run: its progress bar and its newest save."""

    def __init__(self) -> None:
        self.bar = None  # tqdm on rank 0, closed before any last line
        self.saving: Path | None = None  # the file being written, if any
        self.saved: tuple[Path, int] | None = None  # (checkpoint, step) whole on disk

    def save(self, out: Path, model, task: Task, history: dict, state) -> Path:
        self.saving = out
        path = save_run(out, model, task, history, state)
        self.saving, self.saved = None, (out, history["steps"])
        return path

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def last_save(self) -> str:
        if self.saved is None:
            return "no checkpoint was saved yet"
        out, step = self.saved
        if not resume_path(out).is_file():  # a diverged run's last save has none
            return f"the last good checkpoint is {out} (step {step})"
        return (f"the last good checkpoint is {out} (step {step}, with its resume file): "
                f"free some space, then add --resume to continue from it")


def main(argv: list[str] | None = None) -> int:
    """The command; it ends with an exit status of the module docstring, and a failure
    prints one sentence on stderr, never a traceback."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser(__doc__).parse_args(argv)  # a malformed option: argparse's usage, exit 2
    run = Run()
    try:
        return train_command(args, argv, run)
    except CollectiveTimeout as err:
        run.close_bar()
        agent, peers = torchrun_processes()
        ended = ", ".join(f"rank {r} (pid {pid})" for r, pid in sorted(peers.items()))
        if agent is not None:
            ended += f"{' and ' if ended else ''}torchrun (pid {agent})"
        print(f"error: {err}" + (f"; ended {ended}" if ended else ""), file=sys.stderr,
              flush=True)
        for pid in [*peers.values(), *([agent] if agent is not None else [])]:
            kill(pid)
        return DDP_TIMEOUT
    except OSError as err:
        run.close_bar()
        if err.errno in DISK_FULL_ERRNOS:
            target = run.saving or err.filename or "a file"
            print(f"error: the disk is full ({err.strerror}) while saving {target}; "
                  f"{run.last_save()}", file=sys.stderr)
            return DISK_FULL
        where = f": {err.filename}" if err.filename else ""
        print(f"error: {err.strerror or err}{where}", file=sys.stderr)
        return BAD_INPUT
    except (MemoryError, torch.OutOfMemoryError) as err:
        run.close_bar()
        detail = str(err).split(". ")[0].strip()  # CUDA's message: its first sentence
        detail = f" ({detail})" if detail else ""  # MemoryError() has none
        print(f"error: ran out of memory{detail}: try a smaller --batch-size, --seq-len, "
              f"--dim or --layers", file=sys.stderr)
        return BAD_INPUT
    except ValueError as err:  # settings, files and checkpoints (CheckpointError)
        run.close_bar()
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    except Exception as err:  # unforeseen: still a sentence, naming where it happened
        run.close_bar()
        frame = traceback.extract_tb(err.__traceback__)[-1]
        first = (str(err).splitlines() or [""])[0]
        print(f"error: unexpected {type(err).__name__} in {frame.name} "
              f"({Path(frame.filename).name}:{frame.lineno}): {first}", file=sys.stderr)
        return BAD_INPUT
    finally:
        run.close_bar()


def torchrun_processes() -> tuple[int | None, dict[int, int]]:
    """Under torchrun on Linux: (the agent's pid, or None while it has restarts left for
    the ranks; {rank: pid} of this run's other ranks on this machine). (None, {}) when
    the parent is not torchrun or /proc cannot tell."""
    run_id, agent = os.environ.get("TORCHELASTIC_RUN_ID"), os.getppid()
    try:
        launcher = Path(f"/proc/{agent}/cmdline").read_bytes()
    except OSError:
        return None, {}
    if run_id is None or not re.search(rb"torchrun|torch\.distributed\.run", launcher):
        return None, {}
    peers = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent != agent:
                continue
            environ = (entry / "environ").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):  # gone meanwhile, or not ours to read
            continue
        env = dict(item.split("=", 1) for item in environ if "=" in item)
        if env.get("TORCHELASTIC_RUN_ID") == run_id and env.get("RANK", "").isdigit():
            peers[int(env["RANK"])] = int(entry.name)
    restarts_left = (int(os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0"))
                     > int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")))
    return (None if restarts_left else agent), peers


def kill(pid: int) -> None:
    """SIGKILL ``pid`` and, as torchrun starts each rank in a session of its own, the
    rank's process group; a process already gone is ignored."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _lead_callbacks(args: argparse.Namespace, config: TrainConfig, task: Task, run: Run,
                    resume: Resume | None) -> Callbacks:
    """Rank 0's: what the run is, then a progress bar, a line per evaluation, and the
    checkpoint saved every --checkpoint-every steps with --out."""
    print(f"task: {task.describe()}")
    model = config.model
    layers = f"{model.layers} layer" + ("s" if model.layers != 1 else "")
    print(f"model: {model.operator.kind}, d={model.dim}, {layers}; "
          f"{config.steps} steps of {config.batch_size} × n={task.seq_len}")
    callbacks = Callbacks()
    if not args.no_progress:
        from tqdm import tqdm

        run.bar = bar = tqdm(total=config.steps, unit="step", dynamic_ncols=True)
        if resume is not None:
            bar.update(resume.state.step)

        def on_step(step, loss, rate, lr):
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", tok_s=f"{rate:,.0f}", lr=f"{lr:.2e}")

        callbacks.on_step = on_step

    def say(line: str) -> None:
        (run.bar.write if run.bar is not None else print)(line)

    def on_eval(step, metrics):
        say(f"step {step:>6}: val {task.metric_name} {metrics['metric']:.4f}  "
            f"loss {metrics['loss']:.4f}  (chance {task.chance:.4f})")

    callbacks.on_eval = on_eval
    if args.out is not None:

        def on_checkpoint(model, history, state):
            run.save(args.out, model, task, history, state)
            say(f"step {state.step:>6}: saved {args.out}")

        callbacks.on_checkpoint = on_checkpoint
    return callbacks


def train_command(args: argparse.Namespace, argv: list[str], run: Run) -> int:
    """Train as ``args`` ask; the failures are left to ``main``."""
    keep_freed_memory()  # every torchrun worker too: each runs this main
    rank = int(os.environ.get("RANK", "0"))
    if args.threads is not None:
        torch.set_num_threads(check_int("--threads", args.threads, 1))
    task = task_from_args(args)
    config = config_from_args(args, task)
    resume = load_resume(args.out, config.to_dict(), task.info()) if args.resume else None
    if resume is not None:
        run.saved = (args.out, resume.state.step)
    lead = rank == 0
    callbacks = _lead_callbacks(args, config, task, run, resume) if lead else Callbacks()
    stop = threading.Event()
    with StopOnSignal(stop):
        result = train(config, task, callbacks=callbacks, stop_event=stop,
                       command=command_line(argv), resume=resume)
    run.close_bar()
    if args.weights_digest is not None:
        args.weights_digest.mkdir(parents=True, exist_ok=True)
        (args.weights_digest / f"rank{rank}.sha256").write_text(weights_digest(result.model))
    status = DIVERGED if result.status == "diverged" else COMPLETED
    if not lead:
        return status
    final = result.final_metrics
    print(f"{result.status}: {result.message}")
    print(f"val {task.metric_name} {final['metric']:.4f} (chance {task.chance:.4f}), "
          f"{result.history['tokens_per_s']:,.0f} tokens/s on {result.history['device']}, "
          f"{result.history['wall_s']:.1f} s")
    if args.out is not None:
        path = run.save(args.out, result.model, task, result.history, result.state)
        print(f"saved {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return status
