"""Inspect's training curve: the validation metric its training history recorded, with each
evaluation's 95 % interval and chance. Inspect calls ``show(about)``."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]


def show(about: inspect_lab.Summary) -> None:
    """The curve, or a caption when the history records no validation metric."""
    if not len(about.eval_steps):
        st.caption("This checkpoint's training history records no validation metric, so "
                   "there is no curve to draw.")
        return
    scale = 100.0 if about.metric_name == "accuracy" else 1.0
    unit = "%" if about.metric_name == "accuracy" else about.metric_name
    axis_low, axis_high = about.metric_axis()
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
    fig.update_yaxes(range=[scale * axis_low, scale * axis_high])
    st.plotly_chart(fig, key="chart-history")
    hidden = about.off_axis()
    if hidden:
        st.caption("Above the axis (an untrained model): " + ", ".join(
            f"step {step}: {value:.3g} {unit}" for step, value in hidden) + ".")
