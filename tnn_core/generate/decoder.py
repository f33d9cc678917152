"""A causal language model run a token at a time (TNN layers: ``models``).

Everything in a TNN layer but its token mixer acts on each position alone (the GTU's
projections and gate, the GLU, the RMSNorms), so one new token passes through those as a
row, and each layer's mixer is replaced by its incremental form (``incremental``). The
decoder's logits at every position equal ``model(tokens)`` over the whole text of
``length`` tokens (the tests check it in float64 for every operator kind). A prompt's
mixers take it at once (one FFT product, a group of channels at a time), the rest of each
layer PREFILL_CHUNK positions at a time: a 62,790-character prompt took 945 MB above the
start with every intermediate of every position alive at once.

Letters: B batch, t tokens, d model width, D = expand_ratio d, V vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import check_length
from tnn_core.generate.incremental import incremental_form
from tnn_core.models import CausalLM, TNNLayer

__all__ = ["Decoder", "MAX_STATE_BYTES", "PREFILL_CHUNK", "state_bytes_needed"]

# what every layer's incremental form may hold, at most: with a longest prompt's working
# memory (about as much again), a command stays within the lab's 600 MB promise
MAX_STATE_BYTES = 256 << 20
PREFILL_CHUNK = 4096  # prompt positions through a layer's projections and GLU at once


def state_bytes_needed(model: CausalLM, length: int, batch: int) -> int:
    """The bytes the layers' incremental forms allocate for ``batch`` sequences of ``length``
    tokens: a Toeplitz history's inputs [B, D, L] and kernel lags [D, L], an SSM's modes
    [B, D, s] (complex), a Togeipi layer's inputs and its sparse matrix [L, L]."""
    total = 0
    for op in model.operators():
        size = next(op.parameters()).element_size()
        if op.config.kind == "ssm":
            total += batch * op.dim * op.config.state * 2 * size
        elif op.config.kind == "togeipi":
            total += (batch * op.dim * length + length * length) * size
        else:
            total += (batch + 1) * op.dim * length * size
    return total


class Decoder:
    """``prefill(prompt)`` then ``step(token)`` repeatedly, each giving the next logits."""

    def __init__(self, model: CausalLM, length: int, batch: int = 1):
        if not isinstance(model, CausalLM):
            task = getattr(getattr(model, "config", None), "task", None)
            raise ValueError(f"model must be a causal language model (task 'lm'); got a "
                             f"model of task {task!r}")
        check_length(length, "length")
        check_int("batch", batch, 1, 4_096)
        needed = state_bytes_needed(model, length, batch)
        if needed > MAX_STATE_BYTES:  # checked before anything of that size is allocated
            raise ValueError(f"length must keep the decoder's state within "
                             f"{MAX_STATE_BYTES >> 20:,} MiB; got length {length} (batch "
                             f"{batch}), which needs {needed / 2**20:,.0f} MiB: write fewer "
                             f"tokens")
        self.model = model
        self.forms = [incremental_form(op, length, batch) for op in model.operators()]
        self.length, self.batch = length, batch

    @torch.no_grad()
    def prefill(self, tokens: torch.Tensor) -> torch.Tensor:
        """The next tokens [B, t >= 1] at once (a prompt, or more of it) -> the logits
        after the last [B, V]. Each layer's mixer takes all t at once; the rest of the
        layer acts on PREFILL_CHUNK positions at a time (``_prompt_layer``)."""
        if tokens.dim() != 2 or tokens.shape[0] != self.batch or tokens.shape[1] < 1:
            raise ValueError(f"tokens must have shape [{self.batch}, t >= 1]; got "
                             f"{tuple(tokens.shape)}")
        x = self.model.embed(self._checked(tokens))  # (B, t, d)
        for layer, form in zip(self.model.layers, self.forms, strict=True):
            x = _prompt_layer(layer, x, form.prefill)
        return self._logits(x[:, -1])  # (B, V)

    @torch.no_grad()
    def step(self, token: torch.Tensor) -> torch.Tensor:
        """The next token [B] -> the logits after it [B, V]."""
        if token.shape != (self.batch,):
            raise ValueError(f"token must have shape [{self.batch}]; got {tuple(token.shape)}")
        x = self.model.embed(self._checked(token))  # (B, d)
        for layer, form in zip(self.model.layers, self.forms, strict=True):
            x = _layer(layer, x, form.step)
        return self._logits(x)  # (B, V)

    def state_bytes(self) -> int:
        """Bytes every layer's mixer holds for one sequence now (inputs or modes)."""
        return sum(form.state_bytes() for form in self.forms)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:  # (B, d) -> (B, V)
        return self.model.norm(x) @ self.model.embed.weight.T

    def _checked(self, tokens: torch.Tensor) -> torch.Tensor:
        vocab = self.model.config.vocab_size
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab):
            raise ValueError(f"tokens must be in [0, {vocab - 1}]; got values in "
                             f"[{int(tokens.min())}, {int(tokens.max())}]")
        return tokens


def _prompt_layer(layer: TNNLayer, x: torch.Tensor, mix) -> torch.Tensor:
    """``_layer`` over t positions x [B, t, d], the mixer ``mix`` given all t at once and
    everything else PREFILL_CHUNK positions at a time: a long prompt's activations take
    the room of its mixer's inputs and outputs [B, t, D], not of every intermediate."""
    chunks = [slice(c, c + PREFILL_CHUNK) for c in range(0, x.shape[1], PREFILL_CHUNK)]
    mixed = mix(torch.cat([_mixer_input(layer, x[:, c]) for c in chunks], dim=1))  # (B, t, D)
    out = torch.empty_like(x)  # (B, t, d)
    for c in chunks:
        out[:, c] = _after_mixer(layer, x[:, c], mixed[:, c])
    return out


def _layer(layer: TNNLayer, x: torch.Tensor, mix) -> torch.Tensor:
    """One TNN layer with ``mix`` as its token mixer: x [B, d] or [B, t, d], as x."""
    return _after_mixer(layer, x, mix(_mixer_input(layer, x)))


def _mixer_input(layer: TNNLayer, x: torch.Tensor) -> torch.Tensor:
    """What the layer's GTU hands its token mixer: SiLU(W_v N(x)), x [..., d] -> [..., D]."""
    return F.silu(layer.gtu.v_proj(layer.norm1(x)))


def _after_mixer(layer: TNNLayer, x: torch.Tensor, mixed: torch.Tensor) -> torch.Tensor:
    """The rest of the layer given its mixer's output ``mixed`` [..., D]: the GTU's gate and
    output, x + W_o(SiLU(W_u N(x)) ⊙ mixed), then x + GLU(N(x)); x [..., d] -> [..., d]."""
    gtu = layer.gtu
    x = x + gtu.out_proj(F.silu(gtu.u_proj(layer.norm1(x))) * mixed)
    return x + layer.glu(layer.norm2(x))
