"""The token-mixer interface shared by every operator kind.

Letters: B batch, n sequence length, D channels.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable

import torch
from torch import nn

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import check_length, dense
from tnn_core.operators.config import OperatorConfig

__all__ = ["TokenMixer"]

_CACHE_SIZE = 4  # lengths whose kernel spectra are kept at once
_CACHE_LOCK = threading.Lock()  # guards every operator's cache (one per module cannot deepcopy)
_FLOATS = (torch.float32, torch.float64)  # the parameter dtypes every operator computes in
_HALVES = (torch.float16, torch.bfloat16)
_DENSE_BYTES = 4 << 30  # the largest dense [D, n, n] matrix(n) builds


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class TokenMixer(nn.Module):
    """Maps x [B, n, D] to y [B, n, D] with one n x n linear map per channel.

    ``forward`` applies one input contract for every kind (``check_input``: shape, length,
    dtype; B = 0 allowed) and then ``checked_forward``. Subclasses implement ``mix`` (on
    the contiguous [B, D, n] layout) or override ``checked_forward``, and ``kernel`` (lag
    coefficients [D, 2n-1]). ``matrix(n)`` is the exact linear map, ``op(x)[b, :, c] ==
    op.matrix(n)[c] @ x[b, :, c]``; it is dense(kernel) unless the operator is not Toeplitz
    (bidirectional SKI overrides it).

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
        """x [B, n, D] -> [B, n, D], for every kind under one input contract (``check_input``).

        B = 0 gives an empty [0, n, D] without running a transform (MKL refuses an empty
        FFT). Under ``torch.autocast`` a float16/bfloat16 x is computed in the parameters'
        dtype with autocast off and returned in it, as autocast's float32 ops (the FFTs
        among them) do; on CUDA without autocast it is computed in the parameters' dtype
        and returned in its own (cuFFT has half kernels only for power-of-two sizes).
        """
        compute = self.check_input(x)
        if torch.is_autocast_enabled(x.device.type):
            with torch.autocast(x.device.type, enabled=False):
                return self._run(x.to(compute))  # (B, n, D) in the parameters' dtype
        return self._run(x.to(compute)).to(x.dtype)  # (B, n, D)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        return self.checked_forward(x) if x.shape[0] else self._empty_output(x)

    def checked_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The operator on an x [B >= 1, n, D] that passed ``check_input``, in the parameters'
        dtype. The default mixes along the contiguous n axis of [B, D, n]."""
        y = self.mix(x.transpose(1, 2))  # (B, D, n)
        return y.transpose(1, 2)  # (B, n, D)

    def _empty_output(self, x: torch.Tensor) -> torch.Tensor:
        """Zeros [0, n, D] joined to x and every parameter, so that a backward gives them
        the gradient a product over no rows has (zero), as DDP expects of every parameter."""
        y = x.new_zeros(x.shape)  # (0, n, D)
        if not torch.is_grad_enabled():
            return y
        inputs = x.sum() + sum(p.sum() for p in self.parameters())  # () joins the graph
        return y + 0 * inputs  # (0, n, D)

    def check_input(self, x: torch.Tensor) -> torch.dtype:
        """Check x against the contract shared by every kind; return the dtype to compute in.

        x must be a real floating tensor [B >= 0, n, D = dim] (``check_length(n)``) on the
        parameters' device, of the parameters' dtype (float32 or float64). float16 and
        bfloat16 are accepted under torch.autocast and on CUDA (computed in the parameters'
        dtype) and refused on the CPU, whose FFT has no half-precision kernels. Integer,
        bool and complex x are refused, never converted. Each refusal is a ValueError
        saying what is allowed and how to convert.
        """
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"x must be a torch.Tensor [B, n, D={self.dim}]; got "
                             f"{type(x).__name__}")
        if x.dim() != 3:
            raise ValueError(f"x must have shape [B, n, D={self.dim}]; got {tuple(x.shape)}")
        B, n, D = x.shape
        if D != self.dim:
            raise ValueError(f"x last dimension must be D={self.dim}; got {D}")
        self.check_length(n)
        p = self._param()
        if p.dtype not in _FLOATS:
            raise ValueError(f"the operator's parameters must be float32 or float64; got "
                             f"{_name(p.dtype)}: convert the operator with op.to(torch.float32)")
        if x.device != p.device:
            raise ValueError(f"x must be on the operator's device {p.device}; got {x.device}: "
                             f"move it with x.to({str(p.device)!r})")
        if x.dtype == p.dtype:
            return p.dtype
        allowed = (f"x dtype must be {_name(p.dtype)}, the dtype of the operator's parameters "
                   f"(float16 and bfloat16 only under torch.autocast or on CUDA); "
                   f"got {_name(x.dtype)}")
        if x.dtype in _HALVES:
            if torch.is_autocast_enabled(x.device.type) or x.device.type == "cuda":
                return p.dtype
            raise ValueError(f"{allowed}: half precision is not supported on the CPU (torch's "
                             f"CPU FFT has no half kernels); convert with x.to(torch."
                             f"{_name(p.dtype)}) or run under torch.autocast")
        if x.is_floating_point():
            raise ValueError(f"{allowed}: convert with x.to(torch.{_name(p.dtype)}) or the "
                             f"operator with op.to(torch.{_name(x.dtype)})")
        raise ValueError(f"{allowed}: integer, bool and complex inputs are not converted "
                         f"silently; convert with x.to(torch.{_name(p.dtype)})")

    def check_length(self, n: int) -> int:
        """n in [1, MAX_LENGTH] (togeipi: [1, max_length]), checked before anything of
        size n is allocated."""
        return check_length(n)

    def mix(self, x: torch.Tensor) -> torch.Tensor:  # (B, D, n) -> (B, D, n)
        raise NotImplementedError

    def kernel(self, n: int) -> torch.Tensor:  # -> (D, 2n-1)
        raise NotImplementedError

    def matrix(self, n: int) -> torch.Tensor:
        """The exact linear map applied at length n, [D, n, n]."""
        return dense(self.kernel(self.check_dense_length(n, self.dim)))

    def check_dense_length(self, n: int, channels: int) -> int:
        """n for a dense [channels, n, n] matrix: ``check_length(n)`` and at most
        _DENSE_BYTES in the parameters' dtype, checked before it is built."""
        self.check_length(n)
        longest = math.isqrt(_DENSE_BYTES // (channels * self._param().element_size()))
        if n > longest:
            raise ValueError(f"n must be an integer in [1, {longest}] for a dense "
                             f"[{channels}, n, n] matrix (at most {_DENSE_BYTES >> 30} GiB); "
                             f"got {n}")
        return n

    def cached(self, key: tuple, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``compute()``, reused while no gradient is recorded and the parameters are unchanged.

        Thread-safe: the app reads one model from several threads (sessions, its warm-up)."""
        if torch.is_grad_enabled():
            return compute()
        params = [p.detach() for p in self.parameters()]
        p = params[0] if params else None
        full_key = (key, torch.is_inference_mode_enabled(),
                    None if p is None else (p.device, p.dtype))
        with _CACHE_LOCK:
            snapshot = self._cache_snapshot
            same = len(snapshot) == len(params) and all(
                s.shape == p.shape and s.dtype == p.dtype and s.device == p.device
                and torch.equal(s, p) for s, p in zip(snapshot, params, strict=True))
            if not same:
                self._cache = OrderedDict()
                self._cache_snapshot = [p.clone() for p in params]
            value = self._cache.get(full_key)
            if value is not None:
                self._cache.move_to_end(full_key)
                return value
        value = compute()  # outside the lock: two threads may both compute a missing value
        with _CACHE_LOCK:
            self._cache[full_key] = value
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return value

    def extra_repr(self) -> str:
        c = self.config
        return f"dim={self.dim}, causal={c.causal}, decay={c.decay}"

    def _param(self) -> torch.Tensor:
        return next(self.parameters())
