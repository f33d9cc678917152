"""Quick timings for the Decomposition and Speed pages (docs/benchmarks.md).

``live_speed`` times, at one (n, r, m), the bidirectional SKI operator
(``tnn_core.operators.SKI``, parameters at their initial values: a timing does not depend
on them) against the FFT Toeplitz product and the dense product, forward only under
no_grad, so SKI serves A's circulant column from its cache as an operator in inference
does. ``ski_pareto`` pairs, for a given kernel, the approximation error of each (r, m)
(``tnn_core.analysis.decompose``) with the speed-up of that SKI over the FFT product.

Letters: B batch, n length, D channels, r rank, m band taps, N FFT size.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from functools import partial

import numpy as np
import torch

import tnn_core.bench.flops as flops
from tnn_core.bench.harness import interleaved_times, quartiles
from tnn_core.checks import check_int
from tnn_core.core.toeplitz import circulant_column, dense, fft_size
from tnn_core.operators import OperatorConfig, build_operator
from tnn_core.operators.fast.fft_product import spectral_product
from tnn_core.operators.fast.interp import INTERP_METHOD

__all__ = ["live_speed", "ski_pareto"]


def _ski(rank: int, band: int, dim: int, device: torch.device) -> torch.nn.Module:
    """The bidirectional SKI operator at (r, m) on D = ``dim`` channels, in eval mode."""
    config = OperatorConfig(kind="ski", causal=False, rank=rank, band=band)
    return build_operator(config, dim).to(device).eval()


def live_speed(n: int, rank: int, band: int, batch: int = 8, dim: int = 64, repeats: int = 7,
               warmup: int = 2, device: str = "cpu", seed: int = 0, dense_max_n: int = 4096,
               dense_budget_mb: float = 64.0) -> dict:
    """Time SKI (band + low rank) against the FFT and dense Toeplitz products at one setting.

    Forward only, under no_grad, on [batch, n, dim] (default 8 × 64 channels: a layer of
    the benchmarks and of the shipped models; at 4 channels fixed per-call costs decide
    and SKI looks slower than it is): ``warmup`` untimed runs of each, then ``repeats``
    interleaved rounds; the median and the interquartile range (IQR, third minus first
    quartile: the spread of the rounds) of each. SKI is the operator itself (``_ski``);
    the Toeplitz kernel of the FFT and dense products is random (timing does not depend
    on the values).

    The dense product needs one n × n matrix per channel; those are built for at most
    ``dense_budget_mb`` MB of channels (all 64 up to n = 512, 16 at 1024, 1 at 4096)
    and the time is scaled to ``dim`` channels (the channels are independent products of
    equal cost); ``dense_channels`` says how many were timed. None above ``dense_max_n``.

    Returns ms: ``ski_ms``, ``fft_ms``, ``dense_ms``, their ``*_iqr_ms`` and
    ``*_quartiles_ms`` (first quartile, median, third quartile); speed-ups
    ``speedup_vs_fft`` = fft/ski and ``speedup_vs_dense`` = dense/ski; the flops of each
    product on the whole [batch, n, dim] (``ski_flops``, ``fft_flops``, ``dense_flops``,
    from ``tnn_core.bench.flops``; the dense count whether timed or not); and n, rank,
    band, batch, dim, repeats, warmup, dense_channels, interp_method, device, threads.
    """
    check_int("n", n, 2)
    check_int("rank", rank, 2, n, span="[2, n]")
    for name, value in (("band", band), ("batch", batch), ("dim", dim), ("repeats", repeats)):
        check_int(name, value, 1)
    check_int("warmup", warmup, 0)
    dev = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, dim, generator=g).to(dev)  # (B, n, D)
    coeffs = torch.randn(dim, 2 * n - 1, generator=g).to(dev)  # (D, 2n-1)
    N = fft_size(n)
    spectrum = torch.fft.rfft(circulant_column(coeffs, N), n=N)  # (D, N//2+1)
    ski = _ski(rank, band, dim, dev)
    fns = {
        "ski": lambda: ski(x),
        "fft": lambda: spectral_product(x.transpose(1, 2), spectrum, N),
    }
    dense_channels = 0
    if n <= dense_max_n:
        dense_channels = max(1, min(dim, int(dense_budget_mb * 2**20 // (4 * n * n))))
        fns["dense"] = _dense_product(coeffs[:dense_channels], x[..., :dense_channels])
    ms, iqr, spans = _medians(interleaved_times(fns, repeats, warmup, dev, no_grad=True),
                              dim / max(dense_channels, 1))
    dense_ms = ms.get("dense")
    return dict(n=n, rank=rank, band=band, batch=batch, dim=dim, repeats=repeats,
                warmup=warmup, ski_ms=ms["ski"], fft_ms=ms["fft"], dense_ms=dense_ms,
                ski_iqr_ms=iqr["ski"], fft_iqr_ms=iqr["fft"], dense_iqr_ms=iqr.get("dense"),
                ski_quartiles_ms=spans["ski"], fft_quartiles_ms=spans["fft"],
                dense_quartiles_ms=spans.get("dense"),
                ski_flops=flops.ski_flops(n, rank, band, batch, dim),
                fft_flops=flops.fft_product_flops(n, batch, dim),
                dense_flops=flops.dense_flops(n, batch, dim),
                dense_channels=dense_channels, speedup_vs_fft=ms["fft"] / ms["ski"],
                speedup_vs_dense=None if dense_ms is None else dense_ms / ms["ski"],
                interp_method=INTERP_METHOD, device=str(dev), threads=torch.get_num_threads())


def _dense_product(coeffs: torch.Tensor, x: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The dense product of k channels: coeffs [k, 2n-1], x [B, n, k]."""
    M = dense(coeffs)  # (k, n, n)
    xt = x.permute(2, 1, 0)  # (k, n, B)
    return lambda: torch.matmul(M, xt)


def _medians(times: dict[str, list[float]], dense_scale: float
             ) -> tuple[dict[str, float], dict[str, float], dict[str, tuple[float, float, float]]]:
    """Per product: the median, the IQR and (first quartile, median, third quartile) of its
    rounds in ms; the dense product's scaled by ``dense_scale`` (to all D channels)."""
    ms, iqr, spans = {}, {}, {}
    for key, values in times.items():
        scale = dense_scale if key == "dense" else 1.0
        low, high = quartiles(values)
        ms[key], iqr[key] = statistics.median(values) * scale, (high - low) * scale
        spans[key] = (low * scale, ms[key], high * scale)
    return ms, iqr, spans


def ski_pareto(kernel_coeffs, settings: Iterable[tuple[int, int]], batch: int = 8, dim: int = 64,
               repeats: int = 5, method: str = "sample", device: str = "cpu", seed: int = 0
               ) -> list[dict]:
    """Error against speed-up for SKI settings on one kernel.

    kernel_coeffs: [2n-1] (torch or numpy), lags -(n-1)..n-1. settings: (rank, band)
    pairs. For each: ``error`` = ``decompose(coeffs, band, rank, causal=False,
    method).errors.relative_frobenius`` and the forward time of SKI at (r, m) against
    the FFT product with this kernel on D = ``dim`` channels, a layer's width (all timed
    in the same interleaved rounds; at D = 4 fixed per-call costs would decide instead).
    Returns dicts: rank, band, n, error, ski_ms, fft_ms (medians) with their quartiles
    ``*_p25_ms``, ``*_p75_ms``, speedup (fft/ski of the medians), and the flops of each
    product on [batch, n, dim] (``ski_flops``, ``fft_flops``).
    """
    from tnn_core.analysis.decompose import decompose  # scipy: only when a pareto is asked for

    settings = [(int(r), int(m)) for r, m in settings]
    if not settings:
        raise ValueError("settings must hold at least one (rank, band) pair")
    t = torch.as_tensor(np.asarray(kernel_coeffs) if not isinstance(kernel_coeffs, torch.Tensor)
                        else kernel_coeffs).detach().to(torch.float64).cpu()
    if t.dim() != 1 or t.shape[0] % 2 == 0:
        raise ValueError(f"kernel_coeffs must be 1-D with 2n-1 lags; got shape {tuple(t.shape)}")
    n = (t.shape[0] + 1) // 2
    errors = {(r, m): float(decompose(t, m, r, causal=False, method=method)
                            .errors.relative_frobenius) for r, m in settings}
    dev = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, dim, generator=g).to(dev)  # (B, n, D)
    N = fft_size(n)
    coeffs = t.to(device=dev, dtype=torch.float32).expand(dim, -1)  # (D, 2n-1)
    spectrum = torch.fft.rfft(circulant_column(coeffs, N), n=N)  # (D, N//2+1)
    fns: dict[str, Callable[[], object]] = {
        "fft": lambda: spectral_product(x.transpose(1, 2), spectrum, N)}
    for r, m in settings:
        fns[f"{r},{m}"] = partial(_ski(r, m, dim, dev), x)
    times = interleaved_times(fns, repeats, 1, dev, no_grad=True)
    ms = {key: statistics.median(values) for key, values in times.items()}
    q = {key: quartiles(values) for key, values in times.items()}
    fft_flops = flops.fft_product_flops(n, batch, dim)
    return [dict(rank=r, band=m, n=n, error=errors[(r, m)], ski_ms=ms[f"{r},{m}"],
                 ski_p25_ms=q[f"{r},{m}"][0], ski_p75_ms=q[f"{r},{m}"][1],
                 fft_ms=ms["fft"], fft_p25_ms=q["fft"][0], fft_p75_ms=q["fft"][1],
                 speedup=ms["fft"] / ms[f"{r},{m}"],
                 ski_flops=flops.ski_flops(n, r, m, batch, dim), fft_flops=fft_flops)
            for r, m in settings]
