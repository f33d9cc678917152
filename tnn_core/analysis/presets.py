"""Kernel presets: Toeplitz kernels to look at, in the lag layout [2n-1].

Synthetic presets show the shapes the papers talk about; operator presets are
a freshly initialised operator's kernel for one channel. Every function
returns float64 and leaves the global RNG untouched.

Lag layout: ``coeffs[n-1+k] = t_k`` for k in [-(n-1), n-1] (see ``toeplitz``).
"""

from __future__ import annotations

import math

import torch

from tnn_core.core.toeplitz import causal_part, check_length, lags
from tnn_core.operators import KINDS, OperatorConfig, build_operator, seeded_weights

__all__ = ["SYNTHETIC", "PRESETS", "OPERATOR_CHANNELS", "MAX_TYPED_LENGTH", "MAX_TYPED_CHARS",
           "synthetic_kernel", "operator_kernel",
           "preset_kernel", "parse_coefficients"]

SYNTHETIC = ("exponential", "spike_smooth", "oscillating")
PRESETS = SYNTHETIC + KINDS
OPERATOR_CHANNELS = 16  # channels of the demo operators behind the operator presets


def synthetic_kernel(name: str, n: int, decay: float, causal: bool = False) -> torch.Tensor:
    """A synthetic kernel [2n-1] in float64.

    exponential   t_k = λ^|k|
    spike_smooth  sharp taps at |k| <= 2 on top of a smooth bump λ^|k| (1 + cos(πk/n))/2:
                  the "spiky near the diagonal, smooth elsewhere" shape of learned TNN kernels
    oscillating   t_k = λ^|k| cos(2πk/8)
    """
    check_length(n)
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1]; got {decay}")
    k = lags(n, dtype=torch.float64)  # (2n-1,)
    envelope = decay ** k.abs()
    if name == "exponential":
        t = envelope
    elif name == "spike_smooth":
        spikes = {0: 1.5, 1: -0.8, -1: 0.6, 2: 0.4, -2: -0.3}
        t = 0.5 * envelope * (1 + torch.cos(math.pi * k / max(n, 2)))
        for lag, value in spikes.items():
            if abs(lag) < n:
                t[n - 1 + lag] += value
    elif name == "oscillating":
        t = envelope * torch.cos(2 * math.pi * k / 8)
    else:
        raise ValueError(f"synthetic kernel must be one of {SYNTHETIC}; got {name!r}")
    return causal_part(t) if causal else t


def operator_kernel(kind: str, n: int, decay: float, causal: bool = False, seed: int = 0,
                    channel: int = 0, rank: int = 16, band: int = 9,
                    activation: str = "relu") -> torch.Tensor:
    """Kernel [2n-1] of one channel of a freshly initialised operator (seeded).

    For bidirectional SKI this is the Toeplitz kernel band + k(t) that W A Wᵀ approximates.
    """
    check_length(n)
    if not 0 <= channel < OPERATOR_CHANNELS:
        raise ValueError(f"channel must be in [0, {OPERATOR_CHANNELS - 1}]; got {channel}")
    config = OperatorConfig(kind=kind, causal=causal, decay=decay, rank=rank, band=band,
                            activation=activation)
    with seeded_weights(seed):
        op = build_operator(config, OPERATOR_CHANNELS).double()
    with torch.no_grad():
        return op.kernel(n)[channel]


def preset_kernel(name: str, n: int, decay: float, causal: bool = False, seed: int = 0,
                  channel: int = 0) -> torch.Tensor:
    """Any preset by name: one of ``PRESETS``."""
    if name in SYNTHETIC:
        return synthetic_kernel(name, n, decay, causal)
    if name in KINDS:
        return operator_kernel(name, n, decay, causal, seed, channel)
    raise ValueError(f"preset must be one of {PRESETS}; got {name!r}")


MAX_TYPED_LENGTH = 4096  # n of typed coefficients, as the longest slider on the pages
MAX_TYPED_CHARS = 40 * (2 * MAX_TYPED_LENGTH - 1)  # text accepted: 40 characters a number


def parse_coefficients(text: str, causal: bool = False) -> torch.Tensor:
    """Parse typed lag coefficients t_{-(n-1)} .. t_{n-1} (comma or space separated).

    An odd count 2n-1 is required, at most 2·MAX_TYPED_LENGTH - 1; a single number is the
    n = 1 kernel. The length is checked before any number is converted."""
    if len(text) > MAX_TYPED_CHARS:
        raise ValueError(f"coefficients must be at most {MAX_TYPED_CHARS:,} characters; got "
                         f"{len(text):,}")
    parts = text.replace(",", " ").split()
    if not parts:
        raise ValueError("coefficients must be 2n-1 numbers t_{-(n-1)} .. t_{n-1}; got none")
    if len(parts) > 2 * MAX_TYPED_LENGTH - 1:
        raise ValueError(f"coefficients must be at most {2 * MAX_TYPED_LENGTH - 1} numbers "
                         f"(n ≤ {MAX_TYPED_LENGTH}); got {len(parts)}")
    try:
        values = [float(p) for p in parts]
    except ValueError as err:
        raise ValueError(f"coefficients must be numbers; {err}") from None
    if len(values) % 2 == 0:
        raise ValueError(f"coefficients must be an odd count 2n-1 (lags -(n-1)..n-1); "
                         f"got {len(values)}")
    t = torch.tensor(values, dtype=torch.float64)
    if not torch.isfinite(t).all():
        raise ValueError("coefficients must be finite; got NaN or Inf")
    return causal_part(t) if causal else t
