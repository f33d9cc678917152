"""The Compress page for a kernels-only checkpoint (``models.MixerStack``: the token mixers
of a model from the authors' code, ``tnn_core.convert``): no task, so nothing to score,
convert or time; what is left is how much of each layer's kernels band + low rank (and,
causal, a recurrence of s modes) misses at the length the checkpoint records.

``band_errors`` and ``recurrent_errors`` are ``compress.kernel_errors.plan_errors`` for
one (m, r, method) or one s on every layer that holds one kernel per channel;
``error_rows`` lays both out one row per layer, as the page's table shows them.

Letters: n0 the recorded length, m band, r rank, s modes.
"""

from __future__ import annotations

import math

from torch import nn

from tnn_core.compress.kernel_errors import every_kernel_layer, plan_errors
from tnn_core.compress.plan import LayerPlan
from tnn_core.models import ModelConfig
from tnn_core.training.tasks import is_kernels_only, kernels_only_reason, task_shape

__all__ = ["BAND_COLUMN", "RECURRENT_COLUMN", "is_kernels_only", "kernels_only_reason",
           "kernels_length", "band_errors", "recurrent_errors", "error_rows"]

BAND_COLUMN = "band + low rank error"
RECURRENT_COLUMN = "recurrent error"


def kernels_length(task_record: dict) -> int:
    """n0 of a kernels-only checkpoint: the length its task record says its kernels are
    looked at by default (the source's training length)."""
    return task_shape(task_record).seq_len


def band_errors(model: nn.Module, n0: int, band: int, rank: int, method: str
                ) -> tuple[float | None, ...]:
    """Each layer's error as band m + rank r (``method`` "sample" or "fit") at n0; None for
    a layer that is not one kernel per channel. ValueError naming the field, or the
    budget's limit, before anything is fitted."""
    plan = every_kernel_layer(model.config, LayerPlan(band, rank, method))
    return tuple(plan_errors(model, plan, n0))


def recurrent_errors(model: nn.Module, n0: int, state: int) -> tuple[float | None, ...]:
    """Each layer's error as s = ``state`` damped exponentials per channel at n0 (causal
    models only; see ``band_errors``)."""
    plan = every_kernel_layer(model.config, LayerPlan(method="recurrent", state=state))
    return tuple(plan_errors(model, plan, n0))


def error_rows(config: ModelConfig, band: tuple[float | None, ...] | None,
               recurrent: tuple[float | None, ...] | None) -> list[dict]:
    """The table, one row per layer: its index, operator, channels and errors (nan where a
    layer is kept; a column left out when its errors are None: not asked, or refused)."""
    rows = []
    for i in range(config.layers):
        row = {"layer": i, "operator": config.layer_operator(i).kind, "channels": config.dim}
        for column, errors in ((BAND_COLUMN, band), (RECURRENT_COLUMN, recurrent)):
            if errors is not None:
                row[column] = math.nan if errors[i] is None else errors[i]
        rows.append(row)
    return rows
