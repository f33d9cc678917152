"""Inspect's header: the checkpoint's task, operator, size, score on the evaluation set and
training steps; the way to Compress; its lineage, configuration and training curve; and the
model card to download. Inspect calls ``show(inspected, model, info)``."""

from __future__ import annotations

import streamlit as st

from pages._ui import checkpoint_views, frame, numbers, timing
from pages.figures import training_curve
from pages.figures.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]

HEADLINE_WAIT_S = 0.5  # the header waits this long for the evaluation, then polls for it
REPORT_FILES = (("markdown", "md", "Model card and layers (Markdown)"),
                ("csv", "csv", "Every channel (CSV)"), ("json", "json", "Everything (JSON)"))


def show(inspected: Inspected, model, info) -> None:
    """The header of the checkpoint ``inspected`` (opened as ``model`` and ``info``)."""
    about = inspected.about
    m = st.columns(5)
    m[0].metric("Task", about.task, help=f"Trained at length n = {about.train_n}.")
    m[1].metric("Operator, causal" if inspected.causal else "Operator, bidirectional",
                inspected.kind)
    m[2].metric("Width × layers", about.size)
    headline_metric(inspected, m[3])
    m[4].metric("Trained steps", "—" if about.steps is None else f"{about.steps:,}",
                help=about.training_note())
    if inspect_lab.convertible(model.config) and st.button(
            "Compress this model", icon=":material/compress:", key="open_compress",
            help="Convert its layers to band + low rank on the Compress page and measure what "
                 "that costs the task and gains in speed."):
        frame.open_page("pages/compress.py", {"checkpoint": inspected.key})

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
        training_curve.show(about)
    model_card_downloads(inspected, model)


def headline_metric(inspected: Inspected, column) -> None:
    """The metric on the task's evaluation set with its interval: the length sweep's 1×,
    so the header, the ablation and the sweep show one number."""
    about, task = inspected.about, inspected.task
    label = f"Evaluation {about.metric_name}"
    if task is None:
        column.metric(label, "—", help=f"The task cannot be rebuilt here: {inspected.task_error}")
        return
    try:
        sweep = checkpoint_views.length_sweep(inspected.key, HEADLINE_WAIT_S)
    except inspect_lab.TimeLimitError as err:
        column.metric(label, "—")
        column.caption(f"Not evaluated this time: {err}.")
        if column.button("Evaluate again", key="evaluate_again", icon=":material/refresh:"):
            checkpoint_views.retry_length_sweep(inspected.key)
            st.rerun()
        return
    except ValueError as err:
        column.metric(label, "—")
        column.caption(f"Cannot evaluate this checkpoint here: {err}")
        return
    help_text = (f"Scored on {task.describe_evaluation()}: the same set for every section "
                 f"of this page, Compress and the command line; {inspected.chance_text} (a "
                 "uniform guess).")
    if sweep is None:
        column.metric(label, "…", help=help_text)
        with column:  # its own poll: the page may stop before "Beyond the training length"
            timing.poll_until(checkpoint_views.start_length_sweep(inspected.key).done,
                              lambda: st.caption("evaluating…"))
        return
    scores = sweep.scores[0]
    low, high = scores.ci95
    column.metric(label, numbers.format_metric(scores.metric, about.metric_name), help=help_text)
    column.caption(f"95 % interval {numbers.format_interval((low, high), about.metric_name)} · "
                   f"{scores.sequences:,} sequences")


def model_card_downloads(inspected: Inspected, model) -> None:
    """The model card and per-layer spectral report, built when a download is clicked."""
    key = inspected.key
    refusal = inspect_lab.report_refusal(model, inspected.about.train_n)
    if refusal is not None:
        st.caption(f"No model card for this checkpoint: {refusal}.")
        return
    if inspected.task is None:
        st.caption(f"No model card: its task cannot be rebuilt here ({inspected.task_error}).")
        return
    for column, (name, suffix, label) in zip(st.columns(3), REPORT_FILES, strict=True):
        column.download_button(
            label,
            lambda name=name: inspect_lab.report_text(checkpoint_views.model_report(key), name),
            file_name=f"{key.replace('/', '-').replace(':', '-')}-report.{suffix}",
            key=f"report_{name}", icon=":material/download:",
            help="A model card (task, data, metric with its 95 % interval, baselines, "
                 "training config, lineage) and, per layer and channel, the singular values "
                 "of T at the training length: stable rank, effective rank at 99 % energy, a "
                 "power-law fit of the tail, band mass and the SKI error at (m, r). Takes a "
                 "few seconds the first time.")
