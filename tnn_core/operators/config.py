"""OperatorConfig: one dataclass configures every token mixer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Literal

__all__ = ["OperatorKind", "KINDS", "OperatorConfig"]

OperatorKind = Literal["tno", "ski", "fd"]
KINDS: tuple[str, ...] = ("tno", "ski", "fd")
_ACTIVATIONS = ("relu", "silu", "gelu")


@dataclass(frozen=True)
class OperatorConfig:
    """Configuration of a Toeplitz token mixer. Unknown fields raise (no **kwargs)."""

    kind: OperatorKind = "tno"  # tno (TNN), ski (SKI-TNN) or fd (FD-TNN)
    causal: bool = False  # lower-triangular: output t sees inputs <= t only
    decay: float = 0.99  # λ in (0, 1]: TNO decay λ^|k|, SKI inverse time warp sign(t)λ^|t|
    rank: int = 64  # SKI: r inducing points and r RPE knots, >= 2
    band: int = 17  # SKI: m taps of the sparse (banded) convolution, >= 1
    rpe_dim: int | None = None  # RPE MLP width e; None means max(D // 8, 32) (official README)
    rpe_layers: int = 1  # hidden layers of the RPE MLP (tno, fd)
    activation: str = "relu"  # RPE MLP activation: relu, silu or gelu (FD Theorems 2-4)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False; got {self.causal!r}")
        if isinstance(self.decay, bool) or not isinstance(self.decay, int | float):
            raise ValueError(f"decay must be a number in (0, 1]; got {self.decay!r}")
        if not 0 < self.decay <= 1:
            raise ValueError(f"decay must be in (0, 1]; got {self.decay}")
        _check_int("rank", self.rank, 2)
        _check_int("band", self.band, 1)
        _check_int("rpe_layers", self.rpe_layers, 0)
        if self.rpe_dim is not None:
            _check_int("rpe_dim", self.rpe_dim, 1)
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {_ACTIVATIONS}; got {self.activation!r}")

    def rpe_width(self, dim: int) -> int:
        return self.rpe_dim if self.rpe_dim is not None else max(dim // 8, 32)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> OperatorConfig:
        """Build from a plain dict; an unknown field is a ValueError naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown OperatorConfig fields {unknown}; allowed: {sorted(known)}")
        return cls(**data)


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer in [{low}, inf); got {value!r}")
