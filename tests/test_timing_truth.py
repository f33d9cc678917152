"""Timings shown as facts (issue 10): the flop formulas beside every timing, the spread
(IQR) of repeated rounds, crossovers called only where the intervals separate, and the
formatting of ratios. No test here asserts a speed: timings are only checked for how
they are combined."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tnn_core.bench import flops, timing
from tnn_core.bench.harness import crossovers, order, quartiles, separated_crossings, slopes
from tnn_core.lab import speed
from tnn_core.lab.common.live import live_speed
from tnn_core.operators.fast.band import extend_taps

pytestmark = pytest.mark.usefixtures("one_thread")


# -- flop formulas -------------------------------------------------------------------------


def test_flop_counts_by_hand():
    """n = 2, one sequence, one channel: N = fft_size(2) = 4, a real FFT of 4 points is
    2.5 · 4 · log2 4 = 20 flops, the product of 3 complex bins 18: 20 + 18 + 20 = 58.
    Dense: 2 rows × 2 multiply-adds = 8."""
    assert flops.real_fft_flops(4) == 20.0
    assert flops.fft_product_flops(2) == 58.0
    assert flops.fft_product_flops(2, kernel_transform=True) == 58.0 + 20.0
    assert flops.dense_flops(2) == 8.0
    assert flops.dense_flops(3, batch=2, dim=5) == 2 * 9 * 2 * 5
    # SKI at n = 4, r = 2, m = 3: band 2·3·4 = 24, Wᵀ x 2·2·4 = 16, A on Nr = fft_size(2) = 4
    # points 20 + 18 + 20 = 58, W u 16, the add 4: 118 per sequence; A's column rfft 20.
    assert flops.ski_flops(4, rank=2, band=3) == 118.0 + 20.0
    assert flops.ski_flops(4, rank=2, band=3, batch=3, dim=2) == 118.0 * 6 + 20.0 * 2
    # n = 1: N = 2, one butterfly (2.5 · 2 · 1 = 5), 2 bins (12): 22; dense 2.
    assert flops.fft_product_flops(1) == 22.0 and flops.dense_flops(1) == 2.0


def test_flop_growth():
    """Dense ∝ n², SKI's band term ∝ m (per tap 2 n B D), the FFT product ~ n log n."""
    for n in (7, 64, 257):
        assert flops.dense_flops(2 * n, 8, 64) == 4 * flops.dense_flops(n, 8, 64)
    n, B, D = 1000, 8, 64
    steps = [flops.ski_flops(n, 32, m, B, D) for m in (1, 3, 5, 7, 9)]
    diffs = {b - a for a, b in zip(steps, steps[1:], strict=False)}
    assert diffs == {2.0 * 2 * n * B * D}  # two more taps per step, a multiply-add each
    for n in (64, 1024, 16384):  # N = 2n here: two transforms of 2n points, n + 1 bins
        assert flops.fft_product_flops(n) == 2 * 2.5 * 2 * n * math.log2(2 * n) + 6 * (n + 1)
        assert 2.0 < flops.fft_product_flops(2 * n) / flops.fft_product_flops(n) < 2.3


@pytest.mark.parametrize("n", [1, 2, 5, 4096])
@pytest.mark.parametrize("band", [*range(1, 12), 64, 65_536])
def test_band_taps_are_the_ones_the_convolution_runs(band, n):
    ext, _, _ = extend_taps(torch.zeros(1, band), band // 2, n)
    assert flops.band_taps(band, n) == ext.shape[-1]


def test_fft_crossover_n():
    """The first n from which the FFT product costs fewer flops than the dense one."""
    for batch, transform in ((1, False), (8, True)):
        c = flops.fft_crossover_n(batch, transform)
        assert c is not None
        assert all(flops.fft_product_flops(n, batch, 1, transform) < flops.dense_flops(n, batch)
                   for n in range(c, 4097))
        assert flops.fft_product_flops(c - 1, batch, 1, transform) >= flops.dense_flops(
            c - 1, batch)
    assert flops.fft_crossover_n(n_max=8) is None


# -- the spread of repeated timings --------------------------------------------------------


def test_quartiles_stay_inside_the_data():
    assert quartiles([3.0]) == (3.0, 3.0)
    assert quartiles([1.0, 2.0]) == (1.25, 1.75)  # within [min, max], unlike "exclusive"
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)
    with pytest.raises(ValueError, match="times"):
        quartiles([])


def test_live_speed_reports_spread_and_flops():
    out = live_speed(64, rank=8, band=3, batch=2, dim=4, repeats=3, warmup=1)
    for key in ("ski", "fft", "dense"):
        assert out[f"{key}_iqr_ms"] >= 0
    assert out["ski_flops"] == flops.ski_flops(64, 8, 3, 2, 4)
    assert out["fft_flops"] == flops.fft_product_flops(64, 2, 4)
    assert out["dense_flops"] == flops.dense_flops(64, 2, 4)
    none = live_speed(64, rank=8, band=3, batch=2, dim=4, repeats=1, dense_max_n=32)
    assert none["dense_ms"] is None and none["dense_iqr_ms"] is None
    assert none["dense_flops"] == flops.dense_flops(64, 2, 4)
    assert none["ski_iqr_ms"] == 0.0  # one round: no spread


# -- formatting --------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    (0.0043, "0.0043×"), (0.05, "0.050×"), (0.98, "0.98×"), (1.0, "1.0×"), (12.3, "12×"),
    (1234.0, "1200×")])
def test_format_ratio_keeps_two_significant_figures(value, text):
    assert timing.format_ratio(value) == text


def test_format_ms_and_flops():
    assert timing.format_ms(0.1234) == "0.123 ms"
    assert timing.format_ms(48.06, 47.0, 49.5) == "48.1 ms (IQR 2.5 ms)"
    assert timing.format_ms(1234.5) == "1230 ms"
    assert [timing.format_flops(f) for f in (58, 999, 3152, 2.6e7, 1.05e12)] == [
        "58 flop", "1.0 kflop", "3.2 kflop", "26 Mflop", "1.0 Tflop"]


# -- crossovers only where the intervals separate ------------------------------------------


def timed(op: str, rows: dict[int, tuple[float, float, float]], causal=False, repeats=9
          ) -> list[dict]:
    """Synthetic grid records: n -> (p25, median, p75) ms."""
    return [dict(op=op, causal=causal, mode="forward", n=n, p25_ms=q[0], median_ms=q[1],
                 p75_ms=q[2], repeats=repeats) for n, q in rows.items()]


def test_noise_is_not_a_crossover():
    """Medians that swap order inside overlapping quartile ranges (the "nine spurious
    crossovers" of a 3-round grid) give no crossover; a real change of order does."""
    ns = (256, 512, 1024, 2048)
    a = timed("a", {n: (0.9, 1.0 + 0.05 * (-1) ** i, 1.1) for i, n in enumerate(ns)})
    b = timed("b", {n: (0.9, 1.0, 1.1) for n in ns})
    assert crossovers(a + b) == []
    # a grows as n, b is flat: separate at 256 (a faster) and 2048 (b faster), tied between
    a = timed("a", {256: (0.4, 0.5, 0.6), 512: (1.4, 1.6, 1.8), 1024: (1.8, 2.0, 2.2),
                    2048: (3.6, 4.0, 4.4)})
    b = timed("b", {n: (1.5, 1.7, 1.9) for n in ns})
    (c,) = crossovers(a + b)
    assert c["faster_below"] == "a" and c["faster_above"] == "b"
    assert c["between"] == (256, 2048)  # 512 and 1024 overlap: the crossing is not placed there
    l0, l1 = math.log(0.5 / 1.7), math.log(4.0 / 1.7)
    assert c["n"] == pytest.approx(math.exp(math.log(256) + l0 / (l0 - l1) * math.log(8)))


def test_every_crossing_is_reported():
    xs = [4, 8, 16, 32, 64]
    ski = [(0.9, 1.0, 1.1), (0.9, 1.0, 1.1), (2.9, 3.0, 3.1), (0.9, 1.0, 1.1), (4.9, 5, 5.1)]
    tno = [(1.9, 2.0, 2.1)] * 5
    got = separated_crossings(xs, ski, tno)
    assert [c["between"] for c in got] == [(8, 16), (16, 32), (32, 64)]
    assert [c["a_faster_above"] for c in got] == [False, True, False]
    assert all(lo < c["x"] < hi for c in got for lo, hi in [c["between"]])
    assert order((1, 2, 3), (3.5, 4, 5)) == -1 and order((1, 2, 3), (3, 4, 5)) == 0


def band_records(n: int, rows: list[tuple[int, tuple, tuple]]) -> list[dict]:
    return [dict(n=n, band=m, ski_p25_ms=s[0], ski_ms=s[1], ski_p75_ms=s[2], tno_p25_ms=t[0],
                 tno_ms=t[1], tno_p75_ms=t[2], speedup=t[1] / s[1]) for m, s, t in rows]


def test_band_crossings_name_every_crossing_and_the_noise():
    """"SKI faster below m ≈ 12" while SKI is faster again at m = 32 was half the story:
    every crossing is named, and m where the two overlap are said to be within noise."""
    tno = (1.9, 2.0, 2.1)
    records = band_records(1024, [(4, (0.9, 1, 1.1), tno), (8, (0.9, 1, 1.1), tno),
                                  (16, (2.9, 3, 3.1), tno), (32, (0.9, 1, 1.1), tno),
                                  (64, (1.8, 2.05, 2.2), tno)])
    records += band_records(4096, [(m, (0.9, 1, 1.1), tno) for m in (4, 8)])
    records += band_records(16384, [(4, (1.9, 2, 2.1), tno), (8, (2.9, 3, 3.1), tno)])
    rows = speed.band_crossings_table(records)
    assert [r["n"] for r in rows] == [1024, 4096, 16384]
    first = rows[0]["crossing"]
    assert first.count("SKI stops being faster") == 1 and "(between 8 and 16)" in first
    assert "SKI starts being faster at m ≈" in first and "(between 16 and 32)" in first
    assert first.endswith("within noise of each other at m = 64")
    assert rows[1]["crossing"] == "SKI faster at every m where the two separate"
    assert rows[2]["crossing"] == ("TNO faster at every m where the two separate; "
                                   "within noise of each other at m = 4")


def test_slope_uncertainty_and_trust():
    ns = [256, 1024, 4096, 16384]
    exact = timed("a", {n: (n / 110, n / 100, n / 90) for n in ns})
    (fit,) = slopes(exact)
    assert fit["slope"] == pytest.approx(1.0) and fit["slope_se"] == pytest.approx(0, abs=1e-12)
    assert speed.slope_trust(fit) == "ok" and speed.slope_text(fit) == "1.00 ± 0.00"
    # a 3-round grid whose times are fixed costs with noise: flat, noisy, few rounds
    noisy = timed("b", {256: (0.5, 1.0, 1.6), 1024: (0.7, 0.9, 1.5), 4096: (0.6, 1.05, 1.4)},
                  repeats=3)
    (fit,) = slopes(noisy)
    ys, xs = np.log([1.0, 0.9, 1.05]), np.log([256, 1024, 4096])
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = ys - (slope * xs + intercept)
    se = math.sqrt(residual @ residual / 1 / ((xs - xs.mean()) @ (xs - xs.mean())))
    assert fit["slope"] == pytest.approx(slope) and fit["slope_se"] == pytest.approx(se)
    trust = speed.slope_trust(fit)
    assert "3 rounds per point" in trust and "noisy" in trust and "flat" in trust
    (two,) = slopes(timed("c", {256: (1, 1, 1), 512: (2, 2, 2)}))
    assert two["slope_se"] is None and "2 lengths" in speed.slope_trust(two)
    assert speed.slope_text(two) == "1.00"
