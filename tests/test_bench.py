"""tnn_core.bench: the harness, its record helpers, the memory probes, the baselines and the
live readouts. Timings are not checked for their values, only for how they are combined
(medians, ratios, scaling); the fast paths' correctness is tests/test_fast_paths.py."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest
import torch

from tnn_core.bench.__main__ import main as bench_main
from tnn_core.bench.baselines import Attention, TnoReference
from tnn_core.bench.cases import make_case
from tnn_core.bench.harness import (
    BenchConfig,
    crossovers,
    markdown_tables,
    ratio,
    run_grid,
    slopes,
)
from tnn_core.bench.memory import profiler_peak_mb, rss_peak_mb
from tnn_core.lab import speed
from tnn_core.lab.common.live import live_speed, ski_pareto
from tnn_core.operators import SKI, OperatorConfig, build_operator
from tnn_core.operators.fast.interp import INTERP_METHOD

F64 = torch.float64
TINY = dict(ns=(8, 16), batch=1, dim=8, rank=4, band=3, heads=2, repeats=2, warmup=0,
            memory="none", threads=1)


pytestmark = pytest.mark.usefixtures("one_thread")


# -- the harness ------------------------------------------------------------------------


def test_run_grid_records_and_progress():
    seen = []
    config = BenchConfig(**{**TINY, "ns": (8,)})
    records = run_grid(config, on_progress=lambda f, rec: seen.append((f, rec["op"])))
    assert len(records) == 6 * 2 * 1 * 2  # ops x causal x n x modes
    assert seen[-1][0] == pytest.approx(1.0) and len(seen) == len(records)
    keys = {(r["op"], r["causal"], r["n"], r["mode"]) for r in records}
    assert len(keys) == len(records)
    for rec in records:
        assert rec["median_ms"] > 0 and rec["p25_ms"] <= rec["median_ms"] <= rec["p75_ms"]
        assert rec["repeats"] == 2 and rec["peak_mem_mb"] is None and rec["threads"] == 1
    assert "| forward | bidir | tno |" in markdown_tables(records)


def test_run_grid_skips_and_stops():
    config = BenchConfig(**{**TINY, "togeipi_max_n": 8, "attention_max_n": 8,
                            "ops": ("tno", "togeipi", "attention"), "causal": (False,),
                            "modes": ("forward",)})
    records = run_grid(config)
    assert {(r["op"], r["n"]) for r in records} == {("tno", 8), ("togeipi", 8),
                                                   ("attention", 8), ("tno", 16)}
    stop = threading.Event()
    stop.set()
    assert run_grid(config, stop_event=stop) == []


def test_cli_writes_json(tmp_path, capsys):
    path = tmp_path / "bench.json"
    code = bench_main(["--ops", "tno", "fd", "--ns", "16", "32", "--batch", "1", "--dim", "8",
                       "--repeats", "1", "--warmup", "0", "--memory", "profiler", "--threads", "1",
                       "--causal", "bidirectional", "--json", str(path)])
    assert code == 0
    records = json.loads(path.read_text())
    assert len(records) == 2 * 2 * 2
    for rec in records:
        assert {"op", "causal", "n", "mode", "median_ms", "peak_mem_mb"} <= set(rec)
        assert rec["mem_method"] == "torch_profiler" and rec["peak_mem_mb"] >= 0
    out = capsys.readouterr().out
    assert "Median time (ms)" in out and "Log-log slope" in out


def test_bench_config_rejects_bad_values():
    for field, value in [("ops", ("bogus",)), ("modes", ("train",)), ("ns", (0,)),
                         ("repeats", 0), ("memory", "tracemalloc"), ("dim", 6)]:
        with pytest.raises(ValueError, match=field):
            BenchConfig(**{field: value})
    with pytest.raises(ValueError, match="bogus"):
        BenchConfig.from_dict({"bogus": 1})
    assert BenchConfig.from_dict(BenchConfig(**TINY).to_dict()) == BenchConfig(**TINY)


def synthetic(op: str, times: dict[int, float], causal=False, mode="forward") -> list[dict]:
    return [dict(op=op, causal=causal, mode=mode, n=n, median_ms=t) for n, t in times.items()]


def test_slopes_on_synthetic_records():
    ns = [256, 1024, 4096, 16384]
    records = (synthetic("linear", {n: 0.01 * n for n in ns})
               + synthetic("quadratic", {n: 1e-5 * n * n for n in ns})
               + synthetic("nlogn", {n: 1e-3 * n * math.log2(n) for n in ns}))
    got = {s["op"]: s["slope"] for s in slopes(records)}
    assert got["linear"] == pytest.approx(1.0)
    assert got["quadratic"] == pytest.approx(2.0)
    assert 1.0 < got["nlogn"] < 1.15
    assert {s["n_min"] for s in slopes(records)} == {256}
    assert slopes(records, n_min=4096)[0]["points"] == 2


def test_crossovers_on_synthetic_records():
    ns = [256, 1024, 4096]
    # a = n/100, b = n²/100000: equal at n = 1000, b faster below
    records = (synthetic("a", {n: n / 100 for n in ns})
               + synthetic("b", {n: n * n / 1e5 for n in ns}))
    (c,) = crossovers(records)
    assert c["n"] == pytest.approx(1000.0, rel=1e-9)
    assert c["faster_above"] == "a" and c["faster_below"] == "b"
    assert c["between"] == (256, 1024)
    assert crossovers(synthetic("a", {1: 1.0, 2: 2.0}) + synthetic("b", {1: 2.0, 2: 3.0})) == []
    assert ratio(records, "a", "b", False, "forward")[256] == pytest.approx(2.56 / 0.65536)


def test_make_case_runs_both_modes(monkeypatch):
    """A forward case runs the operator in eval mode without autograd; a forward+backward
    case leaves gradients on the parameters, and reset() drops them."""
    seen = []
    forward = SKI.forward
    here = threading.current_thread()

    def spy(self, x):
        if threading.current_thread() is not here:  # the app's warm-up may still run
            return forward(self, x)
        seen.append((self.training, torch.is_grad_enabled()))
        y = forward(self, x)
        seen[-1] += (self,)
        return y

    monkeypatch.setattr(SKI, "forward", spy)
    spec = dict(op="ski", causal=False, n=20, mode="forward+backward", batch=2, dim=4, rank=4,
                band=3, heads=2, decay=0.9, device="cpu", seed=0)
    run, reset = make_case(spec)
    run()
    training, grad, op = seen[-1]
    assert training and grad
    assert all(p.grad is not None for p in op.parameters())
    reset()
    assert all(p.grad is None for p in op.parameters())
    run, reset = make_case({**spec, "mode": "forward"})
    run()
    assert seen[-1][:2] == (False, False)
    for field, value in (("mode", "train"), ("op", "bogus")):
        with pytest.raises(ValueError, match=field):
            make_case({**spec, field: value})


@pytest.mark.slow  # measures memory in processes of its own
def test_memory_methods():
    assert profiler_peak_mb(lambda: torch.zeros(2**20)) == pytest.approx(4.0, rel=0.01)
    spec = dict(op="tno", causal=False, n=64, mode="forward+backward", batch=1, dim=8, rank=4,
                band=3, heads=2, decay=0.9, device="cpu", seed=0, threads=1)
    mb = rss_peak_mb(spec)
    assert mb is not None and 0 <= mb < 500


# -- the live readouts -------------------------------------------------------------------


def test_live_speed_times_the_ski_operator(monkeypatch):
    """The readout's SKI time is the operator's own forward (bidirectional, r, m as asked,
    no autograd): once per warm-up and once per round."""
    calls = []
    forward = SKI.forward
    here = threading.current_thread()

    def spy(self, x):
        if threading.current_thread() is here:  # not a background evaluation of another test
            calls.append((self.config.causal, self.config.rank, self.config.band,
                          torch.is_grad_enabled(), tuple(x.shape)))
        return forward(self, x)

    monkeypatch.setattr(SKI, "forward", spy)
    live_speed(64, rank=8, band=3, repeats=3, dim=8)
    assert calls == [(False, 8, 3, False, (8, 64, 8))] * (2 + 3)  # 2 warm-ups, 3 rounds
    calls.clear()
    ski_pareto(torch.ones(2 * 64 - 1, dtype=F64), [(4, 3), (16, 5)], batch=2, dim=4, repeats=2)
    assert sorted(set(calls)) == [(False, 4, 3, False, (2, 64, 4)),
                                  (False, 16, 5, False, (2, 64, 4))]
    assert len(calls) == 2 * (1 + 2)


def test_live_speed_keys():
    out = live_speed(256, rank=16, band=5, repeats=2)
    for key in ("ski_ms", "fft_ms", "dense_ms", "speedup_vs_fft", "speedup_vs_dense"):
        assert out[key] > 0
    assert out["n"] == 256 and out["interp_method"] == INTERP_METHOD
    assert out["speedup_vs_fft"] == pytest.approx(out["fft_ms"] / out["ski_ms"])
    assert out["batch"] == 8 and out["dim"] == 64 and out["dense_channels"] == 64  # 16 MB
    assert live_speed(300, rank=8, band=3, repeats=1, dense_max_n=256)["dense_ms"] is None
    part = live_speed(256, rank=8, band=3, repeats=1, dim=8, dense_budget_mb=0.5)
    assert part["dense_channels"] == 2 and part["dense_ms"] > 0  # 2 x 256 KB matrices
    with pytest.raises(ValueError, match=r"rank must be an integer in \[2, n\] = \[2, 16\]"):
        live_speed(16, rank=32, band=3)


def test_ski_pareto():
    pytest.importorskip("tnn_core.analysis")
    n = 64
    k = torch.arange(-(n - 1), n, dtype=F64)
    coeffs = 0.95 ** k.abs() + (k == 0).double()  # smooth decay plus a spike
    rows = ski_pareto(coeffs, [(4, 3), (16, 5)], batch=2, dim=4, repeats=1)
    assert [(r["rank"], r["band"]) for r in rows] == [(4, 3), (16, 5)]
    for row in rows:
        assert 0 <= row["error"] < 1 and row["speedup"] > 0 and row["n"] == n
    assert rows[1]["error"] < rows[0]["error"]


def test_fd_study_parts_add_up():
    from tnn_core.bench.fd_study import fd_parts

    rows = fd_parts(ns=(7,), batches=(1, 2), dim=4, repeats=1)
    assert [(r["causal"], r["batch"]) for r in rows] == [(False, 1), (False, 2), (True, 1),
                                                         (True, 2)]
    for r in rows:
        assert min(r["tno_ms"], r["fd_ms"], r["product_ms"]) > 0 and r["n"] == 7
        assert r["tno_kernel_ms"] == pytest.approx(r["tno_ms"] - r["product_ms"])
        assert r["fd_kernel_ms"] == pytest.approx(r["fd_ms"] - r["product_ms"])
        assert r["fd_speedup"] == pytest.approx(r["tno_ms"] / r["fd_ms"])


def test_ski_parts_low_rank_is_the_node_without_band():
    from tnn_core.bench.ski_study import ski_parts

    out = ski_parts(n=64, rank=8, band=3, batch=2, dim=4, repeats=1)
    assert min(out["ski_ms"], out["band_ms"], out["low_rank_ms"], out["tno_ms"]) > 0
    assert out["low_rank_share"] == pytest.approx(out["low_rank_ms"] / out["ski_ms"])


# -- the baselines -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 33])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_tno_reference_computes_what_tno_computes(causal, n):
    torch.manual_seed(0)
    tno = build_operator(OperatorConfig(kind="tno", causal=causal, decay=0.9), 6).double()
    x = torch.randn(2, n, 6, dtype=F64)
    for heads in (1, 2):
        torch.testing.assert_close(TnoReference(tno, heads)(x), tno(x), rtol=0, atol=1e-12)


def test_attention_baseline_is_causal():
    torch.manual_seed(0)
    att = Attention(8, 2, causal=True).double()
    x = torch.randn(1, 9, 8, dtype=F64, requires_grad=True)
    (grad,) = torch.autograd.grad(att(x)[:, 4].sum(), x)
    assert grad[:, 5:].abs().max() == 0 and grad[:, :5].abs().max() > 0


# -- the Speed page's view of the records (tnn_core.lab.speed) ----------------------------


def test_grid_view_lines_guides_and_tables():
    ns = [1024, 256, 4096]  # out of order on purpose
    records = (synthetic("b", {n: n * n / 1e5 for n in ns})
               + synthetic("a", {n: n / 100 for n in ns})
               + synthetic("a", {n: 2 * n / 100 for n in ns}, causal=True))
    for rec in records:
        rec["peak_mem_mb"] = None if rec["op"] == "b" else rec["n"] / 64
    view = speed.grid_view(records)
    assert [(p.causal, p.title) for p in view.panels] == [(False, "bidirectional"),
                                                         (True, "causal")]
    bidir = view.panels[0]
    assert [s.name for s in bidir.time] == ["a", "b"]
    np.testing.assert_array_equal(bidir.time[0].x, [256, 1024, 4096])
    np.testing.assert_allclose(bidir.time[1].y, [0.65536, 10.48576, 167.77216])
    np.testing.assert_allclose(bidir.memory[0].y, [4.0, 16.0, 64.0])
    assert np.isnan(bidir.memory[1].y).all()
    # guides start at the median time at the shortest n and grow as n, n log n, n²
    t0 = np.median([2.56, 0.65536])
    guides = {g.name: g for g in bidir.guides}
    for name, grow in (("O(n)", lambda n: n), ("O(n log n)", lambda n: n * np.log2(n)),
                       ("O(n²)", lambda n: n**2)):
        np.testing.assert_allclose(guides[name].y, t0 * grow(np.array([256, 1024, 4096.]))
                                   / grow(256.0))
    assert {(s["op"], s["causal"]): s["slope"] for s in view.slopes} == {
        ("a", False): "1.00 ± 0.00", ("b", False): "2.00 ± 0.00", ("a", True): "1.00 ± 0.00"}
    assert {s["trust"] for s in view.slopes} == {"ok"}
    assert view.crossovers == [dict(causal=False, mode="forward", faster_below="b",
                                    faster_above="a", n=1000, between="256–1024")]
    assert not view.missing


def test_bench_config_from_the_form():
    config = speed.bench_config(("tno", "ski"), "both", (256, 512), "forward", 2, 4, 8, 3, 3,
                                "cpu")
    assert config.causal == (False, True) and config.modes == ("forward",)
    assert config.heads == 1 and config.ns == (256, 512)
    assert speed.bench_config(("tno",), "causal", (256,), "forward", 2, 64, 8, 3, 3,
                              "cpu").heads == 8
    with pytest.raises(ValueError, match="ops"):
        speed.bench_config((), "causal", (256,), "forward", 2, 64, 8, 3, 3, "cpu")
