"""Convert a TNO or FD-TNO checkpoint to band + low rank, or a causal one to a recurrence,
and say what it costs the task.

    python -m tnn_core.compress checkpoints/digits-tno.safetensors --band 9 --rank 32 \\
        --out digits-tno-m9r32.safetensors
    python -m tnn_core.compress checkpoints/charlm-tno.safetensors --recurrent --state 16 \\
        --out charlm-tno-s16.safetensors
    python -m tnn_core.compress checkpoints/listops-fd.safetensors --plan plan.json \\
        --finetune 200
    python -m tnn_core.compress checkpoints/digits-fd.safetensors --search
    python -m tnn_core.compress checkpoints/listops-tno.safetensors --max-error 0.1

prints one JSON line: the source's metric, the converted model's before and after
fine-tuning, its measured forward+backward speed-up over the source at 1x and 4x the
training length, the parameter counts and each layer's plan and relative error (the
part of the kernel outside the band that band + low rank misses). --max-error EPS
plans by an error budget: per layer, the cheapest (m, r) of the grid within EPS. With
--search it adds the planner's candidates, their Pareto front and the chosen plan,
which --out saves; plans tied for the fastest (their speed-up intervals overlap) are
listed and none is chosen (the JSON holds the search alone; with --out it is an error
naming them, and nothing is written). Every metric comes with its 95 % interval and the
number of sequences of the task's evaluation set. The search's JSON names the tied plans by
their settings ("tied_plans") and says what it found in one sentence ("verdict").

Progress goes to stderr (``training.progress``): a bar over the work, and a warning line
when a plan adds parameters to the source. stdout holds the JSON alone.

A kernels-only checkpoint (the token mixers of a model from the authors' code,
``tnn_core.convert``) has no task: its JSON holds each layer's plan and error at the length
it records and a "note" saying why there is no metric, speed-up or converted model;
--search, --finetune, --delta, --text and --out are refused with that reason.

--recurrent --state S makes every layer of a causal model a diagonal SSM (s damped
exponentials per channel, fitted to its kernel at the training length) that
``python -m tnn_core.generate`` runs as a recurrence. --recurrent without --state fits every
s of ``recurrent_study.STATE_SWEEP`` (1 to 8, then 16 and 32) and prints each layer's
relative error per s, the modes whose pole sits on |z| = 1 (they never decay) and the s to
try with --state: the first whose every layer's error is at most 0.05. Nothing is scored
or written (--out and --finetune are refused).

A plan file is JSON: {"layers": [{"band": 9, "rank": 32, "method": "fit"},
{"method": "recurrent", "state": 16}, {"method": "keep"}]}, one entry per layer. --out may
not be an input (the checkpoint, --plan, --text), and two runs may not write one --out at
once (OUT.lock, released when a run ends, however it ends). A charlm model trained on a
user's text needs that text again: --text FILE. Exit status: 0 done, 2 anything else: bad
input, a model too costly for the budget, out of memory, an unforeseen error (one
"error:" line on stderr; nothing is written).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys

import torch

from tnn_core.allocator import keep_freed_memory
from tnn_core.checks import check_int, check_number
from tnn_core.compress.convert import check_convertible
from tnn_core.compress.guard import larger_model_sentence
from tnn_core.compress.kernel_errors import plan_errors
from tnn_core.compress.measure import FINETUNE_PARAMETERS
from tnn_core.compress.pipeline import compress, save_converted
from tnn_core.compress.plan import CompressionPlan
from tnn_core.compress.planner import (
    GRID_BANDS,
    GRID_RANKS,
    SearchResult,
    grid,
    plan_for_error,
    search,
)
from tnn_core.compress.recurrent_study import (
    ERROR_HINT,
    STATE_SWEEP,
    error_sweep,
    suggested_state,
)
from tnn_core.files import exclusive_output, read_bounded
from tnn_core.operators.config import MAX_STATE
from tnn_core.training.answer import answer
from tnn_core.training.checkpoint import load
from tnn_core.training.progress import progress_bar, say
from tnn_core.training.tasks import (
    is_kernels_only,
    kernels_only_reason,
    task_from_info,
    task_shape,
)
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["main"]

MAX_PLAN_BYTES = 1_000_000


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tnn_core.compress", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a .safetensors checkpoint of a tno or fd model")
    p.add_argument("--band", type=int, default=None, metavar="M",
                   help="band m for every layer: lags |k| <= m//2 (causal: 0 <= k < m)")
    p.add_argument("--rank", type=int, default=None, metavar="R",
                   help="inducing points r for every layer, 2 <= r <= the training length")
    p.add_argument("--method", choices=("sample", "fit"), default="fit",
                   help="how A is found: 'fit' least squares (default), 'sample' the kernel "
                        "read at the inducing lags")
    p.add_argument("--recurrent", action="store_true",
                   help="a causal model's every layer becomes a diagonal SSM of --state modes "
                        "per channel, run as a recurrence when generating (constant cost per "
                        "token)")
    p.add_argument("--state", type=int, default=None, metavar="S",
                   help="--recurrent: s complex modes per channel; without it, every s of "
                        "the sweep (1 to 8, 16, 32) is fitted and each layer's error printed")
    p.add_argument("--plan", default=None, metavar="PLAN.json",
                   help="per-layer settings instead of --band/--rank/--method")
    p.add_argument("--max-error", type=float, default=None, metavar="EPS",
                   help="plan by an error budget: per layer the cheapest grid point (--bands "
                        "x --ranks, --method) whose relative error is at most EPS; a layer "
                        "none meets is kept")
    p.add_argument("--search", action="store_true",
                   help="find the fastest plan within --delta of the source's metric")
    p.add_argument("--delta", type=float, default=None,
                   help="--search: allowed metric drop (accuracy as a fraction: 0.01 is one "
                        "point; bits per character for charlm), against the upper bound of "
                        "the drop's paired 95 %% interval (the same sequences for the source "
                        "and the plan); default: the lab's verdict tolerance (0.02 accuracy, "
                        "0.05 bpc)")
    p.add_argument("--bands", default=",".join(map(str, GRID_BANDS)), metavar="M1,M2,...",
                   help="--search and --max-error: the bands to try (default %(default)s)")
    p.add_argument("--ranks", default=",".join(map(str, GRID_RANKS)), metavar="R1,R2,...",
                   help="--search and --max-error: the ranks to try, those above the training "
                        "length left out (default %(default)s)")
    p.add_argument("--finetune", type=int, default=0, metavar="STEPS",
                   help="fine-tune the converted model this many steps (default 0)")
    p.add_argument("--finetune-lr", type=float, default=3e-4,
                   help="fine-tuning learning rate (default 3e-4, where the shipped models' "
                        "cosine schedules end)")
    p.add_argument("--finetune-parameters", choices=FINETUNE_PARAMETERS, default="all",
                   help="'all' parameters, or 'low_rank': only the band taps and knots")
    p.add_argument("--repeats", type=int, default=15,
                   help="timed rounds per length for the speed-up (default 15)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--text", default=None, metavar="FILE",
                   help="charlm trained on a user's text: that text (its SHA-256 must match)")
    p.add_argument("--out", default=None, metavar="OUT.safetensors",
                   help="write the converted model here (an ordinary checkpoint)")
    return p


def _check_one_way(args) -> None:
    """ValueError unless the options give exactly one way to plan."""
    chosen = sum([args.plan is not None, args.search, args.max_error is not None,
                  args.band is not None or args.rank is not None, args.recurrent])
    if chosen != 1:
        raise ValueError("give exactly one of --band and --rank (together), --plan, "
                         "--max-error, --search or --recurrent")
    if args.state is not None and not args.recurrent:
        raise ValueError("--recurrent and --state S go together (--recurrent alone fits "
                         "every s of the sweep)")


def _plan(args, layers: int, n0: int) -> CompressionPlan | None:
    """The plan the options give; None for --search (the planner chooses)."""
    _check_one_way(args)
    if args.search or args.max_error is not None:
        return None
    if args.recurrent:
        return CompressionPlan.recurrent(layers, check_int("--state", args.state, 1, MAX_STATE))
    if args.plan is not None:
        data = read_bounded(args.plan, MAX_PLAN_BYTES, "--plan")
        try:
            return CompressionPlan.from_dict(json.loads(data))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
            raise ValueError(f"--plan {args.plan} is not JSON: {err}") from None
    if args.band is None or args.rank is None:
        raise ValueError("--band and --rank go together (or use --plan or --search)")
    check_int("--rank", args.rank, 2, n0, "[2, n]")  # n: the training length
    check_int("--band", args.band, 1, 2 * n0 - 2, "[1, 2n-2]")
    return CompressionPlan.uniform(layers, args.band, args.rank, args.method)


def _integers(option: str, text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"{option} must be integers separated by commas; got {text!r}") from None


def _grid(args, n0: int) -> list[tuple[int, int]]:
    """The (m, r) of --bands x --ranks valid at the training length n0 (ValueError: none)."""
    points = grid(n0, _integers("--bands", args.bands), _integers("--ranks", args.ranks))
    if not points:
        raise ValueError(f"--bands {args.bands} and --ranks {args.ranks} give no valid "
                         f"(m, r) at the training length n = {n0}")
    return points


def _plan_by_error(args, model, n0: int, points) -> CompressionPlan:
    """--max-error EPS: per layer the cheapest grid point within EPS, else kept."""
    check_number("--max-error", args.max_error, 0)
    plan, _ = plan_for_error(model, n0, args.max_error, points, args.method)
    if all(layer.kept for layer in plan.layers):
        raise ValueError(f"no grid point meets --max-error {args.max_error} on any "
                         f"layer; allow a larger error or larger --bands/--ranks")
    return plan


def _state_sweep(args, model, source: str, n0: int) -> dict:
    """--recurrent without --state: each layer's error at every s of the sweep, fitted and
    not scored (``recurrent_study.error_sweep``), and the s to try."""
    _check_one_way(args)
    for given, option in ((args.out is not None, "--out"), (args.finetune, "--finetune"),
                          (args.delta is not None, "--delta")):
        if given:
            raise ValueError(f"{option} needs a conversion, and --recurrent without --state "
                             f"only fits every s of the sweep; give --state S")
    say(f"fitting s = {', '.join(map(str, STATE_SWEEP))} modes to every layer's kernels at "
        f"n = {n0}…")
    rows = error_sweep(model, n0)
    for row in rows:
        undamped = [f"layer {i}: {u} mode(s) on |z| = 1, never decaying"
                    for i, u in enumerate(row["undamped"]) if u]
        say(f"s = {row['state']}: relative error per layer " + ", ".join(
            "kept" if e is None else f"{e:.3g}" for e in row["errors"])
            + "".join(f"; {note}" for note in undamped))
    state = suggested_state(rows)
    advice = (f"try --recurrent --state {state}: the first s whose every layer's relative "
              f"error is at most {ERROR_HINT}; its score, paired with the source's, says "
              f"whether it keeps the quality" if state is not None else
              f"no s of the sweep brings every layer's relative error to {ERROR_HINT}: try a "
              f"larger --state and read its score")
    say(advice)
    return {"checkpoint": source, "training_length": n0, "sweep": rows,
            "error_hint": ERROR_HINT, "suggested_state": state, "advice": advice}


def _finite(value):
    """JSON has no inf or nan: they are written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def plan_words(plan: CompressionPlan) -> str:
    """A plan by its settings: "m = 9, r = 32, fit on every layer", else layer by layer."""
    first = plan.layers[0].describe()
    if len(plan.layers) > 1 and all(layer.describe() == first for layer in plan.layers):
        return f"{first} on every layer"
    return plan.describe()


def verdict(found: SearchResult) -> str:
    """What a search found, in one sentence naming plans by their settings."""
    within = f"within delta {found.delta:g} of the source's metric"
    if not found.scores:
        return "the search was stopped before any plan was scored, so none is chosen"
    if found.best is not None:
        speed = found.scores[found.best].speedups[1]
        low, high = speed.ratio_ci
        return (f"the fastest plan {within} is {plan_words(found.scores[found.best].plan)}: "
                f"{speed.ratio:.2f}x the source's speed at the training length (95 % interval "
                f"{low:.2f}-{high:.2f}x, above every other plan's)")
    if found.tied:
        plans = "; ".join(f"{plan_words(found.scores[i].plan)} "
                          f"({found.scores[i].speedups[1].ratio:.2f}x)" for i in found.tied)
        return (f"{len(found.tied)} plans {within} are tied for the fastest (their speed-up "
                f"intervals overlap after re-timing), so none is chosen: {plans}; convert one "
                f"with --plan or --band/--rank to measure it longer")
    return (f"no scored plan keeps the whole 95 % interval of its drop {within}, so none is "
            f"chosen: raise --delta, try larger --bands/--ranks, or convert one and fine-tune it")


def _warn_if_larger(model, plan: CompressionPlan, n0: int) -> None:
    """One stderr line, before converting, when ``plan`` makes the model larger (the
    Compress page's warning); a plan that does not fit the model is refused first."""
    check_convertible(model.config, plan, n0)
    sentence = larger_model_sentence(model.config, plan, n0)
    if sentence is not None:
        say(f"warning: {sentence}")


class _Progress:
    """A bar over 100 % of a search's or a compression's work, on stderr, named by the
    step it is at (``on_progress(fraction, item)``, item[0]: "sensitivity", "plan",
    "converted", "speedup", "finetune", ...)."""

    def __init__(self, what: str):
        self.what, self.bar = what, None

    def __call__(self, fraction: float, item) -> None:
        if self.bar is None:
            self.bar = progress_bar(100, self.what, "%")
        step = item[0] if isinstance(item, tuple) and item and isinstance(item[0], str) else ""
        self.bar.set_description(f"{self.what}: {step}" if step else self.what, refresh=False)
        self.bar.update(max(0, round(100 * fraction) - self.bar.n))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    keep_freed_memory()
    return answer(lambda: _finite(_locked_run(args, argv)), "the compression",
                  "plan (smaller ranks and bands)")


def _locked_run(args: argparse.Namespace, argv: list[str] | None) -> dict:
    """``_run`` holding --out from the start: a second writer is refused before any work."""
    if args.threads is not None:
        torch.set_num_threads(check_int("--threads", args.threads, 1, 1024))
    if args.out is None:
        return _run(args, argv)
    with exclusive_output(args.out, (args.checkpoint, args.plan, args.text)):
        return _run(args, argv)


def _run(args: argparse.Namespace, argv: list[str] | None) -> dict:
    """Load, plan, compress and save as the options say; the JSON output."""
    model, info = load(args.checkpoint)
    if args.recurrent and args.state is None:
        return _state_sweep(args, model, info.source, task_shape(info.task).seq_len)
    if is_kernels_only(info.task):
        return _kernels_only(args, model, info)
    text = None if args.text is None else read_bounded(args.text, MAX_TEXT_BYTES, "--text")
    task = task_from_info(info.task, data=text)
    output: dict = {"checkpoint": info.source}
    plan = _plan(args, model.config.layers, task.seq_len)
    points = None if plan is not None else _grid(args, task.seq_len)
    if args.max_error is not None:
        plan = _plan_by_error(args, model, task.seq_len, points)
    elif plan is None:
        progress = _Progress("search")
        try:
            found = search(model, task, args.delta, args.method, points, args.repeats,
                           on_progress=progress)
        finally:
            progress.close()
        output["search"] = {**found.to_dict(), "verdict": verdict(found), "tied_plans":
                            [found.scores[i].plan.to_dict() for i in found.tied]}
        say(f"search: {verdict(found)}")
        if found.best is None and args.out is None:
            return output  # what the search measured; it names no plan, so none is converted
        if found.best is None:
            raise ValueError(f"nothing is written with --out: {verdict(found)}")
        plan = found.scores[found.best].plan
    _warn_if_larger(model, plan, task.seq_len)
    progress = _Progress("compress")
    try:
        result = compress(model, task, plan, args.finetune, args.finetune_lr,
                          args.finetune_parameters, repeats=args.repeats, on_progress=progress)
    finally:
        progress.close()
    output.update(result.summary())
    if args.out is not None:
        command = shlex.join(["python", "-m", "tnn_core.compress",
                              *(sys.argv[1:] if argv is None else argv)])
        output["out"] = str(save_converted(args.out, result, info, command))
    return output


def _kernels_only(args: argparse.Namespace, model, info) -> dict:
    """A checkpoint of token mixers alone: each layer's error under the plan the options
    give (--band/--rank, --plan, --recurrent, --max-error) at its recorded length; what
    needs a task is refused with the reason."""
    reason = kernels_only_reason(info.task)
    for given, option in ((args.search, "--search"), (args.finetune, "--finetune"),
                          (args.text is not None, "--text"), (args.delta is not None, "--delta")):
        if given:
            raise ValueError(f"{option} needs a task, and this model has none. {reason}")
    if args.out is not None:
        raise ValueError(f"nothing is written with --out: a kernels-only model is not "
                         f"converted here; run without --out for each layer's error. {reason}")
    n0 = task_shape(info.task).seq_len
    plan = _plan(args, model.config.layers, n0)
    if plan is None:  # --max-error (--search is refused above)
        plan = _plan_by_error(args, model, n0, _grid(args, n0))
    errors = plan_errors(model, plan, n0)
    return {"checkpoint": info.source, "task": "kernels", "training_length": n0,
            "note": f"{reason} Each layer's error is its kernels' at the recorded length "
                    f"n = {n0}; no metric, speed-up or converted model.",
            "layers": [{**layer.to_dict(), "error": error}
                       for layer, error in zip(plan.layers, errors, strict=True)],
            "plan": plan.to_dict()}
