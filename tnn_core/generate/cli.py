"""Write text with a causal character language model, a character at a time.

    python -m tnn_core.generate checkpoints/charlm-tno.safetensors --prompt "def " \\
        --tokens 200 --temperature 0.8 --top-k 20 --seed 0

prints the prompt and then each new character as it is sampled. Each layer's token
mixer runs in its incremental form (``generate.incremental``): a converted recurrent
model (``python -m tnn_core.compress CKPT --recurrent``) costs the same per character at
any context; a Toeplitz model's cost grows with the context. The same --seed writes the
same text. --time-limit (default 20 s) ends the writing between two characters; what was
written is kept. Exit status: 0 done, 2 bad input or any other failure, 3 stopped at
--time-limit (one "error:" line on stderr for 2 and 3).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from tnn_core.checks import check_int, check_number
from tnn_core.generate.writer import Sampling, vocab_of, write
from tnn_core.training.answer import answer_text
from tnn_core.training.checkpoint import load

__all__ = ["main", "DEFAULT_SECONDS", "MAX_SECONDS", "STOPPED"]

DEFAULT_SECONDS = 20.0  # --time-limit: a command that ends within the lab's 30 s promise
MAX_SECONDS = 86_400.0
STOPPED = 3  # the exit status when --time-limit ends the writing


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tnn_core.generate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a .safetensors checkpoint of a charlm model")
    p.add_argument("--prompt", default="\n", help="the text to continue (default: a newline)")
    p.add_argument("--tokens", type=int, default=200, metavar="N",
                   help="characters to write (default 200)")
    p.add_argument("--temperature", type=float, default=1.0, metavar="T",
                   help="divides the logits; 0 takes the most likely character (default 1)")
    p.add_argument("--top-k", type=int, default=0, metavar="K",
                   help="sample among the K most likely characters; 0: all (default)")
    p.add_argument("--seed", type=int, default=0, help="seeds the sampling (default 0)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--time-limit", type=float, default=DEFAULT_SECONDS, metavar="SECONDS",
                   help=f"stop writing this long after the start, keeping what was written "
                        f"(exit status {STOPPED}); default {DEFAULT_SECONDS:g}")
    return p


def _run(args: argparse.Namespace, stops: list[str]) -> str:
    """Write the prompt and each character as it comes; a stop at --time-limit leaves
    its sentence in ``stops``. -> the final newline."""
    seconds = check_number("--time-limit", args.time_limit, 0, MAX_SECONDS, closed_low=False)
    deadline = time.monotonic() + seconds
    if args.threads is not None:
        torch.set_num_threads(check_int("--threads", args.threads, 1, 1024))
    sampling = Sampling(args.temperature, args.top_k, args.seed)
    model, info = load(args.checkpoint)
    model.eval()
    vocab = vocab_of(info.task)
    pieces = write(model, vocab, args.prompt, args.tokens, sampling)
    first = next(pieces)  # every input is checked before anything is printed
    sys.stdout.write(args.prompt + first)
    sys.stdout.flush()
    written = 1
    for piece in pieces:
        if time.monotonic() > deadline:
            stops.append(f"generation stopped at --time-limit {seconds:g} s after {written:,} "
                         f"of {args.tokens:,} characters; the text written is kept (give a "
                         f"larger --time-limit to write more)")
            break
        sys.stdout.write(piece)
        sys.stdout.flush()
        written += 1
    return "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the text and return 0; one ``error:`` line and 2 for a failure, 3 for a stop
    at --time-limit (the text written so far stays on stdout)."""
    args = _parser().parse_args(argv)
    stops: list[str] = []
    status = answer_text(lambda: _run(args, stops), "generation", "--tokens")
    if status == 0 and stops:
        print(f"error: {stops[0]}", file=sys.stderr)
        return STOPPED
    return status
