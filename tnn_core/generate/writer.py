"""Writing text with a character language model: sample the next character, feed it back.

``write(model, vocab, prompt, tokens, sampling)`` yields the new characters one at a time
(for a screen or a terminal to show as they come); ``writing`` gives the same characters
with the decoder that writes them (the Inspect page reads the state it holds). The prompt
goes through the model at once (``Decoder.prefill``), then each sampled character a token
at a time (``Decoder.step``). The decoder is built for the whole text, prompt plus
``tokens``, so every logit it gives equals ``model(text)`` at that position (``decoder``).

Sampling (``next_token``): (logits - their maximum) / temperature, then the ``top_k``
most likely tokens kept (0: all), then one draw from the softmax with the run's own
generator; temperature 0 takes the most likely token. Shifting first changes no
probability and keeps every scaled logit <= 0, so a tiny temperature (down to the
smallest float, 5e-324) sends the others to -inf instead of overflowing: it takes the most
likely token, as 0 does. The same seed writes the same text.

Letters: B batch, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from tnn_core.checks import check_int, check_number
from tnn_core.generate.decoder import Decoder
from tnn_core.models import CausalLM
from tnn_core.training.tasks.charlm import decode_ids, encode_text

__all__ = ["Sampling", "next_token", "write", "writing", "vocab_of", "MAX_CONTEXT",
           "MAX_TEMPERATURE"]

MAX_CONTEXT = 65_536  # prompt + tokens at most: the Toeplitz form keeps every input
MAX_TEMPERATURE = 100.0
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class Sampling:
    """How the next token is drawn. Unknown fields raise."""

    temperature: float = 1.0  # 0: the most likely token; above 1 flatter, below sharper
    top_k: int = 0  # keep the k most likely tokens; 0 keeps all
    seed: int = 0  # seeds the run's own generator

    def __post_init__(self):
        check_number("temperature", self.temperature, 0, MAX_TEMPERATURE)
        check_int("top_k", self.top_k, 0)
        check_int("seed", self.seed, 0, MAX_SEED)


def next_token(logits: torch.Tensor, sampling: Sampling,
               generator: torch.Generator) -> torch.Tensor:
    """One token per row: logits [B, V] -> [B] long."""
    if sampling.temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits.double()
    scaled = (logits - logits.amax(dim=-1, keepdim=True)) / sampling.temperature  # (B, V) <= 0
    if 0 < sampling.top_k < scaled.shape[-1]:
        kth = scaled.topk(sampling.top_k, dim=-1).values[:, -1:]  # (B, 1)
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probabilities = torch.softmax(scaled, dim=-1).cpu()  # (B, V) drawn by a CPU generator
    return torch.multinomial(probabilities, 1, generator=generator)[:, 0].to(logits.device)


def vocab_of(task_info: dict) -> str:
    """The character vocabulary a checkpoint's task info keeps (a charlm model's)."""
    vocab = task_info.get("vocab") if isinstance(task_info, dict) else None
    if not isinstance(vocab, str) or not vocab:
        name = task_info.get("name") if isinstance(task_info, dict) else None
        raise ValueError(f"the checkpoint's task must be a character language model (charlm) "
                         f"that keeps its vocabulary; got task {name!r}")
    return vocab


def write(model: CausalLM, vocab: str, prompt: str, tokens: int,
          sampling: Sampling = Sampling()) -> Iterator[str]:
    """The ``tokens`` characters that follow ``prompt``, one at a time (inputs checked on
    the first ``next``)."""
    _, characters = writing(model, vocab, prompt, tokens, sampling)
    yield from characters


def writing(model: CausalLM, vocab: str, prompt: str, tokens: int,
            sampling: Sampling = Sampling()) -> tuple[Decoder, Iterator[str]]:
    """``write``'s decoder (to read its ``state_bytes`` as it goes) and its characters;
    the inputs are checked now. The first ``next`` passes the prompt (``prefill``), each
    later one a character (``step``)."""
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"prompt must hold at least one character; got {prompt!r}")
    if len(prompt) > MAX_CONTEXT - 1:
        raise ValueError(f"prompt must be at most {MAX_CONTEXT - 1} characters; got "
                         f"{len(prompt)}")
    check_int("tokens", tokens, 1, MAX_CONTEXT - len(prompt),
              span=f"[1, {MAX_CONTEXT} - the prompt's {len(prompt)} characters]")
    ids = encode_text(vocab, prompt).long()[None].to(model.embed.weight.device)  # (1, t)
    if int(ids.max()) >= model.config.vocab_size:
        raise ValueError(f"the vocabulary ({len(vocab) + 1} ids) must fit the model's "
                         f"vocab_size {model.config.vocab_size}")
    decoder = Decoder(model, ids.shape[1] + tokens)
    return decoder, _characters(decoder, vocab, ids, tokens, sampling)


def _characters(decoder: Decoder, vocab: str, ids: torch.Tensor, tokens: int,
                sampling: Sampling) -> Iterator[str]:
    generator = torch.Generator().manual_seed(sampling.seed)
    logits = decoder.prefill(ids)  # (1, V)
    for i in range(tokens):
        token = next_token(logits, sampling, generator)  # (1,)
        yield decode_ids(vocab, token)
        if i + 1 < tokens:
            logits = decoder.step(token)
