"""One benchmark cell: an operator, its input, and one run (forward or a training step).

``make_case(spec)`` is shared by the timed grid (``harness``) and by the memory
subprocess (``memory``), which rebuilds the same cell from its spec.

Letters: B batch, n length, D channels.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tnn_core.bench.baselines import Attention, TnoReference
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights

__all__ = ["OPS", "MODES", "make_case", "train_step"]

OPS: tuple[str, ...] = ("tno", "tno-reference", "ski", "fd", "togeipi", "attention")
MODES: tuple[str, ...] = ("forward", "forward+backward")


def _build_module(spec: dict) -> torch.nn.Module:
    with seeded_weights(spec["seed"]):
        return _new_module(spec)


def _new_module(spec: dict) -> torch.nn.Module:
    op, causal, dim = spec["op"], spec["causal"], spec["dim"]
    if op in ("tno", "ski", "fd", "tno-reference"):
        kind = "tno" if op == "tno-reference" else op
        module = build_operator(OperatorConfig(kind=kind, causal=causal, decay=spec["decay"],
                                               rank=spec["rank"], band=spec["band"]), dim)
        return TnoReference(module) if op == "tno-reference" else module
    if op == "togeipi":
        return build_operator(OperatorConfig(kind="togeipi", causal=causal, heads=spec["heads"],
                                             max_length=spec["n"]), dim)
    if op == "attention":
        return Attention(dim, spec["heads"], causal)
    raise ValueError(f"op must be one of {OPS}; got {op!r}")


def make_case(spec: dict) -> tuple[Callable[[], None], Callable[[], None]]:
    """(run, reset) for one cell: ``run()`` does one forward or forward+backward,
    ``reset()`` drops the gradients it left. ``spec`` holds op, causal, n, mode, batch,
    dim, rank, band, heads, decay, device, seed (the fields of a record)."""
    device = torch.device(spec["device"])
    module = _build_module(spec).to(device)
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    shape = (spec["batch"], spec["n"], spec["dim"])
    x = torch.randn(shape, generator=g).to(device)  # (B, n, D)
    if spec["mode"] == "forward":
        module.eval()

        def run():
            with torch.no_grad():
                module(x)

        def reset():
            pass

        return run, reset
    if spec["mode"] != "forward+backward":
        raise ValueError(f"mode must be one of {MODES}; got {spec['mode']!r}")
    module.train()
    x.requires_grad_(True)
    grad_y = torch.randn(shape, generator=g).to(device)  # (B, n, D)
    return train_step(module, x, grad_y)


def train_step(module, x: torch.Tensor, grad_y: torch.Tensor):
    """(run, reset) for one forward+backward of ``module`` on x (requires grad)."""

    def run():
        module(x).backward(grad_y)

    def reset():
        x.grad = None
        module.zero_grad(set_to_none=True)

    return run, reset
