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
togeipi: S u, 2 n d), the head 2 d V; a backward pass costs twice the forward. Seconds
are operations / OPERATIONS_PER_SECOND, a rate measured on the 2-core development CPU
(docs/benchmarks.md, "The cost model"), so an estimate is what that machine would take.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from tnn_core.core.toeplitz import fft_size
from tnn_core.models import ModelConfig, TNNLayer, build_model
from tnn_core.operators import OperatorConfig

__all__ = ["BudgetError", "TimeLimitError", "Cost", "MEMORY_LIMIT", "TRAINING_MEMORY_LIMIT",
           "SECONDS_LIMIT", "OPERATIONS_PER_SECOND",
           "SWEEP_FACTORS", "SWEEP_BATCHES", "SWEEP_BATCH_SIZE", "meta_layers", "pass_cost",
           "parameter_count", "check_cost", "check_sweep"]

MEMORY_LIMIT = 2**30  # bytes one pass may take: a shared server holds many sessions
TRAINING_MEMORY_LIMIT = 4 * 2**30  # bytes of one training step (forward, backward, AdamW)
SECONDS_LIMIT = 60.0  # estimated seconds one evaluation (all its passes) may take
# the rate these passes run at, a quarter of the 8e10 measured on the 2-core development CPU
# (docs/benchmarks.md): an estimate errs long on a busy or slower machine
OPERATIONS_PER_SECOND = 2e10
ACTIVE_COPIES = 12  # [tokens, W] tensors alive at once in a forward pass (u, v, the FFT, ...)
SAVED_COPIES = 8  # [tokens, W + g] tensors a layer keeps for its backward
KERNEL_COPIES = 4  # [W, N] tensors of a kernel and its spectrum
SQUARE_COPIES = 6  # togeipi's [n, n] tensors: S, |S|, the mask, the top-k's values and indices
FFT_OPS = 20  # operations per channel, token and log2 N: a forward and an inverse real FFT
# the length sweep (``evaluate.length_sweep``, Inspect's "Beyond the training length"): every
# checkpoint that loads can be evaluated this way within the budget
SWEEP_FACTORS = (1, 2, 4)  # x the training length
SWEEP_BATCHES, SWEEP_BATCH_SIZE = 8, 16


class BudgetError(ValueError):
    """A pass or evaluation above MEMORY_LIMIT or SECONDS_LIMIT; the message says by how much."""


class TimeLimitError(BudgetError):
    """Work stopped at its time limit while running: a property of that moment (a busy
    machine), not of its arguments, so a cache must not keep it; the next try may pass."""


@dataclass(frozen=True)
class Cost:
    """The estimated memory of one pass and the operations it computes."""

    bytes: int
    operations: float

    @property
    def seconds(self) -> float:
        return self.operations / OPERATIONS_PER_SECOND


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


def check_sweep(config: ModelConfig, seq_len: int, extrapolates: bool, element: int = 4) -> None:
    """BudgetError unless the length sweep fits: its longest pass (SWEEP_BATCH_SIZE
    sequences at the largest factor, or at seq_len for a task of fixed length) within
    MEMORY_LIMIT and all its passes within SECONDS_LIMIT."""
    lengths = [f * seq_len for f in SWEEP_FACTORS] if extrapolates else [seq_len]
    longest = max(lengths)
    check_cost(f"evaluating it at n = {longest:,} ({SWEEP_BATCH_SIZE} sequences)",
               pass_cost(config, SWEEP_BATCH_SIZE, longest, element=element),
               seconds_limit=None)
    seconds = sum(SWEEP_BATCHES * pass_cost(config, SWEEP_BATCH_SIZE, n, element=element).seconds
                  for n in lengths)
    check_cost(f"evaluating it at {', '.join(f'n = {n:,}' for n in lengths)} "
               f"({SWEEP_BATCHES} batches of {SWEEP_BATCH_SIZE} each)",
               Cost(0, seconds * OPERATIONS_PER_SECOND))
