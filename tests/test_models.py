"""tnn_core.models: the TNN language model and classifier in every operator kind."""

from __future__ import annotations

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


@pytest.mark.parametrize("task", ["lm", "classify"])
@pytest.mark.parametrize("kind", KINDS)
def test_extrapolates_to_four_times_the_length(kind, task):
    torch.manual_seed(0)
    model = build_model(lm_config(kind) if task == "lm" else classify_config(kind))
    n = 32
    with torch.no_grad():
        short = model(random_tokens(2, n))
        long = model(random_tokens(2, 4 * n, seed=1))
    assert torch.isfinite(short).all() and torch.isfinite(long).all()
    if task == "lm":
        assert long.shape == (2, 4 * n, VOCAB)
    else:
        assert long.shape == (2, 5)


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
