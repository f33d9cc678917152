"""The token-mixer interface shared by every operator kind.

Letters: B batch, n sequence length, D channels.
"""

from __future__ import annotations

import torch
from torch import nn

from ..toeplitz import check_length, dense
from .config import OperatorConfig

__all__ = ["TokenMixer"]


class TokenMixer(nn.Module):
    """Maps x [B, n, D] to y [B, n, D] with one n x n linear map per channel.

    Subclasses implement ``mix`` (on the contiguous [B, D, n] layout) and
    ``kernel`` (lag coefficients [D, 2n-1]). ``matrix(n)`` is the exact linear
    map, ``op(x)[b, :, c] == op.matrix(n)[c] @ x[b, :, c]``; it is dense(kernel)
    unless the operator is not Toeplitz (bidirectional SKI overrides it).
    """

    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be an integer in [1, inf); got {dim!r}")
        self.config = config
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"x must have shape [B, n, D={self.dim}]; got {tuple(x.shape)}")
        B, n, D = x.shape
        if D != self.dim:
            raise ValueError(f"x last dimension must be D={self.dim}; got {D}")
        check_length(n)
        y = self.mix(x.transpose(1, 2))  # (B, D, n)
        return y.transpose(1, 2)  # (B, n, D)

    def mix(self, x: torch.Tensor) -> torch.Tensor:  # (B, D, n) -> (B, D, n)
        raise NotImplementedError

    def kernel(self, n: int) -> torch.Tensor:  # -> (D, 2n-1)
        raise NotImplementedError

    def matrix(self, n: int) -> torch.Tensor:
        """The exact linear map applied at length n, [D, n, n]."""
        return dense(self.kernel(check_length(n)))

    def extra_repr(self) -> str:
        c = self.config
        return f"dim={self.dim}, causal={c.causal}, decay={c.decay}"

    def _param(self) -> torch.Tensor:
        return next(self.parameters())
