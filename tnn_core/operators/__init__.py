"""Token-mixing operators: ``build_operator(OperatorConfig(kind=...), dim=D)``.

Every operator maps [B, n, D] to [B, n, D]. The Toeplitz kinds (``KINDS``: tno, ski,
fd) run at any n and expose ``matrix(n)`` [D, n, n], the exact linear map they
apply, and ``kernel(n)`` [D, 2n-1]. ``togeipi`` (in ``ALL_KINDS``) mixes per head
with a Toeplitz plus sparse matrix between two projections, up to ``max_length``;
its dense reference is ``mixing_matrix(n)`` [H, n, n]. An ``ski`` config with
``low_rank="knots"`` builds ``SKIKnots``, the operator of a converted model
(``tnn_core.compress``). ``ssm`` (causal only) holds each channel's kernel as a diagonal
state-space model, the recurrent form of a converted causal model; ``CHANNEL_KINDS`` are
the kinds with one Toeplitz matrix per channel, ``TRAINED_KINDS`` those a run trains.

Weights are drawn from torch's global generator (nn.Module constructors such as
nn.Linear's take no generator of their own). ``with seeded_weights(seed):`` seeds it for
one build and leaves it as it was; ``DRAW_LOCK`` makes that block, ``build_operator`` and
``models.build_model`` run one at a time across threads, so two builds never draw from
the generator at once (a seeded build in one thread gets its seed's weights whatever
another thread builds meanwhile).
"""

import contextlib
import threading
from collections.abc import Iterator

import torch

from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import (
    ALL_KINDS,
    CHANNEL_KINDS,
    KINDS,
    TRAINED_KINDS,
    OperatorConfig,
    OperatorKind,
)
from tnn_core.operators.fd import FD
from tnn_core.operators.ski import SKI
from tnn_core.operators.ski_knots import SKIKnots
from tnn_core.operators.ssm import SSM
from tnn_core.operators.tno import TNO
from tnn_core.operators.togeipi import Togeipi

__all__ = ["KINDS", "ALL_KINDS", "TRAINED_KINDS", "CHANNEL_KINDS", "OperatorConfig",
           "OperatorKind", "TokenMixer", "TNO", "SKI", "FD", "Togeipi", "SKIKnots", "SSM",
           "build_operator", "DRAW_LOCK", "seeded_weights"]

_CLASSES = {"tno": TNO, "ski": SKI, "fd": FD, "togeipi": Togeipi, "ssm": SSM}
DRAW_LOCK = threading.RLock()  # held while weights are drawn from torch's global generator


@contextlib.contextmanager
def seeded_weights(seed: int) -> Iterator[None]:
    """Weights built (on the CPU) inside the block are drawn from torch's global CPU
    generator seeded with ``seed``, and no other thread builds meanwhile; the generator is
    restored after, and CUDA's are never touched."""
    with DRAW_LOCK, torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)
        yield


def build_operator(config: OperatorConfig, dim: int) -> TokenMixer:
    """The operator of ``config.kind`` for D = ``dim`` channels."""
    if not isinstance(config, OperatorConfig):
        raise ValueError(f"config must be an OperatorConfig; got {type(config).__name__}")
    with DRAW_LOCK:
        if config.kind == "ski" and config.low_rank == "knots":
            return SKIKnots(config, dim)
        return _CLASSES[config.kind](config, dim)
