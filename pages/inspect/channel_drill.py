"""Inspect's one channel: the matrix a chosen layer and channel apply at the atlas's length
n, its kernel against lag (for bidirectional SKI, the diagonal means of what it applies
beside the Toeplitz target), and the way to Decomposition with that kernel. Inspect calls
``show(inspected, n)``."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from pages._ui import charts, checkpoint_views, controls, frame, session_keys
from pages._ui.controls import fields
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["Drilled", "show"]


@dataclass(frozen=True)
class Drilled:
    """The channel the page drills into, and what it applies."""

    layer: int
    channel: int
    matrix: inspect_lab.ChannelMatrix  # the matrix it applies at n (and, for SKI, its target)


def show(inspected: Inspected, n: int) -> Drilled | None:
    """The layer and channel inputs, the channel's matrix and kernel at ``n``; None (the
    reason shown) when its matrix cannot be read or it has none (togeipi)."""
    if inspected.kind == "togeipi":
        st.info(inspect_lab.NO_CHANNEL_MATRIX, icon=":material/info:")
        return None
    d = st.columns(4)
    layer = int(controls.control(d[0].number_input, fields.DRILL_LAYER,
                                 high=inspected.layers - 1))
    channel = int(controls.control(d[1].number_input, fields.DRILL_CHANNEL,
                                   high=inspected.channels - 1,
                                   says={"channels": inspected.channels}))
    st.subheader(f"Layer {layer}, channel {channel}")
    try:
        drill = checkpoint_views.channel_matrix(inspected.key, n, layer, channel)
    except ValueError as err:
        frame.show_error(err)
        return None
    left, right = st.columns(2)
    applied = ("band + W A Wᵀ, the matrix this channel applies" if drill.target is not None
               else "T, the matrix this channel applies")
    left.plotly_chart(charts.heatmap(drill.view, f"{applied} at n = {n} (row 0 on top)"),
                      key="chart-channel-matrix")
    right.plotly_chart(kernel_figure(drill), key="chart-channel-kernel")
    if drill.target is not None:
        st.metric("Applied matrix against its Toeplitz target",
                  f"{100 * drill.target_gap:.1f} %",
                  help="‖band + W A Wᵀ − T(kernel(n))‖_F / ‖T(kernel(n))‖_F: how far what the "
                       "model computes is from the Toeplitz kernel SKI interpolates.")
    if st.button("Open this kernel in Decomposition", icon=":material/splitscreen:",
                 key="open_decomposition"):
        frame.open_page("pages/decomposition.py", {"source": "checkpoint",
                                                   session_keys.CHECKPOINT: inspected.key,
                                                   session_keys.LAYER: layer,
                                                   session_keys.CHANNEL: channel, "n": n,
                                                   "causal": inspected.causal})
    return Drilled(layer, channel, drill)


def kernel_figure(drill: inspect_lab.ChannelMatrix) -> go.Figure:
    """The kernel t_k against lag k; for bidirectional SKI, the diagonal means of the
    applied matrix with the Toeplitz target kernel(n) dotted over them."""
    kfig = charts.kernel_plot(drill.view, "Kernel t_k against lag k" if drill.target is None
                              else "Diagonal means of the applied matrix, and the Toeplitz "
                                   "target")
    if drill.target is not None:
        kfig.data[0].name = "diagonal means (applied)"
        lags, target = inspect_lab.display_line(drill.view.lags, drill.target)
        kfig.add_scatter(x=lags, y=target, name="Toeplitz target kernel(n)", mode="lines",
                         line=dict(dash="dot"))
    return kfig
