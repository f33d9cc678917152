"""tnn_core.models: the TNN language model and classifier in every operator kind."""

from __future__ import annotations

import math
from contextlib import contextmanager

import pytest
import torch
import torch.nn.functional as F

from tnn_core.models import CausalLM, ModelConfig, SequenceClassifier, build_model
from tnn_core.operators import OperatorConfig

KINDS = ["tno", "ski", "fd"]
VOCAB = 50


def lm_config(kind: str, **overrides) -> ModelConfig:
    operator = OperatorConfig(kind=kind, causal=True, rank=8, band=5)
    return ModelConfig(task="lm", operator=operator, vocab_size=VOCAB, dim=16, layers=2,
                       **overrides)


def classify_config(kind: str) -> ModelConfig:
    operator = OperatorConfig(kind=kind, causal=False, rank=8, band=5)
    return ModelConfig(task="classify", operator=operator, vocab_size=VOCAB, num_classes=5,
                       dim=16, layers=2)


def random_tokens(B: int, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (B, n), generator=g)


def assert_all_grads_finite(model: torch.nn.Module) -> None:
    for name, p in model.named_parameters():
        assert p.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(p.grad).all(), f"{name} has a non-finite gradient"
    for op in model.operators():  # the token mixers do learn
        assert any(p.grad.abs().max() > 0 for p in op.parameters())


@pytest.mark.parametrize("kind", KINDS)
def test_lm_forward_backward(kind):
    torch.manual_seed(0)
    model = build_model(lm_config(kind))
    assert isinstance(model, CausalLM)
    tokens = random_tokens(3, 12)
    logits = model(tokens)
    assert logits.shape == (3, 12, VOCAB)
    assert torch.isfinite(logits).all()
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
    loss.backward()
    assert_all_grads_finite(model)


@pytest.mark.parametrize("kind", KINDS)
def test_lm_is_causal(kind):
    torch.manual_seed(0)
    model = build_model(lm_config(kind)).double()
    n = 16
    tokens = random_tokens(2, n, seed=1)
    with torch.no_grad():
        logits = model(tokens)
        for t in (0, 7, n - 2):
            changed = tokens.clone()
            changed[:, t + 1] = (tokens[:, t + 1] + 1) % VOCAB
            logits2 = model(changed)
            torch.testing.assert_close(logits2[:, : t + 1], logits[:, : t + 1],
                                       rtol=0, atol=1e-10)
            assert (logits2[:, t + 1] - logits[:, t + 1]).abs().max() > 1e-6


@pytest.mark.parametrize("kind", KINDS)
def test_classifier_forward_backward(kind):
    torch.manual_seed(0)
    model = build_model(classify_config(kind))
    assert isinstance(model, SequenceClassifier)
    tokens = random_tokens(4, 10)
    logits = model(tokens)
    assert logits.shape == (4, 5)
    F.cross_entropy(logits, torch.tensor([0, 1, 2, 4])).backward()
    assert_all_grads_finite(model)


@contextmanager
def dense_mixers(model: torch.nn.Module, n: int):
    """Inside: every token mixer is applied as its dense matrix(n) [D, n, n] (the reference)."""
    for op in model.operators():
        matrix = op.matrix(n)  # (D, n, n)
        op.forward = lambda x, matrix=matrix: torch.einsum("dij,bjd->bid", matrix, x)
    try:
        yield
    finally:
        for op in model.operators():
            del op.forward


@pytest.mark.parametrize("task", ["lm", "classify"])
@pytest.mark.parametrize("kind", KINDS)
def test_at_four_times_the_length_every_mixer_is_its_toeplitz_matrix(kind, task):
    """Run at n, then at 4n: the model there equals the same model with each token mixer
    replaced by its dense matrix(4n), so the operators extend to 4n as Toeplitz maps (no
    maximum length, no wrap-around, no stale kernel from n)."""
    torch.manual_seed(0)
    model = build_model(lm_config(kind) if task == "lm" else classify_config(kind)).double()
    n = 32
    tokens = random_tokens(2, 4 * n, seed=1)
    with torch.no_grad():
        model(random_tokens(2, n))  # the training length first: kernels cached at n
        fast = model(tokens)  # (2, 4n, V) or (2, C)
        with dense_mixers(model, 4 * n):
            reference = model(tokens)
    torch.testing.assert_close(fast, reference, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_lm_is_causal_at_four_times_the_length(kind):
    """By autograd: at 4n, logits at t have zero gradient on every embedding after t."""
    torch.manual_seed(0)
    model = build_model(lm_config(kind)).double()
    n = 32
    embedded = {}
    model.embed.register_forward_hook(lambda module, args, out: embedded.update(x=out))
    for t in (n + 5, 4 * n - 2):
        logits = model(random_tokens(2, 4 * n, seed=2))  # (2, 4n, V)
        embedded["x"].retain_grad()
        logits[:, t].sum().backward()
        grad = embedded["x"].grad.abs().amax(dim=(0, 2))  # (4n,) largest |∂/∂x_s|
        assert grad[t + 1 :].max() <= 1e-12 * grad[: t + 1].max(), f"{kind}: t={t}"
        assert grad[t] > 0 and grad[0] > 0


def test_tokens_are_validated():
    model = build_model(lm_config("tno"))
    with pytest.raises(ValueError, match="tokens must be in"):
        model(torch.tensor([[0, VOCAB]]))
    with pytest.raises(ValueError, match="tokens must have shape"):
        model(torch.tensor([1, 2, 3]))


# -- config ---------------------------------------------------------------------------


def test_lm_needs_a_causal_operator():
    with pytest.raises(ValueError, match="causal"):
        ModelConfig(task="lm", operator=OperatorConfig(kind="tno", causal=False))


def test_default_config_is_valid():
    """ModelConfig() must build: every default is meant to be usable as is."""
    config = ModelConfig()
    assert isinstance(build_model(config), torch.nn.Module)


@pytest.mark.parametrize(
    "field, value",
    [("dim", 0), ("layers", 0), ("vocab_size", 0), ("num_classes", 1), ("expand_ratio", 0),
     ("task", "xyz"), ("glu_dim", 0), ("operator", {"kind": "tno"})],
)
def test_config_rejects_bad_values(field, value):
    base = dict(task="classify", operator=OperatorConfig())
    with pytest.raises(ValueError, match=field):
        ModelConfig(**{**base, field: value})


@pytest.mark.parametrize("field", ["dim", "layers", "vocab_size", "num_classes",
                                   "expand_ratio", "glu_dim"])
def test_config_rejects_bool_for_int_fields(field):
    with pytest.raises(ValueError, match=field):
        ModelConfig(task="classify", operator=OperatorConfig(), **{field: True})


def test_config_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="bogus"):
        ModelConfig.from_dict({"task": "classify", "bogus": 1})
    with pytest.raises(ValueError, match="oops"):
        ModelConfig.from_dict({"task": "classify", "operator": {"kind": "fd", "oops": 2}})
    with pytest.raises(TypeError):
        ModelConfig(task="classify", operator=OperatorConfig(), bogus=1)


@pytest.mark.parametrize("config", [lm_config("ski", glu_dim=24), classify_config("fd")])
def test_config_round_trip(config):
    data = config.to_dict()
    assert isinstance(data["operator"], dict)
    assert ModelConfig.from_dict(data) == config


@pytest.mark.parametrize("kind", KINDS)
def test_an_untrained_language_model_starts_near_a_uniform_guess(kind):
    """Embedding at N(0, 0.02²): the first loss is about ln V, not tens of nats."""
    torch.manual_seed(0)
    operator = OperatorConfig(kind=kind, causal=True, rank=8, band=5)
    model = build_model(ModelConfig(task="lm", operator=operator, vocab_size=VOCAB, dim=64,
                                    layers=2))
    tokens = random_tokens(4, 64)
    with torch.no_grad():
        logits = model(tokens[:, :-1])  # (4, 63, V)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1)).item()
    assert abs(loss - math.log(VOCAB)) < 0.5, loss
    assert logits.std().item() < 1.0
