"""Each layer's error under a plan, with no converted model and no task: what the Compress
page and ``python -m tnn_core.compress`` show for a kernels-only checkpoint
(``models.MixerStack``, imported by ``tnn_core.convert``), whose mixers have no model around
them to run, score or time.

The numbers are ``convert``'s: layer i's kernels at the length n0 fitted as
``convert.fit_layer`` fits them, band + low rank (causal: band + a piecewise-linear tail)
or s damped exponentials, and the lab's one relative error ||T - T̂||_F / ||T||_F over the
layer's channels (``analysis.errors.relative_error``; 0 exact).

Letters: n0 the length the kernels are fitted at, m band, r rank, s modes.
"""

from __future__ import annotations

import torch
from torch import nn

from tnn_core.compress.convert import CONVERTIBLE_KINDS, check_convertible, fit_layer
from tnn_core.compress.guard import check_source, conversion_cost
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.models import ModelConfig
from tnn_core.training.budget import check_cost

__all__ = ["every_kernel_layer", "plan_errors"]


def every_kernel_layer(config: ModelConfig, layer: LayerPlan) -> CompressionPlan:
    """``layer`` on every layer that holds one learned kernel per channel (tno, fd); the
    others (ski, ssm, togeipi: not convertible) kept."""
    return CompressionPlan(tuple(
        layer if config.layer_operator(i).kind in CONVERTIBLE_KINDS else LayerPlan(
            method="keep") for i in range(config.layers)))


@torch.no_grad()
def plan_errors(model: nn.Module, plan: CompressionPlan, n0: int) -> list[float | None]:
    """Each layer's relative error ||T - T̂||_F / ||T||_F under ``plan`` at length n0 (None:
    kept), the errors ``convert.convert`` reports, without building the converted model.
    ValueError naming what stops the plan, a source weight no trained model has, or a fit
    beyond the budget (``guard.conversion_cost``), before any kernel is computed."""
    config = model.config
    check_convertible(config, plan, n0)
    check_source(model)
    check_cost(f"fitting this plan to every layer's kernels at n = {n0}",
               conversion_cost(config, plan, n0))
    operators = model.operators()
    errors: list[float | None] = []
    for i, layer in enumerate(plan.layers):
        source = config.layer_operator(i)
        errors.append(None if layer.kept else fit_layer(
            operators[i].kernel(n0), layer, source.causal, source).error)
    return errors
