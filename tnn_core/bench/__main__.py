"""``python -m tnn_core.bench``: time the token mixers and print markdown tables.

Examples:
    python -m tnn_core.bench                                # the full grid, CPU, 2 threads
    python -m tnn_core.bench --ns 1024 4096 --ops tno tno-reference fd --json out.json
    python -m tnn_core.bench --quick                        # a tiny grid, seconds
    python -m tnn_core.bench --togeipi-table                # Togeipi vs attention (report's grid)
    python -m tnn_core.bench --ski-study                    # SKI routes, parts and band crossover
    python -m tnn_core.bench --fd-study                     # FD vs TNO: the product and the rest
    python -m tnn_core.bench --analysis                     # the Decomposition page's compute path
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from tnn_core.allocator import ENV_VAR, allocator_state, keep_freed_memory
from tnn_core.bench.cases import MODES, OPS
from tnn_core.bench.harness import BenchConfig, crossovers, markdown_tables, run_grid, slopes


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tnn_core.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    p.add_argument("--causal", choices=("both", "bidirectional", "causal"), default="both")
    p.add_argument("--ns", nargs="+", type=int, default=[256, 512, 1024, 2048, 4096, 8192, 16384])
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--batch", type=int, default=8, help="B")
    p.add_argument("--dim", type=int, default=64, help="D, the operator's channels")
    p.add_argument("--rank", type=int, default=64, help="SKI inducing points r")
    p.add_argument("--band", type=int, default=8, help="SKI band taps m")
    p.add_argument("--heads", type=int, default=8, help="attention / togeipi heads")
    p.add_argument("--repeats", type=int, default=21, help="timed rounds (median reported)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="torch threads (0: leave as is)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--memory", default="auto", choices=("auto", "profiler", "rss", "none"))
    p.add_argument("--allocator", default="keep", choices=("keep", "default"),
                   help="keep: glibc keeps freed memory (tnn_core.allocator, as every tnn_core "
                        "entry point does); default: glibc's own mmap/trim behaviour")
    p.add_argument("--togeipi-max-n", type=int, default=4096)
    p.add_argument("--attention-max-n", type=int, default=4096)
    p.add_argument("--json", metavar="PATH", help="write one record per (op, causal, n, mode)")
    p.add_argument("--quick", action="store_true", help="a tiny grid (n = 64, 256; 3 repeats)")
    p.add_argument("--togeipi-table", action="store_true",
                   help="Togeipi vs multi-head attention over the project's L x D x H grid")
    p.add_argument("--table-batch", type=int, default=2, help="batch of --togeipi-table")
    p.add_argument("--table-repeats", type=int, default=7, help="repeats of --togeipi-table")
    p.add_argument("--ski-study", action="store_true",
                   help="SKI's W routes, its parts at n=8192, and the band crossover vs TNO")
    p.add_argument("--fd-study", action="store_true",
                   help="FD and TNO next to their shared FFT product: where FD can save time")
    p.add_argument("--analysis", action="store_true",
                   help="time the Decomposition page's compute path at n = 1024, 4096")
    return p


def _grid(args) -> list[dict]:
    causal = {"both": (False, True), "bidirectional": (False,), "causal": (True,)}[args.causal]
    config = BenchConfig(
        ops=tuple(args.ops), causal=causal, ns=tuple(args.ns), modes=tuple(args.modes),
        batch=args.batch, dim=args.dim, rank=args.rank, band=args.band, heads=args.heads,
        repeats=args.repeats, warmup=args.warmup, threads=args.threads or None,
        device=args.device, memory=args.memory, togeipi_max_n=args.togeipi_max_n,
        attention_max_n=args.attention_max_n)
    if args.quick:
        config = BenchConfig(**{**config.to_dict(), "ns": (64, 256), "repeats": 3, "warmup": 1,
                                "batch": 2, "dim": 16})

    def progress(fraction: float, rec: dict) -> None:
        label = "causal" if rec["causal"] else "bidir"
        print(f"[{100 * fraction:5.1f}%] {rec['op']:>13} {label:>6} n={rec['n']:<6} "
              f"{rec['mode']:<16} {rec['median_ms']:9.2f} ms", file=sys.stderr, flush=True)

    print(f"torch {torch.__version__}, device {config.device}, threads {config.threads}, "
          f"B={config.batch} D={config.dim} r={config.rank} m={config.band} "
          f"heads={config.heads}, median of {config.repeats} interleaved rounds, "
          f"allocator {allocator_state()}", flush=True)
    records = run_grid(config, on_progress=progress)
    for rec in records:
        rec["allocator"] = allocator_state()
    print(markdown_tables(records))
    print("\nLog-log slope of time vs n\n")
    print("| op | causal | mode | slope | n range |\n|---|---|---|---|---|")
    for s in slopes(records):
        print(f"| {s['op']} | {s['causal']} | {s['mode']} | {s['slope']:.2f} | "
              f"{s['n_min']}..{s['n_max']} |")
    cross = crossovers(records)
    if cross:
        print("\nCrossovers (n where one op overtakes another)\n")
        print("| causal | mode | n | faster above | faster below |\n|---|---|---|---|---|")
        for c in cross:
            print(f"| {c['causal']} | {c['mode']} | {c['n']:.0f} | {c['faster_above']} | "
                  f"{c['faster_below']} |")
    return records


def _togeipi_table(args) -> list[dict]:
    from tnn_core.bench.togeipi_table import run_togeipi_table, togeipi_markdown

    def progress(fraction: float, rec: dict) -> None:
        print(f"[{100 * fraction:5.1f}%] H={rec['heads']} D={rec['dim']} L={rec['length']}: "
              f"togeipi {rec['togeipi_ms']:.2f} ms, attention {rec['attention_ms']:.2f} ms",
              file=sys.stderr, flush=True)

    records = run_togeipi_table(batch=args.table_batch, repeats=args.table_repeats,
                                threads=args.threads or None, device=args.device,
                                on_progress=progress)
    print(togeipi_markdown(records))
    return records


def _ski_study(args) -> dict:
    from tnn_core.bench.ski_study import band_crossover, interp_routes, ski_parts

    threads = args.threads or None
    if threads:
        torch.set_num_threads(threads)
    routes = interp_routes(device=args.device)
    print("W routes, forward+backward ms (B=8, D=64)\n\n| n | r | route | W z | Wᵀ x |\n"
          "|---|---|---|---|---|")
    for rec in routes:
        print(f"| {rec['n']} | {rec['rank']} | {rec['route']} | {rec['w_ms']:.2f} | "
              f"{rec['wt_ms']:.2f} |")
    parts = ski_parts(device=args.device)
    print(f"\nSKI parts at n={parts['n']}, r={parts['rank']}, m={parts['band']} "
          f"(forward+backward ms): SKI {parts['ski_ms']:.2f}, band {parts['band_ms']:.2f}, "
          f"low rank {parts['low_rank_ms']:.2f} ({100 * parts['low_rank_share']:.0f}% of SKI, "
          f"{100 * parts['low_rank_share_of_parts']:.0f}% of band + low rank), "
          f"TNO {parts['tno_ms']:.2f} (TNO/SKI {parts['tno_over_ski']:.2f})")
    records, crossings = band_crossover(device=args.device)
    print("\nSKI vs TNO over band m, bidirectional, forward+backward: TNO/SKI\n")
    ms = sorted({r["band"] for r in records})
    print("| n | " + " | ".join(f"m={m}" for m in ms) + " | SKI stops winning at m |")
    print("|" + "---|" * (len(ms) + 2))
    for c in crossings:
        row = {r["band"]: r for r in records if r["n"] == c["n"]}
        cells = [f"{row[m]['speedup']:.2f}" for m in ms]
        where = "–" if c["band"] is None else f"{c['band']:.0f}"
        print(f"| {c['n']} | " + " | ".join(cells) + f" | {where} |")
    return dict(routes=routes, parts=parts, band_records=records, band_crossings=crossings)


def _fd_study(args) -> list[dict]:
    from tnn_core.bench.fd_study import fd_parts

    if args.threads:
        torch.set_num_threads(args.threads)
    records = fd_parts(device=args.device, dim=args.dim)
    print("FD vs TNO, forward+backward ms: the shared product and the kernel side "
          f"(operator - product), D={args.dim}\n\n| causal | B | n | tno | fd | product | "
          "tno kernel side | fd kernel side | tno / fd |\n|---|---|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['causal']} | {r['batch']} | {r['n']} | {r['tno_ms']:.2f} | {r['fd_ms']:.2f} "
              f"| {r['product_ms']:.2f} | {r['tno_kernel_ms']:.2f} | {r['fd_kernel_ms']:.2f} | "
              f"{r['fd_speedup']:.2f} |")
    return records


def _analysis() -> list[dict]:
    from tnn_core.bench.analysis_latency import run_analysis_bench

    rows = run_analysis_bench(ns=(1024, 4096))
    print("\nDecomposition page compute path (median ms)\n\n| n | stage | ms |\n|---|---|---|")
    for row in rows:
        print(f"| {row['n']} | {row['stage']} | {row['ms']:.1f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ[ENV_VAR] = args.allocator  # also for --memory rss's subprocesses
    keep_freed_memory()
    out: dict = {}
    if args.analysis:
        out["analysis"] = _analysis()
    if args.togeipi_table:
        out["togeipi_table"] = _togeipi_table(args)
    if args.ski_study:
        out["ski_study"] = _ski_study(args)
    if args.fd_study:
        out["fd_study"] = _fd_study(args)
    if not (args.analysis or args.togeipi_table or args.ski_study or args.fd_study):
        out["records"] = _grid(args)
    if args.json:
        payload = out["records"] if set(out) == {"records"} else out
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=1, default=str)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
