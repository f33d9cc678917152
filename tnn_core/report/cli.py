"""``python -m tnn_core.report``: the report on stdout, progress on stderr, or with
``--kernels N --out FILE.npz`` every layer's kernels as arrays (``analysis.kernel_arrays``)."""

from __future__ import annotations

import argparse

from tnn_core.analysis.kernel_arrays import kernel_arrays, npz_bytes
from tnn_core.checks import check_choice, check_number
from tnn_core.files import exclusive_output, read_bounded
from tnn_core.report.build import (
    DEFAULT_BAND,
    DEFAULT_RANK,
    RANK_SHARE,
    check_reportable,
    report_for,
)
from tnn_core.report.render import FORMATS, RENDERERS
from tnn_core.training.answer import answer_text
from tnn_core.training.budget import SECONDS_LIMIT
from tnn_core.training.checkpoint import load, write_atomically
from tnn_core.training.progress import progress_bar, say
from tnn_core.training.tasks import is_kernels_only, task_from_info
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["main", "USAGE", "STAGES"]

USAGE = """A checkpoint's model card and the statistics of its Toeplitz matrices, layer by layer.

    python -m tnn_core.report checkpoints/charlm-tno.safetensors
    python -m tnn_core.report checkpoints/listops-ski.safetensors --format csv
    python -m tnn_core.report checkpoints/digits-fd.safetensors --format json --band 5 --rank 16
    python -m tnn_core.report checkpoints/charlm-tno.safetensors --kernels 256 --out k.npz

The metric is scored when estimated within --time-limit seconds on this machine (the card
says why when it is not). Every channel gets its band energy share ||band(T)||_F^2 /
||T||_F^2 and SKI's relative errors ||T - T^||_F / ||T||_F (the atlas's numbers); the
channels within a work bound (all of the shipped models') their spectra too.
--kernels N --out FILE.npz writes every layer's kernels instead (docs/commands.md)."""

STAGES = {"scoring": ("scoring", "batch"), "layers": ("every channel", "layer"),
          "spectra": ("spectra", "channel")}  # a progress stage's bar: what, unit


class _Bars:
    """One bar on stderr per stage of ``report_for``, from its first call on."""

    def __init__(self):
        self.bars = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.bars:
            self.bars[stage] = progress_bar(total, *STAGES[stage])
        bar = self.bars[stage]
        bar.update(done - bar.n)
        if done == total:
            bar.close()


def _kernels_command(args: argparse.Namespace) -> str:
    """Write every layer's kernels at --kernels N to --out; the line saying what it wrote."""
    if args.out is None:
        raise ValueError("--kernels needs --out FILE.npz, the file to write the arrays to")
    with exclusive_output(args.out, (args.checkpoint,)) as out:
        model, _ = load(args.checkpoint)
        arrays = kernel_arrays(model.operators(), args.kernels)  # refuses before computing
        write_atomically(out, npz_bytes(arrays))
    shapes = ", ".join(f"{name} {list(array.shape)}" for name, array in arrays.items())
    return (f"wrote {args.out}: {shapes} ({next(iter(arrays.values())).dtype}); column j is "
            f"lag k = j - {args.kernels - 1}\n")


def _report_command(args: argparse.Namespace) -> str:
    check_choice("--format", args.format, FORMATS)
    if args.kernels is not None:
        return _kernels_command(args)
    if args.out is not None:
        raise ValueError("--out is the file of --kernels N; the report itself goes to stdout")
    limit = check_number("--time-limit", args.time_limit, 0.0, 1e9)
    model, info = load(args.checkpoint)
    task = None
    if not is_kernels_only(info.task):
        text = None if args.text is None else read_bounded(args.text, MAX_TEXT_BYTES, "--text")
        task = task_from_info(info.task, data=text)
    n = task.seq_len if task is not None else info.task["settings"]["seq_len"]
    check_reportable(model, n, args.band, args.rank)  # a bad option before work
    first = (f"evaluating {info.source} if that fits {limit:,.0f} s (--time-limit)"
             if task is not None else f"{info.source} holds token mixers alone, no task")
    say(f"report: {first}; then every channel of each layer, then the spectra")
    return RENDERERS[args.format](report_for(model, info, task, args.band, args.rank, _Bars(),
                                             limit))


def main(argv: list[str] | None = None) -> int:
    """Print the report and return 0, or one ``error:`` line on stderr and return 2
    (``training.answer``)."""
    p = argparse.ArgumentParser(prog="python -m tnn_core.report", description=USAGE,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a .safetensors checkpoint written by tnn_core.training")
    p.add_argument("--format", default="markdown", help=f"one of {FORMATS} (default markdown)")
    p.add_argument("--band", type=int, default=None, metavar="M",
                   help=f"band m for every layer, in [1, 2n-2] (default: a SKI layer's own, "
                        f"else {DEFAULT_BAND})")
    p.add_argument("--rank", type=int, default=None, metavar="R",
                   help=f"rank r for every layer, in [2, n] (default: a SKI layer's own, "
                        f"else min({DEFAULT_RANK}, n // {RANK_SHARE}), at least 2: r = n "
                        f"would make SKI exact by construction)")
    p.add_argument("--text", default=None,
                   help="charlm trained on a user's text: that text file (its SHA-256 must "
                        "match the one the checkpoint records)")
    p.add_argument("--time-limit", type=float, default=SECONDS_LIMIT, metavar="SECONDS",
                   help=f"score the evaluation set for the card's metric only if that is "
                        f"estimated within SECONDS on this machine now (default "
                        f"{SECONDS_LIMIT:g}); the card says why when it is not")
    p.add_argument("--kernels", type=int, default=None, metavar="N",
                   help="instead of the report, write every layer's kernels at length N to "
                        "--out: arrays layer0, layer1, ... of shape [channels, 2N-1], t_k for "
                        "k = -(N-1) .. N-1 (a causal model's negative lags are zeros)")
    p.add_argument("--out", default=None, metavar="FILE.npz",
                   help="with --kernels: the .npz file to write")
    args = p.parse_args(argv)
    return answer_text(lambda: _report_command(args), "the report")
