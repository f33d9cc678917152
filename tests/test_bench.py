"""tnn_core.bench (the harness, its record helpers, the live readouts) and the fast paths it
picks between (tnn_core.operators.functional), against their references. Nothing here is
timed: the numbers are only checked for shape and sanity."""

from __future__ import annotations

import json
import math
import threading

import pytest
import torch
import torch.nn.functional as F

from tnn_core.bench import (
    BenchConfig,
    crossovers,
    live_speed,
    make_case,
    markdown_tables,
    ratio,
    run_grid,
    ski_pareto,
    slopes,
)
from tnn_core.bench.__main__ import main as bench_main
from tnn_core.bench.baselines import Attention, TnoReference
from tnn_core.bench.memory import profiler_peak_mb, rss_peak_mb
from tnn_core.core.interpolation import interpolation, interpolation_matrix
from tnn_core.core.toeplitz import apply_spectrum, circulant_column, fft_size, matvec_last
from tnn_core.operators import OperatorConfig, build_operator
from tnn_core.operators.fast.band import BAND_METHODS, band_conv, weight_grad_gemm
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product
from tnn_core.operators.fast.interp import INTERP_METHODS, interp_plan, interp_w, interp_wt
from tnn_core.operators.fast.ski_fused import ski_bidirectional

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


def test_make_case_runs_both_modes():
    spec = dict(op="ski", causal=False, n=20, mode="forward+backward", batch=2, dim=4, rank=4,
                band=3, heads=2, decay=0.9, device="cpu", seed=0)
    run, reset = make_case(spec)
    run()
    reset()
    run, reset = make_case({**spec, "mode": "forward"})
    run()


def test_memory_methods():
    assert profiler_peak_mb(lambda: torch.zeros(2**20)) == pytest.approx(4.0, rel=0.01)
    spec = dict(op="tno", causal=False, n=64, mode="forward+backward", batch=1, dim=8, rank=4,
                band=3, heads=2, decay=0.9, device="cpu", seed=0, threads=1)
    mb = rss_peak_mb(spec)
    assert mb is not None and 0 <= mb < 500


# -- the live readouts -------------------------------------------------------------------


def test_live_speed_keys():
    out = live_speed(256, rank=16, band=5, repeats=2)
    for key in ("ski_ms", "fft_ms", "dense_ms", "speedup_vs_fft", "speedup_vs_dense"):
        assert out[key] > 0
    assert out["n"] == 256 and out["interp_method"] in INTERP_METHODS
    assert out["speedup_vs_fft"] == pytest.approx(out["fft_ms"] / out["ski_ms"])
    assert out["batch"] == 8 and out["dim"] == 64 and out["dense_channels"] == 64  # 16 MB
    assert live_speed(300, rank=8, band=3, repeats=1, dense_max_n=256)["dense_ms"] is None
    part = live_speed(256, rank=8, band=3, repeats=1, dim=8, dense_budget_mb=0.5)
    assert part["dense_channels"] == 2 and part["dense_ms"] > 0  # 2 x 256 KB matrices
    with pytest.raises(ValueError, match="rank"):
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


# -- the fast paths the operators pick between --------------------------------------------

SIZES = [1, 2, 3, 7, 31, 64, 100, 257]


@pytest.mark.parametrize("n", SIZES)
def test_products_equal_references(n):
    g = torch.Generator().manual_seed(n)
    N = fft_size(n)
    x = torch.randn(3, 4, n, dtype=F64, generator=g, requires_grad=True)
    c = torch.randn(4, 2 * n - 1, dtype=F64, generator=g, requires_grad=True)
    y, ref = circulant_product(x, circulant_column(c, N), N), matvec_last(c, x, N)
    gy = torch.randn(ref.shape, dtype=F64, generator=g)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    for a, b in zip(torch.autograd.grad(y, (x, c), gy), torch.autograd.grad(ref, (x, c), gy),
                    strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-11)
    K = torch.randn(4, N // 2 + 1, dtype=torch.complex128, generator=g, requires_grad=True)
    y, ref = spectral_product(x, K, N), apply_spectrum(K, x, N)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    for a, b in zip(torch.autograd.grad(y, (x, K), gy), torch.autograd.grad(ref, (x, K), gy),
                    strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-11)
    # a short (causal) column and a per-head column broadcast over channels
    short = torch.randn(2, 1, n, dtype=F64, generator=g, requires_grad=True)
    xh = torch.randn(3, 2, 2, n, dtype=F64, generator=g, requires_grad=True)
    full = torch.cat([short.new_zeros(2, 1, n - 1), short], dim=-1).expand(2, 2, -1)
    ref = torch.stack([matvec_last(full[h], xh[:, h], N) for h in range(2)], dim=1)
    torch.testing.assert_close(circulant_product(xh, short, N), ref, rtol=0, atol=1e-12)


def test_products_gradcheck():
    x = torch.randn(1, 2, 3, dtype=F64, requires_grad=True)
    col = torch.randn(2, 6, dtype=F64, requires_grad=True)
    K = torch.randn(2, 4, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, c: circulant_product(x, c, 6), (x, col))
    assert torch.autograd.gradcheck(lambda x, K: spectral_product(x, K, 6), (x, K))
    with pytest.raises(ValueError, match="N must be"):
        circulant_product(x, col[:, :4], 4)


@pytest.mark.parametrize("n, r", [(1, 2), (2, 2), (3, 8), (7, 3), (31, 5), (64, 8), (100, 16),
                                  (257, 32), (1000, 64), (1024, 64)])
@pytest.mark.parametrize("route", INTERP_METHODS)
def test_interp_routes_equal_dense_w(route, n, r):
    g = torch.Generator().manual_seed(n + r)
    plan = interp_plan(n, r, F64)
    W = interpolation_matrix(interpolation(n, r))  # (n, r)
    x = torch.randn(2, n, 3, dtype=F64, generator=g, requires_grad=True)
    z = torch.randn(2, r, 3, dtype=F64, generator=g, requires_grad=True)
    torch.testing.assert_close(interp_w(plan, z, route), W @ z, rtol=0, atol=1e-12)
    torch.testing.assert_close(interp_wt(plan, x, route), W.T @ x, rtol=0, atol=1e-11)
    if n <= 64:  # the adjoint pair: gradients through each route
        (gz,) = torch.autograd.grad(interp_w(plan, z, route).square().sum(), z)
        torch.testing.assert_close(gz, W.T @ (2 * W @ z), rtol=0, atol=1e-11)
        (gx,) = torch.autograd.grad(interp_wt(plan, x, route).square().sum(), x)
        torch.testing.assert_close(gx, W @ (2 * W.T @ x), rtol=0, atol=1e-11)


@pytest.mark.parametrize("n", [1, 2, 7, 31, 100])
@pytest.mark.parametrize("method", BAND_METHODS)
def test_band_methods_equal_conv1d(method, n):
    g = torch.Generator().manual_seed(n)
    for m in (1, 2, 5, 8, 17, 32):  # m >= 14: the tap gradient by the blocked GEMM
        w = torch.randn(4, m, dtype=F64, generator=g, requires_grad=True)
        x = torch.randn(2, n, 4, dtype=F64, generator=g, requires_grad=True)
        for left in sorted({0, m // 2, m - 1}):
            ref = F.conv1d(F.pad(x.transpose(1, 2), (left, m - 1 - left)), w[:, None],
                           groups=4).transpose(1, 2)
            y = band_conv(x, w, left, method)
            torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
            gy = torch.randn(ref.shape, dtype=F64, generator=g)
            got, want = torch.autograd.grad(y, (x, w), gy), torch.autograd.grad(ref, (x, w), gy)
            for a, b in zip(got, want, strict=True):
                torch.testing.assert_close(a, b, rtol=0, atol=1e-11)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 31, 100, 257])
@pytest.mark.parametrize("pad", [0, 1, 4, 7, 16])
def test_band_weight_grad_gemm_equals_direct_sum(n, pad):
    """The blocked-GEMM tap gradient equals Σ_b Σ_i g[b, i, d] x[b, i + k - pad, d]."""
    g = torch.Generator().manual_seed(n + pad)
    x = torch.randn(3, n, 5, dtype=F64, generator=g)
    gy = torch.randn(3, n, 5, dtype=F64, generator=g)
    want = torch.zeros(5, 2 * pad + 1, dtype=F64)
    for k in range(2 * pad + 1):
        s = k - pad
        lo, hi = max(0, -s), min(n, n - s)
        if lo < hi:
            want[:, k] = (gy[:, lo:hi] * x[:, lo + s : hi + s]).sum((0, 1))
    torch.testing.assert_close(weight_grad_gemm(gy, x, pad), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("route", INTERP_METHODS)
def test_ski_operator_same_on_every_route(route):
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind="ski", rank=8, band=5), 3).double()
    x = torch.randn(2, 100, 3, dtype=F64)
    expected = torch.einsum("cij,bjc->bic", op.matrix(100), x)
    op.interp_method = route
    for band_method in BAND_METHODS:
        op.band_method = band_method
        torch.testing.assert_close(op(x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["tno", "ski", "fd"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_no_grad_cache_is_invalidated_by_parameter_changes(kind, causal):
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind=kind, causal=causal, rank=8, band=5), 3).double()
    x = torch.randn(2, 50, 3, dtype=F64)
    with torch.no_grad():
        first = op(x)
        torch.testing.assert_close(op(x), first, rtol=0, atol=0)  # served from the cache
        for p in op.parameters():
            p.data.mul_(1.5)  # through .data: no version bump, still caught
        second = op(x)
    torch.testing.assert_close(second, op(x), rtol=0, atol=1e-12)  # equals the autograd path
    assert not torch.allclose(first, second)


@pytest.mark.parametrize("route", INTERP_METHODS)
@pytest.mark.parametrize("n, band", [(1, 4), (2, 3), (31, 4), (100, 5)])
def test_ski_fused_node_equals_parts(n, band, route):
    """The one-node SKI equals band + low rank computed by autograd of the parts, values
    and every gradient; with no band it is the low-rank part alone."""
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind="ski", rank=8, band=band), 3).double()
    op.interp_method = route  # n = 100: "block" adds W z into the output in place
    x = torch.randn(2, n, 3, dtype=F64, requires_grad=True)
    gy = torch.randn(2, n, 3, dtype=F64)
    params = (x, op.band_weight, op.knots)
    fused = torch.autograd.grad(op(x), params, gy)  # the one-node path
    parts = torch.autograd.grad(op._band(x) + op._low_rank(x), params, gy)
    for a, b in zip(fused, parts, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    column = circulant_column(op.inducing_kernel(n), fft_size(8))
    alone = ski_bidirectional(x, None, column, op.plan(n), route, 0)
    torch.testing.assert_close(alone, op._low_rank(x), rtol=0, atol=1e-12)
    got = torch.autograd.grad(alone, (x, op.knots), gy)
    want = torch.autograd.grad(op._low_rank(x), (x, op.knots), gy)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape, lead", [((5, 4, 33), (4,)), ((3, 2, 3, 17), (2, 1))])
def test_products_in_batch_chunks(monkeypatch, shape, lead):
    """Large products run chunk by chunk over dim 0 (small temporaries); same numbers."""
    import tnn_core.operators.fast.fft_product as fft_product

    monkeypatch.setattr(fft_product, "_CHUNK_BYTES", 1 << 12)
    n = shape[-1]
    N = fft_size(n)
    assert len(fft_product._batch_chunks(torch.zeros(shape, dtype=F64), len(lead), N)) > 1
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, dtype=F64, generator=g, requires_grad=True)
    col = torch.randn(*lead, N, dtype=F64, generator=g, requires_grad=True)
    K = torch.randn(*lead, N // 2 + 1, dtype=torch.complex128, generator=g, requires_grad=True)
    for y, spectrum, kernel in [(circulant_product(x, col, N), torch.fft.rfft(col, n=N), col),
                                (spectral_product(x, K, N), K, K)]:
        ref = torch.fft.irfft(torch.fft.rfft(x, n=N) * spectrum, n=N)[..., :n]
        gy = torch.randn(ref.shape, dtype=F64, generator=g)
        torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
        got = torch.autograd.grad(y, (x, kernel), gy)
        want = torch.autograd.grad(ref, (x, kernel), gy)
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-11)
