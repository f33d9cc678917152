"""Multi-query associative recall (MQAR; Arora et al., "Zoology", 2023).

A sequence lists P key-value pairs, then (after PAD filler) asks Q of the keys again,
each followed by its value:

    k1 v1 k2 v2 ... kP vP  <pad> ... <pad>  q1 a1 q2 a2 ... qQ aQ
    |------ 2P tokens ---|                  |------ 2Q tokens ----|  n tokens in all

Keys of one sequence are distinct; values are drawn with replacement; queries are
distinct keys of the sequence in random order. It is trained as a causal LM whose
only targets are the answers: at the position of q_i the target is a_i (the next
token), IGNORE everywhere else. Metric: accuracy at query positions; a model that
never looks back scores 1 / num_values.

A longer evaluation ``length`` widens the PAD gap: the same pairs must be recalled
from further back.

Token ids: PAD 0, keys 1..K, values K+1..K+V. Letters: B batch, n length.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from tnn_core.checks import check_int
from tnn_core.training.tasks.base import IGNORE, MAX_SEED, MAX_SEQ_LEN, Task, check_split

__all__ = ["RecallConfig", "RecallTask"]


@dataclass(frozen=True)
class RecallConfig:
    """MQAR settings. Unknown fields raise."""

    seq_len: int = 64  # n: must hold the pairs and the queries, 2P + 2Q <= n
    num_pairs: int = 8  # P key-value pairs per sequence
    num_queries: int = 8  # Q keys asked again, <= P
    num_keys: int = 32  # K distinct key tokens, >= P
    num_values: int = 32  # V distinct value tokens
    val_seed: int = 1234  # seeds the fixed validation batches

    def __post_init__(self):
        check_int("num_pairs", self.num_pairs, 1, MAX_SEQ_LEN // 4)
        check_int("num_queries", self.num_queries, 1, self.num_pairs, span="[1, num_pairs]")
        check_int("num_keys", self.num_keys, self.num_pairs, 100_000)
        check_int("num_values", self.num_values, 2, 100_000)
        check_int("seq_len", self.seq_len, 2 * (self.num_pairs + self.num_queries), MAX_SEQ_LEN,
                  span="[2 (num_pairs + num_queries), MAX_SEQ_LEN]")
        check_int("val_seed", self.val_seed, 0, MAX_SEED)


class RecallTask(Task):
    name = "recall"
    kind = "lm"
    metric_name = "accuracy"

    def __init__(self, config: RecallConfig | None = None):
        self.config = config or RecallConfig()
        c = self.config
        self.vocab_size = 1 + c.num_keys + c.num_values
        self.seq_len = c.seq_len
        self.validation_seed = c.val_seed

    def check_length(self, length):
        n = super().check_length(length)
        c = self.config
        if n < 2 * (c.num_pairs + c.num_queries):
            raise ValueError(f"length must be in [{2 * (c.num_pairs + c.num_queries)}, inf) "
                             f"to hold {c.num_pairs} pairs and {c.num_queries} queries; got {n}")
        return n

    def batch(self, split, batch_size, generator, length=None):
        check_split(split)  # both splits draw fresh sequences; validation() fixes its seed
        check_int("batch_size", batch_size, 1)
        n = self.check_length(length)
        B, c = batch_size, self.config
        P, Q = c.num_pairs, c.num_queries
        keys = torch.rand(B, c.num_keys, generator=generator).argsort(dim=1)[:, :P] + 1  # (B, P)
        values = torch.randint(0, c.num_values, (B, P), generator=generator) \
            + 1 + c.num_keys  # (B, P)
        asked = torch.rand(B, P, generator=generator).argsort(dim=1)[:, :Q]  # (B, Q)

        tokens = torch.zeros(B, n, dtype=torch.long)  # (B, n), PAD = 0
        tokens[:, 0 : 2 * P : 2] = keys
        tokens[:, 1 : 2 * P : 2] = values
        start = n - 2 * Q
        tokens[:, start::2] = keys.gather(1, asked)  # (B, Q)
        answers = values.gather(1, asked)  # (B, Q)
        tokens[:, start + 1 :: 2] = answers
        targets = torch.full((B, n), IGNORE, dtype=torch.long)  # (B, n)
        targets[:, start::2] = answers
        return tokens, targets

    @property
    def chance(self) -> float:
        return 1.0 / self.config.num_values

    def info(self):
        return {"name": self.name, "settings": asdict(self.config)}

    def describe(self):
        c = self.config
        return f"MQAR: {c.num_pairs} pairs, {c.num_queries} queries, n = {c.seq_len}"
