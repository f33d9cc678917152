"""tnn_core.bench: timing and memory of the token mixers, side by side.

    run_grid(BenchConfig(...), on_progress, stop_event) -> records   the operator grid
    slopes(records), crossovers(records), ratio(...), markdown_tables(records)
    live_speed(n, rank, band, ...)       SKI vs FFT vs dense at one setting (Decomposition page)
    ski_pareto(kernel_coeffs, settings)  SKI error (tnn_core.analysis) against speed-up
    run_togeipi_table(...)               the Togeipi course project's table vs attention
    interp_routes, ski_parts, band_crossover   where SKI's time goes on this device

``python -m tnn_core.bench --help`` is the command line. Measurement method: harness.py;
memory: memory.py; results for the 2-core CPU: docs/benchmarks.md.
"""

from tnn_core.bench.harness import (
    MODES,
    OPS,
    BenchConfig,
    crossovers,
    interleaved_ms,
    make_case,
    markdown_tables,
    ratio,
    run_grid,
    slopes,
)
from tnn_core.bench.live import live_speed, ski_pareto
from tnn_core.bench.ski_study import band_crossover, interp_routes, ski_parts
from tnn_core.bench.togeipi_table import run_togeipi_table, togeipi_markdown

__all__ = [
    "OPS",
    "MODES",
    "BenchConfig",
    "run_grid",
    "make_case",
    "interleaved_ms",
    "slopes",
    "crossovers",
    "ratio",
    "markdown_tables",
    "live_speed",
    "ski_pareto",
    "run_togeipi_table",
    "togeipi_markdown",
    "interp_routes",
    "ski_parts",
    "band_crossover",
]
