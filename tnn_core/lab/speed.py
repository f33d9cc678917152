"""Page "Speed": the benchmark grid's curves, growth guides, slopes and crossovers; SKI's
error against speed; SKI against TNO over the band m.

Timings are measurements, each taken in a background job (``grid_job``, ``pareto_job``,
``band_crossover_job``) that reports the fraction done, ends soon after a stop with what it
has measured, and runs in a place of the server's heavy work (``start_in_place``): timings
taken side by side would share the cores and measure each other.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.bench import flops
from tnn_core.bench.cases import OPS, train_step
from tnn_core.bench.harness import (
    BenchConfig,
    crossovers,
    interleaved_times,
    order,
    quartiles,
    run_grid,
    separated_crossings,
    slopes,
)
from tnn_core.lab.common.background import BackgroundJob, start_in_place
from tnn_core.lab.common.live import ski_pareto
from tnn_core.lab.common.work_slots import NoPlace
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights

__all__ = ["DIRECTIONS", "bench_config", "Series", "GridPanel", "GridView", "grid_view",
           "slope_text", "slope_trust", "PARETO_SETTINGS", "ParetoView", "measure_pareto",
           "BANDS", "BandView", "band_crossings_table", "measure_band_crossover",
           "grid_job", "pareto_job", "band_crossover_job", "start_in_place",
           # the grid's operators, the jobs the page watches, and a refusal for want of a place
           "OPS", "BackgroundJob", "NoPlace"]

Progress = Callable[[float, object], None]  # on_progress(fraction done, item)

DIRECTIONS = {"bidirectional": (False,), "causal": (True,), "both": (False, True)}
GUIDES = {"O(n)": lambda n: n, "O(n log n)": lambda n: n * np.log2(n), "O(n²)": lambda n: n**2}
PARETO_KERNEL = ("spike_smooth", 0.99)  # the kernel of the error-against-speed chart
PARETO_SETTINGS = tuple((r, m) for r in (8, 16, 32, 64, 128) for m in (1, 5, 9, 17))  # (r, m)


def bench_config(ops: tuple[str, ...], direction: str, ns: tuple[int, ...], mode: str,
                 batch: int, dim: int, rank: int, band: int, repeats: int,
                 device: str) -> BenchConfig:
    """The grid the page's form describes: one mode, the lengths ``ns``, 8 heads (1 below
    8 channels). Raises ValueError for a setting the harness rejects."""
    return BenchConfig(ops=tuple(ops), causal=DIRECTIONS[direction], ns=tuple(ns),
                       modes=(mode,), batch=batch, dim=dim, rank=rank, band=band,
                       repeats=repeats, device=device, heads=8 if dim >= 8 else 1)


@dataclass(frozen=True)
class Series:
    """One line of a chart: y against x, named for its legend."""

    name: str
    x: np.ndarray  # [k]
    y: np.ndarray  # [k] (nan where nothing was measured)
    low: np.ndarray | None = None  # [k] first quartile of y's rounds (error bar), if timed
    high: np.ndarray | None = None  # [k] third quartile


@dataclass(frozen=True)
class GridPanel:
    """One direction's two charts: time and peak memory against n, one line per operator."""

    causal: bool
    title: str  # "bidirectional" or "causal"
    time: tuple[Series, ...]  # median ms, operators in alphabetical order
    memory: tuple[Series, ...]  # peak MB
    guides: tuple[Series, ...]  # O(n), O(n log n), O(n²) through the median time at the
    #                             shortest n


@dataclass(frozen=True)
class GridView:
    panels: tuple[GridPanel, ...]  # bidirectional before causal
    slopes: list[dict]  # op, causal, mode, "slope ± SE", n range, trust (a sentence)
    crossovers: list[dict]  # causal, mode, faster_below, faster_above, n (rounded),
    #                         between: the two lengths whose quartile ranges separate
    missing: bool  # some time is nan


def _series(records: list[dict], op: str, field: str) -> Series:
    """y = ``field`` against n for one operator; for the median time, its quartiles too."""
    rows = sorted((r for r in records if r["op"] == op), key=lambda r: r["n"])

    def column(name: str) -> np.ndarray:
        return np.array([math.nan if r.get(name) is None else r[name] for r in rows], float)

    x = np.array([r["n"] for r in rows])
    if field == "median_ms":
        return Series(op, x, column(field), column("p25_ms"), column("p75_ms"))
    return Series(op, x, column(field))


def _guides(records: list[dict]) -> tuple[Series, ...]:
    ns = np.array(sorted({r["n"] for r in records}), dtype=float)
    n0 = ns[0]
    t0 = float(np.median([r["median_ms"] for r in records if r["n"] == n0]))
    return tuple(Series(name, ns, t0 * grow(ns) / grow(n0)) for name, grow in GUIDES.items())


def grid_view(records: list[dict]) -> GridView:
    """The grid's records (``bench.harness.run_grid``) as the page's charts and tables."""
    panels = []
    for causal in sorted({r["causal"] for r in records}):
        part = [r for r in records if r["causal"] == causal]
        ops = sorted({r["op"] for r in part})
        panels.append(GridPanel(
            causal=causal, title="causal" if causal else "bidirectional",
            time=tuple(_series(part, op, "median_ms") for op in ops),
            memory=tuple(_series(part, op, "peak_mem_mb") for op in ops),
            guides=_guides(part)))
    slope_rows = [{"op": s["op"], "causal": s["causal"], "mode": s["mode"],
                   "slope": slope_text(s), "n range": f"{s['n_min']}–{s['n_max']}",
                   "trust": slope_trust(s)} for s in slopes(records)]
    cross_rows = [{"causal": c["causal"], "mode": c["mode"], "faster_below": c["faster_below"],
                   "faster_above": c["faster_above"], "n": int(round(c["n"])),
                   "between": f"{c['between'][0]}–{c['between'][1]}"}
                  for c in crossovers(records)]
    return GridView(panels=tuple(panels), slopes=slope_rows, crossovers=cross_rows,
                    missing=any(math.isnan(r["median_ms"]) for r in records))


MIN_SLOPE_ROUNDS = 5  # fewer timed rounds per point: a median is one noisy sample or two
MAX_SLOPE_SPREAD = 0.25  # IQR / median above this at some point: the fit rests on noise
FLAT_SLOPE = 0.5  # below it, time hardly grows with n: fixed per-call costs dominate


def slope_text(fit: dict) -> str:
    """The slope with its standard error ("1.02 ± 0.03"), or bare when a line always fits."""
    if fit["slope_se"] is None:
        return f"{fit['slope']:.2f}"
    return f"{fit['slope']:.2f} ± {fit['slope_se']:.2f}"


def slope_trust(fit: dict) -> str:
    """Whether the log-log fit (``harness.slopes``) can be read as growth, and if not why."""
    reasons = []
    if fit["points"] < 3:
        reasons.append(f"{fit['points']} lengths: a line always fits, no uncertainty")
    if fit["repeats"] is not None and fit["repeats"] < MIN_SLOPE_ROUNDS:
        reasons.append(f"{fit['repeats']} rounds per point (use {MIN_SLOPE_ROUNDS} or more)")
    if fit["max_rel_iqr"] > MAX_SLOPE_SPREAD:
        reasons.append(f"noisy: a spread (IQR) of {fit['max_rel_iqr']:.0%} of the median")
    if fit["slope"] < FLAT_SLOPE:
        reasons.append("flat: fixed per-call costs dominate at these lengths, not growth")
    return "; ".join(reasons) if reasons else "ok"


@dataclass(frozen=True)
class ParetoView:
    """SKI's (r, m) settings on one kernel: error against speed-up over the FFT product."""

    n: int
    by_band: tuple[Series, ...]  # one per m ("m = 5"): x speed-up (×) with low/high from the
    #                              quartiles (fft p25 / ski p75 .. fft p75 / ski p25), y error
    ranks: tuple[np.ndarray, ...]  # per series, the r of each point (its label)
    flop_speedups: tuple[np.ndarray, ...]  # per series, FFT flops / SKI flops of each point


def measure_pareto(n: int, settings: tuple[tuple[int, int], ...], device: str,
                   on_progress: Progress | None = None,
                   stop_event: threading.Event | None = None) -> ParetoView | None:
    """Decompose and time each (r, m) of ``settings`` on the spike-plus-smooth kernel, one
    band m at a time (its ranks in interleaved rounds with the FFT product), reporting the
    fraction done after each; a stop ends it after the current band with the bands so far
    (None if none)."""
    kernel = synthetic_kernel(PARETO_KERNEL[0], n, PARETO_KERNEL[1])
    bands = sorted({m for _, m in settings})
    points = []
    for k, m in enumerate(bands):
        if stop_event is not None and stop_event.is_set():
            break
        points += ski_pareto(kernel, [(r, b) for r, b in settings if b == m], device=device)
        if on_progress is not None:
            on_progress((k + 1) / len(bands), m)
    if not points:
        return None
    series, ranks, flop_speedups = [], [], []
    for m in sorted({p["band"] for p in points}):
        rows = [p for p in points if p["band"] == m]
        series.append(Series(
            f"m = {m}", np.array([p["speedup"] for p in rows]),
            np.array([p["error"] for p in rows]),
            low=np.array([p["fft_p25_ms"] / p["ski_p75_ms"] for p in rows]),
            high=np.array([p["fft_p75_ms"] / p["ski_p25_ms"] for p in rows])))
        ranks.append(np.array([p["rank"] for p in rows]))
        flop_speedups.append(np.array([p["fft_flops"] / p["ski_flops"] for p in rows]))
    return ParetoView(n=n, by_band=tuple(series), ranks=tuple(ranks),
                      flop_speedups=tuple(flop_speedups))


BANDS = (4, 8, 16, 32, 64)  # m of the band-crossover chart
BAND_RANK, BAND_BATCH, BAND_DIM = 64, 8, 64  # r, B, D of the band-crossover chart


@dataclass(frozen=True)
class BandView:
    """SKI against TNO over the band m: TNO time / SKI time per m, one line per n."""

    lines: tuple[Series, ...]  # "n = 1024": x band taps m, y speed-up (> 1: SKI faster),
    #                            low/high: tno p25 / ski p75 .. tno p75 / ski p25
    flop_lines: tuple[Series, ...]  # per n: TNO's FFT product flops / SKI's, forward, per m
    crossings: list[dict]  # n, crossing: every place SKI starts or stops winning, in words
    records: list[dict]  # n, band, rank, ski_ms, tno_ms (+ _p25_ms, _p75_ms), speedup


def _quartet(rec: dict, op: str) -> tuple[float, float, float]:
    return rec[f"{op}_p25_ms"], rec[f"{op}_ms"], rec[f"{op}_p75_ms"]


def band_crossings_table(records: list[dict]) -> list[dict]:
    """One row per n: n, crossing (a sentence naming every m where SKI starts or stops
    being faster than TNO beyond the spread of the rounds, and the m where the two are
    within each other's quartile ranges)."""
    rows = []
    for n in sorted({r["n"] for r in records}):
        part = sorted((r for r in records if r["n"] == n), key=lambda r: r["band"])
        bands = [r["band"] for r in part]
        ski, tno = [_quartet(r, "ski") for r in part], [_quartet(r, "tno") for r in part]
        sides = [order(s, t) for s, t in zip(ski, tno, strict=True)]  # -1: SKI faster
        ties = [m for m, side in zip(bands, sides, strict=True) if side == 0]
        words = []
        for c in separated_crossings(bands, ski, tno):
            lo, hi = c["between"]
            stops = not c["a_faster_above"]  # TNO is the faster one beyond the crossing
            words.append(f"SKI {'stops' if stops else 'starts'} being faster at m ≈ "
                         f"{c['x']:.0f} (between {lo} and {hi})")
        if not words:
            decided = {side for side in sides if side != 0}
            if decided == {-1}:
                words.append("SKI faster at every m where the two separate")
            elif decided == {1}:
                words.append("TNO faster at every m where the two separate")
        if ties:
            words.append(f"within noise of each other at m = {', '.join(map(str, ties))}")
        rows.append({"n": n, "crossing": "; ".join(words)})
    return rows


def measure_band_crossover(ns: tuple[int, ...], device: str, repeats: int = 7,
                           on_progress: Progress | None = None,
                           stop_event: threading.Event | None = None) -> BandView | None:
    """SKI (m in BANDS) against TNO, bidirectional, forward+backward, B = 8, D = 64,
    r = 64, at each n: ``repeats`` interleaved rounds after one warm-up, medians and
    quartiles (as ``bench.ski_study.band_crossover``, which reports medians only). The
    fraction done is reported after each n, weighted by its length; a stop ends the rounds
    of the current n and keeps the lengths measured whole (None if none)."""
    dev = torch.device(device)
    records = []
    for k, n in enumerate(ns):
        with seeded_weights(0):
            modules = {"tno": build_operator(OperatorConfig(kind="tno"), BAND_DIM).to(dev)}
            for m in BANDS:
                modules[m] = build_operator(OperatorConfig(kind="ski", rank=BAND_RANK, band=m),
                                            BAND_DIM).to(dev)
        g = torch.Generator().manual_seed(1)
        x = torch.randn(BAND_BATCH, n, BAND_DIM, generator=g).to(dev).requires_grad_(True)
        gy = torch.randn(BAND_BATCH, n, BAND_DIM, generator=g).to(dev)
        fns, resets = {}, {}
        for key, module in modules.items():
            fns[key], resets[key] = train_step(module, x, gy)
        times = interleaved_times(fns, repeats, 1, dev, resets=resets, stop_event=stop_event)
        if len(times["tno"]) < repeats:  # stopped
            break
        q = {}  # key -> (p25, median, p75) ms
        for key, values in times.items():
            p25, p75 = quartiles(values)
            q[key] = (p25, statistics.median(values), p75)
        for m in BANDS:
            records.append(dict(n=n, band=m, rank=BAND_RANK, ski_ms=q[m][1], ski_p25_ms=q[m][0],
                                ski_p75_ms=q[m][2], tno_ms=q["tno"][1],
                                tno_p25_ms=q["tno"][0], tno_p75_ms=q["tno"][2],
                                speedup=q["tno"][1] / q[m][1]))
        if on_progress is not None:
            on_progress(sum(ns[: k + 1]) / sum(ns), n)
    ns = tuple(sorted({r["n"] for r in records}))
    if not ns:
        return None
    lines = []
    for n in ns:
        rows = [r for r in records if r["n"] == n]
        lines.append(Series(f"n = {n}", np.array([r["band"] for r in rows]),
                            np.array([r["speedup"] for r in rows]),
                            low=np.array([r["tno_p25_ms"] / r["ski_p75_ms"] for r in rows]),
                            high=np.array([r["tno_p75_ms"] / r["ski_p25_ms"] for r in rows])))
    flop_lines = tuple(
        Series(f"n = {n}, flops", np.array(BANDS),
               np.array([flops.fft_product_flops(n, BAND_BATCH, BAND_DIM)
                         / flops.ski_flops(n, BAND_RANK, m, BAND_BATCH, BAND_DIM)
                         for m in BANDS])) for n in ns)
    return BandView(lines=tuple(lines), flop_lines=flop_lines,
                    crossings=band_crossings_table(records), records=records)


def grid_job(config: BenchConfig) -> BackgroundJob:
    """``run_grid(config)`` as a job (not started): its items are the records."""
    return BackgroundJob(lambda on_progress, stop: run_grid(config, on_progress, stop))


def pareto_job(n: int, device: str) -> BackgroundJob:
    """``measure_pareto`` of PARETO_SETTINGS at ``n`` as a job (not started)."""
    return BackgroundJob(lambda on_progress, stop: measure_pareto(
        n, PARETO_SETTINGS, device, on_progress, stop))


def band_crossover_job(ns: tuple[int, ...], device: str) -> BackgroundJob:
    """``measure_band_crossover`` at the lengths ``ns`` as a job (not started)."""
    return BackgroundJob(lambda on_progress, stop: measure_band_crossover(
        ns, device, on_progress=on_progress, stop_event=stop))

