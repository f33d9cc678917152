"""Token-mixing operators: ``build_operator(OperatorConfig(kind=...), dim=D)``.

Every operator maps [B, n, D] to [B, n, D] at any n and exposes ``matrix(n)``
[D, n, n], the exact linear map it applies, and ``kernel(n)`` [D, 2n-1].
"""

from .base import TokenMixer
from .config import KINDS, OperatorConfig, OperatorKind
from .fd import FD
from .ski import SKI
from .tno import TNO

__all__ = ["KINDS", "OperatorConfig", "OperatorKind", "TokenMixer", "TNO", "SKI", "FD",
           "build_operator"]

_CLASSES = {"tno": TNO, "ski": SKI, "fd": FD}


def build_operator(config: OperatorConfig, dim: int) -> TokenMixer:
    """The operator of ``config.kind`` for D = ``dim`` channels."""
    if not isinstance(config, OperatorConfig):
        raise ValueError(f"config must be an OperatorConfig; got {type(config).__name__}")
    return _CLASSES[config.kind](config, dim)
