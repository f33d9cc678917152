"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from pages.figures import run_comparison
from tnn_core.analysis.atlas import BAND_ONLY_MASS
from tnn_core.analysis.dense import display_line
from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab import uploads as uploads_lab
from tnn_core.lab.compress import convertible
from tnn_core.lab.inspect import band_description, summary
from tnn_core.training.checkpoint import CheckpointError

_ui.ensure_app_frame()
_ui.receive_values("pages/inspect_checkpoint.py")

GRID_CELLS = 64  # rows/columns of each small heatmap in the atlas grid
GRID_COLUMNS, GRID_ROWS = 6, 2  # the grid's tiles: the first 12 channels in the chosen order
GRID_GAPS = (0.02, 0.12)  # horizontal, vertical space between tiles (fractions of the figure)
SWEEP_WAIT_S = 0.25  # how long the page waits for the length sweep before drawing without it


def tile_grid(tiles: list[np.ndarray], titles: list[str], limits: list[float],
              show_scale: bool, title: str) -> dict:
    """Small heatmaps [s, s] in GRID_ROWS × GRID_COLUMNS, row 0 of each on top, as a plain
    Plotly figure (float32 cells, no figure objects to validate on every move)."""
    width = (1 - (GRID_COLUMNS - 1) * GRID_GAPS[0]) / GRID_COLUMNS
    height = (1 - (GRID_ROWS - 1) * GRID_GAPS[1]) / GRID_ROWS
    data, layout = [], {"height": 380, "margin": dict(l=10, r=10, t=40, b=10),
                        "title": {"text": title}, "annotations": []}
    for i, (tile, name, limit) in enumerate(zip(tiles, titles, limits, strict=True)):
        row, column = divmod(i, GRID_COLUMNS)
        left = column * (width + GRID_GAPS[0])
        bottom = (GRID_ROWS - 1 - row) * (height + GRID_GAPS[1])
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


st.title("Inspect checkpoint")
st.markdown("Open a trained model and look at the Toeplitz kernels it learned: how much of "
            "each channel's mass sits in a narrow band around the diagonal, how fast the rest "
            "decays, how well SKI's low-rank part would hold it, whether the model needs it, "
            "and how the model does beyond the length it was trained on.")

# -- choose ---------------------------------------------------------------------------------
with st.expander("Upload a checkpoint (.safetensors)", icon=":material/upload:"):
    upload = st.file_uploader("Checkpoint file", type=["safetensors"], key="upload",
                              max_upload_size=_ui.UPLOAD_LIMIT_MB,
                              help="A .safetensors file written by Toeplitz Lab. Files are "
                                   "checked before use and never unpickled.")
    if upload is not None and st.session_state.get("last_upload") != upload.file_id:
        st.session_state["last_upload"] = upload.file_id  # read each file once, not per rerun
        try:  # validate before it joins the list; a bad file changes nothing else
            uploaded_key, dropped = _ui.remember_upload(upload.name, upload.getvalue())
        except (CheckpointError, ValueError) as err:
            st.session_state["upload_error"] = str(err)
        else:
            st.session_state.pop("upload_error", None)
            st.session_state["checkpoint"] = uploaded_key  # a new file: open it
            if dropped:
                st.toast(f"Dropped {', '.join(dropped)} from this session's uploads: a "
                         f"session keeps {uploads_lab.SESSION_BUDGET // 2**20} MB of them.",
                         icon=":material/info:")
    if upload is not None and "upload_error" in st.session_state:
        _ui.show_error(CheckpointError(st.session_state["upload_error"]))

key = _ui.checkpoint_select(
    "No checkpoints yet: train one on the Train page, or upload one above.",
    "Shipped examples in the order they teach most (each says what it shows), your saved "
    "runs, and uploads. Links carry shipped ones only.")
try:
    model, info = _ui.load_checkpoint(key)
except (CheckpointError, ValueError) as err:
    _ui.show_error(err)
    _ui.page_activity()
    st.stop()
try:
    task, task_error = _ui.checkpoint_task(key), None
except ValueError as err:
    task, task_error = None, err
operator_config = model.config.operator
if task is not None:
    _ui.start_length_sweep(key)  # it runs while the sections above it are drawn
about = summary(info, task)

# Every checkpoint opens at its own training length (and SKI at its own band m).
if st.session_state.get("_inspect_opened") != key or "atlas_n" not in st.session_state:
    st.session_state["_inspect_opened"] = key
    st.session_state["atlas_n"], st.session_state["atlas_band"] = inspect_lab.opening_atlas(
        model.config, about.train_n)

chance = f"chance {_ui.metric_text(about.chance, about.metric_name)}"
HEADLINE_WAIT_S = 0.5  # the header waits this long for the evaluation, then polls for it


def headline_metric(column) -> None:
    """The metric on the task's evaluation set with its interval: the length sweep's 1×,
    so the header, the ablation and the sweep show one number."""
    label = f"Evaluation {about.metric_name}"
    if task is None:
        column.metric(label, "—", help=f"The task cannot be rebuilt here: {task_error}")
        return
    try:
        sweep = _ui.length_sweep(key, HEADLINE_WAIT_S)
    except ValueError as err:
        column.metric(label, "—", help=f"Cannot evaluate this checkpoint here: {err}")
        return
    help_text = (f"Scored on {task.describe_evaluation()}: the same set for every section "
                 f"of this page, Compress and the command line; {chance} (a uniform guess).")
    if sweep is None:
        column.metric(label, "…", help=help_text)
        column.caption("evaluating…")
        return
    scores = sweep.scores[0]
    low, high = scores.ci95
    column.metric(label, _ui.metric_text(scores.metric, about.metric_name), help=help_text)
    column.caption(f"95 % interval {_ui.interval_text((low, high), about.metric_name)} · "
                   f"{scores.sequences:,} sequences")


def model_card_downloads() -> None:
    """The model card and per-layer spectral report, built when a download is clicked."""
    refusal = inspect_lab.report_refusal(model, about.train_n)
    if refusal is not None:
        st.caption(f"No model card for this checkpoint: {refusal}.")
        return
    if task is None:
        st.caption(f"No model card: its task cannot be rebuilt here ({task_error}).")
        return
    files = (("markdown", "md", "Model card and layers (Markdown)"),
             ("csv", "csv", "Every channel (CSV)"), ("json", "json", "Everything (JSON)"))
    for column, (name, suffix, label) in zip(st.columns(3), files, strict=True):
        column.download_button(
            label,
            lambda name=name: inspect_lab.report_text(_ui.model_report(key), name),
            file_name=f"{key.replace('/', '-').replace(':', '-')}-report.{suffix}",
            key=f"report_{name}", icon=":material/download:",
            help="A model card (task, data, metric with its 95 % interval, baselines, "
                 "training config, lineage) and, per layer and channel, the singular values "
                 "of T at the training length: stable rank, effective rank at 99 % energy, a "
                 "power-law fit of the tail, band mass and the SKI error at (m, r). Takes a "
                 "few seconds the first time.")


m = st.columns(5)
m[0].metric("Task", about.task, help=f"Trained at length n = {about.train_n}.")
m[1].metric("Operator, causal" if operator_config.causal else "Operator, bidirectional",
            operator_config.kind)
m[2].metric("Width × layers", about.size)
headline_metric(m[3])
m[4].metric("Trained steps", "—" if about.steps is None else f"{about.steps:,}",
            help=about.training_note())
if convertible(model.config) and st.button(
        "Compress this model", icon=":material/compress:", key="open_compress",
        help="Convert its layers to band + low rank on the Compress page and measure what "
             "that costs the task and gains in speed."):
    _ui.open_page("pages/compress.py", {"checkpoint": key})

lineage = inspect_lab.lineage_text(info)
if lineage is not None:
    st.markdown(lineage)
    st.caption("Its training curve below is its own: the fine-tuning after the conversion, "
               "not its source's training.")
left, right = st.columns([1, 2])
with left:
    st.markdown("**Configuration**")
    st.json(about.config, expanded=False)
with right:
    if len(about.eval_steps):
        scale = 100.0 if about.metric_name == "accuracy" else 1.0
        unit = "%" if about.metric_name == "accuracy" else about.metric_name
        low, high = about.metric_axis()
        low, high = scale * about.eval_intervals.T  # (E,) each, NaN where none was recorded
        values = scale * about.eval_metric
        fig = go.Figure(go.Scatter(x=about.eval_steps, y=values, mode="lines+markers",
                                   name=f"validation {about.metric_name}",
                                   error_y=dict(type="data", array=high - values,
                                                arrayminus=values - low)))
        if np.isfinite(about.chance):
            fig.add_hline(y=scale * about.chance, line_dash="dash", line_color="grey",
                          annotation_text=f"chance {scale * about.chance:.3g} {unit}",
                          annotation_position="top right")
        better = "higher" if about.higher_is_better else "lower"
        fig.update_layout(title=f"Validation {about.metric_name} during training ({better} is "
                                "better)", height=300, xaxis_title="step",
                          yaxis_title=f"{about.metric_name} ({unit})",
                          margin=dict(l=10, r=10, t=40, b=10))
        fig.update_yaxes(range=[scale * low, scale * high])
        st.plotly_chart(fig, key="chart-history")
        hidden = about.off_axis()
        if hidden:
            st.caption("Above the axis (an untrained model): " + ", ".join(
                f"step {step}: {value:.3g} {unit}" for step, value in hidden) + ".")
    else:
        st.caption("This checkpoint's training history records no validation metric, so "
                   "there is no curve to draw.")
model_card_downloads()
run_comparison.show(key)


@st.fragment
def kernels_during_training() -> None:
    """The kernel snapshots its training kept, replayed; its slider reruns this alone."""
    try:
        view = inspect_lab.training_kernels(info)
    except ValueError as err:
        _ui.show_error(err)
        return
    if view is None:
        st.caption("This checkpoint holds no kernel snapshots from its training; runs "
                   "trained now on the Train page or with the CLI keep them.")
        return
    st.subheader("Kernels during training")
    _ui.kernel_replay(view, "inspect_kernels")


kernels_during_training()

# -- kernel atlas ---------------------------------------------------------------------------
@st.fragment
def kernel_atlas() -> None:
    """The atlas and its band ablation. Its widgets rerun this section alone; a new length
    n, or a row picked in its table, reruns the page (the channel view below shows them)."""
    _ui.page_activity()
    st.subheader("Kernel atlas")
    c = st.columns(4)
    n = c[0].slider("Length n", 2, inspect_lab.ATLAS_MAX_N, key="atlas_n",
                    help="Kernels are evaluated at this length; each checkpoint opens at its "
                         f"training length (this one: n = {about.train_n}).")
    if n != st.session_state["_inspect_drawn_n"]:
        st.rerun(scope="app")
    band = c[1].slider("Band m", 1, 63, key="atlas_band",
                       help="The band: |k| ≤ m//2, or lags 0..m-1 for a causal model. SKI "
                            "checkpoints open at their own m.")
    rank = c[2].slider("Rank r", 2, 128, inspect_lab.ATLAS_RANK, key="atlas_rank",
                       help="SKI's inducing points for the low-rank error (at most n).")
    channels = c[3].slider("Channels per layer", 4, 192, inspect_lab.ATLAS_CHANNELS, step=4,
                           key="atlas_channels",
                           help="How many channels of each layer to measure (the first ones).")
    in_band = band_description(band, causal)
    try:
        atlas = _ui.atlas(key, n, band, rank, channels)
    except ValueError as err:
        _ui.show_error(err)
        return
    what = ("the nearest Toeplitz kernel (the diagonal means) of the band + W A Wᵀ each "
            "channel applies, not the Toeplitz target kernel(n)"
            if operator_config.kind == "ski" and not causal else "each channel's Toeplitz kernel")
    st.markdown(
        f"Every statistic describes {what}, at n = {n}, with the band {in_band}. "
        f"**Mass in band**: the share of Σ|t_k| on the band lags. **Fitted λ**: the decay of "
        f"|t_k|. **SKI error**: ‖T − band − W A Wᵀ‖_F at r = {min(rank, n)} over "
        "‖T − band‖_F, the off-band part W A Wᵀ must hold (1: no better than the band alone). "
        f"A channel with less than {100 * BAND_ONLY_MASS:.0f} % of its mass off the "
        "band shows — for λ and the errors: there is no tail to fit or approximate.")
    labels = {"locality": f"mass in band ({in_band})", "decay": "fitted λ of |t_k|",
              "low_rank": f"SKI error / ‖T − band‖ (r = {min(rank, n)})",
              "optimal": f"optimal error / ‖T − band‖ (r = {min(rank, n)})"}
    columns = {name: st.column_config.NumberColumn(label, format="%.3f")
               for name, label in labels.items()}
    st.markdown("**Per layer** (medians over the measured channels)")
    st.dataframe(pd.DataFrame(atlas.layers.columns(),
                              index=pd.Index(atlas.layers.layer, name="layer")),
                 column_config=columns)
    band_ablation(band, in_band)

    sorts = {"locality": "mass in band (most local first)",
             "decay": "fitted λ (fastest decay first)",
             "low_rank": "SKI error over ‖T − band‖ (lowest first)"}
    sort = st.radio("Sort channels by", list(sorts), format_func=sorts.get, horizontal=True,
                    key="atlas_sort")
    t1, t2 = st.columns(2)
    off_band = t1.toggle("Show T − band (tails only)", key="atlas_off_band",
                         help="Zero the band lags so the tails are not swamped by the "
                              "diagonal.")
    shared = t2.toggle("One colour scale for all tiles", key="atlas_shared_scale",
                       help="Off: each tile spans its own ±max|t_k|. On: one ±max over the 12 "
                            "tiles, so tiles compare with each other.")
    table = atlas.channels.sorted_by(sort)
    tiles = GRID_COLUMNS * GRID_ROWS
    shown = list(zip(table.layer[:tiles], table.channel[:tiles], strict=True))
    views = [atlas.channel_view(layer, channel, GRID_CELLS, off_band) for layer, channel in shown]
    limit = atlas.shared_limit(shown, off_band) if shared else None
    scale_note = "one colour scale" if shared else "each on its own colour scale"
    st.plotly_chart(tile_grid(
        [view.matrix for view in views], [f"L{layer} c{channel}" for layer, channel in shown],
        [limit or view.limit for view in views], shared,
        f"The first {tiles} channels in this order: {'T − band' if off_band else 'T'} "
        f"({scale_note})"), key="chart-atlas")

    st.markdown("**All measured channels.** Select a row to drill into that channel, or set "
                "the layer and channel below.")
    event = st.dataframe(pd.DataFrame(table.columns()), key="atlas_table", on_select="rerun",
                         selection_mode="single-row", hide_index=True, height=240,
                         column_config=columns)
    picked = tuple(event.selection.rows)
    if picked != st.session_state.get("_atlas_picked", ()):  # a new row selected: follow it
        st.session_state["_atlas_picked"] = picked
        if picked:
            st.session_state["layer"] = int(table.layer[picked[0]])
            st.session_state["channel"] = int(table.channel[picked[0]])
            st.rerun(scope="app")
    _ui.page_activity()


def band_ablation(band: int, in_band: str) -> None:
    """The task metric with every layer, and each layer alone, restricted to the band."""
    st.markdown("**Band ablation: does the model need the tails?**")
    if task is None:
        st.caption(f"This checkpoint's task cannot be rebuilt here, so it cannot be evaluated: "
                   f"{task_error}")
        return
    if not st.toggle(f"Measure the task {about.metric_name} with every layer restricted to its "
                     f"band ({in_band})", key="atlas_ablation",
                     help="Zeroes everything off the band in the matrix each layer applies and "
                          "scores the evaluation set again. Takes seconds to a minute."):
        return
    try:
        ablation = _ui.band_ablation(key, band)
    except ValueError as err:
        _ui.show_error(err)
        return
    a = st.columns(2 + len(ablation.per_layer))
    scored = [(f"Full kernels, n = {ablation.length}", ablation.full),
              ("Every layer, band only", ablation.restricted)] + [
        (f"Only layer {layer}, band only", scores)
        for layer, scores in enumerate(ablation.per_layer)]
    for column, (label, scores) in zip(a, scored, strict=True):
        low, high = scores.ci95
        column.metric(label, _ui.metric_text(scores.metric, about.metric_name))
        column.caption(f"95 % interval {_ui.interval_text((low, high), about.metric_name)}")
    st.markdown(ablation.sentence())
    st.caption(f"Every variant scores the same {ablation.full.sequences:,} sequences "
               f"({task.describe_evaluation()}), so the change is measured pair by pair; "
               f"{chance}.")


causal = operator_config.causal
st.session_state["_inspect_drawn_n"] = st.session_state["atlas_n"]  # what the page below draws
kernel_atlas()
n = st.session_state["_inspect_drawn_n"]

# -- one channel ----------------------------------------------------------------------------
operators = model.operators()
d = st.columns(4)
layer = int(_ui.from_link(d[0].number_input, "Layer", 0, len(operators) - 1, key="layer",
                          disabled=_ui.locked("layer"), bind="query-params",
                          help="Which layer to drill into (in the link)."))
channel = int(_ui.from_link(d[1].number_input, "Channel", 0, operators[0].dim - 1,
                            key="channel", disabled=_ui.locked("channel"),
                            bind="query-params",
                            help="Which channel (any of the layer's "
                                 f"{operators[0].dim}, measured or not; in the link)."))
st.subheader(f"Layer {layer}, channel {channel}")
try:
    drill = _ui.channel_matrix(key, n, layer, channel)
except ValueError as err:
    _ui.show_error(err)
    _ui.page_activity()
    st.stop()
left, right = st.columns(2)
applied = ("band + W A Wᵀ, the matrix this channel applies" if drill.target is not None
           else "T, the matrix this channel applies")
left.plotly_chart(_ui.heatmap(drill.view, f"{applied} at n = {n} (row 0 on top)"),
                  key="chart-channel-matrix")
kfig = _ui.kernel_plot(drill.view, "Kernel t_k against lag k" if drill.target is None else
                       "Diagonal means of the applied matrix, and the Toeplitz target")
if drill.target is not None:
    kfig.data[0].name = "diagonal means (applied)"
    lags, target = display_line(drill.view.lags, drill.target)
    kfig.add_scatter(x=lags, y=target, name="Toeplitz target kernel(n)", mode="lines",
                     line=dict(dash="dot"))
right.plotly_chart(kfig, key="chart-channel-kernel")
if drill.target is not None:
    st.metric("Applied matrix against its Toeplitz target",
              f"{100 * drill.target_gap:.1f} %",
              help="‖band + W A Wᵀ − T(kernel(n))‖_F / ‖T(kernel(n))‖_F: how far what the "
                   "model computes is from the Toeplitz kernel SKI interpolates.")
if st.button("Open this kernel in Decomposition", icon=":material/splitscreen:",
             key="open_decomposition"):
    _ui.open_page("pages/decomposition.py", {"source": "checkpoint", "checkpoint": key,
                                             "layer": layer, "channel": channel, "n": n,
                                             "causal": operator_config.causal})

# -- extrapolation --------------------------------------------------------------------------
def sweep_waiting() -> None:
    st.caption(f"Evaluating the model at 1×, 2× and 4× its training length n = "
               f"{about.train_n}; the results appear here in a moment.",
               help="The evaluation runs on its own thread, so the sections above do not "
                    "wait for it.")


st.subheader("Beyond the training length")
sweep = None
try:
    if task is None:
        raise task_error
    sweep = _ui.length_sweep(key, SWEEP_WAIT_S)
    if sweep is None:
        _ui.poll_until(lambda: _ui.start_length_sweep(key).done(), sweep_waiting)
except ValueError as err:
    st.warning(f"Cannot evaluate this checkpoint here: {err}", icon=":material/info:")
measured = np.array([]) if sweep is None else sweep.metric[np.isfinite(sweep.metric)]
if sweep is not None and len(measured) < 2:
    st.markdown(f"{about.task} exists at its training length n = {about.train_n} only, so "
                "this model cannot be run longer; the Table 10 pair below shows what decay "
                "does for a language model.")
elif sweep is not None:
    same_text = ("every length scores the same characters of the evaluation text, so each "
                 "length is compared with 1× window by window" if sweep.tiles_text else
                 "each length scores its own sequences, so the comparison is between two "
                 "independent sets")
    st.markdown(f"This model at 1×, 2× and 4× its training length n = {about.train_n}; "
                f"{same_text}.")
    for sentence in sweep.sentences("this model"):
        st.markdown(f"- {sentence}")
    left, right = st.columns(2)
    intervals = [scores.ci95 for scores in sweep.scores]
    left.dataframe(pd.DataFrame({
        "× training length": sweep.factor, "length n": sweep.length,
        about.metric_name: [_ui.metric_text(v, about.metric_name) for v in sweep.metric],
        "95 % interval": [_ui.interval_text(interval, about.metric_name)
                          for interval in intervals],
        "sequences": [f"{scores.sequences:,}" for scores in sweep.scores]}), hide_index=True)
    longer = _ui.extrapolation(key, about.train_n, layer, channel)
    efig = go.Figure()
    styles = (dict(width=4), dict(width=2, dash="dash"), dict(width=1.5, dash="dot"))
    for length, lags, kernel, style in zip(longer.lengths, longer.lags, longer.kernels,
                                           styles, strict=True):
        lags, kernel = display_line(lags, kernel)
        efig.add_scatter(x=lags, y=kernel, name=f"n = {length}", mode="lines", line=style)
    efig.update_layout(title=f"Kernel of layer {layer}, channel {channel} at 1×, 2×, 4× n"
                       + (" (diagonal means of what it applies)" if drill.target is not None
                          else ""), xaxis_title="lag k", yaxis_title="t_k", height=320,
                       margin=dict(l=10, r=10, t=40, b=10))
    right.plotly_chart(efig, key="chart-extrapolation")

# -- TNN's Table 10 -------------------------------------------------------------------------
if all(name in _ui.checkpoint_choices() for name in inspect_lab.DECAY_PAIR):
    st.markdown("**TNN's Table 10: the same language model with and without decay**")
    if st.toggle("Measure both on the same windows at 1× to 16× their training length",
                 key="decay_pair",
                 help=f"{' and '.join(inspect_lab.DECAY_PAIR)} were trained identically "
                      "except for λ. Every length scores windows ending at the same text "
                      "positions. Takes a few seconds to a minute."):
        try:
            pair = _ui.decay_pair(inspect_lab.DECAY_PAIR)
        except (CheckpointError, ValueError) as err:
            _ui.show_error(err)
        else:
            st.plotly_chart(_ui.decay_pair_chart(pair), key="chart-decay-pair")
            st.markdown(pair.sentence())

_ui.page_activity()  # the page script ends: the quiet that timings wait for starts now
