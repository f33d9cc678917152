"""One causal token mixer applied a token at a time: the Toeplitz form and the recurrent form.

A causal Toeplitz layer computes y_t = Σ_{u<=t} k_(t-u) x_u (TNN §3.2). Generating text
asks for y_t once x_t is known, and nothing else:

* ``ToeplitzHistory`` keeps every input so far, x_t..x_0, and takes one dot product per
  channel with the kernel's lags 0..t: O(t D) work and memory per token, growing with the
  context, but no FFT over the prefix.
* ``ModalState`` (an ``operators.SSM``) keeps the state h [D, s] of the recurrence
  h_{t+1} = z ⊙ h_t + x_t, y_t = d x_t + Re(c · h_t): O(s D) per token whatever the
  context (the recurrent form; Qin and Zhong, EMNLP 2023).
* ``TogeipiHistory`` (the course project's mixer) keeps its projected inputs and applies
  one row of its Toeplitz-plus-sparse matrix per token.

Both are built for a context of ``length`` positions and use the kernel the full forward
uses at that length: FD-TNN's kernel depends on the length (its RPE reads the frequency
grid of ``fft_size(n)``), so a decoder for ``length`` equals ``model(tokens)`` over the
whole ``length``-token text at every position; TNO's and the SSM's lags do not depend on
it. ``prefill`` takes the next several tokens at once (an FFT product; the decoder gives
a long prompt in pieces, so its memory does not grow with the prompt), ``step`` one token.

Letters: B batch, t tokens so far, D channels, s modes, L length.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tnn_core.core.toeplitz import fft_size
from tnn_core.operators import CHANNEL_KINDS, SSM, Togeipi, TokenMixer
from tnn_core.operators.fast.fft_product import circulant_product
from tnn_core.operators.ssm import mode_powers

__all__ = ["ToeplitzHistory", "ModalState", "TogeipiHistory", "incremental_form"]

_CHUNK_ELEMENTS = 1 << 22  # B * D * s * tokens at once when a prompt is folded into h
_SPECTRUM_ELEMENTS = 1 << 20  # B * channels * FFT size at once in a Toeplitz prefill


class _Context:
    """Counts the tokens taken, at most ``length``."""

    def __init__(self, length: int):
        self.length, self.count = length, 0

    def _make_room(self, tokens: int) -> None:
        if self.count + tokens > self.length:
            raise ValueError(f"tokens must fit the decoder's length {self.length}; got "
                             f"{self.count} + {tokens}")


class ToeplitzHistory(_Context):
    """The Toeplitz form of a causal operator: its inputs so far and its kernel's lags."""

    def __init__(self, op: TokenMixer, length: int, batch: int):
        super().__init__(length)
        D = op.dim
        with torch.no_grad():
            self.column = op.kernel(length)[:, length - 1:].contiguous()  # (D, L) lags 0..L-1
        # (B, D, L) the inputs latest first: x_u at L-1-u, so x_t..x_0 is one slice
        self.inputs = self.column.new_zeros(batch, D, length)

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        """The next t inputs at once: x [B, t, D] -> y [B, t, D]. An FFT product over the
        inputs so far, a group of channels at a time (at most _SPECTRUM_ELEMENTS of spectrum)."""
        B, t, D = x.shape
        start, L = self.count, self.length
        self._make_room(t)
        stop = start + t
        N = fft_size(stop)
        group = max(1, _SPECTRUM_ELEMENTS // (B * N))
        y = x.new_empty(B, D, t)  # (B, D, t)
        for c in range(0, D, group):
            self.inputs[:, c:c + group, L - stop:L - start] = \
                x[..., c:c + group].flip(1).transpose(1, 2)  # (B, G, t) latest first
            ordered = self.inputs[:, c:c + group, L - stop:].flip(-1)  # (B, G, stop) x_0..
            y[:, c:c + group] = circulant_product(ordered, self.column[c:c + group, :stop],
                                                  N)[..., start:]  # (B, G, t)
        self.count = stop
        return y.transpose(1, 2)  # (B, t, D)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """The next input x_t [B, D] -> y_t = Σ_{u<=t} k_(t-u) x_u, [B, D]."""
        t = self.count
        self._make_room(1)
        latest = self.length - 1 - t
        self.inputs[:, :, latest] = x
        self.count = t + 1
        return torch.einsum("bdu,du->bd", self.inputs[:, :, latest:],
                            self.column[:, : t + 1])  # (B, D): Σ_j x_(t-j) k_j

    def state_bytes(self) -> int:
        """Bytes held for one sequence at the current context: its inputs so far."""
        return self.count * self.inputs.shape[1] * self.inputs.element_size()


class ModalState(_Context):
    """The recurrent form of an ``SSM``: the state h [B, D, s] of its modes."""

    def __init__(self, op: SSM, length: int, batch: int):
        super().__init__(length)
        with torch.no_grad():
            self.op = op
            self.poles = op.complex_poles().clone()  # (D, s)
            self.residues = op.complex_residues().clone()  # (D, s)
            self.direct = op.direct.detach().clone()  # (D,)
        self.state = self.poles.new_zeros(batch, *self.poles.shape)  # (B, D, s)
        self._powers = self.poles.new_zeros(*self.poles.shape, 0)  # (D, s, C) z^0..z^(C-1)

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        """The next t inputs at once: x [B, t, D] -> y [B, t, D], in pieces of bounded
        memory (``_piece``)."""
        t = x.shape[1]
        self._make_room(t)
        B, D, s = self.state.shape
        chunk = max(1, _CHUNK_ELEMENTS // max(1, B * D * s))
        y = torch.cat([self._piece(x[:, start:start + chunk]) for start in range(0, t, chunk)],
                      dim=1)  # (B, t, D)
        self.count += t
        return y

    def _piece(self, x: torch.Tensor) -> torch.Tensor:
        """C inputs x [B, C, D] after the state h: y_j = (the FFT form from zero)_j +
        Re(c · z^j h); then h becomes z^C h + Σ_j z^(C-1-j) x_j."""
        C = x.shape[1]
        if self._powers.shape[-1] < C:  # every piece but a prompt's last has the same C
            exponent = torch.arange(C, device=x.device, dtype=x.dtype)  # (C,) j
            self._powers = mode_powers(self.poles, exponent)  # (D, s, C) z^j
        powers = self._powers[..., :C]  # (D, s, C)
        carried = torch.einsum("bds,dsc->bcd", self.residues * self.state, powers).real
        y = self.op(x) + carried  # (B, C, D)
        folded = torch.einsum("bcd,dsc->bds", x.to(powers.dtype), powers.flip(-1))  # (B, D, s)
        self.state = self.poles * powers[..., -1] * self.state + folded  # z^C h + Σ
        return y

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """The next input x_t [B, D] -> y_t = d x_t + Re(c · h_t) [B, D]; then h_{t+1}."""
        self._make_room(1)
        y = self.direct * x + (self.residues * self.state).real.sum(dim=-1)  # (B, D)
        self.state = self.poles * self.state + x[..., None]  # (B, D, s)
        self.count += 1
        return y

    def state_bytes(self) -> int:
        """Bytes held for one sequence: its state, the same at every context."""
        return self.state[0].numel() * self.state.element_size()


class TogeipiHistory(_Context):
    """The Togeipi mixer a token at a time: its pre-projected inputs u so far, the heads'
    PSF lags and the sparse matrix at ``length`` (whose kept entries depend on it)."""

    def __init__(self, op: Togeipi, length: int, batch: int):
        super().__init__(op.check_length(length))
        self.op = op
        with torch.no_grad():
            L = op.config.max_length
            self.reversed = op.psf[:, L - 1 : L - 1 + length].flip(-1).clone()  # (H, L)
            self.sparse = op.sparse_matrix(length).clone()  # (L, L) lower triangular
        self.inputs = self.sparse.new_zeros(batch, length, op.dim)  # (B, L, D) u_0..u_(L-1)

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        """The next t inputs at once: x [B, t, D] -> y [B, t, D]."""
        B, t, D = x.shape
        start = self.count
        self._make_room(t)
        stop = start + t
        self.inputs[:, start:stop] = self.op.in_proj(x)
        u = self.inputs[:, :stop]  # (B, stop, D) every input so far
        H = self.reversed.shape[0]
        column = self.reversed[:, self.length - stop:].flip(-1)[:, None, :]  # (H, 1, stop)
        uh = u.reshape(B, stop, H, D // H).permute(0, 2, 3, 1)  # (B, H, d, stop)
        conv = circulant_product(uh, column, fft_size(stop))[..., start:]  # (B, H, d, t)
        self.count = stop
        return self._output(self.sparse[start:stop, :stop] @ u,
                            conv.reshape(B, D, t).transpose(1, 2))

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """The next input x_t [B, D] -> y_t [B, D]."""
        t = self.count
        self._make_room(1)
        self.inputs[:, t] = self.op.in_proj(x)
        self.count = t + 1
        u = self.inputs[:, : t + 1]  # (B, t+1, D)
        B, _, D = u.shape
        H = self.reversed.shape[0]
        lags = self.reversed[:, self.length - 1 - t:]  # (H, t+1): lags t..0
        conv = torch.einsum("bjhe,hj->bhe", u.view(B, t + 1, H, D // H), lags)  # (B, H, d)
        return self._output(torch.einsum("j,bjd->bd", self.sparse[t, : t + 1], u),
                            conv.reshape(B, D))

    def _output(self, sparse: torch.Tensor, conv: torch.Tensor) -> torch.Tensor:
        if self.op.config.psf_activation == "gelu":
            conv = F.gelu(conv)
        return self.op.out_proj(sparse + conv)

    def state_bytes(self) -> int:
        """Bytes held for one sequence at the current context: its projected inputs so far."""
        return self.count * self.inputs.shape[-1] * self.inputs.element_size()


def incremental_form(op: TokenMixer, length: int, batch: int
                     ) -> ToeplitzHistory | ModalState | TogeipiHistory:
    """The token-at-a-time form of one causal operator for a context of ``length``."""
    if not op.config.causal:
        raise ValueError("the operator must be causal to run a token at a time; got a "
                         "bidirectional one")
    if isinstance(op, SSM):
        return ModalState(op, length, batch)
    if isinstance(op, Togeipi):
        return TogeipiHistory(op, length, batch)
    if op.config.kind not in CHANNEL_KINDS:
        raise ValueError(f"operator kind must be one of {CHANNEL_KINDS + ('togeipi',)} to run "
                         f"a token at a time; got {op.config.kind!r}")
    return ToeplitzHistory(op, length, batch)
