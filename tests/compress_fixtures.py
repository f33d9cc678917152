"""Helpers shared by the compress tests (conftest's ``compress_page`` uses them): the
Compress page's jobs timed in fewer rounds, and small random models for the properties
that do not depend on a trained model's size."""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from tnn_core.compress import pipeline, planner
from tnn_core.lab.compress import jobs
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import save
from tnn_core.training.tasks import get_task

APP = str(Path(__file__).resolve().parents[1] / "app.py")
JOB_TIMEOUT_S = 600  # a busy 2-core machine slows the timings down many times
TIMING_ROUNDS = 3  # the page's jobs time 15 (a conversion) or 9 (a search) rounds
# the background jobs a Compress test may leave: one job, or Inspect's writings by key
JOBS = ("compress_job", "compress_search", "inspect_writings")


def time_in_few_rounds(monkeypatch) -> None:
    """The Compress page's conversion and search time forward + backward in TIMING_ROUNDS
    interleaved rounds: the page shows whatever a timing measured, however many rounds,
    and the 15 rounds of a conversion at 4 n0 were most of a page test's time."""
    monkeypatch.setattr(jobs, "compress",
                        functools.partial(pipeline.compress, repeats=TIMING_ROUNDS))
    monkeypatch.setattr(jobs, "search", functools.partial(planner.search, repeats=TIMING_ROUNDS))


def small_digits_model(seed: int = 0) -> torch.nn.Module:
    """A random 2-layer bidirectional TNN of digits' vocabulary and classes, 8 channels (the
    shipped digits-tno has 192): converting it decomposes 24 times fewer kernels."""
    torch.manual_seed(seed)
    return build_model(ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=8,
                                   layers=2, expand_ratio=1,
                                   operator=OperatorConfig(kind="tno", causal=False,
                                                           decay=0.9, rpe_dim=8))).eval()


def small_digits_checkpoint(folder: Path) -> Path:
    """``small_digits_model`` saved as a digits checkpoint in ``folder``, for the command line."""
    return save(folder / "small-digits.safetensors", small_digits_model(),
                get_task("digits").info())


SMALL_CHARLM_LENGTH = 64  # its training length n0 (the shipped charlm models': 256)


def small_charlm_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A random 2-layer causal TNN language model of charlm's vocabulary, 8 channels and
    trained length 64, saved in ``folder`` as ``small-charlm``: the Compress page's
    recurrent sweep and conversion of it fit 24 times fewer kernels than charlm-tno's 192
    channels, and score windows a quarter as long (docs/benchmarks.md, "The test suite")."""
    task = get_task("charlm", {"seq_len": SMALL_CHARLM_LENGTH})
    torch.manual_seed(seed)
    model = build_model(ModelConfig(task="lm", vocab_size=task.vocab_size, dim=8, layers=2,
                                    expand_ratio=1,
                                    operator=OperatorConfig(kind="tno", causal=True,
                                                            decay=0.9, rpe_dim=8))).eval()
    return save(folder / "small-charlm.safetensors", model, task.info())
