"""Inspect's "Compare with another run": a second checkpoint's training curves drawn over this
one's on the same axes, both runs on the evaluation set side by side, and where their
configurations differ (``tnn_core.lab.inspect.run_comparison``). Inspect calls ``show(key)``."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages._ui import checkpoint_views, checkpoints, frame, numbers, session_keys
from tnn_core.lab import inspect as lab

__all__ = ["show"]

AXES = {"step": "step", "tokens": "training tokens", "wall_s": "wall time (s)"}
COLOURS = ("#1f77b4", "#ff7f0e")  # this run, the other run (Plotly's first two colours)
DIFFERS = "background-color: rgba(255, 190, 0, 0.3)"  # a differing row of the config table
CHART_HEIGHT = 380
LEGEND = dict(orientation="h", yanchor="top", y=-0.2, x=0)  # below the x-axis title
MARGIN = dict(l=10, r=10, t=40, b=10)


@dataclass(frozen=True)
class Run:
    """One run as the comparison draws it."""

    name: str  # as the legend and the table name it
    info: lab.CheckpointInfo
    curves: lab.RunCurves
    final: lab.FinalMetric
    chance: float  # the metric of a uniform guess; NaN when its task cannot be rebuilt here
    higher_is_better: bool | None  # None when its task cannot be rebuilt here


def show(key: str) -> None:
    """The comparison of checkpoint ``key`` (Inspect's) with one the person picks, folded
    in an expander."""
    with st.expander("Compare with another run", icon=":material/compare_arrows:"):
        others = {k: label for k, label in checkpoints.checkpoint_choices().items() if k != key}
        if not others:
            st.caption("There is no other checkpoint to compare with yet: train one on the "
                       "Train page, or upload one above.")
            return
        if st.session_state.get(session_keys.COMPARE_WITH) not in others:
            # e.g. now the checkpoint Inspect shows
            st.session_state.pop(session_keys.COMPARE_WITH, None)
        other = st.selectbox(
            "Compare with", list(others), index=None, format_func=others.get,
            key="compare_with", placeholder="Choose a run…",
            help="Any shipped checkpoint, your saved runs or this session's uploads: its "
                 "curves are drawn over this one's, with the configuration fields that differ.")
        if other is None:
            st.caption("Choose a second run to overlay its training curves on this one's and "
                       "see where their configurations differ.")
            return
        try:
            runs = (_run(key), _run(other))
        except (lab.CheckpointError, ValueError) as err:
            frame.show_error(err)
            return
        _draw_curves(runs)
        _draw_final_metrics(runs, (key, other))
        _draw_config_diff(runs)


def _name(key: str) -> str:
    label = checkpoints.checkpoint_choices().get(key, key)
    return label.split(" · ")[0]  # a shipped one's label goes on to say what it shows


def _run(key: str) -> Run:
    info = checkpoints.opened(key).info
    try:
        task = checkpoints.checkpoint_task(key)
    except ValueError:  # the curves are in the file; only chance needs the task
        task = None
    return Run(_name(key), info, lab.curves(info), lab.final_metric(info),
               math.nan if task is None else float(task.chance),
               None if task is None else task.higher_is_better)


# -- the curves ------------------------------------------------------------------------------
METRIC_WORDS = {"bpc": "bits per character"}  # a metric named by its unit: the axis says what


def _metric_unit(metric_name: str) -> tuple[float, str]:
    """(scale, unit) of a metric on screen: an accuracy in %, others in their own unit."""
    return (100.0, "%") if metric_name == "accuracy" else (1.0, metric_name)


def _metric_axis_title(metric_name: str) -> str:
    """"accuracy (%)", "bits per character (bpc)"."""
    return f"{METRIC_WORDS.get(metric_name, metric_name)} ({_metric_unit(metric_name)[1]})"


def _draw_curves(runs: tuple[Run, Run]) -> None:
    silent = [run.name for run in runs if not len(run.curves.step)]
    if silent:
        st.caption(f"{' and '.join(silent)}: the training history records no evaluation, "
                   "so there is no curve to draw.")
    drawn = [run for run in runs if len(run.curves.step)]
    axes = [axis for axis in AXES if drawn and all(run.curves.recorded(axis) for run in drawn)]
    if not axes:
        return
    if st.session_state.get(session_keys.COMPARE_AXIS) not in axes:
        st.session_state.pop(session_keys.COMPARE_AXIS, None)
    axis = st.radio("Against", axes, format_func=AXES.get, horizontal=True,
                    key="compare_axis",
                    help="The x-axis of both charts; tokens and wall time are offered when "
                         "both histories record them.")
    left, right = st.columns(2)
    names = {run.curves.metric_name for run in drawn}
    if len(names) == 1:
        left.plotly_chart(metric_figure(drawn, axis), key="chart-compare-metric")
    else:
        left.caption(f"The runs measure different metrics ({' and '.join(sorted(names))}), so "
                     "only their losses share an axis.")
    right.plotly_chart(loss_figure(drawn, axis), key="chart-compare-loss")


def metric_figure(runs: list[Run], axis: str) -> go.Figure:
    """Both runs' validation metric against ``axis``, chance dashed; the y-axis holds every
    point (an accuracy from 0 to 100 %)."""
    metric_name = runs[0].curves.metric_name
    scale, unit = _metric_unit(metric_name)
    fig = go.Figure()
    for run, colour in zip(runs, COLOURS, strict=False):
        fig.add_scatter(x=getattr(run.curves, axis), y=scale * run.curves.metric, name=run.name,
                        mode="lines+markers", line=dict(color=colour))
    chances = {run.name: run.chance for run in runs if np.isfinite(run.chance)}
    apart = len(chances) == 2 and not math.isclose(*chances.values())  # one line per run
    for name, chance in list(chances.items())[:2 if apart else 1]:
        fig.add_hline(y=scale * chance, line_dash="dash", line_color="grey",
                      annotation_text=f"chance {scale * chance:.3g} {unit}"
                      + (f" ({name})" if apart else ""), annotation_position="top right")
    better = {run.higher_is_better for run in runs} - {None}
    title = f"Validation {metric_name} during training" + (
        f" ({'higher' if better.pop() else 'lower'} is better)" if len(better) == 1 else "")
    values = [scale * v for run in runs for v in run.curves.metric if np.isfinite(v)]
    top = 100.0 if metric_name == "accuracy" else 1.05 * max(
        values + [scale * c for c in chances.values()], default=1.0)
    fig.update_layout(title=title, height=CHART_HEIGHT, xaxis_title=AXES[axis],
                      yaxis_title=_metric_axis_title(metric_name), yaxis_range=[0.0, top],
                      margin=MARGIN, legend=LEGEND)
    return fig


def loss_figure(runs: list[Run], axis: str) -> go.Figure:
    """Both runs' validation loss (solid) and mean training loss since the evaluation before
    (dotted) against ``axis``."""
    fig = go.Figure()
    for run, colour in zip(runs, COLOURS, strict=False):
        x = getattr(run.curves, axis)
        fig.add_scatter(x=x, y=run.curves.loss, name=f"{run.name}, validation",
                        mode="lines+markers", line=dict(color=colour))
        fig.add_scatter(x=x, y=run.curves.train_loss, name=f"{run.name}, training",
                        mode="lines", line=dict(color=colour, dash="dot"))
    fig.update_layout(title="Loss during training (training: mean since the evaluation "
                            "before)", height=CHART_HEIGHT, xaxis_title=AXES[axis],
                      yaxis_title="cross-entropy (nats)", yaxis_rangemode="tozero",
                      margin=MARGIN, legend=LEGEND)
    return fig


# -- the final metrics -----------------------------------------------------------------------
def final_text(final: lab.FinalMetric) -> str:
    """"value [low, high] unit, N sequences", or the value and "no interval recorded"."""
    if not np.isfinite(final.value):
        return "no evaluation recorded it"
    scale, unit = _metric_unit(final.name)
    digits = 1 if final.name == "accuracy" else 3
    value = f"{scale * final.value:.{digits}f}"
    if final.ci95 is None:
        return f"{value} {unit}, no interval recorded"
    low, high = (f"{scale * bound:.{digits}f}" for bound in final.ci95)
    return f"{value} [{low}, {high}] {unit}, {final.sequences:,} sequences"


def _draw_final_metrics(runs: tuple[Run, Run], keys: tuple[str, str]) -> None:
    """Both runs on their task's evaluation set, with intervals and the paired change when
    they share a task; each run's last training evaluation under it."""
    st.markdown("**On the evaluation set**")
    try:
        scores = tuple(checkpoint_views.evaluation(key) for key in keys)
    except ValueError as err:
        scores = None
        st.caption(f"Not scored on the evaluation set: {err}")
    for i, (column, run) in enumerate(zip(st.columns(2), runs, strict=True)):
        final = run.final
        if scores is not None:
            name = scores[i].metric_name
            column.metric(run.name, numbers.format_metric(scores[i].metric, name),
                          help="The task's evaluation set, the one every page scores.")
            column.caption(f"95 % interval {numbers.format_interval(scores[i].ci95, name)} · "
                           f"{scores[i].sequences:,} sequences")
        where = "" if final.step is None else f" at step {final.step:,}"
        column.caption(f"Its last evaluation during training{where}: {final_text(final)}.")
    if scores is not None:
        said = lab.evaluation_change(*scores, runs[0].info.task == runs[1].info.task)
        st.markdown(said or "Their tasks differ, so their evaluation sets do: the two "
                            "numbers are not compared.")


# -- the configurations ----------------------------------------------------------------------
def _shown(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def config_table(rows: list[lab.ConfigRow], names: tuple[str, str]) -> pd.DataFrame:
    """One row per field: its value in each run ("—" where not recorded) and whether they
    differ, in ``config_diff``'s order (differences first)."""
    a, b = names[0], names[1] if names[1] != names[0] else f"{names[1]} (other)"
    status = {None: "differs", "a": f"only in {a}", "b": f"only in {b}"}
    return pd.DataFrame({
        "field": [row.field for row in rows],
        a: ["—" if row.only_in == "b" else _shown(row.value_a) for row in rows],
        b: ["—" if row.only_in == "a" else _shown(row.value_b) for row in rows],
        "": [status[row.only_in] if row.differs else "same" for row in rows]})


def _draw_config_diff(runs: tuple[Run, Run]) -> None:
    rows = lab.config_diff(runs[0].info, runs[1].info)
    differing = sum(row.differs for row in rows)
    one_run = sum(row.only_in is not None for row in rows)
    st.markdown("**Configuration: model, task and training**")
    st.caption(f"The two configurations are the same in all {len(rows)} fields." if not differing
               else f"{differing} of {len(rows)} fields differ (highlighted, listed first)"
                    + (f"; {one_run} of them only one run records." if one_run else "."))
    table = config_table(rows, (runs[0].name, runs[1].name))
    styled = table.style.apply(lambda row: [DIFFERS if row.iloc[-1] != "same" else ""] * len(row),
                               axis=1)
    st.dataframe(styled, hide_index=True, key="compare-config",
                 height=min(400, 35 * (len(rows) + 1) + 3))
