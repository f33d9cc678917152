"""The command line of ``python -m tnn_core.training`` and the configs it gives.

``parser`` holds the options (each default the config's own), ``task_from_args`` the task
they ask for (charlm's ``--text`` read here, bounded), ``config_from_args`` the
TrainConfig: the model and operator fields as given, ``--causal`` by default causal for
language-model tasks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tnn_core.files import read_bounded
from tnn_core.models import ModelConfig
from tnn_core.operators import TRAINED_KINDS, OperatorConfig
from tnn_core.operators.config import FD_INPUTS
from tnn_core.training.config import DEVICES, DTYPES, SCHEDULES, TrainConfig, model_for_task
from tnn_core.training.tasks import TASKS, CharLMTask, Task, get_task, task_config
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["TASK_OPTIONS", "TRAIN_FIELDS", "MODEL_FIELDS", "OPERATOR_FIELDS", "parser",
           "task_settings", "task_from_args", "config_from_args"]

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


def parser(description: str | None = None) -> argparse.ArgumentParser:
    """The command's options, each default the config's own (``description``: the help
    text above them, the CLI's docstring)."""
    train = TrainConfig()  # the defaults
    p = argparse.ArgumentParser(prog="python -m tnn_core.training", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=tuple(TASKS), default=train.task, help="what to learn")
    p.add_argument("--out", type=Path, help="checkpoint to write (.safetensors); none if unset")
    p.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                   help="with --out: save the checkpoint and OUT.resume.safetensors every K "
                        f"steps (default {train.checkpoint_every}; 0: only at the end and on "
                        "SIGTERM / Ctrl-C)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved at --out (same settings; --steps may grow)")

    _task_options(p)
    _model_options(p)
    _optimisation_options(p, train)
    _runtime_options(p, train)
    return p


def _task_options(p: argparse.ArgumentParser) -> None:
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



def _model_options(p: argparse.ArgumentParser) -> None:
    model, op = ModelConfig(), OperatorConfig()  # the defaults
    m = p.add_argument_group("model")
    m.add_argument("--operator", choices=TRAINED_KINDS, default=op.kind,
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



def _optimisation_options(p: argparse.ArgumentParser, train: TrainConfig) -> None:
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



def _runtime_options(p: argparse.ArgumentParser, train: TrainConfig) -> None:
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
