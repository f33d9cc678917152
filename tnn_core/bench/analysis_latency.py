"""Timings of the analysis page's compute path, per stage (for a CLI to print).

The page calls, after every slider move: ``decompose`` + ``.errors`` +
``.singular_values`` + ``decay_profile`` + ``frequency_response`` +
``error_curve``. Targets on the 2-core CPU: <= 300 ms
in all at n = 1024, <= 1.5 s at n = 4096 (r = 32, band = 9, spike_smooth).

Every stage builds a fresh Decomposition, so nothing cached is timed as free.
"""

from __future__ import annotations

from tnn_core.analysis.curves import CURVE_RANKS, error_curve
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.analysis.profiles import decay_profile, frequency_response
from tnn_core.bench.timing import median_ms

__all__ = ["run_analysis_bench"]


def run_analysis_bench(ns=(1024, 4096), repeats: int = 5, rank: int = 32, band: int = 9,
                       decay: float = 0.99, method: str = "fit") -> list[dict]:
    """Median wall time (ms) of each stage of the page's compute path at each n.

    Returns one dict per (n, stage): ``n``, ``stage``, ``ms``, ``repeats``. The stage
    "page total" runs the whole path once per repeat."""
    rows = []
    for n in ns:
        t = synthetic_kernel("spike_smooth", n, decay)  # (2n-1,)
        r = min(rank, n)

        def errors(t=t, r=r):
            return decompose(t, band, r, method=method).errors

        def singular_values(t=t, r=r):
            return decompose(t, band, r, method=method).singular_values

        def profiles(t=t):
            return decay_profile(t), frequency_response(t)

        def curve(t=t):
            return error_curve(t, band, CURVE_RANKS)

        def page(t=t, r=r):
            d = decompose(t, band, r, method=method)
            return d.errors, d.singular_values, profiles(t), curve(t)

        stages = {
            "decompose (sample)": lambda t=t, r=r: decompose(t, band, r, method="sample"),
            "decompose (fit)": lambda t=t, r=r: decompose(t, band, r, method="fit"),
            f"decompose + errors ({method})": errors,
            f"decompose + singular_values ({method})": singular_values,
            "profiles (decay, frequency)": profiles,
            f"error_curve ({len(CURVE_RANKS)} ranks)": curve,
            "page total": page,
        }
        for stage, fn in stages.items():
            ms = median_ms(fn, repeats=repeats, warmup=1)
            rows.append({"n": n, "stage": stage, "ms": ms, "repeats": repeats})
    return rows

