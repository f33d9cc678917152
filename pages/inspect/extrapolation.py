"""Inspect's "Beyond the training length": the model scored at 1×, 2× and 4× the length it
was trained at (the length sweep, computed on a thread of its own), beside the drilled
channel's kernel at those lengths. Token mixers alone (no task) get the kernel and the one
line on why there are no scores. Inspect calls ``show(inspected, drilled)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages._ui import checkpoint_views, numbers, timing
from pages.inspect.channel_drill import Drilled
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]

SWEEP_WAIT_S = 0.25  # how long the page waits for the length sweep before drawing without it
STYLES = (dict(width=4), dict(width=2, dash="dash"), dict(width=1.5, dash="dot"))  # 1×, 2×, 4×


def show(inspected: Inspected, drilled: Drilled) -> None:
    """The section: the sweep's scores and the kernel at each length, or why there are none."""
    about = inspected.about
    st.subheader("Beyond the training length")
    if inspected.kernels_only_reason is not None:
        st.markdown(f"The chosen channel's kernel at 1×, 2× and 4× the length it opens at, "
                    f"n = {about.train_n:,}.")
        st.caption(inspected.kernels_only_reason)
        st.plotly_chart(kernel_figure(inspected, drilled), key="chart-extrapolation")
        return
    sweep = _sweep(inspected)
    measured = np.array([]) if sweep is None else sweep.metric[np.isfinite(sweep.metric)]
    if sweep is not None and len(measured) < 2:
        st.markdown(f"{about.task} exists at its training length n = {about.train_n} only, so "
                    "this model cannot be run longer; the Table 10 pair below shows what decay "
                    "does for a language model.")
    elif sweep is not None:
        _lengths(inspected, sweep, drilled)


def _sweep(inspected: Inspected) -> inspect_lab.LengthSweep | None:
    """The length sweep if it is done within SWEEP_WAIT_S (else a note that polls for it), or
    None with a warning when the model cannot be evaluated here."""
    sweep = None
    try:
        if inspected.task is None:
            raise inspected.task_error
        sweep = checkpoint_views.length_sweep(inspected.key, SWEEP_WAIT_S)
        if sweep is None:
            timing.poll_until(
                lambda: checkpoint_views.start_length_sweep(inspected.key).done(),
                lambda: _waiting(inspected.about.train_n))
    except ValueError as err:
        st.warning(f"Cannot evaluate this checkpoint here: {err}", icon=":material/info:")
    return sweep


def _waiting(train_n: int) -> None:
    st.caption(f"Evaluating the model at 1×, 2× and 4× its training length n = "
               f"{train_n}; the results appear here in a moment.",
               help="The evaluation runs on its own thread, so the sections above do not "
                    "wait for it.")


def _lengths(inspected: Inspected, sweep: inspect_lab.LengthSweep, drilled: Drilled) -> None:
    """The sweep in sentences and a table, and the drilled channel's kernel at each length."""
    about = inspected.about
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
        about.metric_name: [numbers.format_metric(v, about.metric_name) for v in sweep.metric],
        "95 % interval": [numbers.format_interval(interval, about.metric_name)
                          for interval in intervals],
        "sequences": [f"{scores.sequences:,}" for scores in sweep.scores]}), hide_index=True)
    right.plotly_chart(kernel_figure(inspected, drilled), key="chart-extrapolation")


def kernel_figure(inspected: Inspected, drilled: Drilled) -> go.Figure:
    """The drilled channel's kernel at 1×, 2× and 4× the training length."""
    layer, channel = drilled.layer, drilled.channel
    longer = checkpoint_views.extrapolation(inspected.key, inspected.about.train_n, layer,
                                            channel)
    efig = go.Figure()
    for length, lags, kernel, style in zip(longer.lengths, longer.lags, longer.kernels,
                                           STYLES, strict=True):
        lags, kernel = inspect_lab.display_line(lags, kernel)
        efig.add_scatter(x=lags, y=kernel, name=f"n = {length}", mode="lines", line=style)
    efig.update_layout(title=f"Kernel of layer {layer}, channel {channel} at 1×, 2×, 4× n"
                       + (" (diagonal means of what it applies)"
                          if drilled.matrix.target is not None else ""),
                       xaxis_title="lag k", yaxis_title="t_k", height=320,
                       margin=dict(l=10, r=10, t=40, b=10))
    return efig
