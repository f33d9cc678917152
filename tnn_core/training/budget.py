"""What running a model costs: one memory model and one time model for every path.

Every path that builds a model from a file or runs one for a user asks this module
before it allocates: the checkpoint loader (Inspect's longest passes), ``evaluate``
(its batch size and length), Inspect's and Decomposition's views of a learned channel,
compress (conversion, the speed-up's forward + backward, fine-tuning) and training. A
refusal is a ``BudgetError`` (a ValueError) saying which limit and by how much.

A pass is ``batch`` sequences of ``n`` tokens through a model of ``ModelConfig``,
forward only or forward and backward (``grad``), with ``element`` bytes per number.

Memory of a pass, in bytes, is the sum of
    parameters    P element; with grad x4 (weights, gradients, AdamW's two moments)
    activations   B n (ACTIVE_COPIES W + 2 V) element, the per-token tensors alive at once
                  in one layer (GTU width W = expand_ratio d; an lm's logits, twice); with
                  grad, every layer also keeps SAVED_COPIES (W + g) per token (g: GLU width)
    token mixer   what a layer's operator allocates beside the tokens (with grad: every
                  layer's, kept for the backward):
        tno, fd       the RPE MLP on 2n lags (fd: N/2 + 1 frequencies), rpe_layers + 2
                      tensors of width e, and the kernel's padded FFT, KERNEL_COPIES W N
        ski           bidirectional: A by an FFT of size N_r = fft_size(r) on every
                      sequence, 4 B W N_r, and its column, KERNEL_COPIES W N_r; causal:
                      as tno, plus its r knots
        togeipi       the sparse block, its mask and top-k, SQUARE_COPIES n^2, and the
                      H point spread functions' FFT, KERNEL_COPIES H N
where N = fft_size(n) >= 2n. Time of a pass, in floating-point operations per token and
layer: the six linear maps 2 (3 d W + 3 d g), the token mixer's FFTs FFT_OPS W log2 N
(ski bidirectional: the band, 2 m W, and the FFTs on N_r spread over n tokens;
togeipi: S u, 2 n d), the head 2 d V; a backward pass costs twice the forward.

Seconds are operations over the rate of this machine now (``operations_per_second``): a
real pass of a model of width 128 (``CALIBRATION``) timed on one thread once per process
(about 0.1 s after torch's one-time start-up; 4-7e10 op/s on one core of the 2-core
development CPU), divided by the load (``load_slowdown``: the runnable threads of other
processes and ours over the cores), so an estimate is what one core of this machine
would take at this moment.

Memory refuses; time refuses only where a caller sets a limit (``check_cost``'s
``seconds_limit``: a command's ``--time-limit``). The loader never refuses for time: work
estimated above SECONDS_LIMIT is what the app runs in the background
(``runs_in_background``), with its progress and a Stop.
The length sweep's batch is split into chunks that fit MEMORY_LIMIT (``fitting_batch``), so
the loader refuses only a model whose single sequence does not fit (``check_sweep``), and
``view_notes`` says at a trainer's start which view will refuse or background its model.
"""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from tnn_core.core.toeplitz import fft_size
from tnn_core.models import ModelConfig, TNNLayer, build_model
from tnn_core.operators import OperatorConfig, seeded_weights
from tnn_core.training.checkpoint_header import MAX_BYTES

__all__ = ["BudgetError", "TimeLimitError", "Cost", "MEMORY_LIMIT", "TRAINING_MEMORY_LIMIT",
           "SECONDS_LIMIT", "CALIBRATION", "calibrated_rate", "load_slowdown",
           "operations_per_second", "runs_in_background",
           "SWEEP_FACTORS", "SWEEP_BATCHES", "SWEEP_BATCH_SIZE", "SweepPlan", "meta_layers",
           "pass_cost", "parameter_count", "check_cost", "fitting_batch", "check_sweep",
           "view_notes"]

MEMORY_LIMIT = 2**30  # bytes one pass may take: a shared server holds many sessions
TRAINING_MEMORY_LIMIT = 4 * 2**30  # bytes of one training step (forward, backward, AdamW)
SECONDS_LIMIT = 60.0  # estimated seconds of work the app does while a page waits for it
# the pass timed to measure this machine's rate, mid-way between the shipped width 64 and
# the paper's 512 (whose rates per operation counted differ by 7x here: the RPE and Python
# overhead are not in the count)
CALIBRATION = ModelConfig(task="lm", vocab_size=101, dim=128, layers=1,
                          operator=OperatorConfig(causal=True))
CALIBRATION_BATCH, CALIBRATION_LENGTH, CALIBRATION_REPEATS = 4, 256, 3
ACTIVE_COPIES = 12  # [tokens, W] tensors alive at once in a forward pass (u, v, the FFT, ...)
SAVED_COPIES = 8  # [tokens, W + g] tensors a layer keeps for its backward
KERNEL_COPIES = 4  # [W, N] tensors of a kernel and its spectrum
SQUARE_COPIES = 6  # togeipi's [n, n] tensors: S, |S|, the mask, the top-k's values and indices
FFT_OPS = 20  # operations per channel, token and log2 N: a forward and an inverse real FFT
# the length sweep (``evaluate.length_sweep``, Inspect's "Beyond the training length"): every
# checkpoint that loads can be evaluated this way, in chunks that fit MEMORY_LIMIT
SWEEP_FACTORS = (1, 2, 4)  # x the training length
SWEEP_BATCHES, SWEEP_BATCH_SIZE = 8, 16


class BudgetError(ValueError):
    """A pass above MEMORY_LIMIT, or work above a command's time limit; the message says
    which limit and by how much."""


class TimeLimitError(BudgetError):
    """Work stopped at its time limit while running: a property of that moment (a busy
    machine), not of its arguments, so a cache must not keep it; the next try may pass."""


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def load_slowdown() -> float:
    """How many times slower than on an idle core work runs now, at least 1: the runnable
    threads (the 1-minute load average, plus one of ours) over the cores."""
    return max(1.0, (os.getloadavg()[0] + 1) / _cores())


@functools.lru_cache(maxsize=1)
def calibrated_rate() -> float:
    """Operations per second of one idle core of this machine: the fastest of
    CALIBRATION_REPEATS forward passes of CALIBRATION on one thread (after one to warm up),
    times the load slowdown while it ran. Measured once per process, in about 0.1 s after
    torch's one-time start-up; no global random state is touched.

    One thread, because two on a loaded 2-core machine ran this pass 25 times slower (0.3 s
    against 11 ms: each waits for the other at every operation), and even on an idle one
    two took 26 ms; so an estimate counts one core, and errs long where work has more.
    (torch's thread count is process-wide: for this 0.1 s other threads get one too.)"""
    with seeded_weights(0):
        model = build_model(CALIBRATION).eval()
    tokens = torch.randint(0, CALIBRATION.vocab_size, (CALIBRATION_BATCH, CALIBRATION_LENGTH),
                           generator=torch.Generator().manual_seed(0))
    slowdown = load_slowdown()
    best, threads = math.inf, torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for repeat in range(CALIBRATION_REPEATS + 1):
                start = time.perf_counter()
                model(tokens)
                if repeat:
                    best = min(best, time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    operations = pass_cost(CALIBRATION, CALIBRATION_BATCH, CALIBRATION_LENGTH).operations
    return operations / max(best, 1e-9) * max(slowdown, load_slowdown())


def operations_per_second() -> float:
    """The rate work runs at on this machine now: ``calibrated_rate`` over ``load_slowdown``."""
    return calibrated_rate() / load_slowdown()


@dataclass(frozen=True)
class Cost:
    """The estimated memory of one pass and the operations it computes."""

    bytes: int
    operations: float

    @property
    def seconds(self) -> float:
        """What the operations take on this machine now (``operations_per_second``)."""
        return self.operations / operations_per_second()


def runs_in_background(cost: Cost, passes: int = 1) -> bool:
    """Whether ``passes`` of ``cost`` are estimated above SECONDS_LIMIT: work the app runs
    in the background, with its progress and a Stop, rather than while a page waits."""
    return passes * cost.seconds > SECONDS_LIMIT


class _NoInitialisers(TorchFunctionMode):
    """``torch.nn.init``'s in-place initialisers return their tensor untouched: meta tensors
    hold no values, and a random initialiser on the meta device imports torch._dynamo
    (0.8 s, paid by the first checkpoint a server loads)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init" and \
                getattr(func, "__name__", "").endswith("_"):  # the in-place initialisers
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


@functools.lru_cache(maxsize=64)
def meta_layers(config: ModelConfig) -> tuple[nn.Module, dict[OperatorConfig, nn.Module]]:
    """A one-layer model of ``config`` and one layer per distinct operator of its layers, on
    the meta device: shapes without memory. Layers with the same operator are identical, so
    a config of 10^6 layers costs one layer's construction."""
    with torch.device("meta"), _NoInitialisers():
        one = build_model(replace(config, layers=1, layer_operators=()))
        layers = {config.operator: one.layers[0]}
        for operator in set(config.layer_operators) - set(layers):
            layers[operator] = TNNLayer(config, operator)
    return one, layers


def parameter_count(config: ModelConfig) -> int:
    """Parameters of a model of ``config``, from its shapes on the meta device."""
    one, layers = meta_layers(config)
    sizes = {op: sum(p.numel() for p in layer.parameters()) for op, layer in layers.items()}
    return (sum(p.numel() for p in one.parameters()) - sizes[config.operator]
            + sum(sizes[config.layer_operator(i)] for i in range(config.layers)))


def _operator_bytes(op: OperatorConfig, width: int, batch: int, n: int) -> int:
    """Numbers a layer's operator allocates beside the tokens, for one pass (see above)."""
    N = fft_size(n)
    if op.kind == "ski" and not op.causal:
        Nr = fft_size(op.rank)
        return 4 * batch * width * Nr + KERNEL_COPIES * width * Nr
    if op.kind == "togeipi":
        side = min(n, op.max_length)
        return SQUARE_COPIES * side * side + KERNEL_COPIES * op.heads * N
    if op.kind == "ssm":  # the modes' Vandermonde terms (kept for a backward) and the kernel
        return 4 * width * op.state * n + KERNEL_COPIES * width * N
    e = op.rpe_width(width)
    points = N // 2 + 1 if op.kind == "fd" else 2 * n
    knots = 2 * width * op.rank if op.kind == "ski" else 0
    return points * e * (op.rpe_layers + 2) + KERNEL_COPIES * width * N + knots


def _operator_operations(op: OperatorConfig, width: int, d: int, n: int) -> float:
    """Operations per token of a layer's operator."""
    if op.kind == "ski" and not op.causal:
        Nr = fft_size(op.rank)
        return 2 * op.band * width + FFT_OPS * width * Nr * math.log2(Nr) / max(n, 1)
    if op.kind == "togeipi":
        return 2 * n * d + FFT_OPS * d * math.log2(fft_size(n))
    return FFT_OPS * width * math.log2(fft_size(n))


def pass_cost(config: ModelConfig, batch: int, n: int, grad: bool = False,
              element: int = 4) -> Cost:
    """The memory and operations of one pass of ``batch`` sequences of length ``n``."""
    d, g = config.dim, config.glu_dim or config.dim
    width = config.expand_ratio * d
    tokens = batch * n
    logits = config.vocab_size if config.task == "lm" else 0
    operators = [config.layer_operator(i) for i in range(config.layers)]
    mixer = [_operator_bytes(op, width, batch, n) for op in {*operators}]
    numbers = tokens * (ACTIVE_COPIES * width + 2 * logits)
    numbers += parameter_count(config) * (4 if grad else 1)
    if grad:
        numbers += config.layers * tokens * SAVED_COPIES * (width + g)
        numbers += sum(_operator_bytes(op, width, batch, n) for op in operators)
    else:
        numbers += max(mixer)
    per_token = sum(2 * (3 * d * width + 3 * d * g) + _operator_operations(op, width, d, n)
                    for op in operators) + 2 * d * max(logits, config.num_classes)
    operations = tokens * per_token * (3 if grad else 1)
    return Cost(bytes=numbers * element, operations=operations)


def check_cost(what: str, cost: Cost, passes: int = 1, memory_limit: int = MEMORY_LIMIT,
               seconds_limit: float | None = SECONDS_LIMIT) -> Cost:
    """``cost`` if one pass fits ``memory_limit`` and ``passes`` of them ``seconds_limit``
    (None: no time limit); else BudgetError naming ``what``, the limit and by how much."""
    if cost.bytes > memory_limit:
        raise BudgetError(f"{what} needs about {cost.bytes / 2**20:,.0f} MiB; the limit is "
                          f"{memory_limit / 2**20:,.0f} MiB ({cost.bytes / memory_limit:.1f}x "
                          f"over)")
    seconds = passes * cost.seconds
    if seconds_limit is not None and seconds > seconds_limit:
        raise BudgetError(f"{what} would take about {seconds:,.0f} s; the limit is "
                          f"{seconds_limit:,.0f} s ({seconds / seconds_limit:.1f}x over)")
    return cost


def fitting_batch(config: ModelConfig, n: int, wanted: int, element: int = 4) -> int:
    """The most sequences of length n, at most ``wanted``, halving from it, whose pass fits
    MEMORY_LIMIT; BudgetError naming the pass when a single sequence does not fit."""
    batch = wanted
    while batch > 1 and pass_cost(config, batch, n, element=element).bytes > MEMORY_LIMIT:
        batch //= 2
    check_cost(f"evaluating it at n = {n:,} (one sequence at a time)",
               pass_cost(config, batch, n, element=element), seconds_limit=None)
    return batch


@dataclass(frozen=True)
class SweepPlan:
    """The length sweep of a model: its lengths, the sequences of each pass (SWEEP_BATCH_SIZE
    split into chunks that fit MEMORY_LIMIT) and the operations of all its passes."""

    lengths: tuple[int, ...]
    batches: tuple[int, ...]  # [lengths] sequences per pass at each length
    operations: float

    @property
    def seconds(self) -> float:
        return Cost(0, self.operations).seconds

    def describe(self) -> str:
        """"n = 512, n = 1,024 (8 batches of 16 each)", its lengths and passes in words."""
        return (f"{', '.join(f'n = {n:,}' for n in self.lengths)} ({SWEEP_BATCHES} batches "
                f"of {SWEEP_BATCH_SIZE} each)")


def check_sweep(config: ModelConfig, seq_len: int, extrapolates: bool,
                element: int = 4) -> SweepPlan:
    """The length sweep's ``SweepPlan``: SWEEP_BATCHES batches of SWEEP_BATCH_SIZE sequences
    at each factor of seq_len (only seq_len for a task of fixed length), each batch in chunks
    that fit MEMORY_LIMIT. BudgetError only when one sequence at the longest length does
    not fit; its time is no refusal (``runs_in_background`` decides where it runs)."""
    lengths = tuple(f * seq_len for f in SWEEP_FACTORS) if extrapolates else (seq_len,)
    batches = tuple(fitting_batch(config, n, SWEEP_BATCH_SIZE, element) for n in lengths)
    operations = sum(SWEEP_BATCHES * pass_cost(config, SWEEP_BATCH_SIZE, n,
                                               element=element).operations for n in lengths)
    return SweepPlan(lengths, batches, operations)


def view_notes(config: ModelConfig, seq_len: int, extrapolates: bool,
               element: int = 4) -> list[str]:
    """One sentence for each view that will refuse a model of ``config`` trained at
    ``seq_len``, or run its work in the background, naming the view and the limit (what a
    trainer says at its start). BudgetError when the loader itself will refuse it."""
    notes = []
    size = parameter_count(config) * element
    if size > MAX_BYTES:
        notes.append(f"its checkpoint of about {size / 1e6:,.0f} MB will not open in the lab: "
                     f"the loader and the upload read at most {MAX_BYTES / 1e6:,.0f} MB "
                     f"(MAX_BYTES in tnn_core/training/checkpoint_header.py)")
    plan = check_sweep(config, seq_len, extrapolates, element)
    if plan.seconds > SECONDS_LIMIT:
        notes.append(f"Inspect's length sweep ({plan.describe()}) would take about "
                     f"{plan.seconds:,.0f} s on this machine now, above the "
                     f"{SECONDS_LIMIT:,.0f} s a page waits (SECONDS_LIMIT in "
                     f"tnn_core/training/budget.py): it runs in the background")
    return notes
