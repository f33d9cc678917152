"""A kernels-only checkpoint (``models.MixerStack``) for tests of the views that open one:
the token mixers of a model the lab did not train, as ``tnn_core.convert`` writes them."""

from __future__ import annotations

from pathlib import Path

import torch

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, seeded_weights
from tnn_core.training import checkpoint
from tnn_core.training.tasks import kernels_only_info

__all__ = ["kernels_only_bytes", "write_kernels_only"]


def kernels_only_model(layers: int = 2, dim: int = 24, causal: bool = True, kind: str = "tno"):
    """A MixerStack of ``layers`` operators of ``dim`` channels, seeded."""
    config = ModelConfig(task="kernels", dim=dim, layers=layers, expand_ratio=1,
                         operator=OperatorConfig(kind=kind, causal=causal, decay=0.95,
                                                 rpe_dim=16, rpe_layers=1))
    with seeded_weights(0):
        return build_model(config).eval()


def kernels_only_bytes(layers: int = 2, dim: int = 24, causal: bool = True, n: int = 64,
                       kind: str = "tno") -> bytes:
    """The checkpoint's bytes, as an upload would carry them."""
    model = kernels_only_model(layers, dim, causal, kind)
    info = kernels_only_info(n, {"name": "tnn_stack.pt", "format": "tnn-pytorch",
                                 "sha256": "ab" * 32})
    lineage = {"source": {"name": "tnn_stack.pt", "sha256": "ab" * 32},
               "commands": ["python -m tnn_core.convert tnn_stack.pt --out x.safetensors"]}
    return checkpoint.to_bytes(model, info, {"lineage": lineage})


def write_kernels_only(path: Path, **kwargs) -> Path:
    """``kernels_only_bytes`` written to ``path``."""
    path.write_bytes(kernels_only_bytes(**kwargs))
    return path


if __name__ == "__main__":  # python -m tests.kernels_only OUT.safetensors
    import sys
    torch.set_num_threads(1)
    write_kernels_only(Path(sys.argv[1]))
