"""Inspect's "Write text": a causal character language model continues a prompt on a
background thread, a character at a time, timed step by step (``tnn_core.generate``).

    about = writer_about("charlm-tno", model)       # what writes: the model, its form
    job = TextWriting(model, vocab, settings, about)
    job.start(); job.snapshot()                      # a WritingView, safe from any thread
    job.stop()                                       # ends it; what was written stays

A layer writes in one of two forms (``generate.incremental``): the **Toeplitz history**
keeps every input so far and takes one dot product per channel with the kernel's lags,
so its cost and its state grow with the context; a converted **recurrence** (an SSM of s
modes per channel, ``compress --recurrent``) keeps s complex numbers per channel whatever
the context. The time per character is the median of the steps after the prompt's pass.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch

from tnn_core.checks import check_int
from tnn_core.generate import Sampling, vocab_of, writing
from tnn_core.lab.common.background import BackgroundThread
from tnn_core.models import CausalLM

__all__ = ["MAX_CHARACTERS", "MAX_PROMPT", "WritingSettings", "WriterAbout", "WritingView",
           "TextWriting", "is_language_model", "writing_refusal", "writer_about", "state_text",
           "vocab_of"]

MAX_CHARACTERS = 10_000  # per Generate: the Toeplitz history's last step reads 10k inputs
MAX_PROMPT = 4_000  # characters of prompt, read at once (an FFT product per layer)
WRITING_THREADS = 1  # a step is a few small products: one thread is fastest, and spares the page


@dataclass(frozen=True)
class WritingSettings:
    """What the page asks for; ValueError with a sentence when it cannot be written."""

    prompt: str  # the text to continue, at least one character
    characters: int  # how many to write
    temperature: float = 1.0  # 0: the most likely character each time
    top_k: int = 0  # sample among the k most likely; 0: all
    seed: int = 0  # the same seed writes the same text

    def __post_init__(self):
        if not self.prompt:
            raise ValueError("the prompt is empty: type at least one character for the model "
                             "to continue")
        if len(self.prompt) > MAX_PROMPT:
            raise ValueError(f"the prompt must be at most {MAX_PROMPT:,} characters; got "
                             f"{len(self.prompt):,}")
        check_int("characters to write", self.characters, 1, MAX_CHARACTERS)
        self.sampling()  # temperature, top-k and seed, each with its range

    def sampling(self) -> Sampling:
        return Sampling(self.temperature, self.top_k, self.seed)

    def describe(self) -> str:
        """"temperature 0.8, top-k 20, seed 0" ("greedy" at temperature 0)."""
        if self.temperature == 0:
            return "greedy: the most likely character each time (temperature 0)"
        k = "all characters" if self.top_k == 0 else f"top-k {self.top_k}"
        return f"temperature {self.temperature:g}, {k}, seed {self.seed}"


@dataclass(frozen=True)
class WriterAbout:
    """The model that writes, in words."""

    name: str  # the checkpoint's key
    forms: tuple[str, ...]  # per layer: "Toeplitz history" or "recurrence, s = 16"
    channels: int  # channels per token mixer (D)

    @property
    def recurrent(self) -> bool:
        return all(form.startswith("recurrence") for form in self.forms)

    def form_text(self) -> str:
        """Every layer's form: "Toeplitz history in both layers", or per layer."""
        if len(set(self.forms)) == 1:
            where = {1: "the layer", 2: "both layers"}.get(len(self.forms),
                                                          f"all {len(self.forms)} layers")
            return f"{self.forms[0]} in {where}"
        return "; ".join(f"layer {i}: {form}" for i, form in enumerate(self.forms))

    def state_meaning(self) -> str:
        """What the state held per sequence is, for this model."""
        history = ("Toeplitz history: the inputs of every character so far, "
                   f"{self.channels} numbers per character per layer; it grows with the "
                   "context, and each step reads all of it")
        modes = ("recurrence: s complex numbers per channel per layer, the same at any "
                 "context, and each step reads only those")
        if self.recurrent:
            return modes
        if not any(form.startswith("recurrence") for form in self.forms):
            return history
        return f"{history}; {modes}"


def is_language_model(model) -> bool:
    """Whether the model predicts the next token (a classifier gets no "Write text")."""
    return isinstance(model, CausalLM)


def writing_refusal(info) -> str | None:
    """Why a language model cannot write text here, in words; None when it can (every
    causal operator kind has a token-at-a-time form: generate.incremental)."""
    try:
        vocab_of(info.task)
    except ValueError:
        return ("its task keeps no character vocabulary (only charlm models and language "
                "models trained on your own text do)")
    return None


def writer_about(name: str, model: CausalLM) -> WriterAbout:
    forms = tuple(f"recurrence, s = {op.config.state}" if op.config.kind == "ssm"
                  else "Toeplitz-plus-sparse history" if op.config.kind == "togeipi"
                  else "Toeplitz history" for op in model.operators())
    return WriterAbout(name, forms, model.operators()[0].dim)


def state_text(size: int) -> str:
    """Bytes as "512 B", "48.0 KiB", "1.25 MiB"."""
    if size < 1024:
        return f"{size} B"
    if size < 1024**2:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024**2:.2f} MiB"


@dataclass(frozen=True)
class WritingView:
    """One writing as it stands: done, stopped, failed or still running."""

    about: WriterAbout
    settings: WritingSettings
    text: str  # the characters written so far
    status: str  # "running", "done", "stopped" or "failed"
    error: str | None  # why it failed
    step_ms: tuple[float, ...]  # each character after the first: its step and draw, in ms
    state_bytes: int  # held for the sequence after the last character
    started: float = field(default=0.0, compare=False)  # perf_counter at its start

    @property
    def written(self) -> int:
        return len(self.text)

    @property
    def context(self) -> int:
        """Characters the model has read: the prompt and what it wrote but the last."""
        return len(self.settings.prompt) + max(0, self.written - 1)

    @property
    def median_ms(self) -> float | None:
        """The median time of one character; None before two were written."""
        return statistics.median(self.step_ms) if self.step_ms else None

    def progress_text(self) -> str:
        wanted = self.settings.characters
        if self.status == "stopped":
            return f"Stopped after {self.written:,} of {wanted:,} characters; they are kept."
        if self.status == "failed":
            return f"Writing failed after {self.written:,} characters: {self.error}"
        if self.status == "running":
            return f"Writing… {self.written:,} of {wanted:,} characters."
        return f"Wrote {self.written:,} characters."


class TextWriting(BackgroundThread):
    """One prompt continued on a daemon thread; ``snapshot()`` from any thread."""

    def __init__(self, model: CausalLM, vocab: str, settings: WritingSettings,
                 about: WriterAbout):
        super().__init__("tnn-write")
        self._decoder, self._characters = writing(model, vocab, settings.prompt,
                                                  settings.characters, settings.sampling())
        self.about, self.settings = about, settings
        self._pieces: list[str] = []
        self._step_ms: list[float] = []
        self._state_bytes = 0
        self._status, self._error = "running", None

    def snapshot(self) -> WritingView:
        with self._lock:
            return WritingView(self.about, self.settings, "".join(self._pieces), self._status,
                               self._error, tuple(self._step_ms), self._state_bytes)

    @property
    def running(self) -> bool:
        with self._lock:
            return self._status == "running"

    def _work(self) -> None:
        torch.set_num_threads(WRITING_THREADS)  # this thread's, not the server's
        before = time.perf_counter()
        for piece in self._characters:
            took = 1e3 * (time.perf_counter() - before)  # the prompt's pass, or one step
            with self._lock:
                if self._pieces:
                    self._step_ms.append(took)
                self._pieces.append(piece)
                self._state_bytes = self._decoder.state_bytes()
            if self._stop.is_set():
                return
            before = time.perf_counter()

    def _finish(self, result, error: str | None) -> None:
        self._error = error
        cut = self._stop.is_set() and len(self._pieces) < self.settings.characters
        self._status = "failed" if error else "stopped" if cut else "done"
