"""Compress a trained TNN or FD-TNN: its Toeplitz matrices become band + low rank.

    from tnn_core.compress import CompressionPlan, convert, compress
    plan = CompressionPlan.uniform(model.config.layers, band=9, rank=32, method="fit")
    converted, errors = convert(model, plan, train_length)      # a real SKI model
    result = compress(model, task, plan, finetune_steps=200)     # metric, speed-up, size

* ``plan``: per layer (m, r, method), method "sample", "fit" or "keep";
* ``convert``: the layer's kernels at the training length decomposed as
  ``analysis.decompose`` does, into an ``operators.SKIKnots`` (band taps, A's knots);
  causal layers get a band plus a causal low-rank tail;
* ``measure``: the task metric on the source's validation windows, the measured
  forward+backward speed-up, fine-tuning;
* ``planner``: plans by an error budget or by a metric budget, with a Pareto front;
* ``pipeline``: one compression start to end, shared by the CLI (``cli``) and the app.
"""

from tnn_core.compress.convert import convert, fit_layer
from tnn_core.compress.pipeline import CompressionResult, compress, save_converted
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.compress.planner import plan_for_error, search

__all__ = ["CompressionPlan", "LayerPlan", "convert", "fit_layer", "compress",
           "CompressionResult", "save_converted", "plan_for_error", "search"]
