"""ListOps (Nangia & Bowman 2018), as generated for Long Range Arena (Tay et al. 2021).

An expression is an operator over 2..max_args arguments, each a digit or (above
max_depth) with probability ``nest_prob`` a nested expression, written in LRA's
tokens: ``[MAX 2 9 [MIN 4 7 ] 0 ]``. The label is its value, a digit (10 classes).

    MIN, MAX   the smallest / largest argument
    MED        the median as LRA computes it, ``int(np.median(args))``: the middle
               value, or for an even count the floor of the mean of the two middle
               values (MED 1 2 4 8 = floor(3) = 3; MED 1 2 = floor(1.5) = 1)
    SM         the sum modulo 10

Sequences are right-padded with PAD to the length n. Expressions longer than n are
redrawn. At a longer evaluation length the same grammar is drawn with the cap raised,
so mostly the padding grows. Validation is a fixed stream seeded with ``val_seed``;
training never yields an expression among its first ``val_size`` (held out exactly).

Labels are skewed (MAX often gives 9, MIN 0), so ``baselines()`` reports the
majority-class rate of the validation set next to the uniform 0.1.

Letters: B batch, n length.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass

import torch

from tnn_core.checks import check_int, check_number
from tnn_core.training.tasks.base import MAX_SEED, MAX_SEQ_LEN, Task, check_split, seed_from

__all__ = ["ListOpsConfig", "ListOpsTask", "OPERATORS", "TOKENS", "evaluate_tree",
           "tree_tokens"]

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
TOKENS = ("<pad>", *"0123456789", *OPERATORS, "]")  # id = position; PAD is 0
_ID = {token: i for i, token in enumerate(TOKENS)}


@dataclass(frozen=True)
class ListOpsConfig:
    """ListOps generator settings. Unknown fields raise."""

    seq_len: int = 256  # n: expressions have at most n tokens, right-padded to n
    max_depth: int = 3  # operator nesting depth (1: a flat list such as "[MAX 2 9 0 ]")
    max_args: int = 5  # arguments per operator, uniform in [2, max_args]
    nest_prob: float = 0.25  # chance that an argument above max_depth is an expression (LRA)
    val_seed: int = 1234  # seeds the fixed validation stream
    val_size: int = 2048  # first expressions of that stream, never yielded for training

    def __post_init__(self):
        check_int("seq_len", self.seq_len, 4, MAX_SEQ_LEN)
        check_int("max_depth", self.max_depth, 1, 20)
        check_int("max_args", self.max_args, 2, 100)
        check_int("val_seed", self.val_seed, 0, MAX_SEED)
        check_int("val_size", self.val_size, 0, 100_000)
        check_number("nest_prob", self.nest_prob, 0, 1)


def random_tree(rng: random.Random, config: ListOpsConfig, depth: int = 1):
    """An expression tree: (operator, [arguments]) with digit leaves."""
    op = rng.choice(OPERATORS)
    args = []
    for _ in range(rng.randint(2, config.max_args)):
        if depth < config.max_depth and rng.random() < config.nest_prob:
            args.append(random_tree(rng, config, depth + 1))
        else:
            args.append(rng.randint(0, 9))
    return op, args


def tree_tokens(tree) -> list[str]:
    if isinstance(tree, int):
        return [str(tree)]
    op, args = tree
    out = [op]
    for arg in args:
        out += tree_tokens(arg)
    return [*out, "]"]


def evaluate_tree(tree) -> int:
    """The value of an expression tree (the module docstring gives each operator)."""
    if isinstance(tree, int):
        return tree
    op, args = tree
    values = sorted(evaluate_tree(a) for a in args)
    if op == "[MIN":
        return values[0]
    if op == "[MAX":
        return values[-1]
    if op == "[MED":
        k = len(values)
        return (values[(k - 1) // 2] + values[k // 2]) // 2
    if op == "[SM":
        return sum(values) % 10
    raise ValueError(f"operator must be one of {OPERATORS}; got {op!r}")


class ListOpsTask(Task):
    name = "listops"
    kind = "classify"
    num_classes = 10
    metric_name = "accuracy"

    def __init__(self, config: ListOpsConfig | None = None):
        self.config = config or ListOpsConfig()
        self.vocab_size = len(TOKENS)
        self.seq_len = self.config.seq_len
        self.validation_seed = self.config.val_seed
        self._held_out: set[tuple[str, ...]] | None = None
        self._majority: float | None = None

    # -- data ---------------------------------------------------------------------------
    def _draw(self, rng: random.Random, length: int) -> tuple[list[str], int]:
        while True:
            tree = random_tree(rng, self.config)
            tokens = tree_tokens(tree)
            if len(tokens) <= length:
                return tokens, evaluate_tree(tree)

    def _stream(self, seed: int, count: int, length: int) -> list[tuple[list[str], int]]:
        rng = random.Random(seed)
        return [self._draw(rng, length) for _ in range(count)]

    def held_out(self) -> set[tuple[str, ...]]:
        if self._held_out is None:
            stream = self._stream(self.config.val_seed, self.config.val_size, self.seq_len)
            self._held_out = {tuple(tokens) for tokens, _ in stream}
        return self._held_out

    def encode(self, examples: list[tuple[list[str], int]], length: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.zeros(len(examples), length, dtype=torch.long)  # (B, n), PAD = 0
        for i, (expr, _) in enumerate(examples):
            tokens[i, : len(expr)] = torch.tensor([_ID[t] for t in expr])
        labels = torch.tensor([label for _, label in examples], dtype=torch.long)  # (B,)
        return tokens, labels

    def batch(self, split, batch_size, generator, length=None):
        """Fresh random expressions; "train" skips the held-out validation expressions."""
        check_split(split)
        check_int("batch_size", batch_size, 1)
        n = self.check_length(length)
        rng = random.Random(seed_from(generator))
        held_out = self.held_out() if split == "train" else set()
        examples = []
        while len(examples) < batch_size:
            tokens, label = self._draw(rng, n)
            if tuple(tokens) not in held_out:
                examples.append((tokens, label))
        return self.encode(examples, n)

    def validation(self, batch_size, batches, length=None):
        """The first batch_size * batches expressions of the validation stream."""
        check_int("batch_size", batch_size, 1)
        check_int("batches", batches, 1)
        n = self.check_length(length)
        stream = self._stream(self.config.val_seed, batch_size * batches, n)
        return [self.encode(stream[i : i + batch_size], n)
                for i in range(0, len(stream), batch_size)]

    def evaluation_set(self, length=None):
        """The held-out expressions (the first max(val_size, 512) of the validation stream;
        at a longer length the stream is drawn with the cap raised): [N, n] and [N]."""
        n = self.check_length(length)
        return self.encode(self._stream(self.config.val_seed, self._evaluation_size(), n), n)

    def _evaluation_size(self) -> int:
        return max(self.config.val_size, 512)

    @staticmethod
    def decode(tokens: torch.Tensor) -> str:
        """Token ids [n] back to text, padding dropped."""
        return " ".join(TOKENS[i] for i in tokens.tolist() if i != 0)

    # -- the metric ---------------------------------------------------------------------
    @property
    def chance(self) -> float:
        return 0.1

    def majority_rate(self) -> float:
        """Share of the most common label among the held-out validation expressions."""
        if self._majority is None:
            stream = self._stream(self.config.val_seed, self._evaluation_size(), self.seq_len)
            counts = Counter(label for _, label in stream)
            self._majority = counts.most_common(1)[0][1] / len(stream)
        return self._majority

    def baselines(self):
        return {"uniform": self.chance, "majority": self.majority_rate()}

    def info(self):
        return {"name": self.name, "settings": asdict(self.config)}

    def describe_evaluation(self) -> str:
        return (f"the {self._evaluation_size():,} validation expressions held out from "
                f"training" if self.config.val_size >= 512 else
                f"the first {self._evaluation_size():,} expressions of the validation stream "
                f"(only {self.config.val_size:,} held out from training)")

    def describe(self):
        c = self.config
        return (f"ListOps: depth <= {c.max_depth}, 2..{c.max_args} arguments, "
                f"padded to n = {c.seq_len}")
