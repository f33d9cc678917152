"""The token-mixer interface shared by every operator kind.

Letters: B batch, n sequence length, D channels.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import torch
from torch import nn

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import check_length, dense
from tnn_core.operators.config import OperatorConfig

__all__ = ["TokenMixer"]

_CACHE_SIZE = 4  # lengths whose kernel spectra are kept at once


class TokenMixer(nn.Module):
    """Maps x [B, n, D] to y [B, n, D] with one n x n linear map per channel.

    Subclasses implement ``mix`` (on the contiguous [B, D, n] layout) and
    ``kernel`` (lag coefficients [D, 2n-1]). ``matrix(n)`` is the exact linear
    map, ``op(x)[b, :, c] == op.matrix(n)[c] @ x[b, :, c]``; it is dense(kernel)
    unless the operator is not Toeplitz (bidirectional SKI overrides it).

    ``cached(key, compute)`` keeps what depends only on the parameters (a kernel's
    spectrum at one length) while no gradient is being recorded: under
    ``torch.no_grad()`` / ``inference_mode`` a repeated length costs no RPE call. An
    entry is reused only while every parameter equals the snapshot taken when it was
    made (compared by value, so optimizer steps, ``load_state_dict``, edits through
    ``.data`` and ``functional_call`` all invalidate it).
    """

    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__()
        self.config = config
        self.dim = check_int("dim", dim, 1)
        self._cache: OrderedDict = OrderedDict()
        self._cache_snapshot: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        y = self.mix(x.transpose(1, 2))  # (B, D, n)
        return y.transpose(1, 2)  # (B, n, D)

    def _check_input(self, x: torch.Tensor) -> None:
        if x.dim() != 3:
            raise ValueError(f"x must have shape [B, n, D={self.dim}]; got {tuple(x.shape)}")
        B, n, D = x.shape
        if D != self.dim:
            raise ValueError(f"x last dimension must be D={self.dim}; got {D}")
        check_length(n)

    def mix(self, x: torch.Tensor) -> torch.Tensor:  # (B, D, n) -> (B, D, n)
        raise NotImplementedError

    def kernel(self, n: int) -> torch.Tensor:  # -> (D, 2n-1)
        raise NotImplementedError

    def matrix(self, n: int) -> torch.Tensor:
        """The exact linear map applied at length n, [D, n, n]."""
        return dense(self.kernel(check_length(n)))

    def cached(self, key: tuple, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``compute()``, reused while no gradient is recorded and the parameters are unchanged."""
        if torch.is_grad_enabled():
            return compute()
        params = [p.detach() for p in self.parameters()]
        snapshot = self._cache_snapshot
        same = len(snapshot) == len(params) and all(
            s.shape == p.shape and s.dtype == p.dtype and s.device == p.device
            and torch.equal(s, p) for s, p in zip(snapshot, params, strict=True))
        if not same:
            self._cache = OrderedDict()
            self._cache_snapshot = [p.clone() for p in params]
        p = params[0] if params else None
        full_key = (key, torch.is_inference_mode_enabled(),
                    None if p is None else (p.device, p.dtype))
        value = self._cache.get(full_key)
        if value is None:
            value = compute()
            self._cache[full_key] = value
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(full_key)
        return value

    def extra_repr(self) -> str:
        c = self.config
        return f"dim={self.dim}, causal={c.causal}, decay={c.decay}"

    def _param(self) -> torch.Tensor:
        return next(self.parameters())
