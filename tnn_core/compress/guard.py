"""What a compression may cost and what it may read, checked before anything runs.

``check_source`` refuses weights no trained model has (non-finite, or above
MAX_ABS_WEIGHT: the shipped models' largest is about 4), which would overflow into
knots of 1e31 and metrics of NaN. ``check_compression`` asks ``training.budget`` about
the conversion (``conversion_cost``) and every pass a compression makes, for the source
and the converted model (its config is known from the plan before converting): the
metric on the task's evaluation set, the speed-up's forward + backward at each factor of
the training length, and a fine-tuning step. Memory refuses; time does not (the work runs
in the background with a Stop, or in a CLI with its progress), so whatever the lab opens
it can compress (issue 36).
``check_converted`` looks at the converted weights.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from tnn_core.compress.convert import layer_config
from tnn_core.compress.measure import FINETUNE_BATCH, SPEED_BATCH
from tnn_core.compress.plan import CompressionPlan
from tnn_core.core.toeplitz import fft_size
from tnn_core.models import ModelConfig
from tnn_core.training.budget import FFT_OPS, Cost, check_cost, parameter_count, pass_cost
from tnn_core.training.evaluate import evaluation_batch

__all__ = ["MAX_ABS_WEIGHT", "check_source", "check_converted", "converted_config",
           "added_parameters", "larger_model_sentence",
           "conversion_cost", "check_compression"]

MAX_ABS_WEIGHT = 1e4  # |w| of a trained model; the shipped ones stay below 5


def _check_weights(model: nn.Module, what: str) -> None:
    for name, tensor in model.state_dict().items():
        if not torch.isfinite(tensor).all():
            raise ValueError(f"{what}'s {name} has NaN or Inf values; it cannot be compressed")
        largest = float(tensor.detach().abs().max()) if tensor.numel() else 0.0
        if largest > MAX_ABS_WEIGHT:
            raise ValueError(f"{what}'s {name} reaches |w| = {largest:.3g}, above the "
                             f"{MAX_ABS_WEIGHT:g} a trained model stays below; its kernels "
                             f"would overflow, so it is not compressed")


def check_source(model: nn.Module) -> None:
    """ValueError unless every weight of the source is finite and at most MAX_ABS_WEIGHT."""
    _check_weights(model, "the source")


def check_converted(model: nn.Module) -> None:
    """ValueError unless the converted model's weights (band taps, knots) are finite and
    bounded as a trained model's are."""
    _check_weights(model, "the converted model")


def converted_config(config: ModelConfig, plan: CompressionPlan, n0: int) -> ModelConfig:
    """The config ``convert`` will give the converted model, known without converting."""
    layers = tuple(config.layer_operator(i) if layer.kept
                   else layer_config(config.layer_operator(i), layer, n0)
                   for i, layer in enumerate(plan.layers))
    return replace(config, operator=layers[0], layer_operators=layers)


def added_parameters(config: ModelConfig, plan: CompressionPlan, n0: int) -> int:
    """Parameters the converted model has beyond its source (negative: fewer), known before
    converting: r knots per channel can outnumber a small kernel generator."""
    return parameter_count(converted_config(config, plan, n0)) - parameter_count(config)


def larger_model_sentence(config: ModelConfig, plan: CompressionPlan, n0: int) -> str | None:
    """What to tell the user before converting when ``plan`` makes the model larger (the
    Compress page's warning and the command line's); None when it does not."""
    added = added_parameters(config, plan, n0)
    if added <= 0:
        return None
    return (f"This plan adds {added:,} parameters to the source's {parameter_count(config):,}: "
            f"its band taps and knots (or modes) outnumber the kernel generators they "
            f"replace, so it makes the model larger; a smaller r, m or s does not.")


def conversion_cost(config: ModelConfig, plan: CompressionPlan, n0: int) -> Cost:
    """Memory and operations of ``convert``: each converted layer's channels decomposed in
    float64 one at a time (``analysis.decompose``, ``convert._causal``): the Gram matrix of
    A's 2r - 1 lags and its solve, W's rows against T's circulant spectrum (r x N), the
    causal tail's basis (n0 x r), the layer's kernels."""
    width = config.expand_ratio * config.dim
    N = fft_size(n0)
    numbers, operations = 0, 0.0
    for layer in plan.layers:
        if layer.kept:
            continue
        if layer.recurrent:  # per channel: the [n0/2, n0/2] Hankel matrix's SVD, the pencil
            numbers = max(numbers, 3 * n0**2 + 4 * n0 * layer.state + 3 * width * 2 * n0)
            operations += width * 12 * (n0 / 2) ** 3
            continue
        lags = 2 * layer.rank - 1
        numbers = max(numbers, 3 * lags**2 + 8 * layer.rank * N + 2 * n0 * layer.rank
                      + 3 * width * 2 * n0)
        operations += width * (lags**3 / 3 + FFT_OPS * layer.rank * N * math.log2(N))
    return Cost(bytes=8 * numbers, operations=operations)


def check_compression(config: ModelConfig, plan: CompressionPlan, n0: int, factors,
                      finetune_steps: int, sequences: int, element: int = 4) -> None:
    """BudgetError (a ValueError) naming the first step of this compression that does not
    fit ``training.budget``'s memory limit (the conversion, each pass). Its time is no
    refusal: the app runs a compression as a background job with its progress and a Stop,
    and the CLI shows its progress (one budget, issue 36: what opens is compressible)."""
    check_cost(f"converting with this plan at the training length n = {n0}",
               conversion_cost(config, plan, n0), seconds_limit=None)
    converted = converted_config(config, plan, n0)
    for label, model in (("the source", config), ("the converted model", converted)):
        batch = evaluation_batch(model, n0, element)
        check_cost(f"scoring {label} ({sequences:,} sequences of {n0}, {batch} at a time)",
                   pass_cost(model, batch, n0, element=element), passes=-(-sequences // batch),
                   seconds_limit=None)
        for factor in factors:
            check_cost(f"timing {label} at {factor}x the training length (forward and "
                       f"backward of {SPEED_BATCH} sequences of {factor * n0})",
                       pass_cost(model, SPEED_BATCH, factor * n0, grad=True, element=element),
                       seconds_limit=None)
    if finetune_steps:
        check_cost(f"fine-tuning ({FINETUNE_BATCH} sequences of {n0} a step)",
                   pass_cost(converted, FINETUNE_BATCH, n0, grad=True, element=element),
                   seconds_limit=None)
