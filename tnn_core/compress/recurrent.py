"""Convert a causal Toeplitz layer into its recurrent form: a diagonal SSM per channel.

Each channel's learned kernel at the training length n0, lags 0..n0-1, is fitted by s
damped complex exponentials (``analysis.exponential_fit``: matrix pencil poles refined by
variable projection, ``analysis.variable_projection``; residues by least squares weighted
as the n0 x n0 matrix's Frobenius norm weighs each lag), and the
layer becomes an ``operators.SSM`` holding them. The lag 0 is kept exactly (d = k_0). A
layer's error is the lab's one relative error, ||T - T̂||_F / ||T||_F over its channels
(``analysis.errors.relative_error``): the diagonal counts in ||T||_F like every other lag,
as in band + low rank (docs/metrics.md, "Relative error").

Beyond n0 the converted kernel is what its exponentials give; the source's is what its RPE
gives. Both are the model's own extrapolation, and may differ there.

Letters: D channels, n0 training length, s modes.
"""

from __future__ import annotations

import numpy as np

from tnn_core.analysis.errors import relative_error
from tnn_core.analysis.exponential_fit import ExponentialFit, fit_exponentials
from tnn_core.compress.plan import LayerPlan
from tnn_core.operators import OperatorConfig

__all__ = ["recurrent_config", "fit_error", "fit_recurrent"]


def recurrent_config(plan: LayerPlan) -> OperatorConfig:
    """The SSM config replacing a causal operator under a recurrent ``plan``."""
    return OperatorConfig(kind="ssm", causal=True, state=plan.state)


def fit_error(column: np.ndarray, fit: ExponentialFit) -> float:
    """||T - T̂||_F / ||T||_F over the channels of lags 0..n0-1 [D, n0] and their fit, T
    lower-triangular Toeplitz (lag l fills n0 - l entries)."""
    n = column.shape[1]
    entries = n - np.arange(n)  # (n,)
    return relative_error(float(np.sum(entries * (column - fit.kernel(n)) ** 2)),
                          float(np.sum(entries * column**2)))


def fit_recurrent(column: np.ndarray, plan: LayerPlan
                  ) -> tuple[OperatorConfig, dict[str, np.ndarray], float]:
    """Lags 0..n0-1 of one layer's kernels, [D, n0] -> (config, the SSM's tensors, error),
    the error ||T - T̂||_F / ||T||_F over the channels, T lower-triangular Toeplitz."""
    fit = fit_exponentials(column, plan.state)
    error = fit_error(column, fit)
    tensors = {"poles": np.stack([fit.poles.real, fit.poles.imag], axis=-1),  # (D, s, 2)
               "residues": np.stack([fit.residues.real, fit.residues.imag], axis=-1),
               "direct": fit.direct}  # (D,)
    return recurrent_config(plan), tensors, error
