"""Convert a trained TNO or FD-TNO model into band + low rank (or a recurrence), layer by
layer.

Each planned layer's learned kernels t [D, 2n0-1] at the training length n0 are split
as the decomposition analysis splits them (``analysis.decompose``; Algorithm 1 of "SKI
to go Faster"), and the layer's token mixer becomes an ``operators.SKIKnots`` holding
the band taps and A's lag coefficients as knots:

* bidirectional: T ≈ B + W A Wᵀ, exactly ``decompose``'s pieces, so the converted
  layer's ``matrix(n0)`` is the decomposition's band_matrix() + low_rank_matrix(). The
  band's lags |k| <= m//2 become SKI's 2⌊m/2⌋ + 1 taps (an even m adds a lag, as in
  ``decompose``).
* causal: masking W A Wᵀ to its lower triangle defeats SKI (§3.3.1), so, as the paper's
  causal SKI does, the low-rank part becomes a causal tail f(t), t >= 0, piecewise
  linear through r knots at the inducing lags l h0 and applied with the band by one FFT
  product: the layer is band + f, lower-triangular Toeplitz. "sample" reads the knots
  from the kernel continued across the band (``decompose.sample_inducing_coeffs``);
  "fit" takes the knots minimising ||T - B - F||_F (weighted least squares over the
  lags t >= m, each lag weighted by its n0 - t entries). The band taps are then exact.

A causal layer planned "recurrent" becomes an ``operators.SSM`` instead
(``compress.recurrent``: s damped exponentials per channel, its band the lag 0).

A layer's error is the lab's one relative error, ||T - T̂||_F / ||T||_F, T the n0 × n0
Toeplitz matrix of each channel's kernel, over all the layer's channels:
sqrt(Σ_c ||T_c - T̂_c||²_F / Σ_c ||T_c||²_F) (0 exact; ``analysis.errors.relative_error``,
docs/metrics.md "Relative error"). The band's lags are fitted exactly, so the error is
what the low-rank part (or the exponentials) misses, measured against the whole matrix.

Letters: D channels, n0 training length, m band lags, r rank, L = 2n0-1 lags.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from tnn_core.analysis.decompose import (
    decompose_channels,
    sample_inducing_coeffs,
    smooth_continuation,
)
from tnn_core.analysis.dense import frobenius_sq
from tnn_core.analysis.errors import relative_error
from tnn_core.analysis.gram import band_lags, residual_frobenius_sq
from tnn_core.compress.plan import CompressionPlan, LayerPlan
from tnn_core.compress.recurrent import fit_recurrent, recurrent_config
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig

__all__ = ["CONVERTIBLE_KINDS", "LayerFit", "fit_layer", "layer_config", "knot_config",
           "tail_basis", "convert", "check_convertible"]

CONVERTIBLE_KINDS = ("tno", "fd")  # one learned Toeplitz kernel per channel


@dataclass(frozen=True)
class LayerFit:
    """One layer's converted operator: its config, parameters and error."""

    config: OperatorConfig  # kind "ski" with low_rank "knots", or "ssm" (recurrent)
    # the operator's tensors by name. SKIKnots: band_weight [D, taps] in SKI's tap order
    # (tap j at lag m//2 - j; causal m-1-j) and lag_knots [D, 2r-1] (causal: [D, r]), knots
    # at the lags l h0. SSM: poles, residues [D, s, 2] and direct [D] (compress.recurrent)
    tensors: dict[str, np.ndarray]
    error: float  # ||T - T̂||_F / ||T||_F over the channels (``relative_error``; 0 for T = 0)


def layer_config(source: OperatorConfig, plan: LayerPlan, n0: int) -> OperatorConfig:
    """The config of the operator replacing one of ``source`` under ``plan``."""
    return recurrent_config(plan) if plan.recurrent else knot_config(source, plan, n0)


def knot_config(source: OperatorConfig, plan: LayerPlan, n0: int) -> OperatorConfig:
    """The SKIKnots config replacing an operator of ``source`` under ``plan``."""
    lags = band_lags(n0, plan.band, source.causal)
    return OperatorConfig(kind="ski", causal=source.causal, decay=source.decay, rank=plan.rank,
                          band=len(lags), low_rank="knots", knot_length=n0)


def _bidirectional(kernels: np.ndarray, plan: LayerPlan) -> tuple[np.ndarray, np.ndarray, float]:
    """Each channel's decomposition (one layout for the layer: ``decompose_channels``): SKI
    taps [D, 2h+1], A's lags [D, 2r-1], error²."""
    n = (kernels.shape[1] + 1) // 2
    taps, knots, error_sq = [], [], 0.0
    for t, d in zip(kernels, decompose_channels(kernels, plan.band, plan.rank, causal=False,
                                                method=plan.method), strict=True):  # (L,)
        taps.append(d.band_coeffs[n - 1 + d.band_lags][::-1])  # lags +h .. -h
        knots.append(d.A_coeffs)
        error_sq += residual_frobenius_sq(d.gram, d.A_coeffs, d.projection,
                                          t[n - 1 + d.band_lags], frobenius_sq(t))
    return np.stack(taps), np.stack(knots), error_sq


def tail_basis(n: int, r: int) -> np.ndarray:
    """[n, r]: f(t) = basis[t] @ c for t = 0..n-1, f piecewise linear through (l h0, c_l)."""
    s = np.arange(n) / ((n - 1) / (r - 1))  # (n,) fractional knot index
    left = np.minimum(np.floor(s), r - 2).astype(np.int64)
    frac = s - left
    basis = np.zeros((n, r))
    basis[np.arange(n), left] = 1 - frac
    basis[np.arange(n), left + 1] += frac
    return basis


def _causal(kernels: np.ndarray, plan: LayerPlan) -> tuple[np.ndarray, np.ndarray, float]:
    """Band + causal tail: SKI taps [D, m'], tail knots [D, r], error²."""
    n = (kernels.shape[1] + 1) // 2
    column = kernels[:, n - 1:]  # (D, n) lags 0..n-1
    m = len(band_lags(n, plan.band, True))  # lags 0..m-1
    basis = tail_basis(n, plan.rank)  # (n, r)
    if plan.method == "sample":
        lags = band_lags(n, plan.band, True)
        knots = np.stack([sample_inducing_coeffs(smooth_continuation(t, lags), plan.rank)
                          [plan.rank - 1:] for t in kernels])  # (D, r) the lags l >= 0
    else:
        weight = np.sqrt(n - np.arange(m, n))  # (n-m,) entries per off-band lag, rooted
        solution = np.linalg.lstsq(basis[m:] * weight[:, None], column[:, m:].T * weight[:, None],
                                   rcond=None)[0]  # (r, D)
        knots = solution.T
    tail = knots @ basis.T  # (D, n) f(t)
    residual = column[:, m:] - tail[:, m:]  # (D, n-m): the band takes the rest exactly
    error_sq = float(np.sum((n - np.arange(m, n)) * residual**2))
    taps = (column[:, :m] - tail[:, :m])[:, ::-1]  # lags m-1 .. 0
    return np.ascontiguousarray(taps), knots, error_sq


def fit_layer(kernels, plan: LayerPlan, causal: bool, source: OperatorConfig | None = None
              ) -> LayerFit:
    """The converted operator for one layer's kernels [D, 2n0-1] (torch or numpy): band +
    low rank, or (``plan.recurrent``, causal only) a diagonal SSM."""
    if plan.kept:
        raise ValueError("fit_layer needs a plan with method 'sample', 'fit' or 'recurrent'; "
                         "got 'keep'")
    if isinstance(kernels, torch.Tensor):
        kernels = kernels.detach().cpu().double().numpy()
    kernels = np.asarray(kernels, dtype=np.float64)
    n = (kernels.shape[1] + 1) // 2
    if plan.recurrent:
        if not causal:
            raise ValueError("a recurrent plan needs a causal model (an SSM runs forward in "
                             "time); got a bidirectional one")
        return LayerFit(*fit_recurrent(kernels[:, n - 1:], plan))
    plan.check_length(n, "plan")
    source = source or OperatorConfig(causal=causal)
    taps, knots, error_sq = (_causal if causal else _bidirectional)(kernels, plan)
    return LayerFit(knot_config(source, plan, n), {"band_weight": taps, "lag_knots": knots},
                    relative_error(error_sq, sum(frobenius_sq(t) for t in kernels)))


def check_convertible(config: ModelConfig, plan: CompressionPlan, n0: int) -> None:
    """ValueError naming what stops ``plan`` from converting a model of ``config``."""
    if not isinstance(plan, CompressionPlan):
        raise ValueError(f"plan must be a CompressionPlan; got {type(plan).__name__}")
    plan.check_model(config.layers, n0)
    for i, layer in enumerate(plan.layers):
        kind = config.layer_operator(i).kind
        if not layer.kept and kind not in CONVERTIBLE_KINDS:
            why = {"togeipi": "its mixer is not one Toeplitz matrix per channel",
                   "ssm": "it already is a recurrence"}.get(kind, "it already is band + low rank")
            raise ValueError(f"layers[{i}] is a {kind} operator and cannot be converted: "
                             f"{why}; convert a tno or fd model, or keep this layer")
        if layer.recurrent and not config.operator.causal:
            raise ValueError(f"layers[{i}] cannot become a recurrence: the model is "
                             f"bidirectional, and an SSM runs forward in time; convert a "
                             f"causal model, or plan band + low rank")


@torch.no_grad()
def convert(model: nn.Module, plan: CompressionPlan, train_length: int
            ) -> tuple[nn.Module, list[float | None]]:
    """A new model whose planned layers are band + low rank or recurrences; ``model`` is
    not changed.

    train_length: n0, the length the source was trained at (its task's seq_len); the
    kernels are decomposed there. Returns the converted model (same dtype, in eval mode)
    and each layer's relative error (None for a kept layer)."""
    config = model.config
    check_convertible(config, plan, train_length)
    operators = model.operators()
    fits: dict[int, LayerFit] = {}
    for i, layer in enumerate(plan.layers):
        if not layer.kept:
            source = config.layer_operator(i)
            fits[i] = fit_layer(operators[i].kernel(train_length), layer, source.causal, source)
    layer_configs = tuple(fits[i].config if i in fits else config.layer_operator(i)
                          for i in range(config.layers))
    first = next((fits[i].config for i in sorted(fits)), config.operator)
    uniform = all(c == layer_configs[0] for c in layer_configs)
    converted_config = replace(config, operator=first,
                               layer_operators=() if uniform else layer_configs)
    param = next(model.parameters())
    converted = build_model(converted_config).to(device=param.device, dtype=param.dtype)
    state = {k: v for k, v in model.state_dict().items()
             if not any(k.startswith(f"layers.{i}.gtu.op.") for i in fits)}
    for i, fit in fits.items():
        for name, tensor in fit.tensors.items():
            state[f"layers.{i}.gtu.op.{name}"] = torch.as_tensor(tensor.copy())
    converted.load_state_dict({k: v.to(param) for k, v in state.items()}, strict=True)
    converted.eval()
    return converted, [fits[i].error if i in fits else None for i in range(config.layers)]

