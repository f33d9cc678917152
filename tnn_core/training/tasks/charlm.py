"""Character-level language modelling on the Python standard library's source, or any text.

Corpus (``source``):
    stdlib  the ``.py`` files under ``sysconfig.get_paths()["stdlib"]``, without
            site-packages and test folders (``test``, ``tests``, ``idle_test``). Files
            are taken in a fixed pseudo-random order (CRC-32 of "order/" + relative
            path) until ``max_bytes``, so the capped corpus still spans the library.
            Split **by file**: a file is in validation when CRC-32(relative path) falls
            in the lowest ``val_fraction`` of its range; no file is in both splits.
    bytes   a user's UTF-8 text as bytes: an upload, or the file given to the CLI's
            ``--text`` (``CharLMTask.from_bytes``). A single text is split into
            contiguous chunks: the first 1 - val_fraction of its characters train, the
            rest validate.

A checkpoint never names a file: its task info keeps the text's name and SHA-256 only,
and evaluating the model needs the user to give that text again. (Files written before
this rule kept a path in ``settings.text``, with source kind ``file``; the path is
dropped on load and never opened.)

Vocabulary: id 0 is UNK; then the ``max_vocab - 1`` most frequent characters of the
training text, in code-point order. Unseen or rare characters map to UNK. The vocabulary
is part of ``info()`` so a checkpoint keeps its tokenizer.

Targets are the next characters. Metric: bits per character, ``loss / ln 2``
(lower is better); a uniform guess scores log2(V); ``baselines()`` adds the unigram
model of the training text.

Letters: B batch, n length, V vocabulary.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import sysconfig
import unicodedata
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from tnn_core.checks import check_int, check_number
from tnn_core.training.tasks.base import (
    MAX_EVALUATION_SEQUENCES,
    MAX_SEED,
    MAX_SEQ_LEN,
    Task,
    check_split,
)

__all__ = ["CharLMConfig", "CharLMTask", "MAX_TEXT_BYTES", "MIN_TEXT_BYTES", "MAX_VOCAB",
           "decode_text", "stdlib_files", "encode_text", "decode_ids"]

log = logging.getLogger(__name__)

MAX_TEXT_BYTES = 20 * 2**20  # a user text above this (20 MB, as Streamlit counts) is refused
MIN_TEXT_BYTES = 1_000  # ... and below this
MAX_VOCAB = 65_536  # characters in a vocabulary at most, UNK included
EVALUATION_BLOCK = 16  # the evaluation text is whole blocks of 16 × seq_len (Table 10's longest)
_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
_CONTROL_LIMIT = 0.01  # share of control characters (other than \t \n \r \f \v) that is binary


@dataclass(frozen=True)
class CharLMConfig:
    """Character LM settings. Unknown fields raise."""

    seq_len: int = 256  # n, the training length
    max_bytes: int = 3_000_000  # stdlib corpus cap (bytes of source read)
    max_vocab: int = 128  # vocabulary size V at most, UNK included
    val_fraction: float = 0.1  # share of files (stdlib) or of the text (one file) held out
    val_seed: int = 1234  # seeds the fixed validation windows

    def __post_init__(self):
        check_int("seq_len", self.seq_len, 1, MAX_SEQ_LEN)
        check_int("max_bytes", self.max_bytes, 10_000, 1_000_000_000)
        check_int("max_vocab", self.max_vocab, 2, MAX_VOCAB)
        check_int("val_seed", self.val_seed, 0, MAX_SEED)
        check_number("val_fraction", self.val_fraction, 0.01, 0.5)


def _crc(path: str) -> int:
    """Decides the split: validation when below val_fraction * 2**32."""
    return zlib.crc32(path.encode("utf-8"))


def _order(path: str) -> int:
    """Decides which files the cap keeps; independent of ``_crc`` so the split stays fair."""
    return zlib.crc32(b"order/" + path.encode("utf-8"))


@functools.lru_cache(maxsize=4)
def stdlib_files(max_bytes: int, root: str | None = None) -> tuple[tuple[str, str], ...]:
    """(relative path, text) of the capped stdlib corpus, sorted by path."""
    base = Path(root or sysconfig.get_paths()["stdlib"])
    paths = [p for p in sorted(base.rglob("*.py"))
             if not _SKIP_DIRS.intersection(p.relative_to(base).parts[:-1])]
    if not paths:
        raise ValueError(f"no .py files found under the stdlib folder {base}")
    chosen, total = [], 0
    for p in sorted(paths, key=lambda p: (_order(p.relative_to(base).as_posix()), p)):
        if total >= max_bytes:
            break
        try:
            text = p.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chosen.append((p.relative_to(base).as_posix(), text))
        total += len(text)
    return tuple(sorted(chosen))


def decode_text(data: bytes, name: str = "text") -> str:
    """Strict UTF-8 text from bytes; binary, non-UTF-8, too small or too large raise."""
    if not isinstance(data, bytes | bytearray):
        raise ValueError(f"{name}: expected bytes; got {type(data).__name__}")
    if len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"{name}: text must be at most {MAX_TEXT_BYTES:,} bytes; "
                         f"got {len(data):,}")
    if len(data) < MIN_TEXT_BYTES:
        raise ValueError(f"{name}: text must be at least {MIN_TEXT_BYTES:,} bytes; "
                         f"got {len(data):,}")
    if b"\x00" in data:
        raise ValueError(f"{name} looks binary (it contains NUL bytes at offset "
                         f"{bytes(data).index(0)}); give a UTF-8 text file")
    try:
        text = bytes(data).decode("utf-8", errors="strict")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name} is not valid UTF-8 (byte 0x{data[err.start]:02x} at offset "
                         f"{err.start}: {err.reason}); save it as UTF-8 text") from None
    text = text.removeprefix("\ufeff")
    control = sum(1 for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")
    if control > _CONTROL_LIMIT * len(text):
        raise ValueError(f"{name} looks binary: {control} of its {len(text)} characters are "
                         f"control characters (at most {_CONTROL_LIMIT:.0%} allowed)")
    return text


def encode_text(vocab: str, text: str) -> torch.Tensor:
    """Characters -> ids [len(text)] int32 under ``vocab`` (id i + 1 is vocab[i]), UNK (0)
    for characters outside it."""
    if not text:
        return torch.zeros(0, dtype=torch.int32)
    table = {ord(ch): i + 1 for i, ch in enumerate(vocab)}
    chars, inverse = np.unique(_codepoints(text), return_inverse=True)
    ids = np.array([table.get(int(c), 0) for c in chars], dtype=np.int32)[inverse]
    return torch.from_numpy(ids.reshape(-1))


def decode_ids(vocab: str, ids: torch.Tensor) -> str:
    """Ids -> characters under ``vocab``; UNK (0) is U+FFFD."""
    return "".join("\ufffd" if i == 0 else vocab[i - 1] for i in ids.tolist())


def build_vocab(text: str, max_vocab: int) -> str:
    """The max_vocab - 1 most frequent characters of ``text`` in code-point order."""
    chars, counts = np.unique(_codepoints(text), return_counts=True)
    order = np.lexsort((chars, -counts))[: max_vocab - 1]
    return "".join(chr(c) for c in sorted(chars[order].tolist()))


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype="<u4")


class CharLMTask(Task):
    name = "charlm"
    kind = "lm"
    metric_name = "bpc"
    higher_is_better = False
    tiles_text = True

    def __init__(self, config: CharLMConfig | None = None, vocab: str | None = None,
                 data: bytes | None = None, data_name: str | None = None):
        """Build the stdlib corpus, or the user's text ``data`` (bytes) when given;
        ``vocab`` fixes the tokenizer (from a checkpoint) instead of building it from the
        training text."""
        self.config = c = config or CharLMConfig()
        self.seq_len = c.seq_len
        self.validation_seed = c.val_seed
        if data is not None:
            self.source = {"kind": "bytes", "name": data_name or "upload",
                           "sha256": hashlib.sha256(data).hexdigest()}
            train, val = self._split_text(decode_text(data, self.source["name"]))
        else:
            files = stdlib_files(c.max_bytes)
            cut = c.val_fraction * 2**32
            val_files = [p for p, _ in files if _crc(p) < cut]
            self.source = {"kind": "stdlib", "name": sysconfig.get_paths()["stdlib"],
                           "files": len(files), "val_files": len(val_files)}
            self.val_files = tuple(val_files)
            self.train_files = tuple(p for p, _ in files if _crc(p) >= cut)
            train = "\n".join(t for p, t in files if _crc(p) >= cut)
            val = "\n".join(t for p, t in files if _crc(p) < cut)
        self.vocab = vocab if vocab is not None else build_vocab(train, c.max_vocab)
        self.vocab_size = len(self.vocab) + 1
        self._data = {"train": self.encode(train), "val": self.encode(val)}
        for split, ids in self._data.items():
            if len(ids) < self.seq_len + 1:
                raise ValueError(f"the {split} text has {len(ids)} characters; it needs at "
                                 f"least seq_len + 1 = {self.seq_len + 1}: give a longer text "
                                 f"or a smaller seq_len")
        log.info("charlm: %s, %d train / %d val characters, V = %d", self.source["kind"],
                 len(self._data["train"]), len(self._data["val"]), self.vocab_size)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "upload",
                   config: CharLMConfig | None = None) -> CharLMTask:
        """A task on one user text (strict UTF-8, not binary, 1 kB to 20 MB)."""
        return cls(config, data=data, data_name=name)

    def _split_text(self, text: str) -> tuple[str, str]:
        cut = int(len(text) * (1 - self.config.val_fraction))
        return text[:cut], text[cut:]

    # -- tokens -------------------------------------------------------------------------
    def encode(self, text: str) -> torch.Tensor:
        """Characters -> ids [len(text)] int32, UNK (0) for characters outside the vocab."""
        return encode_text(self.vocab, text)

    def decode(self, ids: torch.Tensor) -> str:
        return decode_ids(self.vocab, ids)

    def batch(self, split, batch_size, generator, length=None):
        """Random windows: tokens text[s : s+n], targets text[s+1 : s+n+1]."""
        data = self._data[check_split(split)]
        check_int("batch_size", batch_size, 1)
        n = self.check_length(length)
        if len(data) < n + 1:
            raise ValueError(f"length must be in [1, {len(data) - 1}] for the {split} text of "
                             f"{len(data)} characters; got {n}")
        starts = torch.randint(0, len(data) - n, (batch_size,), generator=generator)  # (B,)
        window = data[starts[:, None] + torch.arange(n + 1)].long()  # (B, n + 1)
        return window[:, :-1], window[:, 1:]  # (B, n), (B, n)

    def evaluation_span(self) -> int:
        """Characters of the validation text the evaluation set tiles: as many whole blocks
        of EVALUATION_BLOCK × seq_len as there are (up to MAX_EVALUATION_SEQUENCES windows
        of seq_len), or the whole text when it is shorter than one block."""
        block = EVALUATION_BLOCK * self.seq_len
        available = min(len(self._data["val"]) - 1, MAX_EVALUATION_SEQUENCES * self.seq_len)
        return available // block * block if available >= block else available

    def evaluation_set(self, length=None):
        """Consecutive windows of ``length`` that tile the first ``evaluation_span()``
        characters: tokens text[i n : (i+1) n], targets one character later, [N, n] each.

        Every length that divides EVALUATION_BLOCK × seq_len scores the same characters, so
        a model can be compared with itself across lengths on the same text
        (``Scores.merged``); the same windows serve TNN's Table 10 at up to 16×."""
        n = self.check_length(length)
        span = self.evaluation_span()
        if n > span:
            raise ValueError(f"length must be in [1, {span:,}] to evaluate on the "
                             f"{span:,}-character evaluation text; got {n:,}")
        windows = span // n
        text = self._data["val"][: windows * n + 1].long()  # (N n + 1,)
        return text[:-1].reshape(windows, n), text[1:].reshape(windows, n)

    # -- the metric ---------------------------------------------------------------------
    def metric(self, loss, accuracy):
        return loss / math.log(2)

    @property
    def chance(self) -> float:
        return math.log2(self.vocab_size)

    def baselines(self):
        """Uniform log2(V) and the unigram model of the training text (add-one), in bpc."""
        counts = torch.bincount(self._data["train"].long(), minlength=self.vocab_size) + 1
        logp = torch.log2(counts / counts.sum())  # (V,)
        unigram = -logp[self._data["val"].long()].mean().item()
        return {"uniform": self.chance, "unigram": unigram}

    def info(self):
        return {"name": self.name, "settings": asdict(self.config), "vocab": self.vocab,
                "source": self.source}

    def describe_evaluation(self) -> str:
        span = self.evaluation_span()
        return (f"the {span // self.seq_len:,} windows of {self.seq_len} characters that tile "
                f"the first {span:,} characters of the validation text (of "
                f"{len(self._data['val']):,})")

    def describe(self):
        if self.source["kind"] == "stdlib":
            return (f"Python stdlib source, {self.source['files']} files split by file "
                    f"({self.source['val_files']} validate), V = {self.vocab_size}")
        return (f"{self.source['name']}, split into contiguous chunks "
                f"({1 - self.config.val_fraction:.0%} train / {self.config.val_fraction:.0%} "
                f"validate), V = {self.vocab_size}")
