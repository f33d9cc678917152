"""Page "Speed": time the operators on this machine and see where each one wins."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages._ui import charts, frame, session, session_keys, timing
from tnn_core.lab import speed

NS = [256, 512, 1024, 2048, 4096, 8192, 16384]
# the page's timings, each a background job kept under its name, with the work in words
JOBS = {session_keys.BENCH_JOB: "a timing sweep",
        session_keys.PARETO_JOB: "an error-against-speed timing",
        session_keys.BAND_JOB: "a band-crossover timing"}


def running(name: str) -> bool:
    job = st.session_state.get(name)
    return job is not None and not job.snapshot()[2]


def start(name: str, job: speed.BackgroundJob) -> None:
    """Start ``job`` as ``name`` in a place of the server's heavy work, stopped when this
    session ends, and draw the page again with it running (its buttons disabled); if every
    place is taken, say so here and start nothing."""
    job.stop_when_collected(session.session_token())
    try:
        speed.start_in_place(job, session.session_id(), JOBS[name])
    except speed.NoPlace as full:
        st.warning(str(full), icon=":material/hourglass_top:")
        return
    st.session_state[name] = job
    st.rerun()


def watch(name: str, text) -> None:
    """The running job ``name``'s progress bar (``text(items)`` in words) and its Stop
    button, polled until it ends; then the page runs again."""
    job = st.session_state[name]

    def waiting() -> None:
        fraction, items, _, _ = job.snapshot()
        st.progress(fraction, text=f"{text(items)} ({fraction:.0%})")
        if st.button("Stop", icon=":material/stop:", key=f"{name}_stop", disabled=job.stopped,
                     help="Ends the timing after its current round; what was measured is "
                          "shown."):
            job.stop()

    timing.poll_until(lambda: job.snapshot()[2], waiting)


def ended(name: str, what: str):
    """The result of the job ``name`` once it has ended, said once: its failure or its stop
    in a sentence (``what``: "The measurement"); None if it failed or measured nothing."""
    job = st.session_state.pop(name)
    *_, error = job.snapshot()
    if error is not None:
        st.error(f"{what} failed: {error}", icon=":material/error:")
    elif not job.result:
        st.warning(f"{what} was stopped before anything was measured.", icon=":material/stop:")
    elif job.stopped:
        st.warning(f"{what} was stopped: only what was measured is shown.",
                   icon=":material/stop:")
    return None if error is not None else job.result


def follow(name: str, column, text, kept: str):
    """A measurement's job ``name``: while it runs, its progress in ``column`` (``watch``);
    once it has ended, its result kept in the session as ``kept``. What is kept (None before
    a measurement)."""
    if running(name):
        with column:
            watch(name, text)
    elif name in st.session_state and (view := ended(name, "The measurement")):
        st.session_state[kept] = view
    return st.session_state.get(kept)


def main() -> None:
    """The page: the timing sweep, then SKI's error against speed, then SKI against TNO over
    the band; one timing runs at a time."""
    frame.ensure_app_frame()
    st.title("Speed")
    st.markdown("The point of SKI-TNN and FD-TNN is speed. Time every operator **on this "
                "machine**, side by side (interleaved rounds after warm-up; each point is the "
                "median, its error bar the interquartile range of the rounds), and see how each "
                "grows with $n$ and where one overtakes another.")
    busy = any(running(name) for name in JOBS)  # one timing at a time: they would share the CPU
    benchmark(busy)
    error_against_speed(busy)
    band_crossover(busy)


def benchmark(busy: bool) -> None:
    """The sweep's form, its job, and its results, kept per setting for the session."""
    settings, run = benchmark_form(busy)
    cache = st.session_state.setdefault(session_keys.BENCH_RESULTS, {})
    cache_key = repr(sorted(settings.items()))
    if run and not busy:
        try:
            config = speed.bench_config(**settings)
        except ValueError as err:
            frame.show_error(err)
        else:
            st.session_state[session_keys.BENCH_JOB_KEY] = cache_key
            start(session_keys.BENCH_JOB, speed.grid_job(config))

    if running(session_keys.BENCH_JOB):
        watch(session_keys.BENCH_JOB, lambda items: f"timed {len(items)} cells")
    elif session_keys.BENCH_JOB in st.session_state:
        grid_items = ended(session_keys.BENCH_JOB, "The benchmark")
        if grid_items:
            cache[st.session_state[session_keys.BENCH_JOB_KEY]] = grid_items
    records = cache.get(cache_key)
    if records:
        show_results(records)
    elif not busy:
        st.info("Choose the operators and lengths, then **Run benchmark**. Results are kept "
                "per setting for this session. A small grid takes seconds; n = 16384 with "
                "forward+backward takes minutes on a laptop.", icon=":material/timer:")


def benchmark_form(busy: bool) -> tuple[dict, bool]:
    """The sweep's form: (its settings, whether Run was pressed)."""
    with st.form("bench-form"):
        c1, c2, c3 = st.columns(3)
        ops = c1.multiselect("Operators", list(speed.OPS),
                             default=["tno", "tno-reference", "ski", "fd", "attention"],
                             key="bench_ops",
                             help="tno-reference follows the official TNN code's layout; "
                                  "attention is softmax attention (O(n²)); togeipi is the course "
                                  "project's Toeplitz + sparse mixer (O(n²) memory).")
        direction = c1.radio("Direction", ["bidirectional", "causal", "both"], horizontal=True,
                             key="bench_direction", help="Causal operators see only the past.")
        mode = c1.radio("Work", ["forward+backward", "forward"], horizontal=True,
                        key="bench_mode", help="forward+backward is a training step; forward is "
                                               "inference.")
        lo, hi = c2.select_slider("Lengths n", NS, value=(256, 4096), key="bench_ns",
                                  help="Each length is timed for every operator.")
        batch = c2.select_slider("Batch B", [1, 2, 4, 8, 16, 32], value=8, key="bench_batch",
                                 help="Sequences per call.")
        dim = c2.select_slider("Channels D", [8, 16, 32, 64, 128, 256], value=64,
                               key="bench_dim", help="Channels of the operator; attention and "
                                                     "togeipi split them into 8 heads.")
        rank = c3.select_slider("SKI rank r", [8, 16, 32, 64, 128, 256], value=64,
                                key="bench_rank", help="Inducing points of SKI's low-rank part.")
        band = c3.select_slider("SKI band m", [1, 4, 8, 16, 32, 64], value=8, key="bench_band",
                                help="Taps of SKI's band convolution (the paper uses 32). The band "
                                     "costs grow with m while TNO's do not: raise m and watch "
                                     "where SKI's line meets TNO's.")
        repeats = c3.slider("Timed rounds", 3, 41, 9, step=2, key="bench_repeats",
                            help="Each point is the median of this many interleaved rounds after 3 "
                                 "warm-up runs, its error bar their interquartile range (21+ "
                                 "for a report; slopes need 5 or more).")
        run = st.form_submit_button("Run benchmark", type="primary", disabled=busy,
                                    icon=":material/timer:")
    settings = {"ops": tuple(ops), "direction": direction,
                "ns": tuple(n for n in NS if lo <= n <= hi), "mode": mode, "batch": batch,
                "dim": dim, "rank": rank, "band": band, "repeats": repeats,
                "device": "cuda" if frame.device() == "cuda" else "cpu"}
    return settings, run


def error_against_speed(busy: bool) -> None:
    """SKI's (r, m) settings: relative error against speed-up over TNO, measured on demand."""
    st.subheader("SKI: error against speed")
    st.markdown("Each point is one (r, m) setting on the *spike plus smooth* kernel: its "
                "approximation error (relative Frobenius, from the decomposition analysis) "
                "against its speed-up over TNO's FFT product on the same kernel (horizontal bars: "
                "the range the quartiles of the rounds allow). Down and to the right is better: "
                "fast and accurate. Hover a point for its speed-up counted in flops.")
    p1, p2 = st.columns([1, 3])
    pareto_n = p1.select_slider("n", [1024, 2048, 4096, 8192], value=4096, key="pareto_n",
                                help="Length of the kernel and of the timed input.")
    if p1.button("Measure", key="pareto_run", icon=":material/scatter_plot:", disabled=busy,
                  help="Disabled while another timing on this page runs: both would share the "
                       "CPU. About 10 s."):
        start(session_keys.PARETO_JOB, speed.pareto_job(pareto_n, frame.device()))
    pareto: speed.ParetoView | None = follow(
        session_keys.PARETO_JOB, p1, lambda bands: f"Decomposed and timed {len(bands)} of "
                                        f"{len({m for _, m in speed.PARETO_SETTINGS})} bands",
        session_keys.PARETO)
    if pareto:
        fig = go.Figure()
        for series, ranks, flop_speedups in zip(pareto.by_band, pareto.ranks,
                                                pareto.flop_speedups, strict=True):
            line(fig, series, axis="x", mode="markers+text", text=[f"r={r}" for r in ranks],
                 textposition="top center", customdata=flop_speedups,
                 hovertemplate="speed-up %{x:.2g}× (flops: %{customdata:.2g}×)<br>"
                               "error %{y:.2g}<extra>%{fullData.name}, %{text}</extra>")
        charts.vline(fig, 1.0, "as fast as TNO", log_x=True, line_dash="dot")
        fig.update_xaxes(title="speed-up over the FFT product (×)", type="log")
        fig.update_yaxes(title="relative Frobenius error", type="log")
        fig.update_layout(height=420, margin=dict(l=10, r=10, t=30, b=10),
                          title=f"n = {pareto.n}")
        p2.plotly_chart(fig, key="chart-pareto")
    else:
        p2.caption("Press **Measure** to decompose and time 20 SKI settings (r × m) against "
                   "the FFT product.")


def band_crossover(busy: bool) -> None:
    """TNO's time over SKI's as the band m grows, one line per length, measured on demand."""
    st.subheader("SKI against TNO over the band m")
    st.markdown("SKI's band is a depthwise convolution with m taps, so its cost grows with m; "
                "TNO's FFT product does not depend on m. Each line is one length n: TNO's time "
                "over SKI's for a training step (forward+backward, 8 sequences × 64 channels, "
                "r = 64), with the range its quartiles allow; the dotted lines are the same ratio "
                "counted in flops for the forward product. Above 1 SKI is faster. A crossing is "
                "called only where the two operators' quartile ranges separate on both sides.")
    b1, b2 = st.columns([1, 3])
    band_max_n = b1.select_slider("Longest n", [1024, 4096, 16384], value=4096, key="band_max_n",
                                  help="Lengths timed: 1024 up to this one (×4 steps), 7 rounds "
                                       "each. 16384 takes over a minute on a 2-core CPU.")
    if b1.button("Measure", key="band_run", icon=":material/stacked_line_chart:", disabled=busy,
                 help="Disabled while another timing on this page runs: both would share the "
                      "CPU."):
        ns = tuple(n for n in (1024, 4096, 16384) if n <= band_max_n)
        start(session_keys.BAND_JOB, speed.band_crossover_job(ns, frame.device()))
    measured: speed.BandView | None = follow(
        session_keys.BAND_JOB, b1, lambda lengths: f"Timed TNO and SKI at m = 4…64 for "
                                        f"{len(lengths)} length{'s' * (len(lengths) != 1)}",
        session_keys.BAND_CROSS)
    if measured:
        fig = go.Figure()
        for series in measured.lines:
            line(fig, series, mode="lines+markers")
        for series in measured.flop_lines:
            line(fig, series, mode="lines", line=dict(dash="dot", width=1))
        charts.hline(fig, 1.0, "as fast as TNO", log_y=True, line_dash="dot")
        fig.update_xaxes(title="band taps m", type="log", tickvals=list(speed.BANDS))
        fig.update_yaxes(title="TNO time / SKI time (×)", type="log")
        fig.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10))
        b2.plotly_chart(fig, key="chart-band-crossover")
        b2.dataframe(measured.crossings, hide_index=True)
    else:
        b2.caption(f"Press **Measure** to time TNO and SKI (m = "
                   f"{', '.join(map(str, speed.BANDS))}) at each length.")


def line(fig: go.Figure, series: speed.Series, axis: str = "y", **style) -> None:
    """One series; its quartiles (if timed) as asymmetric error bars along ``axis``."""
    if series.low is not None:
        value = series.x if axis == "x" else series.y
        bars = dict(type="data", symmetric=False, array=series.high - value,
                    arrayminus=value - series.low, thickness=1, width=3)
        style[f"error_{axis}"] = bars
    fig.add_scatter(x=series.x, y=series.y, name=series.name, **style)


def show_results(records: list[dict]) -> None:
    """The grid's plots, slopes, crossovers and CSV."""
    view = speed.grid_view(records)
    st.download_button("Download CSV", pd.DataFrame(records).to_csv(index=False),
                       "toeplitz-lab-bench.csv", "text/csv", icon=":material/download:")
    for panel in view.panels:
        left, right = st.columns(2)
        for column, field, lines, unit in ((left, "median_ms", panel.time, "time (ms)"),
                                           (right, "peak_mem_mb", panel.memory,
                                            "peak memory (MB)")):
            fig = go.Figure()
            for series in lines:
                line(fig, series, mode="lines+markers")
            if field == "median_ms":
                for guide in panel.guides:
                    line(fig, guide, mode="lines", line=dict(dash="dot", width=1, color="gray"))
            fig.update_xaxes(type="log", title="n")
            fig.update_yaxes(type="log", title=unit)
            fig.update_layout(title=f"{unit.split(' (')[0].capitalize()}, {panel.title}",
                              height=380, margin=dict(l=10, r=10, t=40, b=10))
            column.plotly_chart(fig, key=f"chart-{field}-{panel.title}")

    left, right = st.columns(2)
    if view.slopes:
        left.markdown("**Measured growth**: the least-squares slope of log time against log n "
                      "± its standard error (1 = linear, about 1.1 = n log n over 256…16384, "
                      "2 = quadratic). *trust* says when the fit cannot be read as growth.")
        left.dataframe(view.slopes, hide_index=True)
    right.markdown("**Crossovers**: the length where one operator overtakes another, called "
                   "only where their interquartile ranges separate on both sides (*between*).")
    if view.crossovers:
        right.dataframe(view.crossovers, hide_index=True)
    else:
        right.caption("No crossover beyond the noise in this range: wherever two operators' "
                      "ranges separate, their order is the same.")
    if view.missing:
        st.caption("Missing points were skipped: O(n²) operators above their length limit.")


main()
