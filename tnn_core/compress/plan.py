"""A compression plan: per layer, band + low rank (m, r, how A is found), a recurrence, or
nothing.

    CompressionPlan.uniform(2, band=9, rank=32, method="fit")
    CompressionPlan.recurrent(2, state=16)
    CompressionPlan.from_dict({"layers": [{"band": 9, "rank": 32, "method": "fit"},
                                          {"method": "recurrent", "state": 16},
                                          {"method": "keep"}]})

``method`` is one of the decomposition's two ("sample": A samples the kernel continued
across the band; "fit": A is the least-squares optimum, ``analysis.decompose``),
"recurrent" (a causal layer becomes a diagonal SSM of ``state`` = s modes per channel,
``compress.recurrent``) or "keep": the layer stays as it is. ``band`` and ``rank`` mean
what they mean in ``analysis.decompose``: the band holds lags |k| <= band//2 (0 <= k <
band, causal) and the rank is r inducing points, 2 <= r <= n0 (the source's training
length).
"""

from __future__ import annotations

from dataclasses import dataclass

from tnn_core.checks import check_choice, check_int, config_from_dict
from tnn_core.operators.config import MAX_SIZE, MAX_STATE

__all__ = ["METHODS", "LayerPlan", "CompressionPlan"]

METHODS: tuple[str, ...] = ("sample", "fit", "recurrent", "keep")


@dataclass(frozen=True)
class LayerPlan:
    """One layer's conversion. Unknown fields raise."""

    band: int = 9  # m: the band holds lags |k| <= m//2 (causal: 0 <= k < m)
    rank: int = 32  # r inducing points
    method: str = "fit"  # "sample", "fit", "recurrent" or "keep"
    state: int = 16  # recurrent: s modes per channel

    def __post_init__(self):
        check_int("band", self.band, 1, MAX_SIZE)
        check_int("rank", self.rank, 2, MAX_SIZE)
        check_choice("method", self.method, METHODS)
        check_int("state", self.state, 1, MAX_STATE)

    @property
    def kept(self) -> bool:
        return self.method == "keep"

    @property
    def recurrent(self) -> bool:
        return self.method == "recurrent"

    def check_length(self, n: int, where: str) -> None:
        """m and r against the source's training length n (ValueError naming ``where``)."""
        if self.kept or self.recurrent:
            return
        try:
            check_int("rank", self.rank, 2, n, "[2, n]")
            check_int("band", self.band, 1, 2 * n - 2, "[1, 2n-2]")
        except ValueError as err:
            raise ValueError(f"{where}: {err} (the training length n = {n})") from None

    def describe(self) -> str:
        if self.recurrent:
            return f"recurrent, s = {self.state}"
        return "kept" if self.kept else f"m = {self.band}, r = {self.rank}, {self.method}"

    def to_dict(self) -> dict:
        """The fields its method reads: {method, state} for a recurrence, else {band, rank,
        method}."""
        if self.recurrent:
            return {"method": self.method, "state": self.state}
        return {"band": self.band, "rank": self.rank, "method": self.method}


@dataclass(frozen=True)
class CompressionPlan:
    """One ``LayerPlan`` per layer of the source model."""

    layers: tuple[LayerPlan, ...]

    def __post_init__(self):
        if not isinstance(self.layers, tuple) or not self.layers:
            raise ValueError(f"layers must be a non-empty tuple of LayerPlan; got "
                             f"{self.layers!r}")
        for i, layer in enumerate(self.layers):
            if not isinstance(layer, LayerPlan):
                raise ValueError(f"layers[{i}] must be a LayerPlan; got {layer!r}")

    @classmethod
    def uniform(cls, layers: int, band: int, rank: int, method: str = "fit") -> CompressionPlan:
        """The same (m, r, method) for each of ``layers`` layers."""
        check_int("layers", layers, 1)
        return cls(tuple(LayerPlan(band, rank, method) for _ in range(layers)))

    @classmethod
    def recurrent(cls, layers: int, state: int) -> CompressionPlan:
        """Every one of ``layers`` layers a diagonal SSM of ``state`` modes per channel."""
        check_int("layers", layers, 1)
        return cls(tuple(LayerPlan(method="recurrent", state=state) for _ in range(layers)))

    def check_model(self, layers: int, n: int) -> None:
        """The plan against a source of ``layers`` layers trained at length n."""
        if len(self.layers) != layers:
            raise ValueError(f"layers must hold one plan per layer of the model ({layers}); "
                             f"got {len(self.layers)}")
        for i, layer in enumerate(self.layers):
            layer.check_length(n, f"layers[{i}]")

    def describe(self) -> str:
        return "; ".join(f"layer {i}: {layer.describe()}" for i, layer in enumerate(self.layers))

    def to_dict(self) -> dict:
        """{"layers": [{band, rank, method} or {method, state}, ...]}: JSON types, as
        ``from_dict`` reads it."""
        return {"layers": [layer.to_dict() for layer in self.layers]}

    @classmethod
    def from_dict(cls, data) -> CompressionPlan:
        """From {"layers": [{band, rank, method}, ...]} (JSON); unknown fields raise."""
        if not isinstance(data, dict) or set(data) != {"layers"} or \
                not isinstance(data["layers"], list):
            raise ValueError(f"a plan must be an object {{\"layers\": [...]}} with one entry "
                             f"per layer; got {str(data)[:80]}")
        layers = []
        for i, entry in enumerate(data["layers"]):
            if not isinstance(entry, dict):
                raise ValueError(f"layers[{i}] must be an object with band, rank and method; "
                                 f"got {entry!r}")
            try:
                layers.append(config_from_dict(LayerPlan, entry))
            except ValueError as err:
                raise ValueError(f"layers[{i}]: {err}") from None
        return cls(tuple(layers))
