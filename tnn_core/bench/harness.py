"""The benchmark harness: operators x causal x n x mode, timed side by side.

Measurement. For one (causal, n, mode) every operator is built once, warmed up, then
timed ``repeats`` times *interleaved*: each round runs every operator once, in an order
that rotates round by round, so drift of a shared machine hits all of them alike. A
record holds the median and the quartiles of its rounds. On CUDA each run is bracketed
by ``torch.cuda.synchronize``. Peak memory is measured in a separate run
(``memory.peak_memory_mb``), never inside a timed one.

Modes. "forward" is inference: ``eval()`` and ``torch.no_grad()`` (the Toeplitz
operators reuse their cached kernel spectrum there). "forward+backward" is a training
step's work: forward with autograd, ``backward`` of a fixed random output gradient,
gradients set to None in between (as ``zero_grad(set_to_none=True)``).

Operators (``OPS``): "tno", "ski", "fd", "togeipi" from ``tnn_core.operators``;
"tno-reference", the official TNO algorithm (``baselines.TnoReference``, sharing the
RPE of the "tno" built from the same seed); "attention", multi-head softmax attention
through ``F.scaled_dot_product_attention`` (``baselines.Attention``). Togeipi and
attention are O(n²): they are skipped above ``togeipi_max_n`` / ``attention_max_n``.

Letters: B batch, n length, D channels, r rank, m band taps.
"""

from __future__ import annotations

import contextlib
import logging
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import torch

from tnn_core.bench.cases import MODES, OPS, make_case
from tnn_core.bench.memory import MEMORY_METHODS, peak_memory_mb
from tnn_core.checks import check_choice, check_fields, check_int

__all__ = ["BenchConfig", "run_grid", "slopes", "order", "separated_crossings", "crossovers",
           "markdown_tables", "ratio", "interleaved_ms", "interleaved_times", "quartiles"]

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class BenchConfig:
    """One benchmark grid. Unknown fields raise."""

    ops: tuple[str, ...] = OPS  # operators to time, from OPS
    causal: tuple[bool, ...] = (False, True)  # bidirectional and/or causal
    ns: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192, 16384)  # sequence lengths
    modes: tuple[str, ...] = MODES  # "forward" (no_grad) and/or "forward+backward"
    batch: int = 8  # B
    dim: int = 64  # D, the operator's channels
    rank: int = 64  # SKI: r inducing points
    band: int = 8  # SKI: m band taps (the paper uses 32; see docs/benchmarks.md)
    heads: int = 8  # attention and togeipi heads
    decay: float = 0.99  # TNO / SKI λ
    repeats: int = 21  # timed rounds per cell (median reported), >= 1
    warmup: int = 3  # untimed runs per operator before timing
    threads: int | None = 2  # torch.set_num_threads during the run (restored after)
    device: str = "cpu"  # "cpu" or "cuda"
    memory: str = "auto"  # "auto" (cuda: max_memory_allocated; cpu: profiler), "rss", "none"
    togeipi_max_n: int = 4096  # skip togeipi above this n (its sparse matrix is n x n)
    attention_max_n: int = 4096  # skip attention above this n (O(n²) time)
    seed: int = 0  # parameters, inputs and output gradients
    extra: dict = field(default_factory=dict)  # free-form notes copied into every record

    def __post_init__(self):
        bad = [op for op in self.ops if op not in OPS]
        if bad or not self.ops:
            raise ValueError(f"ops must be a non-empty subset of {OPS}; got {self.ops!r}")
        bad = [mode for mode in self.modes if mode not in MODES]
        if bad or not self.modes:
            raise ValueError(f"modes must be a non-empty subset of {MODES}; got {self.modes!r}")
        if not self.causal or any(not isinstance(c, bool) for c in self.causal):
            raise ValueError(f"causal must be a non-empty tuple of booleans; got {self.causal!r}")
        if not self.ns:
            raise ValueError("ns must be a non-empty tuple of lengths; got ()")
        for n in self.ns:
            check_int("ns", n, 1)
        for name, low in (("batch", 1), ("dim", 1), ("rank", 2), ("band", 1), ("heads", 1),
                          ("repeats", 1), ("warmup", 0), ("togeipi_max_n", 1),
                          ("attention_max_n", 1)):
            check_int(name, getattr(self, name), low)
        if self.dim % self.heads:
            raise ValueError(f"dim must be divisible by heads={self.heads}; got dim={self.dim}")
        if self.threads is not None:
            check_int("threads", self.threads, 1)
        check_choice("memory", self.memory, MEMORY_METHODS)
        if torch.device(self.device).type not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda'; got {self.device!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> BenchConfig:
        data = {k: tuple(v) if isinstance(v, list) else v
                for k, v in check_fields(cls, data).items()}
        return cls(**data)

    def skips(self, op: str, n: int) -> bool:
        return ((op == "togeipi" and n > self.togeipi_max_n)
                or (op == "attention" and n > self.attention_max_n))


def _spec(config: BenchConfig, op: str, causal: bool, n: int, mode: str) -> dict:
    return dict(op=op, causal=causal, n=n, mode=mode, batch=config.batch, dim=config.dim,
                rank=config.rank, band=config.band, heads=config.heads, decay=config.decay,
                device=config.device, seed=config.seed, threads=config.threads)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved_times(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1,
                      device: torch.device | str = "cpu", no_grad: bool = False,
                      resets: dict[str, Callable[[], None]] | None = None,
                      stop_event: threading.Event | None = None) -> dict[str, list[float]]:
    """The ms of each function in each of ``repeats`` interleaved rounds (rotating order)
    after ``warmup`` runs each; ``resets[key]()`` runs untimed before each run of ``key``.
    Once ``stop_event`` is set no further round starts: fewer than ``repeats`` times."""
    device = torch.device(device)
    keys = list(fns)
    resets = resets or {}
    times: dict[str, list[float]] = {k: [] for k in keys}
    with torch.no_grad() if no_grad else contextlib.nullcontext():
        for key in keys:
            for _ in range(warmup):
                resets.get(key, _nothing)()
                fns[key]()
        for round_index in range(repeats):
            if stop_event is not None and stop_event.is_set():
                break
            shift = round_index % len(keys)
            for key in keys[shift:] + keys[:shift]:
                resets.get(key, _nothing)()
                _sync(device)
                start = time.perf_counter()
                fns[key]()
                _sync(device)
                times[key].append((time.perf_counter() - start) * 1e3)
    return times


def interleaved_ms(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1,
                   device: torch.device | str = "cpu", no_grad: bool = False,
                   resets: dict[str, Callable[[], None]] | None = None) -> dict[str, float]:
    """Median ms of each function over ``interleaved_times``' rounds."""
    times = interleaved_times(fns, repeats, warmup, device, no_grad, resets)
    return {k: statistics.median(v) for k, v in times.items()}


def _nothing() -> None:
    pass


def quartiles(times: list[float]) -> tuple[float, float]:
    """The first and third quartiles of the timings (both the one value if only one);
    their difference is the interquartile range (IQR), the spread shown beside a median.
    Interpolated within the data (numpy's default "linear"), never beyond its range."""
    if not times:
        raise ValueError("times must hold at least one timing; got []")
    if len(times) < 2:
        return times[0], times[0]
    q = statistics.quantiles(times, n=4, method="inclusive")
    return q[0], q[2]


# -- the grid ---------------------------------------------------------------------------


def run_grid(config: BenchConfig,
             on_progress: Callable[[float, dict], None] | None = None,
             stop_event: threading.Event | None = None) -> list[dict]:
    """Time every (op, causal, n, mode) of ``config``; one record per cell.

    A record: op, causal, n, mode, median_ms, p25_ms, p75_ms, repeats, peak_mem_mb,
    mem_method, plus the config's batch, dim, rank, band, heads, device, threads.
    ``on_progress(fraction_done, record)`` is called after each record; when
    ``stop_event`` is set the grid stops at the next round and returns what it has.
    """
    device = torch.device(config.device)
    groups = [(causal, n, mode) for causal in config.causal for n in config.ns
              for mode in config.modes]
    total = sum(1 for causal, n, mode in groups for op in config.ops if not config.skips(op, n))
    done = 0
    records: list[dict] = []
    old_threads = torch.get_num_threads()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    try:
        for causal, n, mode in groups:
            ops = [op for op in config.ops if not config.skips(op, n)]
            if not ops:
                continue
            specs = {op: _spec(config, op, causal, n, mode) for op in ops}
            cases = {op: make_case(specs[op]) for op in ops}
            times = interleaved_times({op: run for op, (run, _) in cases.items()},
                                      config.repeats, config.warmup, device,
                                      resets={op: reset for op, (_, reset) in cases.items()},
                                      stop_event=stop_event)
            if len(times[ops[0]]) < config.repeats:  # stopped
                log.info("benchmark stopped after %d records", len(records))
                return records
            for op in ops:
                run, reset = cases[op]
                reset()
                mem, mem_method = peak_memory_mb(run, device, config.memory, specs[op])
                p25, p75 = quartiles(times[op])
                spec = specs[op]
                record = dict(op=op, causal=causal, n=n, mode=mode,
                              median_ms=statistics.median(times[op]), p25_ms=p25, p75_ms=p75,
                              repeats=len(times[op]), peak_mem_mb=mem, mem_method=mem_method,
                              batch=spec["batch"], dim=spec["dim"], rank=spec["rank"],
                              band=spec["band"], heads=spec["heads"], device=str(device),
                              threads=torch.get_num_threads(), **config.extra)
                records.append(record)
                done += 1
                if on_progress is not None:
                    on_progress(done / total, record)
            del cases
    finally:
        torch.set_num_threads(old_threads)
    return records


# -- reading records ------------------------------------------------------------------


def _series(records: Iterable[dict]) -> dict[tuple, dict[int, float]]:
    series: dict[tuple, dict[int, float]] = {}
    for rec in records:
        series.setdefault((rec["op"], rec["causal"], rec["mode"]), {})[rec["n"]] = rec["median_ms"]
    return series


def _intervals(records: Iterable[dict]) -> dict[tuple, dict[int, tuple[float, float, float]]]:
    """(p25, median, p75) ms per (op, causal, mode) and n; a record without quartiles is
    the single value of its median."""
    series: dict[tuple, dict[int, tuple[float, float, float]]] = {}
    for rec in records:
        t = rec["median_ms"]
        series.setdefault((rec["op"], rec["causal"], rec["mode"]), {})[rec["n"]] = (
            rec.get("p25_ms", t), t, rec.get("p75_ms", t))
    return series


def slopes(records: Iterable[dict], n_min: int = 1) -> list[dict]:
    """Least-squares slope of log(time) against log(n) per (op, causal, mode), over n >= n_min.

    Returns dicts: op, causal, mode, slope, slope_se (its standard error from the fit's
    residuals; None with 2 lengths, where a line always fits), n_min, n_max, points,
    repeats (the fewest rounds behind a point; None if the records do not say) and
    max_rel_iqr (the largest IQR / median over the points; 0 without quartiles), for the
    series with >= 2 lengths. A slope near 1 is linear time, near 2 quadratic; n log n
    reads as about 1.1 over 256..16384."""
    out = []
    rounds: dict[tuple, list[int]] = {}
    for rec in records:
        if rec.get("repeats") is not None:
            rounds.setdefault((rec["op"], rec["causal"], rec["mode"]), []).append(rec["repeats"])
    for key, by_n in _intervals(records).items():
        op, causal, mode = key
        points = sorted((n, q) for n, q in by_n.items() if n >= n_min and q[1] > 0)
        if len(points) < 2:
            continue
        xs = [math.log(n) for n, _ in points]
        ys = [math.log(q[1]) for _, q in points]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        slope_se = None
        if len(points) > 2:
            residual = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
            slope_se = math.sqrt(residual / (len(points) - 2) / sxx)
        out.append(dict(op=op, causal=causal, mode=mode, slope=slope, slope_se=slope_se,
                        n_min=points[0][0], n_max=points[-1][0], points=len(points),
                        repeats=min(rounds[key]) if key in rounds else None,
                        max_rel_iqr=max((q[2] - q[0]) / q[1] for _, q in points)))
    return out


def order(a: tuple[float, float, float], b: tuple[float, float, float]) -> int:
    """Which of two timings (p25, median, p75) is faster beyond their spread: -1 if a
    (a's third quartile below b's first), 1 if b, 0 where the quartile ranges overlap."""
    if a[2] < b[0]:
        return -1
    if b[2] < a[0]:
        return 1
    return 0


def separated_crossings(xs: list[float], a: list[tuple[float, float, float]],
                        b: list[tuple[float, float, float]]) -> list[dict]:
    """Every place along ascending ``xs`` where the faster of a and b changes, called only
    where the two are separated (``order`` != 0) on both sides of the change; points in
    between where their ranges overlap are skipped (within noise, not a crossing).

    a, b: (p25, median, p75) at each x. Returns dicts: x (where the medians' log ratio
    crosses 0, interpolated in log-log between the two separated points), between (those
    two xs), a_faster_above (True when a is the faster one beyond x)."""
    out = []
    last = None  # (x, order, log ratio of medians) at the last separated point
    for x, qa, qb in zip(xs, a, b, strict=True):
        side = order(qa, qb)
        if side == 0:
            continue
        log_ratio = math.log(qa[1] / qb[1])
        if last is not None and side != last[1]:
            x0, _, l0 = last
            frac = l0 / (l0 - log_ratio)
            x_cross = math.exp(math.log(x0) + frac * (math.log(x) - math.log(x0)))
            out.append(dict(x=x_cross, between=(x0, x), a_faster_above=side < 0))
        last = (x, side, log_ratio)
    return out


def crossovers(records: Iterable[dict], pairs: Iterable[tuple[str, str]] | None = None
               ) -> list[dict]:
    """Lengths where one operator overtakes another, per (causal, mode), called only where
    the quartile ranges of the two separate on both sides (``separated_crossings``).

    For each pair (a, b) (default: every pair present), along the common n. Returns dicts:
    causal, mode, n (float, interpolated in log-log), faster_above (the op faster beyond
    n), faster_below, between (the two separated grid lengths)."""
    series = _intervals(records)
    keys = {(causal, mode) for _, causal, mode in series}
    ops = sorted({op for op, _, _ in series})
    if pairs is None:
        pairs = [(a, b) for i, a in enumerate(ops) for b in ops[i + 1 :]]
    out = []
    for causal, mode in sorted(keys):
        for a, b in pairs:
            sa, sb = series.get((a, causal, mode)), series.get((b, causal, mode))
            if not sa or not sb:
                continue
            common = [n for n in sorted(set(sa) & set(sb)) if sa[n][1] > 0 and sb[n][1] > 0]
            for c in separated_crossings(common, [sa[n] for n in common],
                                         [sb[n] for n in common]):
                faster_above = a if c["a_faster_above"] else b
                out.append(dict(causal=causal, mode=mode, n=c["x"], faster_above=faster_above,
                                faster_below=b if faster_above == a else a,
                                between=c["between"]))
    return out


def ratio(records: Iterable[dict], numerator: str, denominator: str, causal: bool, mode: str
          ) -> dict[int, float]:
    """t_numerator / t_denominator at each common n (> 1 means the denominator is faster)."""
    series = _series(records)
    a, b = series.get((numerator, causal, mode), {}), series.get((denominator, causal, mode), {})
    return {n: a[n] / b[n] for n in sorted(set(a) & set(b))}


def _label(causal: bool) -> str:
    return "causal" if causal else "bidir"


def markdown_tables(records: list[dict]) -> str:
    """Median ms (and peak MB) per (op, causal, mode) row and n column, plus slopes."""
    if not records:
        return "(no records)"
    ns = sorted({rec["n"] for rec in records})
    rows: dict[tuple, dict[int, dict]] = {}
    for rec in records:
        rows.setdefault((rec["mode"], rec["causal"], rec["op"]), {})[rec["n"]] = rec
    order = {op: i for i, op in enumerate(OPS)}
    keys = sorted(rows, key=lambda k: (MODES.index(k[0]), k[1], order.get(k[2], 99)))
    slope_of = {(s["op"], s["causal"], s["mode"]): s["slope"] for s in slopes(records)}
    head = "| mode | causal | op | " + " | ".join(f"n={n}" for n in ns) + " | slope |"
    sep = "|" + "---|" * (len(ns) + 4)
    lines = ["Median time (ms)", "", head, sep]
    for mode, causal, op in keys:
        cells = [f"{rows[(mode, causal, op)][n]['median_ms']:.2f}" if n in rows[(mode, causal, op)]
                 else "–" for n in ns]
        slope = slope_of.get((op, causal, mode))
        lines.append(f"| {mode} | {_label(causal)} | {op} | " + " | ".join(cells)
                     + f" | {'' if slope is None else f'{slope:.2f}'} |")
    if any(rec.get("peak_mem_mb") is not None for rec in records):
        method = next(rec["mem_method"] for rec in records if rec.get("peak_mem_mb") is not None)
        lines += ["", f"Peak memory (MB, {method})", "",
                  "| mode | causal | op | " + " | ".join(f"n={n}" for n in ns) + " |",
                  "|" + "---|" * (len(ns) + 3)]
        for mode, causal, op in keys:
            cells = []
            for n in ns:
                rec = rows[(mode, causal, op)].get(n)
                mem = None if rec is None else rec.get("peak_mem_mb")
                cells.append("–" if mem is None else f"{mem:.1f}")
            lines.append(f"| {mode} | {_label(causal)} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
