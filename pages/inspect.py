"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from pages import _ui
from tnn_core.lab.inspect import extrapolation, summary
from tnn_core.training.checkpoint import CheckpointError
from tnn_core.training.tasks import task_from_info

_ui.ensure_app_frame()

GRID_CELLS = 64  # rows/columns of each small heatmap in the atlas grid

st.title("Inspect checkpoint")
st.markdown("Open a trained model and look at the Toeplitz kernels it learned: which "
            "channels decay fast, which are spiky near the diagonal, which are low rank, and "
            "how the model does beyond the length it was trained on.")

# -- choose ---------------------------------------------------------------------------------
with st.expander("Upload a checkpoint (.safetensors)", icon=":material/upload:"):
    upload = st.file_uploader("Checkpoint file", type=["safetensors"], key="upload",
                              max_upload_size=_ui.UPLOAD_LIMIT_MB,
                              help="A .safetensors file written by Toeplitz Lab. Files are "
                                   "checked before use and never unpickled.")
    if upload is not None:
        try:  # validate before it joins the list; a bad file changes nothing else
            uploaded_key = _ui.remember_upload(upload.name, upload.getvalue())
        except (CheckpointError, ValueError) as err:
            _ui.show_error(err)
        else:
            if st.session_state.get("last_upload") != uploaded_key:  # a new file: open it
                st.session_state["last_upload"] = uploaded_key
                st.session_state["checkpoint"] = uploaded_key

choices = _ui.checkpoint_choices()
if not choices:
    st.info("No checkpoints yet: train one on the Train page, or upload one above.",
            icon=":material/info:")
    st.stop()
key = st.selectbox("Checkpoint", list(choices), format_func=choices.get, key="checkpoint",
                   bind="query-params", help="Shipped examples, your saved runs, and uploads.")
try:
    model, info = _ui.load_checkpoint(key)
except (CheckpointError, ValueError) as err:
    _ui.show_error(err)
    st.stop()

about = summary(info)
m = st.columns(5)
m[0].metric("Task", about.task)
m[1].metric("Operator", about.operator)
m[2].metric("Width × layers", about.size)
m[3].metric(f"Validation {about.metric_name}", _ui.fmt(about.final_metric, ".3f"))
m[4].metric("Trained steps", about.steps,
            help=f"{about.wall_s:.0f} s on {about.device}. Command: {about.command}")

left, right = st.columns([1, 2])
with left:
    st.markdown("**Configuration**")
    st.json(about.config, expanded=False)
with right:
    if len(about.eval_steps):
        fig = make_subplots(specs=[[{"secondary_y": True}]])
        fig.add_scatter(x=about.eval_steps, y=about.eval_loss, name="validation loss")
        fig.add_scatter(x=about.eval_steps, y=about.eval_metric,
                        name=f"validation {about.metric_name}", secondary_y=True,
                        line=dict(dash="dot"))
        fig.update_layout(title="Training history", height=300, xaxis_title="step",
                          margin=dict(l=10, r=10, t=40, b=10))
        fig.update_yaxes(type="log", title="validation loss", secondary_y=False)
        st.plotly_chart(fig, key="chart-history")
    else:
        st.caption("This checkpoint has no training history.")

# -- kernel atlas ---------------------------------------------------------------------------
st.subheader("Kernel atlas")
c = st.columns(4)
n = c[0].slider("Length n", 2, 1024, min(about.train_n, 1024), key="atlas_n",
                help="Kernels are evaluated at this length; the model was trained at "
                     f"n = {about.train_n}.")
band = c[1].slider("Band m", 1, 63, 9, key="atlas_band",
                   help="Spikiness is the share of energy inside this band.")
rank = c[2].slider("Rank r", 2, 128, 32, key="atlas_rank",
                   help="Low-rankness is SKI's relative error at this rank (and the optimum).")
channels = c[3].slider("Channels per layer", 4, 192, 16, step=4, key="atlas_channels",
                       help="How many channels of each layer to measure (the first ones).")
try:
    atlas = _ui.atlas(key, id(model), n, band, rank, channels, _model=model)
except ValueError as err:
    _ui.show_error(err)
    st.stop()
st.markdown("**Per layer** (medians over the measured channels): which layers are low rank?")
st.dataframe(pd.DataFrame(atlas.layers.columns(),
                          index=pd.Index(atlas.layers.layer, name="layer")),
             column_config={"decay": "fitted λ", "spikiness": "energy in band",
                            "low_rank": f"SKI error at r={rank}",
                            "optimal": f"optimal error at r={rank}"})

SORTS = {"low_rank": "low-rankness (SKI error at r, lowest first)",
         "spikiness": "spikiness (energy in the band, highest first)",
         "decay": "decay (fitted λ, fastest first)"}
sort = st.radio("Sort channels by", list(SORTS), format_func=SORTS.get, horizontal=True,
                key="atlas_sort")
table = atlas.channels.sorted_by(sort)
shown = list(zip(table.layer[:12], table.channel[:12], strict=True))
fig = make_subplots(rows=2, cols=6, horizontal_spacing=0.02, vertical_spacing=0.12,
                    subplot_titles=[f"L{layer} c{channel}" for layer, channel in shown])
for i, (layer, channel) in enumerate(shown):
    small = atlas.channel_view(layer, channel, GRID_CELLS)  # zmid 0: colours ±max |drawn|
    fig.add_trace(go.Heatmap(z=small.matrix, zmid=0.0, colorscale="RdBu", showscale=False,
                             hovertemplate="%{z:.3g}<extra></extra>"),
                  row=i // 6 + 1, col=i % 6 + 1)
fig.update_yaxes(autorange="reversed", showticklabels=False)
fig.update_xaxes(showticklabels=False)
fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10),
                  title="The first 12 channels in this order (each on its own colour scale)")
st.plotly_chart(fig, key="chart-atlas")

st.markdown("**All measured channels.** Select a row to drill into that channel.")
event = st.dataframe(pd.DataFrame(table.columns()), key="atlas_table", on_select="rerun",
                     selection_mode="single-row", hide_index=True, height=240)
selected = event.selection.rows[0] if event.selection.rows else 0
layer, channel = int(table.layer[selected]), int(table.channel[selected])

st.subheader(f"Layer {layer}, channel {channel}")
left, right = st.columns(2)
view = atlas.channel_view(layer, channel)
left.plotly_chart(_ui.heatmap(view, f"T at n = {n} (row 0 on top)"),
                  key="chart-channel-matrix")
right.plotly_chart(_ui.kernel_plot(view), key="chart-channel-kernel")
if st.button("Open this kernel in Decomposition", icon=":material/splitscreen:",
             key="open_decomposition"):
    st.switch_page("pages/decomposition.py",
                   query_params={"source": _ui.SOURCE_LABELS["checkpoint"], "checkpoint": key,
                                 "layer": str(layer), "channel": str(channel), "n": str(n)})

# -- extrapolation --------------------------------------------------------------------------
st.subheader("Beyond the training length")
st.markdown("TNN's Table 10: with a decay bias the model keeps working on sequences longer "
            "than it was trained on. Here is this model at 1×, 2× and 4× its length.")
try:
    task = task_from_info(info.task)
    sweep = _ui.length_sweep(key, id(model), _model=model, _task=task)
except ValueError as err:
    st.warning(f"Cannot evaluate this checkpoint here: {err}", icon=":material/info:")
else:
    left, right = st.columns(2)
    left.dataframe(pd.DataFrame(sweep.columns()), hide_index=True)
    longer = extrapolation(model, about.train_n, layer, channel)
    kfig = go.Figure()
    for length, lags, kernel in zip(longer.lengths, longer.lags, longer.kernels,
                                    strict=True):
        kfig.add_scatter(x=lags, y=kernel, name=f"n = {length}", mode="lines")
    kfig.update_layout(title=f"Kernel of layer {layer}, channel {channel} at 1×, 2×, 4× n",
                       xaxis_title="lag k", height=320, margin=dict(l=10, r=10, t=40, b=10))
    right.plotly_chart(kfig, key="chart-extrapolation")
