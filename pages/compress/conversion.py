"""Compress's result of one conversion: the metric at each stage with its interval, the
verdict, the speed-ups, the parameters, a chart, the timing table, the per-layer errors and
the form that saves the converted checkpoint."""

from __future__ import annotations

import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages._ui import checkpoints, frame, session_keys
from tnn_core.lab import compress as lab

RECURRENT_ERROR = (" A recurrent layer keeps the lag 0 exactly and fits the other lags by s "
                   f"damped exponentials; its error is {lab.RELATIVE_ERROR} like every layer's, "
                   "the diagonal counted in ‖T‖_F.")


def show(job: lab.BackgroundJob, about: dict, unit: lab.Unit, evaluation_set: str,
         error_meaning: str) -> None:
    """The finished conversion ``job`` of the checkpoint ``about["key"]``; its scores were
    measured on ``evaluation_set`` (words), ``error_meaning`` explains the layers' error."""
    *_, error = job.snapshot()
    if error is not None:
        st.error(f"The conversion failed: {error}", icon=":material/error:")
        return
    view = lab.result_view(job.result, about["steps"])
    st.subheader(f"Converted {about['key']}")
    st.caption(f"Plan: {view.plan}.")
    if view.stop_note:
        st.warning(view.stop_note, icon=":material/stop:")
    _stages(view, unit, evaluation_set)
    st.markdown(view.verdict)
    _speeds_and_parameters(view)
    left, right = st.columns([2, 3])
    left.plotly_chart(_metric_chart(view, unit), key="chart-compress-metric")
    with right:
        _timing_table(view)
    st.markdown("**Per layer**")
    st.dataframe(pd.DataFrame({
        "layer": [layer for layer, _, _ in view.layers],
        "plan": [plan_text for _, plan_text, _ in view.layers],
        "relative error": [error for _, _, error in view.layers]}), hide_index=True,
        column_config={"relative error": st.column_config.NumberColumn(
            format="%.2e" if view.recurrent else "%.4f",  # a recurrence's errors are tiny
            help=f"{lab.RELATIVE_ERROR} over the layer's channels, T̂ the converted layer's "
                 "matrix at the training length")})
    st.caption(error_meaning + (RECURRENT_ERROR if view.recurrent else "")
               + " A kept layer has none.")
    _save_form(job, about["key"])


def _stages(view: lab.ResultView, unit: lab.Unit, evaluation_set: str) -> None:
    """The metric of the source, the converted and the fine-tuned model, and chance."""
    m = st.columns(4)
    stages = [(m[0], f"Source {unit.name}", view.source, None, "The unconverted model."),
              (m[1], f"Converted {unit.name}", view.converted, view.changes[0],
               "Before fine-tuning.")]
    if view.finetuned is not None:
        stages.append((m[2], f"After {view.finetune_steps} fine-tuning steps", view.finetuned,
                       view.changes[1], "After fine-tuning."))
    else:
        m[2].metric("After fine-tuning", "—", help="Not fine-tuned (0 steps).")
    for column, label, scores, change, what in stages:
        low, high = scores.ci95
        column.metric(label, unit.show(scores.metric),
                      delta=None if change is None else unit.change(scores.metric,
                                                                    view.source.metric),
                      delta_color="normal" if unit.higher_is_better else "inverse",
                      help=f"{what} On {evaluation_set}.")
        column.caption(f"95 % interval {unit.show(low)} to {unit.show(high)}")
    m[3].metric(f"Chance {unit.name}", unit.show(view.chance),
                help="What a uniform guess scores.")


def _speeds_and_parameters(view: lab.ResultView) -> None:
    row = st.columns(3)
    for column, speed in zip(row, view.speeds, strict=False):
        column.metric(f"Speed-up at n = {speed.length} ({speed.factor}× n0)",
                      f"{speed.ratio:.2f}×", delta=speed.verdict, delta_color="off",
                      delta_arrow="off",
                      help="Source time / converted time, the median over interleaved "
                           "rounds; 'faster' or 'slower' only when its 95 % interval "
                           f"({speed.ratio_ci[0]:.2f}–{speed.ratio_ci[1]:.2f}×) excludes 1, "
                           "else 'within noise'.")
        column.caption(f"95 % interval {speed.ratio_ci[0]:.2f}–{speed.ratio_ci[1]:.2f}×, "
                       f"{speed.repeats} rounds")
    row[-1].metric("Parameters", f"{view.parameters[1]:,}",
                   delta=f"{view.added_parameters:+,} vs the source's {view.parameters[0]:,}",
                   delta_color="off", delta_arrow="off",
                   help="The converted layers hold band taps and knots instead of the "
                        "source's kernel generator; the rest of the model is unchanged.")


def _metric_chart(view: lab.ResultView, unit: lab.Unit) -> go.Figure:
    """Bars of the metric at each stage with their 95 % intervals, and chance."""
    bars = [("source", view.source, "#7f7f7f"), ("converted", view.converted, "#1f77b4")]
    if view.finetuned is not None:
        bars.append(("fine-tuned", view.finetuned, "#2ca02c"))
    values = [scores.metric for _, scores, _ in bars] + [view.chance]
    intervals = [scores.ci95 for _, scores, _ in bars] + [(view.chance, view.chance)]
    fig = go.Figure(go.Bar(
        x=[name for name, _, _ in bars] + ["chance"], y=[unit.scale * v for v in values],
        text=[unit.show(v) for v in values], textposition="inside",
        marker_color=[colour for _, _, colour in bars] + ["#d9d9d9"],
        error_y=dict(type="data", array=[unit.scale * (high - v) for v, (_, high)
                                         in zip(values, intervals, strict=True)],
                     arrayminus=[unit.scale * (v - low) for v, (low, _)
                                 in zip(values, intervals, strict=True)])))
    better = "higher" if unit.higher_is_better else "lower"
    fig.update_layout(title=f"{unit.name.capitalize()}, 95 % intervals", height=320,
                      yaxis_title=f"{unit.name} ({unit.suffix}, {better} is better)",
                      margin=dict(l=10, r=10, t=40, b=10))
    if unit.name == "accuracy":
        fig.update_yaxes(range=[0, 105])
    return fig


def _timing_table(view: lab.ResultView) -> None:
    st.markdown("**Timing**")
    if not view.speeds:
        st.caption("The speed was not measured: the conversion was stopped first.")
        return
    where = (frame.device() if frame.device() != "cpu" else
             f"CPU, {lab.JOB_THREADS} thread{'s' if lab.JOB_THREADS > 1 else ''}")
    st.dataframe(pd.DataFrame({
        "length n": [f"{r.length} ({r.factor}× n0)" for r in view.speeds],
        "source ms (quartiles)": [f"{r.source_ms:.2f} ({r.source_quartiles[0]:.2f}–"
                                  f"{r.source_quartiles[1]:.2f})" for r in view.speeds],
        "converted ms (quartiles)": [f"{r.converted_ms:.2f} ({r.converted_quartiles[0]:.2f}–"
                                     f"{r.converted_quartiles[1]:.2f})" for r in view.speeds],
        "speed-up (95 % interval)": [f"{r.ratio:.2f}× ({r.ratio_ci[0]:.2f}–"
                                     f"{r.ratio_ci[1]:.2f})" for r in view.speeds]}),
        hide_index=True)
    st.caption(f"The whole model, forward + backward on 8 sequences of random tokens, "
               f"measured on this machine just now ({where}): medians of "
               f"{view.speeds[0].repeats} interleaved rounds of source and converted "
               "after warm-up, quartiles in brackets; the speed-up is the median of "
               "the rounds' ratios with its distribution-free 95 % interval. Other "
               "work on the server (another page, another session) adds noise.")


def _save_form(job: lab.BackgroundJob, source_key: str) -> None:
    with st.form("compress-save"):
        name = st.text_input("Save as", lab.save_name(source_key, time.strftime("%H%M%S")),
                             key="compress_save_name",
                             help="1 to 64 letters, digits, _ and -. Saved under "
                                  "checkpoints/user/ like the Train page's runs, shared by "
                                  "everyone on this server: a name already taken is refused.")
        if st.form_submit_button("Save and inspect", icon=":material/save:", key="compress_save"):
            try:
                saved = lab.save(job.result, checkpoints.opened(source_key).info, name,
                                 checkpoints.USER_CHECKPOINTS)
            except (lab.CheckpointError, ValueError) as err:
                frame.show_error(err)
            else:
                frame.open_page("pages/inspect.py", {session_keys.CHECKPOINT: saved})
