"""Page "Speed": the benchmark grid's curves, growth guides, slopes and crossovers; SKI's
error against speed; SKI against TNO over the band m.

Timings are measurements: the page runs ``bench_config``'s grid in a background job and
hands its records to ``grid_view``; ``measure_pareto`` and ``measure_band_crossover`` time
on the spot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.bench import ski_pareto, ski_study
from tnn_core.bench.harness import BenchConfig, crossovers, slopes

__all__ = ["DIRECTIONS", "bench_config", "Series", "GridPanel", "GridView", "grid_view",
           "PARETO_SETTINGS", "ParetoView", "measure_pareto", "BandView", "band_crossings_table",
           "measure_band_crossover"]

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
    slopes: list[dict]  # op, causal, mode, slope, n_min, n_max: log-log slope of time vs n
    crossovers: list[dict]  # causal, mode, faster_below, faster_above, n (rounded)
    missing: bool  # some time is nan


def _series(records: list[dict], op: str, field: str) -> Series:
    rows = sorted((r for r in records if r["op"] == op), key=lambda r: r["n"])
    y = [math.nan if r.get(field) is None else r[field] for r in rows]
    return Series(op, np.array([r["n"] for r in rows]), np.array(y, dtype=float))


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
    slope_rows = [{k: s[k] for k in ("op", "causal", "mode", "slope", "n_min", "n_max")}
                  for s in slopes(records)]
    cross_rows = [{"causal": c["causal"], "mode": c["mode"], "faster_below": c["faster_below"],
                   "faster_above": c["faster_above"], "n": int(round(c["n"]))}
                  for c in crossovers(records)]
    return GridView(panels=tuple(panels), slopes=slope_rows, crossovers=cross_rows,
                    missing=any(math.isnan(r["median_ms"]) for r in records))


@dataclass(frozen=True)
class ParetoView:
    """SKI's (r, m) settings on one kernel: error against speed-up over the FFT product."""

    n: int
    by_band: tuple[Series, ...]  # one per m ("m = 5"): x speed-up (×), y relative Frobenius
    ranks: tuple[np.ndarray, ...]  # per series, the r of each point (its label)


def measure_pareto(n: int, settings: tuple[tuple[int, int], ...], device: str) -> ParetoView:
    """Decompose and time each (r, m) of ``settings`` on the spike-plus-smooth kernel."""
    points = ski_pareto(synthetic_kernel(PARETO_KERNEL[0], n, PARETO_KERNEL[1]), settings,
                        device=device)
    series, ranks = [], []
    for m in sorted({p["band"] for p in points}):
        rows = [p for p in points if p["band"] == m]
        series.append(Series(f"m = {m}", np.array([p["speedup"] for p in rows]),
                             np.array([p["error"] for p in rows])))
        ranks.append(np.array([p["rank"] for p in rows]))
    return ParetoView(n=n, by_band=tuple(series), ranks=tuple(ranks))


@dataclass(frozen=True)
class BandView:
    """SKI against TNO over the band m: TNO time / SKI time per m, one line per n."""

    lines: tuple[Series, ...]  # "n = 1024": x band taps m, y speed-up (> 1: SKI faster)
    crossings: list[dict]  # n, crossing: where SKI stops (or starts) winning, in words
    records: list[dict]  # n, band, rank, ski_ms, tno_ms, speedup (bench.ski_study)


def band_crossings_table(records: list[dict], crossings: list[dict]) -> list[dict]:
    """One row per n: n, crossing (a sentence: where SKI stops, or starts, winning)."""
    rows = []
    for c in crossings:
        speedups = [r["speedup"] for r in records if r["n"] == c["n"]]
        if c["band"] is None:
            winner = "SKI" if min(speedups) > 1 else "TNO"
            verdict = (f"{winner} faster at every m measured ({min(speedups):.2f}–"
                       f"{max(speedups):.2f}×)")
        elif c["faster_below"]:
            verdict = f"SKI faster below m ≈ {c['band']:.0f}"
        else:
            verdict = f"SKI faster above m ≈ {c['band']:.0f}"
        rows.append({"n": c["n"], "crossing": verdict})
    return rows


def measure_band_crossover(ns: tuple[int, ...], device: str) -> BandView:
    """SKI (m = 4…64) against TNO, forward+backward, B = 8, D = 64, r = 64, at each n."""
    records, crossings = ski_study.band_crossover(ns=ns, repeats=5, device=device)
    lines = []
    for n in sorted({r["n"] for r in records}):
        rows = sorted((r for r in records if r["n"] == n), key=lambda r: r["band"])
        lines.append(Series(f"n = {n}", np.array([r["band"] for r in rows]),
                            np.array([r["speedup"] for r in rows])))
    return BandView(lines=tuple(lines), crossings=band_crossings_table(records, crossings),
                    records=records)
