"""tnn_core.bench: timing and memory of the token mixers, side by side.

    harness         BenchConfig, run_grid (the operator grid), slopes, crossovers, tables
    cases           one grid cell: an operator, its input, one run (OPS, MODES)
    memory          peak memory of one run (profiler, RSS subprocess, CUDA)
    baselines       the official TNO algorithm and softmax attention, for comparison
    routes          the W routes SKI does not use, timed against the one it does
    ski_study       where SKI's time goes: W routes, its parts, the band crossover
    fd_study        where FD's time goes against TNO's
    togeipi_table   the Togeipi course project's table against attention
    analysis_latency  the Decomposition page's compute path, per stage
    paper_scale     the paper's LM and RoBERTa's size: open, atlas, report, peak RSS
    timing          median_ms, fft_vs_dense (the Basics page), the shared number formats
    flops           deterministic flop counts of the dense, FFT and SKI products

``python -m tnn_core.bench --help`` is the command line. Results for the 2-core CPU:
docs/benchmarks.md. The app's quick SKI readouts (live_speed, ski_pareto) are
``tnn_core.lab.common.live``.
"""
