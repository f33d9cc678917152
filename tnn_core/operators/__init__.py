"""Token-mixing operators: ``build_operator(OperatorConfig(kind=...), dim=D)``.

Every operator maps [B, n, D] to [B, n, D]. The Toeplitz kinds (``KINDS``: tno, ski,
fd) run at any n and expose ``matrix(n)`` [D, n, n], the exact linear map they
apply, and ``kernel(n)`` [D, 2n-1]. ``togeipi`` (in ``ALL_KINDS``) mixes per head
with a Toeplitz plus sparse matrix between two projections, up to ``max_length``;
its dense reference is ``mixing_matrix(n)`` [H, n, n]. An ``ski`` config with
``low_rank="knots"`` builds ``SKIKnots``, the operator of a converted model
(``tnn_core.compress``).
"""

from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import ALL_KINDS, KINDS, OperatorConfig, OperatorKind
from tnn_core.operators.fd import FD
from tnn_core.operators.ski import SKI
from tnn_core.operators.ski_knots import SKIKnots
from tnn_core.operators.tno import TNO
from tnn_core.operators.togeipi import Togeipi

__all__ = ["KINDS", "ALL_KINDS", "OperatorConfig", "OperatorKind", "TokenMixer", "TNO", "SKI",
           "FD", "Togeipi", "SKIKnots", "build_operator"]

_CLASSES = {"tno": TNO, "ski": SKI, "fd": FD, "togeipi": Togeipi}


def build_operator(config: OperatorConfig, dim: int) -> TokenMixer:
    """The operator of ``config.kind`` for D = ``dim`` channels."""
    if not isinstance(config, OperatorConfig):
        raise ValueError(f"config must be an OperatorConfig; got {type(config).__name__}")
    if config.kind == "ski" and config.low_rank == "knots":
        return SKIKnots(config, dim)
    return _CLASSES[config.kind](config, dim)
