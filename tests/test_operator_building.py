"""Building operators: OperatorConfig's checks, ``build_operator``, and weights drawn under a
seed (``operators.seeded_weights``), one build at a time across threads."""

from __future__ import annotations

import threading

import pytest
import torch

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import FD, SKI, TNO, OperatorConfig, build_operator, seeded_weights

F64 = torch.float64
KINDS = ["tno", "ski", "fd"]
D = 3


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [("rank", 1), ("rank", True), ("band", 0), ("decay", 0), ("decay", 1.5), ("decay", -0.1),
     ("kind", "xyz"), ("causal", 1), ("rpe_dim", 0), ("rpe_layers", -1),
     ("activation", "tanh")],
)
def test_config_rejects_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        OperatorConfig(**{field: value})


def test_config_accepts_edges():
    OperatorConfig(decay=1.0, rank=2, band=1, rpe_layers=0)
    OperatorConfig(decay=1)


def test_config_rejects_unknown_field():
    with pytest.raises(TypeError):
        OperatorConfig(unknown=1)
    with pytest.raises(ValueError, match="bogus"):
        OperatorConfig.from_dict({"kind": "ski", "bogus": 3})


def test_config_round_trip():
    config = OperatorConfig(kind="ski", causal=True, decay=0.9, rank=16, band=4, rpe_dim=8)
    assert OperatorConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("kind", KINDS)
def test_operator_rejects_bad_use(kind):
    with pytest.raises(ValueError, match="dim"):
        build_operator(OperatorConfig(kind=kind), 0)
    op = build_operator(OperatorConfig(kind=kind, rank=8, band=5), D).double()
    with pytest.raises(ValueError, match="n must be"):
        op.matrix(0)
    with pytest.raises(ValueError, match="D=3"):
        op(torch.zeros(2, 5, 4, dtype=F64))
    with pytest.raises(ValueError, match="D=3"):
        op(torch.zeros(5, D, dtype=F64))


def test_build_operator_classes_and_config_type():
    assert isinstance(build_operator(OperatorConfig(kind="tno"), 4), TNO)
    assert isinstance(build_operator(OperatorConfig(kind="ski"), 4), SKI)
    assert isinstance(build_operator(OperatorConfig(kind="fd"), 4), FD)
    with pytest.raises(ValueError, match="OperatorConfig"):
        build_operator({"kind": "tno"}, 4)


# -- seeded weights ----------------------------------------------------------------------------


def test_seeded_weights_restore_the_global_generator():
    state = torch.random.get_rng_state()
    with seeded_weights(5):
        first = build_operator(OperatorConfig(kind="tno"), D).state_dict()
    assert torch.equal(torch.random.get_rng_state(), state)
    with seeded_weights(5):
        again = build_operator(OperatorConfig(kind="tno"), D).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)


@pytest.mark.parametrize("build", [lambda: build_operator(OperatorConfig(kind="ski"), D),
                                   lambda: build_model(ModelConfig(dim=8, layers=1))],
                         ids=["build_operator", "build_model"])
def test_a_build_in_another_thread_waits_for_a_seeded_block(build):
    """Two runs built at once: the unseeded build of another thread does not draw from the
    seeded block's generator (the block's second draw would no longer be its seed's); it
    waits for the block to end."""
    inside, built, seeded = threading.Event(), threading.Event(), []

    def seeded_block():
        with seeded_weights(1):
            seeded.append(torch.rand(4))
            inside.set()
            built.wait(0.5)  # where the other build would draw, were it let in
            seeded.append(torch.rand(4))

    def other_build():
        inside.wait(10)
        build()
        built.set()

    threads = [threading.Thread(target=seeded_block), threading.Thread(target=other_build)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    g = torch.Generator().manual_seed(1)
    assert built.is_set() and len(seeded) == 2
    for got in seeded:
        assert torch.equal(got, torch.rand(4, generator=g))
