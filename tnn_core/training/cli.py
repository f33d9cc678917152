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
from tnn_core.files import read_bounded
from tnn_core.models import ModelConfig
from tnn_core.operators import ALL_KINDS, OperatorConfig
from tnn_core.operators.config import FD_INPUTS
from tnn_core.training.checkpoint import save
from tnn_core.training.config import DEVICES, DTYPES, SCHEDULES, TrainConfig, model_for_task
from tnn_core.training.distributed import CollectiveTimeout
from tnn_core.training.loop import Callbacks, train
from tnn_core.training.resume import load_resume, resume_path, write_state
from tnn_core.training.tasks import TASKS, CharLMTask, Task, get_task, task_config
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

# CLI option -> (task config field, the tasks that have it)
TASK_OPTIONS = {
    "seq_len": ("seq_len", ("charlm", "listops", "recall")),
    "max_bytes": ("max_bytes", ("charlm",)),
    "max_vocab": ("max_vocab", ("charlm",)),
    "max_depth": ("max_depth", ("listops",)),
    "max_args": ("max_args", ("listops",)),
    "nest_prob": ("nest_prob", ("listops",)),
    "size": ("size", ("digits",)),
    "num_pairs": ("num_pairs", ("recall",)),
    "num_queries": ("num_queries", ("recall",)),
    "num_keys": ("num_keys", ("recall",)),
    "num_values": ("num_values", ("recall",)),
}


# the flags that go into TrainConfig, ModelConfig and OperatorConfig as they are
TRAIN_FIELDS = ("task", "steps", "batch_size", "lr", "weight_decay", "warmup", "schedule",
                "clip", "eval_every", "eval_batches", "eval_batch_size", "seed", "device",
                "dtype", "ddp_timeout")
MODEL_FIELDS = ("dim", "layers", "expand_ratio")
OPERATOR_FIELDS = ("decay", "rank", "band", "rpe_dim", "rpe_layers", "activation", "fd_input",
                   "heads", "sparse_density", "max_length", "sparse_l1", "psf_activation")


def parser() -> argparse.ArgumentParser:
    train, model, op = TrainConfig(), ModelConfig(), OperatorConfig()  # the defaults
    p = argparse.ArgumentParser(prog="python -m tnn_core.training", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=tuple(TASKS), default=train.task, help="what to learn")
    p.add_argument("--out", type=Path, help="checkpoint to write (.safetensors); none if unset")
    p.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                   help="with --out: save the checkpoint and OUT.resume.safetensors every K "
                        f"steps (default {train.checkpoint_every}; 0: only at the end and on "
                        "SIGTERM / Ctrl-C)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved at --out (same settings; --steps may grow)")

    t = p.add_argument_group("task options (default: the task's own)")
    t.add_argument("--seq-len", type=int, help="training length n (charlm, listops, recall)")
    t.add_argument("--text", help="charlm: a UTF-8 text file instead of the stdlib's source")
    t.add_argument("--max-bytes", type=int, help="charlm: cap on the stdlib corpus in bytes")
    t.add_argument("--max-vocab", type=int, help="charlm: vocabulary size, UNK included")
    t.add_argument("--max-depth", type=int, help="listops: operator nesting depth")
    t.add_argument("--max-args", type=int, help="listops: most arguments per operator")
    t.add_argument("--nest-prob", type=float, help="listops: chance an argument nests")
    t.add_argument("--size", type=int, choices=(8, 32), help="digits: 8 (n=64) or 32 (n=1024)")
    t.add_argument("--num-pairs", type=int, help="recall: key-value pairs per sequence")
    t.add_argument("--num-queries", type=int, help="recall: keys asked again")
    t.add_argument("--num-keys", type=int, help="recall: distinct key tokens")
    t.add_argument("--num-values", type=int, help="recall: distinct value tokens")

    m = p.add_argument_group("model")
    m.add_argument("--operator", choices=ALL_KINDS, default=op.kind,
                   help="token mixer: tno (TNN), ski (SKI-TNN), fd (FD-TNN) or togeipi "
                        "(Toeplitz plus sparse)")
    m.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help="causal operator (default: yes for charlm/recall, no otherwise)")
    m.add_argument("--dim", type=int, default=model.dim, help="model width d")
    m.add_argument("--layers", type=int, default=model.layers, help="TNN layers")
    m.add_argument("--expand-ratio", type=int, default=model.expand_ratio,
                   help="GTU width = expand ratio × d")
    m.add_argument("--decay", type=float, default=op.decay, help="operator decay λ in (0, 1]")
    m.add_argument("--rank", type=int, default=op.rank, help="SKI inducing points r")
    m.add_argument("--band", type=int, default=op.band, help="SKI band taps m")
    m.add_argument("--rpe-dim", type=int, default=op.rpe_dim,
                   help="RPE MLP width (default max(D // 8, 32))")
    m.add_argument("--rpe-layers", type=int, default=op.rpe_layers,
                   help="RPE MLP hidden layers")
    m.add_argument("--activation", choices=("relu", "silu", "gelu"), default=op.activation,
                   help="RPE MLP activation")
    m.add_argument("--fd-input", choices=FD_INPUTS, default=op.fd_input,
                   help="fd: the RPE reads omega (Algorithm 2) or cosine (cos ω, smooth on the "
                        "circle: Theorems 2-3)")
    m.add_argument("--heads", type=int, default=op.heads,
                   help="togeipi: heads, one Toeplitz point spread function each")
    m.add_argument("--sparse-density", type=float, default=op.sparse_density,
                   help="togeipi: share of the sparse matrix's entries kept, in (0, 1]")
    m.add_argument("--max-length", type=int, default=op.max_length,
                   help="togeipi: longest sequence (the sparse matrix is max-length²)")
    m.add_argument("--sparse-l1", type=float, default=op.sparse_l1,
                   help="togeipi: weight of the l1 penalty on the sparse matrix")
    m.add_argument("--psf-activation", choices=("none", "gelu"), default=op.psf_activation,
                   help="togeipi: none keeps the mixing linear; gelu as in the project")

    o = p.add_argument_group("optimisation")
    o.add_argument("--steps", type=int, default=train.steps, help="optimizer updates")
    o.add_argument("--batch-size", type=int, default=train.batch_size,
                   help="sequences per update (per rank under torchrun)")
    o.add_argument("--lr", type=float, default=train.lr, help="peak learning rate (AdamW)")
    o.add_argument("--weight-decay", type=float, default=train.weight_decay,
                   help="AdamW weight decay on weight matrices")
    o.add_argument("--warmup", type=int, default=train.warmup, help="linear warm-up steps")
    o.add_argument("--schedule", choices=SCHEDULES, default=train.schedule,
                   help="after warm-up: cosine (to 10%% of lr) or inverse_sqrt")
    o.add_argument("--clip", type=float, default=train.clip, help="max gradient norm (0: off)")
    o.add_argument("--eval-every", type=int, default=train.eval_every,
                   help="evaluate every k steps")
    o.add_argument("--eval-batches", type=int, default=train.eval_batches,
                   help="fixed validation batches per evaluation")
    o.add_argument("--eval-batch-size", type=int, default=train.eval_batch_size,
                   help="sequences per validation batch")
    o.add_argument("--seed", type=int, default=train.seed, help="seeds the model and the batches")

    r = p.add_argument_group("runtime")
    r.add_argument("--device", choices=DEVICES, default=train.device,
                   help="auto: CUDA when available (rank's GPU under torchrun), else CPU")
    r.add_argument("--dtype", choices=DTYPES, default=train.dtype,
                   help="float32, float64, or bfloat16 autocast (weights stay float32)")
    r.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (torch.set_num_threads); default: torch's own")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--ddp-timeout", type=float, default=train.ddp_timeout, metavar="SECONDS",
                   help="under torchrun: how long a rank waits for the others in a collective "
                        "before the run fails with a message naming them")
    r.add_argument("--weights-digest", type=Path, default=None, metavar="DIR",
                   help="each rank writes the SHA-256 of its final weights to "
                        "DIR/rank<R>.sha256 (checks that DDP ranks agree)")
    return p


def task_settings(args: argparse.Namespace) -> dict:
    settings = {}
    for option, (name, tasks) in TASK_OPTIONS.items():
        value = getattr(args, option)
        if value is None:
            continue
        if args.task not in tasks:
            flag = "--" + option.replace("_", "-")
            raise ValueError(f"{flag} applies to {', '.join(tasks)}, not {args.task}")
        settings[name] = value
    return settings


def task_from_args(args: argparse.Namespace) -> Task:
    """The task of the flags. charlm's ``--text`` is the user's own file, read here (a
    regular file of at most MAX_TEXT_BYTES); the checkpoint keeps its name and SHA-256."""
    settings = task_settings(args)
    if args.text is None:
        return get_task(args.task, settings)
    if args.task != "charlm":
        raise ValueError(f"--text applies to charlm, not {args.task}")
    data = read_bounded(args.text, MAX_TEXT_BYTES, "--text")
    return CharLMTask.from_bytes(data, Path(args.text).name, task_config("charlm", settings))


def config_from_args(args: argparse.Namespace, task: Task) -> TrainConfig:
    """The TrainConfig of the parsed flags; ``--causal`` unset: causal for lm tasks."""
    causal = task.kind == "lm" if args.causal is None else args.causal
    operator = OperatorConfig(kind=args.operator, causal=causal,
                              **{name: getattr(args, name) for name in OPERATOR_FIELDS})
    model = ModelConfig(operator=operator, **{name: getattr(args, name) for name in MODEL_FIELDS})
    every = args.checkpoint_every
    if every is None:
        every = TrainConfig.checkpoint_every if args.out is not None else 0
    elif args.out is None:
        raise ValueError("--checkpoint-every needs --out, the checkpoint to write")
    if args.resume and args.out is None:
        raise ValueError("--resume needs --out, the checkpoint to continue")
    return TrainConfig(model=model_for_task(model, task), checkpoint_every=every,
                       **{name: getattr(args, name) for name in TRAIN_FIELDS})


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
    written beside its place (``.next``), the checkpoint replaced, then the resume file
    renamed into place. A save that fails (a full disk) leaves the previous pair, which
    ``--resume`` continues; one killed between the last two steps leaves files of
    different steps, which ``--resume`` refuses."""
    resume = resume_path(out)
    if state is None:
        resume.unlink(missing_ok=True)
        return save(out, model, task.info(), history)
    pending = resume.with_name(f"{resume.name}.next")
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
    args = parser().parse_args(argv)  # a malformed option: argparse's usage line, exit 2
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
    callbacks = Callbacks()
    if lead:
        print(f"task: {task.describe()}")
        model = config.model
        layers = f"{model.layers} layer" + ("s" if model.layers != 1 else "")
        print(f"model: {model.operator.kind}, d={model.dim}, {layers}; "
              f"{config.steps} steps of {config.batch_size} × n={task.seq_len}")
        if not args.no_progress:
            from tqdm import tqdm

            run.bar = bar = tqdm(total=config.steps, unit="step", dynamic_ncols=True)

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
        if run.bar is not None and resume is not None:
            run.bar.update(resume.state.step)
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
