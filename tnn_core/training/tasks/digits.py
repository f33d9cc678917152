"""Sequential digits: scikit-learn's bundled 8 × 8 handwritten digits read pixel by pixel.

``load_digits`` ships 1797 images with pixel values 0..16 inside scikit-learn (no
download). Each pixel value is a token (17 levels), read row by row:

    size=8    n = 64, the original pixels
    size=32   n = 1024, bilinearly upsampled (align_corners=False) then rounded back
              to the 17 levels 0..16: a longer sequence with the same information

The split is fixed: a permutation seeded with ``split_seed`` puts ``val_fraction``
of the images in validation. ``validation()`` walks the validation images in order
(at most the whole set). Ten classes; a uniform guess scores 0.1.

Letters: B batch, n = size², N images.
"""

from __future__ import annotations

import gzip
import importlib.util
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tnn_core.checks import check_choice, check_int, check_number
from tnn_core.training.tasks.base import MAX_SEED, Task, check_split

__all__ = ["DigitsConfig", "DigitsTask", "LEVELS", "load_images"]

LEVELS = 17  # pixel values 0..16


@dataclass(frozen=True)
class DigitsConfig:
    """Sequential digits settings. Unknown fields raise."""

    size: int = 8  # image side: 8 (n = 64) or 32 (n = 1024, upsampled)
    val_fraction: float = 0.2  # share of the 1797 images held out for validation
    split_seed: int = 0  # seeds the train / validation permutation

    def __post_init__(self):
        check_choice("size", self.size, (8, 32))
        check_number("val_fraction", self.val_fraction, 0.05, 0.5)
        check_int("split_seed", self.split_seed, 0, MAX_SEED)


def _digits_file() -> Path:
    """scikit-learn's digits.csv.gz, found without importing scikit-learn (0.5-0.9 s here,
    paid by the first page that opens a digits checkpoint)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("the digits task needs scikit-learn's bundled digits data: "
                         "pip install scikit-learn")
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"


def load_images(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All 1797 images as tokens [N, size²] long in 0..16, and labels [N] long: the rows of
    ``sklearn.datasets.load_digits()``, read from its file (64 pixels, then the label)."""
    with gzip.open(_digits_file(), "rt") as f:
        table = np.loadtxt(f, delimiter=",")  # (N, 65)
    images = torch.tensor(table[:, :-1], dtype=torch.float32).reshape(-1, 8, 8)  # 0..16
    if size != 8:
        images = F.interpolate(images[:, None], size=(size, size), mode="bilinear",
                               align_corners=False)[:, 0]  # (N, size, size)
    tokens = images.round().clamp(0, LEVELS - 1).long().flatten(1)  # (N, size²)
    return tokens, torch.tensor(table[:, -1], dtype=torch.long)


class DigitsTask(Task):
    name = "digits"
    kind = "classify"
    num_classes = 10
    metric_name = "accuracy"
    extrapolates = False

    def __init__(self, config: DigitsConfig | None = None):
        self.config = config or DigitsConfig()
        self.vocab_size = LEVELS
        self.seq_len = self.config.size ** 2
        tokens, labels = load_images(self.config.size)
        g = torch.Generator().manual_seed(self.config.split_seed)
        order = torch.randperm(len(labels), generator=g)
        n_val = math.ceil(self.config.val_fraction * len(labels))
        self._split = {"val": order[:n_val].sort().values, "train": order[n_val:].sort().values}
        self._tokens, self._labels = tokens, labels

    def indices(self, split: str) -> torch.Tensor:
        """Image indices [N_split] of ``split`` into ``load_digits()``."""
        return self._split[check_split(split)]

    def batch(self, split, batch_size, generator, length=None):
        """``batch_size`` images of ``split`` drawn uniformly with replacement."""
        check_int("batch_size", batch_size, 1)
        self.check_length(length)
        index = self.indices(split)
        pick = index[torch.randint(0, len(index), (batch_size,), generator=generator)]
        return self._tokens[pick], self._labels[pick]  # (B, n), (B,)

    def validation(self, batch_size, batches, length=None):
        """The validation images in order, in batches: at most the whole set, never repeated."""
        check_int("batch_size", batch_size, 1)
        check_int("batches", batches, 1)
        self.check_length(length)
        index = self.indices("val")[: batch_size * batches]
        return [(self._tokens[i], self._labels[i]) for i in index.split(batch_size)]

    def evaluation_set(self, length=None):
        """Every validation image: [N, n] and [N]."""
        self.check_length(length)
        index = self.indices("val")
        return self._tokens[index], self._labels[index]

    @property
    def chance(self) -> float:
        return 0.1

    def baselines(self):
        counts = torch.bincount(self._labels[self.indices("val")], minlength=10)
        return {"uniform": self.chance, "majority": counts.max().item() / counts.sum().item()}

    def info(self):
        return {"name": self.name, "settings": asdict(self.config)}

    def describe_evaluation(self) -> str:
        return f"all {len(self.indices('val')):,} validation images"

    def describe(self):
        return f"sklearn digits, {self.config.size}×{self.config.size} pixels read as n = " \
               f"{self.seq_len} tokens"
