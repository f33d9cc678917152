"""The Togeipi course project's timing table, reproduced in relative terms on this machine.

The project's report ("Conclusion and Results") times the forward pass of its Togeipi
module against multi-head attention on a GPU server, batch 64, for L = 64..1024,
D = 64..2048 and H = 2, 8, 16, and reports Togeipi/MHA per cell.
Here both run forward under ``torch.no_grad()`` (inference; Togeipi's kept sparse entries
and PSF spectrum are cached, as the project's forward also applies an already-pruned S),
interleaved in rounds, medians. Attention is ``baselines.Attention`` (q/k/v/out
projections and ``F.scaled_dot_product_attention``); Togeipi is the operator "togeipi"
(in/out projections, Toeplitz PSF per head by FFT, top-30 % sparse matrix by dense matmul).
What changes on a 2-core CPU: batch 2 instead of 64 and fewer repeats (``repeats``) so
the full 5 x 6 x 3 grid runs in minutes; the grid itself is the report's.

Letters: B batch, L length, D width, H heads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import partial

import torch

from tnn_core.bench.baselines import Attention
from tnn_core.bench.harness import interleaved_ms
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights

__all__ = ["SEED_LENGTHS", "SEED_WIDTHS", "SEED_HEADS", "run_togeipi_table", "togeipi_markdown"]

SEED_LENGTHS = (64, 128, 256, 512, 1024)
SEED_WIDTHS = (64, 128, 256, 512, 1024, 2048)
SEED_HEADS = (2, 8, 16)


def run_togeipi_table(lengths: Iterable[int] = SEED_LENGTHS, widths: Iterable[int] = SEED_WIDTHS,
                      heads: Iterable[int] = SEED_HEADS, batch: int = 2, repeats: int = 7,
                      warmup: int = 1, causal: bool = True, threads: int | None = 2,
                      device: str = "cpu", seed: int = 0,
                      on_progress: Callable[[float, dict], None] | None = None,
                      stop_event: threading.Event | None = None) -> list[dict]:
    """Forward medians of Togeipi and MHA for every (H, D, L); one record per cell:
    heads, dim, length, batch, togeipi_ms, attention_ms, ratio (= togeipi / attention).
    ``causal`` as in the project's speed test (its config sets causal_attn = True)."""
    cells = [(h, d, n) for h in heads for d in widths for n in lengths]
    dev = torch.device(device)
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    records = []
    try:
        for index, (h, d, n) in enumerate(cells):
            if stop_event is not None and stop_event.is_set():
                break
            with seeded_weights(seed):
                togeipi = build_operator(OperatorConfig(kind="togeipi", causal=causal,
                                                        heads=h, max_length=n), d).to(dev).eval()
                attention = Attention(d, h, causal).to(dev).eval()
            g = torch.Generator().manual_seed(seed + 1)
            x = torch.randn(batch, n, d, generator=g).to(dev)  # (B, L, D)
            fns = {"togeipi": partial(togeipi, x), "attention": partial(attention, x)}
            ms = interleaved_ms(fns, repeats, warmup, dev, no_grad=True)
            t_ms, a_ms = ms["togeipi"], ms["attention"]
            record = dict(heads=h, dim=d, length=n, batch=batch, causal=causal, repeats=repeats,
                          togeipi_ms=t_ms, attention_ms=a_ms, ratio=t_ms / a_ms,
                          device=str(dev), threads=torch.get_num_threads())
            records.append(record)
            if on_progress is not None:
                on_progress((index + 1) / len(cells), record)
    finally:
        torch.set_num_threads(old_threads)
    return records


def togeipi_markdown(records: list[dict]) -> str:
    """Per H: Togeipi/MHA (percent) with D rows and L columns, as in the report's tables."""
    lines = []
    for h in sorted({rec["heads"] for rec in records}):
        rows = [rec for rec in records if rec["heads"] == h]
        lengths = sorted({rec["length"] for rec in rows})
        widths = sorted({rec["dim"] for rec in rows})
        cell = {(rec["dim"], rec["length"]): rec for rec in rows}
        lines += [f"Togeipi / MHA, H = {h} (forward, median ms Togeipi | MHA, ratio)", "",
                  "| D \\ L | " + " | ".join(str(n) for n in lengths) + " |",
                  "|" + "---|" * (len(lengths) + 1)]
        for d in widths:
            parts = []
            for n in lengths:
                rec = cell.get((d, n))
                parts.append("–" if rec is None else
                             f"{rec['togeipi_ms']:.2f} \\| {rec['attention_ms']:.2f} "
                             f"({100 * rec['ratio']:.0f}%)")
            lines.append(f"| {d} | " + " | ".join(parts) + " |")
        lines.append("")
    return "\n".join(lines)
