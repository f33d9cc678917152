"""Kernels forming during training (Train and Inspect): a run's snapshots replayed."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from tnn_core.lab.common.snapshot_view import SnapshotView


def kernel_replay(view: SnapshotView, key: str, live: bool = False) -> None:
    """A run's kernel snapshots at one step: a layer choice, a step slider and t_k against k
    on one y-range for every step. ``live`` (a run going on): a toggle pins the slider to
    the newest snapshot; a run that ends while pinned opens at its last step."""
    st.caption(view.caption)
    layer = 0
    if len(view.layers) > 1:
        layer = st.radio("Layer", range(len(view.layers)), horizontal=True,
                         format_func=lambda i: f"layer {view.layers[i]}", key=f"{key}_layer",
                         help="Which of the kept layers to replay.")
    steps = view.steps.tolist()
    step_key, pinned_key = f"{key}_step", f"_{key}_pinned"
    follow = live and st.toggle("Follow the newest snapshot", True, key=f"{key}_follow",
                                help="Off: drag the slider through the snapshots so far.")
    if follow or st.session_state.get(step_key) not in steps \
            or st.session_state.get(step_key) == st.session_state.get(pinned_key):
        st.session_state[step_key] = steps[-1]
    st.session_state[pinned_key] = steps[-1] if follow else None
    step = steps[0] if len(steps) == 1 else st.select_slider(
        "Step", steps, key=step_key, disabled=follow,
        help="The training step of the snapshot shown; drag it to watch the kernels form.")
    index = steps.index(step)
    fig = go.Figure([go.Scatter(x=view.lags, y=view.kernels[index, layer, c],
                                mode="lines+markers", name=f"channel {channel}")
                     for c, channel in enumerate(view.channels)])
    fig.update_layout(title=f"Layer {view.layers[layer]} at step {step}", height=340,
                      xaxis_title="lag k = i − j", yaxis_title="t_k",
                      margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(range=view.y_range(layer))
    st.plotly_chart(fig, key=f"{key}_chart")
