"""Where SKI's time goes on this device, and where it stops paying off.

* ``interp_routes``: forward+backward time of W y and Wᵀ x by each route of
  ``bench.routes`` ("block", "dense", "interpolate", "gather") over n and r: the
  measurement behind SKI's route, ``operators.fast.interp.INTERP_METHOD``.
* ``ski_parts``: forward+backward time of bidirectional SKI, of its band alone and of
  its low-rank part alone, next to TNO, at one (n, r, m).
* ``band_crossover``: bidirectional SKI against TNO over band sizes m and lengths n,
  forward+backward, and per n the m at which SKI stops being faster (log-interpolated).

All timings: interleaved rounds, medians (``harness.interleaved_ms``).
Letters: B batch, n length, D channels, r rank, m band taps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import partial

import torch

from tnn_core.bench.cases import train_step
from tnn_core.bench.harness import interleaved_ms
from tnn_core.bench.routes import ROUTES, route_plan, route_w, route_wt
from tnn_core.core.toeplitz import circulant_column, fft_size
from tnn_core.operators import OperatorConfig, build_operator, seeded_weights
from tnn_core.operators.fast.band import band_conv
from tnn_core.operators.fast.ski_fused import ski_bidirectional

__all__ = ["interp_routes", "ski_parts", "band_crossover"]


def interp_routes(ns: Iterable[int] = (1024, 4096, 16384), ranks: Iterable[int] = (16, 64, 256),
                  batch: int = 8, dim: int = 64, repeats: int = 11, device: str = "cpu",
                  gather_max_n: int = 4096, seed: int = 0) -> list[dict]:
    """One record per (n, r, route): n, rank, route, w_ms (W z), wt_ms (Wᵀ x), both
    forward+backward on [B, n, D]. "gather" is skipped above ``gather_max_n``."""
    dev = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    records = []
    for n in ns:
        for r in ranks:
            if r > n:
                continue
            plan = route_plan(n, r, torch.float32, dev)
            x = torch.randn(batch, n, dim, generator=g).to(dev).requires_grad_(True)
            z = torch.randn(batch, r, dim, generator=g).to(dev).requires_grad_(True)
            gy = torch.randn(batch, n, dim, generator=g).to(dev)
            gz = torch.randn(batch, r, dim, generator=g).to(dev)
            fns, resets = {}, {}
            routes = [m for m in ROUTES if m != "gather" or n <= gather_max_n]
            for route in routes:
                fns[("w", route)] = partial(_backward, route_w, plan, z, route, gy)
                fns[("wt", route)] = partial(_backward, route_wt, plan, x, route, gz)
                resets[("w", route)] = resets[("wt", route)] = _clear(x, z)
            ms = interleaved_ms(fns, repeats, 1, dev, resets=resets)
            for route in routes:
                records.append(dict(n=n, rank=r, route=route, w_ms=ms[("w", route)],
                                    wt_ms=ms[("wt", route)], batch=batch, dim=dim))
    return records


def _backward(apply, plan, inp: torch.Tensor, route: str, grad: torch.Tensor) -> None:
    apply(plan, inp, route).backward(grad)


def _clear(*tensors: torch.Tensor):
    def reset():
        for t in tensors:
            t.grad = None

    return reset


def ski_parts(n: int = 8192, rank: int = 64, band: int = 8, batch: int = 8, dim: int = 64,
              repeats: int = 21, device: str = "cpu", seed: int = 0) -> dict:
    """Forward+backward ms of bidirectional SKI, its band, its low-rank part, and TNO.

    SKI runs as one autograd node (``ski_fused.ski_bidirectional``); its band
    (``band_conv``) and its low-rank part (the same node without the band) are timed on
    their own, with the operator's parameters.
    Returns n, rank, band, ski_ms, band_ms, low_rank_ms, tno_ms, low_rank_share
    (low_rank_ms / ski_ms), low_rank_share_of_parts (low_rank_ms / (band_ms +
    low_rank_ms)) and tno_over_ski (tno_ms / ski_ms)."""
    dev = torch.device(device)
    with seeded_weights(seed):
        ski = build_operator(OperatorConfig(kind="ski", rank=rank, band=band), dim).to(dev)
        tno = build_operator(OperatorConfig(kind="tno"), dim).to(dev)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, n, dim, generator=g).to(dev).requires_grad_(True)
    gy = torch.randn(batch, n, dim, generator=g).to(dev)

    def band_part(inp: torch.Tensor) -> torch.Tensor:
        return band_conv(inp, ski.band_weight, band // 2)  # (B, n, D)

    def low_rank_part(inp: torch.Tensor) -> torch.Tensor:
        column = circulant_column(ski.inducing_kernel(n), fft_size(rank))  # (D, Nr)
        return ski_bidirectional(inp, None, column, rank, 0)  # (B, n, D)

    parts = {"ski": ski, "band": band_part, "tno": tno, "low_rank": low_rank_part}
    fns, resets = {}, {}
    for key, fn in parts.items():
        fns[key] = lambda fn=fn: fn(x).backward(gy)
        module = tno if key == "tno" else ski
        resets[key] = lambda module=module: (_clear(x)(), module.zero_grad(set_to_none=True))
    ms = interleaved_ms(fns, repeats, 2, dev, resets=resets)
    return dict(n=n, rank=rank, band=band, batch=batch, dim=dim, ski_ms=ms["ski"],
                band_ms=ms["band"], low_rank_ms=ms["low_rank"], tno_ms=ms["tno"],
                low_rank_share=ms["low_rank"] / ms["ski"],
                low_rank_share_of_parts=ms["low_rank"] / (ms["band"] + ms["low_rank"]),
                tno_over_ski=ms["tno"] / ms["ski"])


def band_crossover(bands: Iterable[int] = (4, 8, 16, 32, 64),
                   ns: Iterable[int] = (1024, 4096, 16384), rank: int = 64, batch: int = 8,
                   dim: int = 64, repeats: int = 11, device: str = "cpu", seed: int = 0
                   ) -> tuple[list[dict], list[dict]]:
    """SKI (each m) against TNO, bidirectional, forward+backward, at each n.

    Returns (records, crossings): records n, band, ski_ms, tno_ms, speedup (tno/ski);
    crossings per n: n, band (the m where speedup = 1, log-interpolated; None when SKI
    is faster, or slower, at every m measured), faster_below (True: SKI wins below it)."""
    dev = torch.device(device)
    bands = list(bands)
    records, crossings = [], []
    for n in ns:
        with seeded_weights(seed):
            tno = build_operator(OperatorConfig(kind="tno"), dim).to(dev)
            skis = {m: build_operator(OperatorConfig(kind="ski", rank=rank, band=m), dim).to(dev)
                    for m in bands}
        g = torch.Generator().manual_seed(seed + 1)
        x = torch.randn(batch, n, dim, generator=g).to(dev).requires_grad_(True)
        gy = torch.randn(batch, n, dim, generator=g).to(dev)
        fns, resets = {}, {}
        for key, module in [("tno", tno)] + [(m, skis[m]) for m in bands]:
            fns[key], resets[key] = train_step(module, x, gy)
        ms = interleaved_ms(fns, repeats, 1, dev, resets=resets)
        row = []
        for m in bands:
            rec = dict(n=n, band=m, rank=rank, ski_ms=ms[m], tno_ms=ms["tno"],
                       speedup=ms["tno"] / ms[m])
            records.append(rec)
            row.append(rec)
        crossing = dict(n=n, band=None, faster_below=None)
        for a, b in zip(row, row[1:], strict=False):
            la, lb = math.log(a["speedup"]), math.log(b["speedup"])
            if la == 0 or (la > 0) != (lb > 0):
                frac = la / (la - lb) if la != lb else 0.0
                m_cross = math.exp(math.log(a["band"]) + frac
                                   * (math.log(b["band"]) - math.log(a["band"])))
                crossing = dict(n=n, band=m_cross, faster_below=la > 0)
                break
        crossings.append(crossing)
    return records, crossings
