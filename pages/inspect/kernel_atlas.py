"""Inspect's kernel atlas: every channel of every layer, its band energy share, fitted decay
and SKI error (the report's numbers under the report's names), as per-layer distributions
(median and quartiles), a grid of the first channels in the chosen order (``tile_grid``)
and a table of all of them, the layer's outliers first; with the band ablation, which
asks whether the model needs the tails. Inspect calls ``show(inspected, n)``: a fragment,
so its widgets rerun it alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from pages._ui import checkpoint_views, frame, numbers, session_keys, timing
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show", "tile_grid", "show_band_ablation"]

GRID_CELLS = 64  # rows/columns of each small heatmap in the atlas grid
GRID_COLUMNS = 6  # the grid's tiles a row: the first ATLAS_TILES channels in the chosen order
GRID_GAPS = (0.02, 0.12)  # horizontal, vertical space between tiles (fractions of the figure)
SORTS = {"outlier": "distance from its layer's median (outliers first)",
         "locality": f"{inspect_lab.BAND_SHARE_NAME} (most local first)",
         "decay": "fitted λ (fastest decay first)",
         "low_rank": f"{inspect_lab.SKI_ERROR_NAME} (lowest first)"}


@st.fragment
def show(inspected: Inspected, drawn_n: int) -> None:
    """The atlas and its band ablation; ``drawn_n``: the length the page below it draws
    (a fragment rerun alone gets the arguments of the page's last run). Its widgets rerun
    this section alone; a new length n, or a row picked in its table, reruns the page (the
    channel view below shows them)."""
    timing.page_activity()
    st.subheader("Kernel atlas")
    n, band, rank = _settings(inspected.about.train_n, drawn_n)
    in_band = inspect_lab.band_description(band, inspected.causal)
    bar = st.empty()

    def on_progress(done: int, total: int) -> None:
        bar.progress(done / total, text=f"Measuring every channel: layer {done:,} of "
                                        f"{total:,}")

    try:
        atlas = checkpoint_views.atlas(inspected.key, n, band, rank, on_progress)
    except ValueError as err:
        frame.show_error(err)
        return
    finally:
        bar.empty()
    columns = _per_layer(inspected, atlas, n, in_band, rank)
    show_band_ablation(inspected, band, in_band)
    table = _tiles(atlas)
    _channel_table(table, columns)
    timing.page_activity()


def _settings(train_n: int, drawn_n: int) -> tuple[int, int, int]:
    """The sliders: length n, band m, rank r. An n other than ``drawn_n`` reruns the page at
    once: the channel view below draws at it."""
    c = st.columns(3)
    n = c[0].slider("Length n", 2, inspect_lab.ATLAS_MAX_N, key="atlas_n",
                    help="Kernels are evaluated at this length; each checkpoint opens at its "
                         f"training length (this one: n = {train_n}).")
    if n != drawn_n:
        st.rerun(scope="app")
    band = c[1].slider("Band m", 1, inspect_lab.ATLAS_MAX_BAND, key="atlas_band",
                       help="The band: |k| ≤ m//2, or lags 0..m-1 for a causal model. SKI "
                            "checkpoints open at their own m.")
    rank = c[2].slider("Rank r", 2, 128, key="atlas_rank",
                       help="SKI's inducing points for the low-rank error (at most n). Each "
                            "checkpoint opens at the report's r: SKI's own, else min(32, n/4), "
                            "below n, where SKI would be exact by construction.")
    return n, band, rank


def _per_layer(inspected: Inspected, atlas: inspect_lab.AtlasView, n: int, in_band: str,
               rank: int) -> dict:
    """What each statistic means and its distribution in each layer (median and quartiles);
    returns the channel table's column configuration."""
    what = ("the nearest Toeplitz kernel (the diagonal means) of the band + W A Wᵀ each "
            "channel applies, not the Toeplitz target kernel(n)"
            if inspected.kind == "ski" and not inspected.causal
            else "each head's point spread function T_h (a row per head, named by its first "
                 "channel)" if inspected.kind == "togeipi"
            else "each channel's Toeplitz kernel")
    if inspected.kind == "togeipi":
        st.info(inspect_lab.TOGEIPI_PART, icon=":material/info:")
    measured = len(atlas.channels.layer)
    r = min(rank, n)
    st.markdown(
        f"All {measured:,} channels: every statistic describes {what}, at n = {n}, with the "
        f"band {in_band}. **{inspect_lab.BAND_SHARE_NAME.capitalize()}**: "
        f"{inspect_lab.BAND_SHARE}, the band's share of the matrix's energy (each lag k counts "
        f"n − |k| times). **Fitted λ**: the decay of |t_k|. **{inspect_lab.SKI_ERROR_NAME}**: "
        f"the relative error {inspect_lab.RELATIVE_ERROR} of T̂ = band + W A Wᵀ at r = {r}, "
        "A sampled as SKI-TNN does (0: exact). A channel with less than "
        f"{inspect_lab.BAND_ONLY_MASS:.0e} of its energy off the band shows — for λ: there "
        "is no tail to fit. **Outlier**: the largest distance of a channel's "
        "statistics from its layer's median, in robust standard deviations (1.4826 × the "
        "median absolute deviation). The report (Inspect's download, or python -m "
        "tnn_core.report) shows the same numbers under the same names at the same m and r.")
    exact = inspect_lab.exact_by_construction(n, atlas.band, r, atlas.causal)
    if exact:
        st.info(f"SKI's error is 0 for every channel here, {exact}: choose r below n (or a "
                "narrower band) to measure it.", icon=":material/info:")
    st.caption(inspect_lab.OPTIMAL_ELSEWHERE)
    labels = {"locality": f"{inspect_lab.BAND_SHARE_NAME} ({in_band})",
              "decay": "fitted λ of |t_k|",
              "low_rank": f"{inspect_lab.SKI_ERROR_NAME}, r = {r}"}
    st.markdown("**Per layer**: median [25th–75th percentile] over its channels")
    layers = atlas.layers
    st.dataframe(pd.DataFrame(
        {label: [f"{numbers.fmt(median, '.3f')} [{numbers.fmt(low, '.3f')}–"
                 f"{numbers.fmt(high, '.3f')}]" for median, (low, high)
                 in zip(getattr(layers, name), layers.quartiles[name], strict=True)]
         for name, label in labels.items()}, index=pd.Index(layers.layer, name="layer")))
    meanings = {"locality": inspect_lab.BAND_SHARE, "decay": "e^slope of log |t_k| against |k|",
                "low_rank": inspect_lab.RELATIVE_ERROR}
    columns = {name: st.column_config.NumberColumn(label, format="%.3f", help=meanings[name])
               for name, label in labels.items()}
    columns["outlier"] = st.column_config.NumberColumn("outlier (robust σ)", format="%.1f")
    return columns


def show_band_ablation(inspected: Inspected, band: int, in_band: str) -> None:
    """The task metric with every layer, and each layer alone, restricted to the band: a
    background job with its progress and a Stop button, drawn once it has finished."""
    about, task = inspected.about, inspected.task
    st.markdown("**Band ablation: does the model need the tails?**")
    refusal = inspect_lab.cannot_ablate(inspected.kind)
    if refusal is not None:
        st.caption(refusal)
        return
    if inspected.kernels_only_reason is not None:
        st.caption(inspected.kernels_only_reason)
        return
    if task is None:
        st.caption(f"This checkpoint's task cannot be rebuilt here, so it cannot be evaluated: "
                   f"{inspected.task_error}")
        return
    if not st.toggle(f"Measure the task {about.metric_name} with every layer restricted to its "
                     f"band ({in_band})", key="atlas_ablation",
                     help="Zeroes everything off the band in the matrix each layer applies and "
                          "scores the evaluation set again, once per layer and once for all. "
                          "Runs in the background; seconds to minutes."):
        return
    try:
        ablation = checkpoint_views.finished_band_ablation(inspected.key, band)
    except ValueError as err:
        frame.show_error(err)
        return
    if ablation is None:
        _ablation_job(inspected.key, band)
    else:
        _draw_ablation(inspected, ablation)


def _ablation_job(key: str, band: int) -> None:
    """This session's ablation of (key, band): started if none is (a job for another key or
    band is stopped), its progress and Stop button while it runs, or why it ended."""
    held = st.session_state.get(session_keys.ABLATION_JOB)
    if held is not None and held[:2] != (key, band):
        held[2].stop()
        held = None
    if held is None:
        try:
            held = st.session_state[session_keys.ABLATION_JOB] = (
                key, band, checkpoint_views.start_band_ablation(key, band))
        except inspect_lab.NoPlace as busy:
            st.warning(str(busy), icon=":material/hourglass_empty:")
            return
    job = held[2]
    _, items, done, error = job.snapshot()
    if done and error is not None:
        if job.stopped:
            st.info("The band ablation was stopped.", icon=":material/stop:")
        else:
            st.error(f"The band ablation failed: {error}",
                     icon=":material/error:")
        if st.button("Run it again", key="ablation_again", icon=":material/refresh:"):
            del st.session_state[session_keys.ABLATION_JOB]
            st.rerun(scope="fragment")
        return

    def waiting() -> None:
        fraction, items, _, _ = job.snapshot()
        scored, total = items[-1] if items else (0, None)
        st.progress(fraction, text=f"Scoring the evaluation set with layers kept to the band: "
                                   f"{scored:,} of {'…' if total is None else f'{total:,}'} "
                                   "batches")
        if st.button("Stop", icon=":material/stop:", key="ablation_stop", disabled=job.stopped):
            job.stop()

    timing.poll_until(lambda: job.snapshot()[2], waiting)


def _draw_ablation(inspected: Inspected, ablation: inspect_lab.BandAblation) -> None:
    about, task = inspected.about, inspected.task
    a = st.columns(2 + len(ablation.per_layer))
    scored = [(f"Full kernels, n = {ablation.length}", ablation.full),
              ("Every layer, band only", ablation.restricted)] + [
        (f"Only layer {layer}, band only", scores)
        for layer, scores in enumerate(ablation.per_layer)]
    for column, (label, scores) in zip(a, scored, strict=True):
        low, high = scores.ci95
        column.metric(label, numbers.format_metric(scores.metric, about.metric_name))
        column.caption(f"95 % interval {numbers.format_interval((low, high), about.metric_name)}")
    st.markdown(ablation.sentence())
    st.caption(f"Every variant scores the same {ablation.full.sequences:,} sequences "
               f"({task.describe_evaluation()}), so the change is measured pair by pair; "
               f"{inspected.chance_text}.")


def _tiles(atlas: inspect_lab.AtlasView) -> inspect_lab.Channels:
    """The order, the two switches and the grid of the first channels in that order;
    returns every measured channel in that order."""
    sort = st.radio("Sort channels by", list(SORTS), format_func=SORTS.get, horizontal=True,
                    key="atlas_sort")
    t1, t2 = st.columns(2)
    off_band = t1.toggle("Show T − band (tails only)", key="atlas_off_band",
                         help="Zero the band lags so the tails are not swamped by the "
                              "diagonal.")
    shared = t2.toggle("One colour scale for all tiles", key="atlas_shared_scale",
                       help="Off: each tile spans its own ±max|t_k|. On: one ±max over the "
                            "tiles, so tiles compare with each other.")
    shown = atlas.tiles(sort)
    views = [atlas.channel_view(layer, channel, GRID_CELLS, off_band) for layer, channel in shown]
    limit = atlas.shared_limit(shown, off_band) if shared else None
    scale_note = "one colour scale" if shared else "each on its own colour scale"
    st.plotly_chart(tile_grid(
        [view.matrix for view in views], [f"L{layer} c{channel}" for layer, channel in shown],
        [limit or view.limit for view in views], shared,
        f"The first {len(shown)} channels in this order: {'T − band' if off_band else 'T'} "
        f"({scale_note})"), key="chart-atlas")
    return atlas.channels.sorted_by(sort)


def _channel_table(table: inspect_lab.Channels, columns: dict) -> None:
    """Every measured channel, in the chosen order (a column header sorts it again); a row
    picked here is drilled into below (the page reruns)."""
    st.markdown(f"**All {len(table.layer):,} channels** in this order. Select a row to drill "
                "into that channel, or set the layer and channel below.")
    event = st.dataframe(pd.DataFrame(table.columns()), key="atlas_table", on_select="rerun",
                         selection_mode="single-row", hide_index=True, height=240,
                         column_config=columns)
    picked = tuple(event.selection.rows)
    # a new row selected: follow it
    if picked != st.session_state.get(session_keys.ATLAS_PICKED, ()):
        st.session_state[session_keys.ATLAS_PICKED] = picked
        if picked:
            st.session_state[session_keys.LAYER] = int(table.layer[picked[0]])
            st.session_state[session_keys.CHANNEL] = int(table.channel[picked[0]])
            st.rerun(scope="app")


def tile_grid(tiles: list[np.ndarray], titles: list[str], limits: list[float],
              show_scale: bool, title: str) -> dict:
    """Small heatmaps [s, s], GRID_COLUMNS a row, row 0 of each on top, as a plain Plotly
    figure (float32 cells, no figure objects to validate on every move)."""
    rows = max(1, -(-len(tiles) // GRID_COLUMNS))
    width = (1 - (GRID_COLUMNS - 1) * GRID_GAPS[0]) / GRID_COLUMNS
    height = (1 - (rows - 1) * GRID_GAPS[1]) / rows
    data, layout = [], {"height": 190 * rows, "margin": dict(l=10, r=10, t=40, b=10),
                        "title": {"text": title}, "annotations": []}
    for i, (tile, name, limit) in enumerate(zip(tiles, titles, limits, strict=True)):
        row, column = divmod(i, GRID_COLUMNS)
        left = column * (width + GRID_GAPS[0])
        bottom = (rows - 1 - row) * (height + GRID_GAPS[1])
        axis = "" if i == 0 else str(i + 1)
        data.append({"type": "heatmap", "z": tile.astype(np.float32), "zmin": -limit,
                     "zmax": limit, "colorscale": "RdBu", "showscale": show_scale and i == 0,
                     "hovertemplate": "%{z:.3g}<extra></extra>",
                     "xaxis": f"x{axis}", "yaxis": f"y{axis}"})
        layout[f"xaxis{axis}"] = {"domain": [left, left + width], "anchor": f"y{axis}",
                                  "showticklabels": False}
        layout[f"yaxis{axis}"] = {"domain": [bottom, bottom + height], "anchor": f"x{axis}",
                                  "showticklabels": False, "autorange": "reversed"}
        layout["annotations"].append({"text": name, "x": left + width / 2,
                                      "y": bottom + height, "xref": "paper", "yref": "paper",
                                      "xanchor": "center", "yanchor": "bottom",
                                      "showarrow": False})
    return {"data": data, "layout": layout}
