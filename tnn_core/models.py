"""TNN blocks and models (TNN paper §3.1, Figure 2; official standalone code).

    GTU   u = SiLU(W_u x), v = SiLU(W_v x), out = W_o(u ⊙ op(v)), expand ratio 3
    GLU   W_3(SiLU(W_1 x) ⊙ W_2 x)
    layer x + GTU(N(x)), then x + GLU(N(x))   (pre-norm, RMSNorm)

Two models share the layer stack; the operator kind is one field of the config,
so every model exists in tno, ski and fd form:
    CausalLM            embedding -> layers -> norm -> tied head, logits [B, n, V]
    SequenceClassifier  embedding -> layers -> norm -> mean pool -> head, logits [B, C]
A third holds token mixers alone, for a model whose other parts the lab does not have
(imported from the authors' code, ``tnn_core.convert``): it is looked at, never run.
    MixerStack          one operator per layer, D = dim channels each; maps no tokens

Neither has a maximum length: a model built and trained at n runs at any n.
Letters: B batch, n length, d model width, V vocabulary, C classes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.checks import check_choice, check_fields, check_int
from tnn_core.operators import DRAW_LOCK, OperatorConfig, Togeipi, build_operator

__all__ = ["ModelConfig", "GTU", "GLU", "TNNLayer", "CausalLM", "SequenceClassifier",
           "MixerStack", "build_model", "MAX_VOCAB", "MAX_CLASSES", "MAX_DIM", "MAX_LAYERS",
           "MAX_EXPAND_RATIO"]

# Upper bounds of the config fields: each far above any model this lab trains, low enough
# that one field alone cannot ask for more than a few GB (the checkpoint loader adds a
# limit on the parameter count, which the product of several fields could still exceed).
MAX_VOCAB = 1_000_000  # tokens
MAX_CLASSES = 100_000
MAX_DIM = 8_192  # d
MAX_LAYERS = 256
MAX_EXPAND_RATIO = 16


@dataclass(frozen=True)
class ModelConfig:
    """A TNN model. Unknown fields raise."""

    # classify: pooled label; lm: next token; kernels: the token mixers alone (MixerStack),
    # each of dim channels (expand_ratio 1), with no task
    task: Literal["lm", "classify", "kernels"] = "classify"
    vocab_size: int = 128  # input tokens
    num_classes: int = 10  # classify only: output classes
    dim: int = 64  # d, the model width
    layers: int = 2  # TNN layers
    expand_ratio: int = 3  # GTU inner width = expand_ratio * d (the operator's D)
    glu_dim: int | None = None  # GLU hidden width; None means d
    operator: OperatorConfig = field(default_factory=OperatorConfig)
    # one operator per layer where they differ (a converted model, tnn_core.compress); empty
    # means every layer uses ``operator``. Each has operator's causal.
    layer_operators: tuple[OperatorConfig, ...] = ()

    def __post_init__(self):
        check_choice("task", self.task, ("lm", "classify", "kernels"))
        for name, low, high in (("vocab_size", 1, MAX_VOCAB), ("num_classes", 2, MAX_CLASSES),
                                ("dim", 1, MAX_DIM), ("layers", 1, MAX_LAYERS),
                                ("expand_ratio", 1, MAX_EXPAND_RATIO)):
            check_int(name, getattr(self, name), low, high)
        if self.glu_dim is not None:
            check_int("glu_dim", self.glu_dim, 1, MAX_EXPAND_RATIO * MAX_DIM)
        if not isinstance(self.operator, OperatorConfig):
            raise ValueError(f"operator must be an OperatorConfig; got {self.operator!r}")
        if self.task == "kernels" and self.expand_ratio != 1:
            raise ValueError(f"expand_ratio must be 1 for task='kernels' (dim is the mixers' "
                             f"channel count); got {self.expand_ratio}")
        if self.task == "lm" and not self.operator.causal:
            raise ValueError("operator.causal must be True for task='lm' (a language model "
                             "may not see the future); got False")
        if not isinstance(self.layer_operators, tuple):
            raise ValueError(f"layer_operators must be a tuple of OperatorConfig; got "
                             f"{type(self.layer_operators).__name__}")
        if self.layer_operators and len(self.layer_operators) != self.layers:
            raise ValueError(f"layer_operators must hold one OperatorConfig per layer "
                             f"({self.layers}) or none; got {len(self.layer_operators)}")
        for i, operator in enumerate(self.layer_operators):
            if not isinstance(operator, OperatorConfig):
                raise ValueError(f"layer_operators[{i}] must be an OperatorConfig; got "
                                 f"{operator!r}")
            if operator.causal != self.operator.causal:
                raise ValueError(f"layer_operators[{i}].causal must be operator.causal = "
                                 f"{self.operator.causal}; got {operator.causal}")

    def layer_operator(self, index: int) -> OperatorConfig:
        """The operator config of layer ``index``."""
        return self.layer_operators[index] if self.layer_operators else self.operator

    def to_dict(self) -> dict:
        """Plain JSON types (layer_operators a list), as the dict reads back from JSON; the
        fields the model does not read are left out (num_classes of a language model, an
        operator's unused settings: ``OperatorConfig.to_dict``)."""
        data = asdict(self)
        data["operator"] = self.operator.to_dict()
        data["layer_operators"] = [layer.to_dict() for layer in self.layer_operators]
        if self.task != "classify":
            del data["num_classes"]
        if self.task == "kernels":  # no embedding and no GLU
            del data["vocab_size"], data["glu_dim"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        data = check_fields(cls, data)
        if isinstance(data.get("operator"), dict):
            data["operator"] = OperatorConfig.from_dict(data["operator"])
        layers = data.get("layer_operators")
        if isinstance(layers, list):
            data["layer_operators"] = tuple(
                OperatorConfig.from_dict(c) if isinstance(c, dict) else c for c in layers)
        return cls(**data)


class GTU(nn.Module):
    """Gated Toeplitz unit: the token mixer of a TNN layer."""

    def __init__(self, dim: int, expand_ratio: int, operator: OperatorConfig):
        super().__init__()
        inner = expand_ratio * dim
        self.u_proj = nn.Linear(dim, inner)
        self.v_proj = nn.Linear(dim, inner)
        self.out_proj = nn.Linear(inner, dim)
        self.op = build_operator(operator, inner)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, d) -> (B, n, d)
        u = F.silu(self.u_proj(x))  # (B, n, e d)
        v = F.silu(self.v_proj(x))  # (B, n, e d)
        return self.out_proj(u * self.op(v))  # (B, n, d)


class GLU(nn.Module):
    """Gated linear unit: the channel mixer of a TNN layer."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.l1 = nn.Linear(dim, hidden)
        self.l2 = nn.Linear(dim, hidden)
        self.l3 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, d) -> (B, n, d)
        return self.l3(F.silu(self.l1(x)) * self.l2(x))


class TNNLayer(nn.Module):
    def __init__(self, config: ModelConfig, operator: OperatorConfig):
        super().__init__()
        d = config.dim
        self.norm1 = nn.RMSNorm(d)
        self.gtu = GTU(d, config.expand_ratio, operator)
        self.norm2 = nn.RMSNorm(d)
        self.glu = GLU(d, config.glu_dim or d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, n, d) -> (B, n, d)
        x = x + self.gtu(self.norm1(x))
        return x + self.glu(self.norm2(x))


class _Backbone(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TNNLayer(config, config.layer_operator(i))
                                    for i in range(config.layers))
        self.norm = nn.RMSNorm(config.dim)

    def features(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, n) long -> (B, n, d)
        if tokens.dim() != 2 or tokens.shape[1] < 1:
            raise ValueError(f"tokens must have shape [B, n >= 1]; got {tuple(tokens.shape)}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.config.vocab_size):
            raise ValueError(f"tokens must be in [0, {self.config.vocab_size - 1}]; got "
                             f"values in [{int(tokens.min())}, {int(tokens.max())}]")
        x = self.embed(tokens)  # (B, n, d)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def operators(self) -> list:
        """The token mixers, one per layer (for kernel inspection)."""
        return [layer.gtu.op for layer in self.layers]

    def l1_penalty(self) -> torch.Tensor:
        """Sum of the togeipi layers' ``l1_penalty()`` (sparse_l1 · Σ|S_ij|); 0 otherwise.

        The training loop adds it to the loss (``training.objective.objective``)."""
        total = self.embed.weight.new_zeros(())
        for op in self.operators():
            if isinstance(op, Togeipi):
                total = total + op.l1_penalty()
        return total


class CausalLM(_Backbone):
    """Next-token language model with a head tied to the embedding.

    The embedding starts at N(0, 0.02²) entries, as in GPT-2 and nanoGPT. With PyTorch's
    N(0, 1) the tied head sees each token's own embedding through the residual stream and
    gives it a logit of about d, so an untrained model's loss is tens of nats; at 0.02 the
    logits start near 0 and the first loss is close to ln V, a uniform guess.
    """

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        nn.init.normal_(self.embed.weight, std=0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, n) -> (B, n, V)
        return self.features(tokens) @ self.embed.weight.T


class SequenceClassifier(_Backbone):
    """Sequence classifier with a mean-pooled head."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.head = nn.Linear(config.dim, config.num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, n) -> (B, C)
        return self.head(self.features(tokens).mean(dim=1))


class MixerStack(nn.Module):
    """The token mixers of a model whose embedding, gates and head the lab does not have
    (``task="kernels"``): ``layers[i]`` is layer i's operator on ``config.dim`` channels.

    Every view of a learned kernel works on it (``operators()``); it maps no tokens, so
    ``forward`` refuses with the reason."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(build_operator(config.layer_operator(i), config.dim)
                                    for i in range(config.layers))

    def operators(self) -> list:
        """The token mixers, one per layer."""
        return list(self.layers)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        raise ValueError("this model holds token mixers only (its embedding, gates and head "
                         "are not the lab's): it has no task to run on tokens; look at its "
                         "kernels, or apply one mixer with model.operators()[i](x)")


def build_model(config: ModelConfig) -> nn.Module:
    """The model of ``config``; its weights drawn under ``operators.DRAW_LOCK`` (seed them
    with ``operators.seeded_weights``)."""
    with DRAW_LOCK:
        if config.task == "kernels":
            return MixerStack(config)
        return CausalLM(config) if config.task == "lm" else SequenceClassifier(config)
