"""Generation (``tnn_core.generate``): the decoder equals the full forward at every
position for every causal kind, in float64 at awkward lengths; sampling; the command line.

Letters: B batch, n length, V vocabulary.
"""

from __future__ import annotations

import math

import pytest
import torch

from tnn_core.generate import Decoder, Sampling, next_token, vocab_of, write
from tnn_core.generate import decoder as decoder_module
from tnn_core.generate.cli import main
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig

V = 11
CAUSAL_KINDS = ["tno", "fd", "ski", "ssm", "togeipi", "togeipi-gelu"]
LENGTHS = [1, 2, 7, 13]


def causal_lm(kind: str, seed: int = 0):
    torch.manual_seed(seed)
    activation = "gelu" if kind == "togeipi-gelu" else "none"
    operator = OperatorConfig(kind=kind.removesuffix("-gelu"), causal=True, rank=4, band=3,
                              state=3, rpe_dim=8, heads=2, max_length=16,
                              psf_activation=activation)
    return build_model(ModelConfig(task="lm", vocab_size=V, dim=8, layers=2,
                                   operator=operator)).double().eval()


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", CAUSAL_KINDS)
def test_every_step_equals_the_full_forward(kind, n):
    """A prompt of p tokens at once, then one token at a time: the logits at each position
    are model(tokens)'s, for every split p (FD's kernel depends on the length: the decoder
    takes it at n, the whole text's)."""
    model = causal_lm(kind)
    tokens = torch.randint(0, V, (2, n), generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        full = model(tokens)  # (2, n, V)
    for prompt in sorted({1, (n + 1) // 2, n}):
        decoder = Decoder(model, n, batch=2)
        logits = [decoder.prefill(tokens[:, :prompt])]
        logits += [decoder.step(tokens[:, t]) for t in range(prompt, n)]
        got = torch.stack(logits, dim=1)  # (2, n - prompt + 1, V)
        assert torch.allclose(got, full[:, prompt - 1:], rtol=0, atol=1e-10), prompt


def test_a_toeplitz_history_grows_and_a_recurrence_does_not():
    sizes = {}
    for kind in ("tno", "ssm"):
        decoder = Decoder(causal_lm(kind), 20)
        decoder.prefill(torch.zeros(1, 1, dtype=torch.long))
        before = decoder.state_bytes()
        for _ in range(10):
            decoder.step(torch.zeros(1, dtype=torch.long))
        sizes[kind] = (before, decoder.state_bytes())
    assert sizes["tno"][1] == 11 * sizes["tno"][0]  # one input per token per layer
    assert sizes["ssm"][1] == sizes["ssm"][0]


def test_sampling():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.9]])
    g = torch.Generator().manual_seed(0)
    assert next_token(logits, Sampling(temperature=0), g).item() == 1
    assert next_token(logits, Sampling(top_k=1), g).item() == 1
    drawn = {next_token(logits, Sampling(top_k=2), g).item() for _ in range(200)}
    assert drawn == {1, 3}  # the two most likely, both drawn
    cold = [next_token(logits, Sampling(temperature=0.05), g).item() for _ in range(50)]
    assert cold.count(1) >= 40  # 3.0 vs 2.9 at T = 0.05: e^2 ≈ 7 to 1


def test_the_same_seed_writes_the_same_text():
    model = causal_lm("tno").float()
    vocab = "abcdefghij"
    first = "".join(write(model, vocab, "abc", 30, Sampling(seed=3)))
    again = "".join(write(model, vocab, "abc", 30, Sampling(seed=3)))
    other = "".join(write(model, vocab, "abc", 30, Sampling(seed=4)))
    assert first == again and first != other and len(first) == 30


@pytest.mark.parametrize(("prompt", "tokens", "sampling", "message"), [
    ("", 5, {}, "prompt must hold at least one character"),
    ("ab", 0, {}, "tokens must be an integer"),
    ("ab", 10**6, {}, "tokens must be an integer"),
    ("ab", 5, {"temperature": -1}, "temperature must be"),
    ("ab", 5, {"top_k": -1}, "top_k must be"),
])
def test_bad_requests_are_named(prompt, tokens, sampling, message):
    with pytest.raises(ValueError, match=message):
        "".join(write(causal_lm("tno").float(), "abcdefghij", prompt, tokens,
                      Sampling(**sampling)))


def test_the_state_is_bounded_before_it_is_allocated(monkeypatch):
    """A Toeplitz history of L tokens holds D inputs and D kernel lags per token per layer;
    past the bound the decoder is refused with the numbers, before anything of that size
    exists."""
    model = causal_lm("tno")  # 2 layers of D = 24 channels (expand 3 x d 8), float64
    assert decoder_module.state_bytes_needed(model, 100, 1) == 2 * 2 * 24 * 100 * 8
    monkeypatch.setattr(decoder_module, "MAX_STATE_BYTES", 2 * 2 * 24 * 100 * 8)
    Decoder(model, 100)
    with pytest.raises(ValueError, match=r"length must keep the decoder's state within .* "
                                         r"got length 101 \(batch 1\)"):
        Decoder(model, 101)
    ssm = causal_lm("ssm")  # s = 3 complex modes: the same at any length
    assert decoder_module.state_bytes_needed(ssm, 10**5, 1) == 2 * 24 * 3 * 2 * 8


def test_only_a_causal_language_model_generates():
    classifier = build_model(ModelConfig(task="classify", vocab_size=V, dim=8))
    with pytest.raises(ValueError, match="causal language model"):
        Decoder(classifier, 4)
    with pytest.raises(ValueError, match="character language model"):
        vocab_of({"name": "digits"})


def test_the_command_line_writes_from_a_shipped_model(capsys):
    assert main(["checkpoints/charlm-tno.safetensors", "--prompt", "def ", "--tokens", "40",
                 "--temperature", "0", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def ") and len(out) == len("def ") + 40 + 1


def test_the_command_line_refuses_a_classifier(capsys):
    assert main(["checkpoints/digits-tno.safetensors", "--tokens", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "character language model" in err


@pytest.mark.parametrize("n", [5, 13])
@pytest.mark.parametrize("kind", CAUSAL_KINDS)
def test_a_prompt_given_in_pieces_equals_the_full_forward(kind, n, monkeypatch):
    """A prompt in two prefills, its layers' projections PREFILL_CHUNK positions at a time
    and an SSM's inputs folded into its state a few at a time: every later logit is still
    the full forward's, in float64, with pieces of 1, 2 and 4 positions."""
    from tnn_core.generate import incremental
    model = causal_lm(kind)
    tokens = torch.randint(0, V, (2, n), generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        full = model(tokens)  # (2, n, V)
    for chunk in (1, 2, 4):
        monkeypatch.setattr(decoder_module, "PREFILL_CHUNK", chunk)
        monkeypatch.setattr(incremental, "_CHUNK_ELEMENTS", 2 * 24 * 3 * chunk)  # B D s C
        monkeypatch.setattr(incremental, "_SPECTRUM_ELEMENTS", 2 * 16 * chunk)  # B G N
        decoder = Decoder(model, n, batch=2)
        decoder.prefill(tokens[:, :2])
        logits = [decoder.prefill(tokens[:, 2 : n - 2])]
        logits += [decoder.step(tokens[:, t]) for t in range(n - 2, n)]
        got = torch.stack(logits, dim=1)  # (2, 3, V)
        assert torch.allclose(got, full[:, n - 3:], rtol=0, atol=1e-10), chunk


@pytest.mark.parametrize("temperature", [1e-30, 1e-308, math.ulp(0.0)])  # ulp(0): 5e-324
def test_a_tiny_temperature_takes_the_most_likely_token(temperature):
    """logits / T overflowed to inf below T ≈ 1e-300 ("probability tensor contains either
    inf, nan or element < 0"); the logits are shifted by their maximum first, so a tiny T
    gives the most likely token, as T = 0 does, down to the smallest positive float."""
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.9], [5.0, -2.0, 4.99, 0.0]])
    g = torch.Generator().manual_seed(0)
    for top_k in (0, 2):
        drawn = next_token(logits, Sampling(temperature=temperature, top_k=top_k), g)
        assert drawn.tolist() == [1, 0]
    model = causal_lm("tno").float()
    greedy = "".join(write(model, "abcdefghij", "abc", 20, Sampling(temperature=0)))
    tiny = "".join(write(model, "abcdefghij", "abc", 20, Sampling(temperature=temperature)))
    assert tiny == greedy


def test_a_time_limit_stops_the_writing_and_keeps_the_text(capsys):
    """--time-limit ends the writing between characters with one sentence and exit 3; what
    was written stays on stdout."""
    assert main(["checkpoints/charlm-tno.safetensors", "--prompt", "def ", "--tokens", "60000",
                 "--temperature", "0", "--threads", "1", "--time-limit", "0.5"]) == 3
    captured = capsys.readouterr()
    assert captured.out.startswith("def ") and captured.out.endswith("\n")
    written = len(captured.out) - len("def ") - 1
    assert 1 <= written < 60000
    (line,) = captured.err.splitlines()
    assert line == (f"error: generation stopped at --time-limit 0.5 s after {written:,} of "
                    f"60,000 characters; the text written is kept (give a larger --time-limit "
                    f"to write more)")


@pytest.mark.parametrize("limit", ["0", "-1", "nan", "1e9"])
def test_a_nonsense_time_limit_is_one_sentence(capsys, limit):
    assert main(["checkpoints/charlm-tno.safetensors", "--time-limit", limit]) == 2
    assert "--time-limit must be" in capsys.readouterr().err
