"""Compress's search for the fastest plan within δ: each layer's sensitivity, the candidates
against their speed-up (a click loads a plan), and the table of every candidate."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages._ui import charts, checkpoints, session_keys
from tnn_core.lab import compress as lab

# The candidates' groups on the chart: name, which candidates, marker.
GROUPS = (("candidate", lambda c: not (c.front or c.best or c.tied),
           dict(color="#9e9e9e", size=9)),
          ("on the front", lambda c: c.front and not (c.best or c.tied),
           dict(color="#1f77b4", size=11)),
          ("tied for the fastest within δ", lambda c: c.tied,
           dict(color="#ff7f0e", size=13, symbol="diamond")),
          ("fastest within δ", lambda c: c.best, dict(color="#d62728", size=16, symbol="star")))


def load_plan(source: str, plan) -> None:
    """Set the checkpoint to ``source`` and Compress's plan controls to ``plan`` (a callback:
    it runs before the controls are drawn)."""
    st.session_state[session_keys.CHECKPOINT] = source
    first = plan.layers[0]
    uniform = all(layer == first for layer in plan.layers) and not first.kept
    st.session_state[session_keys.PER_LAYER] = not uniform
    if uniform:
        st.session_state.update({session_keys.BAND: first.band, session_keys.RANK: first.rank,
                                 session_keys.METHOD: first.method})
    for i, layer in enumerate(plan.layers):
        st.session_state[session_keys.layer_plan("band", i)] = layer.band
        st.session_state[session_keys.layer_plan("rank", i)] = layer.rank
        st.session_state[session_keys.layer_plan("method", i)] = layer.method
    st.toast(f"Loaded into the plan controls: {plan.describe()}", icon=":material/tune:")


def _pick_plan() -> None:
    """A click on a point of the candidates' chart loads that plan into the controls."""
    selected = st.session_state[session_keys.PARETO_CHART].selection.points
    job = st.session_state.get(session_keys.COMPRESS_SEARCH)
    if selected and job is not None and job.result is not None:
        index = selected[0]["customdata"]
        load_plan(st.session_state[session_keys.COMPRESS_SEARCH_KEY],
                  job.result.scores[int(index[0] if isinstance(index, list) else index)].plan)


def show(job: lab.BackgroundJob, source_key: str, evaluation_set: str) -> None:
    """The finished search ``job`` of the checkpoint ``source_key``, scored on
    ``evaluation_set`` (words)."""
    *_, error = job.snapshot()
    if error is not None:
        st.error(f"The search failed: {error}", icon=":material/error:")
        return
    view = lab.search_view(job.result, checkpoints.checkpoint_task(source_key))
    st.markdown(f"**{source_key}**: " + view.verdict)
    if view.stopped:
        st.warning(f"Stopped: {len(view.candidates)} of {view.planned or 'the'} candidate "
                   "plans were scored; only what was measured is shown.",
                   icon=":material/stop:")
    if view.points:
        _sensitivity(view, evaluation_set)
    if not view.candidates:
        return
    st.plotly_chart(_candidates_chart(view), key="chart-pareto", on_select=_pick_plan,
                    selection_mode="points")
    st.caption("Each point is one plan: its speed-up measured on this machine at the "
               "training length (bars: its 95 % interval) and its "
               f"{view.unit.name} on the same sequences as the source. Blue: the front of this "
               "chart, plans no other plan beats in both drop and speed-up; the red star: the "
               "fastest plan within δ, named only when its interval lies above every other's; "
               "orange diamonds: plans within δ tied for the fastest. Within δ means the whole "
               "95 % interval of the drop, not only the point, is above the red line. Click a "
               "point, or use the button below the table, to load a plan into the controls "
               "above; then press Convert.")
    _table(view)
    if view.best is not None:
        st.button("Load the best plan into the controls", icon=":material/tune:",
                  key="load_best", on_click=load_plan, args=(source_key, view.best.plan))


def _sensitivity(view: lab.SearchView, evaluation_set: str) -> None:
    """Bars of the drop with one layer converted at each grid point, δ dashed."""
    shown = view.unit
    fig = go.Figure()
    labels = [f"m={m}, r={r}" for m, r in view.points]
    for layer, drops in enumerate(view.sensitivity):
        fig.add_bar(x=labels, y=[shown.scale * d for d in drops], name=f"layer {layer} alone")
    charts.hline(fig, shown.scale * view.delta, f"δ = {shown.scale * view.delta:g}",
                 line_dash="dash", line_color="red")
    fig.update_layout(title="Sensitivity: the drop with one layer converted, the others "
                            "kept", height=340, barmode="group",
                      xaxis_title="grid point (m, r)",
                      yaxis_title=f"drop ({shown.drop_unit}; above 0: worse)",
                      margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig, key="chart-sensitivity")
    st.caption(f"Each bar: the source's {shown.name} minus the {shown.name} with only that "
               "layer converted at (m, r)" + ("" if shown.higher_is_better else
                                               " (reversed: lower is better)")
               + f", on {evaluation_set}. No bar: no change; below 0 the converted layer "
               "happened to score better. The dashed line is the whole plan's budget δ.")


def _candidates_chart(view: lab.SearchView) -> go.Figure:
    """Each candidate's metric against its speed-up with its interval; the source, δ worse,
    chance and "as fast as the source" as lines."""
    shown, fig = view.unit, go.Figure()
    for name, chosen, marker in GROUPS:
        picked = [c for c in view.candidates if chosen(c)]
        if not picked:
            continue
        fig.add_scatter(
            x=[c.speed.ratio for c in picked], y=[shown.scale * c.metric for c in picked],
            mode="markers", name=name, marker=marker, customdata=[[c.index] for c in picked],
            text=[c.label for c in picked],
            error_x=dict(type="data", symmetric=False, thickness=1, width=2,
                         array=[c.speed.ratio_ci[1] - c.speed.ratio for c in picked],
                         arrayminus=[c.speed.ratio - c.speed.ratio_ci[0] for c in picked]),
            hovertemplate="%{text}<br>speed-up %{x:.2f}×<br>" + shown.name
                          + " %{y:.3g}<extra>" + name + "</extra>")
    low, high = view.metric_range()
    charts.hline(fig, shown.scale * view.source.metric,
                 f"source {shown.show(view.source.metric)}", line_dash="dash", line_color="black")
    charts.hline(fig, shown.scale * view.threshold,
                 f"source, δ worse: {shown.show(view.threshold)}", line_dash="dot",
                 line_color="red")
    if low <= view.chance <= high:
        charts.hline(fig, shown.scale * view.chance, f"chance {shown.show(view.chance)}",
                     line_dash="dot", line_color="grey")
    else:
        fig.add_annotation(x=0, xref="paper", y=0 if view.chance < low else 1, yref="paper",
                           xanchor="left", yanchor="bottom" if view.chance < low else "top",
                           showarrow=False, font=dict(color="grey"),
                           text=f"chance {shown.show(view.chance)}: far "
                                f"{'below' if view.chance < low else 'above'} this axis")
    charts.vline(fig, 1.0, "as fast as the source", line_dash="dot", line_color="grey")
    fig.update_yaxes(range=[shown.scale * low, shown.scale * high])
    fig.update_layout(title="Candidates: metric against speed-up (click a point to load its "
                            "plan)", height=420, xaxis_title="measured speed-up at n0 "
                            "(forward+backward, whole model, ×)",
                      yaxis_title=f"{shown.name} ({shown.suffix})",
                      margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select")
    return fig


def _table(view: lab.SearchView) -> None:
    shown, candidates = view.unit, view.candidates
    st.dataframe(pd.DataFrame({
        "order scored": [c.index + 1 for c in candidates],
        "plan": [c.label for c in candidates],
        shown.name: [shown.show(c.metric) for c in candidates],
        "drop (95 % interval; + is worse)": [
            f"{shown.drop_text(c.drop)} ({shown.drop_range(*c.drop_ci)})" for c in candidates],
        "within δ": [c.within for c in candidates],
        "speed-up at n0 (95 % interval)": [
            f"{c.speed.ratio:.2f}× ({c.speed.ratio_ci[0]:.2f}–{c.speed.ratio_ci[1]:.2f})"
            for c in candidates],
        "speed-up at 4× n0": [c.speed_long.ratio if c.speed_long else None for c in candidates],
        "parameters": [c.parameters for c in candidates],
        "on the front": [c.front for c in candidates],
        "fastest": ["yes" if c.best else "tied" if c.tied else "" for c in candidates]}),
        hide_index=True,
        column_config={"speed-up at 4× n0": st.column_config.NumberColumn(format="%.2f×"),
                       "parameters": st.column_config.NumberColumn(format="localized")})
