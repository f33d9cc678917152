"""The processes a training run spans under ``torchrun``, and the device each one uses.

``torchrun`` starts WORLD_SIZE processes and tells each its RANK and LOCAL_RANK (its GPU
on this machine). ``process_group`` joins them (gloo on CPU, nccl on CUDA) for the
length of a run unless the caller already has, and turns a collective that waited
longer than ``ddp_timeout`` seconds (a rank stopped or hung) into a ``CollectiveTimeout``
naming the other ranks. Alone (no WORLD_SIZE, or 1) none of this does anything.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import timedelta

import torch

from tnn_core.checks import check_choice
from tnn_core.training.config import DEVICES

__all__ = ["CollectiveTimeout", "torchrun_ranks", "resolve_device", "process_group"]


class CollectiveTimeout(RuntimeError):
    """Under torchrun: a collective waited longer than ``ddp_timeout`` for another rank."""


def torchrun_ranks() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's environment; (0, 1, 0) alone."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0"))


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """auto: CUDA (this rank's GPU) when available, else CPU; cuda without a GPU raises."""
    check_choice("device", name, DEVICES)
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device must be 'cpu' or 'auto' here: CUDA is not available")
    if name == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", local_rank)


@contextlib.contextmanager
def process_group(rank: int, world: int, device: torch.device,
                  timeout_s: float) -> Iterator[None]:
    """The ranks joined for the ``with`` block (when ``world`` > 1 and nobody joined them
    yet: then they also leave together at its end); a collective's timeout inside it
    raises CollectiveTimeout."""
    own = False
    if world > 1 and not torch.distributed.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        backend = "nccl" if device.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
        own = True
    try:
        yield
        if own:  # leave together: gloo can abort a rank whose peer tears down first
            torch.distributed.barrier()
    except RuntimeError as err:
        # gloo: "Timed out waiting 10000ms for recv ..."; nccl's watchdog: "... timeout"
        if world <= 1 or not re.search(r"timed out|timeout", str(err), re.IGNORECASE):
            raise
        others = ", ".join(str(r) for r in range(world) if r != rank)
        raise CollectiveTimeout(
            f"rank {rank} of {world}: a collective waited more than ddp_timeout="
            f"{timeout_s:g} s, so rank {others} has stopped or hung "
            f"({str(err).splitlines()[0]})") from None
    finally:
        if own:
            torch.distributed.destroy_process_group()
