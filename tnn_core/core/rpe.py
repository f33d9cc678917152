"""Relative positional encoders (RPE): the functions that produce kernel values.

Two kinds:

* ``RpeMLP``: the MLP of the official TNN code (TNN paper §3.3; tnn-pytorch ``Rpe``):
  Linear(1→e), then ``layers`` × [SimpleRMSNorm → act → Linear(e→e)] (with ``residual``,
  each is x = layer(x) + x), then SimpleRMSNorm → act → Linear(e→out). TNO feeds it
  lags (or lags scaled by n-1); FD-TNN feeds it frequencies.
* ``piecewise_linear``: the learned piecewise-linear RPE of SKI-TNN (§3.2.2 of
  SKI to go Faster), r knots evenly spaced on [-1, 1] with RPE(0) = 0.

Letters: P evaluation points, e hidden width, D output channels, r knots.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Activation", "ACTIVATIONS", "simple_rms_norm", "RpeMLP", "piecewise_linear"]

Activation = Literal["relu", "silu", "gelu", "elu", "sigmoid", "exp", "leaky_relu",
                     "one_plus_elu", "two_plus_elu", "identity"]


def one_plus_elu(x: torch.Tensor) -> torch.Tensor:
    """1 + elu(x) (tnn-pytorch ``get_activation_fn("1+elu")``)."""
    return 1 + F.elu(x)


def two_plus_elu(x: torch.Tensor) -> torch.Tensor:
    """2 + elu(x) (tnn-pytorch ``get_activation_fn("2+elu")``)."""
    return 2 + F.elu(x)


def identity(x: torch.Tensor) -> torch.Tensor:
    """x (tnn-pytorch ``get_activation_fn`` of any other name, "none" among them)."""
    return x


# Elementwise activations by name: the RPE's (config.activation) and the TNO kernel's
# (config.kernel_activation). The authors' names (tnn-pytorch helpers.get_activation_fn):
# leak = leaky_relu (slope 0.01), 1+elu, 2+elu, none = identity; gelu is the exact erf form.
ACTIVATIONS: dict[str, object] = {
    "relu": F.relu, "silu": F.silu, "gelu": F.gelu, "elu": F.elu, "sigmoid": torch.sigmoid,
    "exp": torch.exp, "leaky_relu": F.leaky_relu, "one_plus_elu": one_plus_elu,
    "two_plus_elu": two_plus_elu, "identity": identity,
}


def simple_rms_norm(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Parameter-free RMS norm of the official code: x / (‖x‖/√e + eps)."""
    e = x.shape[-1]
    return x / (x.norm(dim=-1, keepdim=True) * e**-0.5 + eps)


class RpeMLP(nn.Module):
    """Scalar position -> ``out_dim`` values. Input [P], output [P, out_dim].

    ``residual`` adds each hidden layer's input to its output (tnn-pytorch ``Rpe`` with
    residual=True); the input and output layers have none."""

    def __init__(self, hidden: int, out_dim: int, layers: int, activation: Activation,
                 residual: bool = False):
        super().__init__()
        self.activation = ACTIVATIONS[activation]
        self.residual = residual
        self.inp = nn.Linear(1, hidden)
        self.hidden = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.out = nn.Linear(hidden, out_dim)

    def features(self, positions: torch.Tensor) -> torch.Tensor:
        """Everything before the output layer: positions [P] -> [P, e]."""
        h = self.inp(positions[:, None])  # (P, e)
        for linear in self.hidden:
            step = linear(self.activation(simple_rms_norm(h)))  # (P, e)
            h = step + h if self.residual else step
        return self.activation(simple_rms_norm(h))  # (P, e)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(positions))  # (P, out_dim)


def _interp_knots(values: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    r = values.shape[-1]
    s = (u.clamp(-1, 1) + 1) * ((r - 1) / 2)  # (P,) fractional knot index in [0, r-1]
    left = torch.clamp(torch.floor(s), max=r - 2).long()  # (P,)
    frac = (s - left).to(values.dtype)  # (P,)
    return values[..., left] * (1 - frac) + values[..., left + 1] * frac  # (..., P)


def piecewise_linear(values: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Evaluate the SKI RPE: linear interpolation of knot values on [-1, 1], shifted so RPE(0) = 0.

    values: [..., r] knot values at -1 + 2j/(r-1), j = 0..r-1;  u: [P] in [-1, 1]
    ->  [..., P]. The shift by the value at 0 keeps the function piecewise linear
    on the same knots and makes RPE(0) = 0 exactly for even and odd r.
    """
    if values.shape[-1] < 2:
        raise ValueError(f"piecewise_linear needs at least 2 knots; got {values.shape[-1]}")
    zero = torch.zeros(1, dtype=u.dtype, device=u.device)
    return _interp_knots(values, u) - _interp_knots(values, zero)  # (..., P)
