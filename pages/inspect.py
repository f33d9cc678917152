"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from pages import _ui
from tnn_core.training.checkpoint import CheckpointError
from tnn_core.training.tasks import task_from_info

_ui.ensure_app_frame()

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

config = info.model_config
history = info.history or {}
evals = history.get("evals") or []
final = evals[-1] if evals else {}
m = st.columns(5)
m[0].metric("Task", info.task.get("name", "?"))
m[1].metric("Operator", f"{config.operator.kind}{' (causal)' if config.operator.causal else ''}")
m[2].metric("Width × layers", f"{config.dim} × {config.layers}")
m[3].metric(f"Validation {history.get('metric_name', 'metric')}",
            _ui.fmt(final.get("metric", float("nan")), ".3f"))
m[4].metric("Trained steps", f"{history.get('steps', '?')}",
            help=f"{history.get('wall_s', 0):.0f} s on {history.get('device', '?')}. "
                 f"Command: {history.get('command')}")

left, right = st.columns([1, 2])
with left:
    st.markdown("**Configuration**")
    st.json({"model": config.to_dict(), "task": {k: v for k, v in info.task.items()
                                                 if k != "vocab"}}, expanded=False)
with right:
    if evals:
        steps = [e["step"] for e in evals]
        fig = make_subplots(specs=[[{"secondary_y": True}]])
        fig.add_scatter(x=steps, y=[e["loss"] for e in evals], name="validation loss")
        fig.add_scatter(x=steps, y=[e["metric"] for e in evals],
                        name=f"validation {history.get('metric_name', 'metric')}",
                        secondary_y=True, line=dict(dash="dot"))
        fig.update_layout(title="Training history", height=300, xaxis_title="step",
                          margin=dict(l=10, r=10, t=40, b=10))
        fig.update_yaxes(type="log", title="validation loss", secondary_y=False)
        st.plotly_chart(fig, key="chart-history")
    else:
        st.caption("This checkpoint has no training history.")

# -- kernel atlas ---------------------------------------------------------------------------
st.subheader("Kernel atlas")
train_n = int(info.task.get("settings", {}).get("seq_len") or 64)
c = st.columns(4)
n = c[0].slider("Length n", 2, 1024, min(train_n, 1024), key="atlas_n",
                help="Kernels are evaluated at this length; the model was trained at "
                     f"n = {train_n}.")
band = c[1].slider("Band m", 1, 63, 9, key="atlas_band",
                   help="Spikiness is the share of energy inside this band.")
rank = c[2].slider("Rank r", 2, 128, 32, key="atlas_rank",
                   help="Low-rankness is SKI's relative error at this rank (and the optimum).")
channels = c[3].slider("Channels per layer", 4, 192, 16, step=4, key="atlas_channels",
                       help="How many channels of each layer to measure (the first ones).")
try:
    rows = _ui.atlas(key, id(model), n, band, min(rank, n), channels, _model=model)
except ValueError as err:
    _ui.show_error(err)
    st.stop()
table = pd.DataFrame(rows)
st.markdown("**Per layer** (medians over the measured channels): which layers are low rank?")
st.dataframe(table.groupby("layer")[["decay", "spikiness", "low_rank", "optimal"]].median(),
             column_config={"decay": "fitted λ", "spikiness": "energy in band",
                            "low_rank": f"SKI error at r={rank}",
                            "optimal": f"optimal error at r={rank}"})

SORTS = {"low_rank": "low-rankness (SKI error at r, lowest first)",
         "spikiness": "spikiness (energy in the band, highest first)",
         "decay": "decay (fitted λ, fastest first)"}
sort = st.radio("Sort channels by", list(SORTS), format_func=SORTS.get, horizontal=True,
                key="atlas_sort")
table = table.sort_values(sort, ascending=sort != "spikiness", na_position="last")
table = table.reset_index(drop=True)
kernels = _ui.layer_kernels(model, n)  # (L, D, 2n-1)
shown = table.head(12)
fig = make_subplots(rows=2, cols=6, horizontal_spacing=0.02, vertical_spacing=0.12,
                    subplot_titles=[f"L{r.layer} c{r.channel}" for r in shown.itertuples()])
idx = np.arange(0, n, max(1, n // 64))
lag_index = (n - 1) + idx[:, None] - idx[None, :]
for i, r in enumerate(shown.itertuples()):
    T = kernels[r.layer, r.channel][lag_index]
    scale = float(np.abs(T).max()) or 1.0
    fig.add_trace(go.Heatmap(z=T, zmin=-scale, zmax=scale, colorscale="RdBu", showscale=False,
                             hovertemplate="%{z:.3g}<extra></extra>"),
                  row=i // 6 + 1, col=i % 6 + 1)
fig.update_yaxes(autorange="reversed", showticklabels=False)
fig.update_xaxes(showticklabels=False)
fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10),
                  title="The first 12 channels in this order (each on its own colour scale)")
st.plotly_chart(fig, key="chart-atlas")

st.markdown("**All measured channels.** Select a row to drill into that channel.")
event = st.dataframe(table, key="atlas_table", on_select="rerun", selection_mode="single-row",
                     hide_index=True, height=240)
selected = event.selection.rows[0] if event.selection.rows else 0
pick = table.iloc[selected]
layer, channel = int(pick["layer"]), int(pick["channel"])

st.subheader(f"Layer {layer}, channel {channel}")
left, right = st.columns(2)
coeffs = kernels[layer, channel]
left.plotly_chart(_ui.heatmap(_ui.dense_matrix(coeffs), f"T at n = {n} (row 0 on top)"),
                  key="chart-channel-matrix")
right.plotly_chart(_ui.kernel_plot(coeffs), key="chart-channel-kernel")
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
    left.dataframe(pd.DataFrame(sweep), hide_index=True)
    kfig = go.Figure()
    for factor in (1, 2, 4):
        length = factor * train_n
        k = _ui.checkpoint_kernel(key, length, layer, channel)
        kfig.add_scatter(x=np.arange(-(length - 1), length), y=k, name=f"n = {length}",
                         mode="lines")
    kfig.update_layout(title=f"Kernel of layer {layer}, channel {channel} at 1×, 2×, 4× n",
                       xaxis_title="lag k", height=320, margin=dict(l=10, r=10, t=40, b=10))
    right.plotly_chart(kfig, key="chart-extrapolation")
