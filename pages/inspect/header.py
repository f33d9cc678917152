"""Inspect's header: the checkpoint's task, operator, size, score on the evaluation set and
training steps; the way to Compress; its lineage, configuration and training curve; the
model card and every layer's kernels (.npz) to download. For token mixers alone (a model
imported from the authors' code: no task) it shows what they are, where they came from
with every setting of the import, and in one line why there is no score. Inspect calls
``show(inspected, model, info)``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages._ui import checkpoint_views, frame, numbers, session_keys, timing
from pages.inspect import training_curve
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]

HEADLINE_WAIT_S = 0.5  # the header waits this long for the evaluation, then polls for it
REPORT_FILES = (("markdown", "md", "Model card and layers (Markdown)"),
                ("csv", "csv", "Every channel (CSV)"), ("json", "json", "Everything (JSON)"))


def show(inspected: Inspected, model, info) -> None:
    """The header of the checkpoint ``inspected`` (opened as ``model`` and ``info``): a
    trained model's, or for token mixers alone what they are and where they came from;
    then the model card and the kernels to download."""
    if inspected.kernels_only_reason is None:
        _trained(inspected, model, info)
    else:
        _imported(inspected, model, info)
    model_card_downloads(inspected, model)
    kernels_download(inspected, model)


def _trained(inspected: Inspected, model, info) -> None:
    """Its task, operator, size, score and steps; its lineage, configuration and curve."""
    about = inspected.about
    m = st.columns(5)
    m[0].metric("Task", about.task, help=f"Trained at length n = {about.train_n}.")
    m[1].metric("Operator, causal" if inspected.causal else "Operator, bidirectional",
                inspected.kind)
    m[2].metric("Width × layers", about.size)
    headline_metric(inspected, m[3])
    m[4].metric("Trained steps", "—" if about.steps is None else f"{about.steps:,}",
                help=about.training_note())
    _compress_button(inspected, model)
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


def _imported(inspected: Inspected, model, info) -> None:
    """Token mixers alone (imported from the authors' code): what they are, the one line
    on why there is no score, the source and every setting used with where it came from."""
    source = inspect_lab.imported_about(info)
    m = st.columns([1, 1, 1, 3])
    m[0].metric("Task", "none", help="Token mixers only: the checkpoint holds one mixer per "
                                     "layer; the rest of the source network is not the lab's.")
    m[1].metric("Operator, causal" if inspected.causal else "Operator, bidirectional",
                inspected.kind)
    m[2].metric("Channels × layers", f"{inspected.channels} × {inspected.layers}")
    with m[3]:
        st.caption("Imported from")
        st.markdown(source.markdown())
    st.info(inspected.kernels_only_reason, icon=":material/info:")
    _compress_button(inspected, model)
    left, right = st.columns([1, 2])
    with left:
        st.markdown("**Configuration**")
        st.json(inspected.about.config, expanded=False)
    with right:
        st.markdown("**Settings of the import** (what the authors' code was given beyond the "
                    "weights)")
        if source.settings:
            st.dataframe(pd.DataFrame({"setting": [s.name for s in source.settings],
                                       "value": [s.value for s in source.settings],
                                       "origin": [s.origin for s in source.settings]}),
                         hide_index=True, height="content",
                         column_config={"origin": "where it came from"})
        else:
            st.caption("Its file records no import settings.")
    for command in source.commands:
        st.code(command, language="bash", wrap_lines=True)


def _compress_button(inspected: Inspected, model) -> None:
    if inspect_lab.convertible(model.config) and st.button(
            "Compress this model", icon=":material/compress:", key="open_compress",
            help="Convert its layers to band + low rank on the Compress page and measure what "
                 "that costs the task and gains in speed."):
        frame.open_page("pages/compress.py", {session_keys.CHECKPOINT: inspected.key})


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
    if inspected.kernels_only_reason is not None:
        return  # the header's line says why: a model card reports a task
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
            file_name=f"{_file_stem(key)}-report.{suffix}",
            key=f"report_{name}", icon=":material/download:",
            help="A model card (task, data, metric with its 95 % interval, baselines, "
                 "training config, lineage) and, per layer and channel, the singular values "
                 "of T at the training length: stable rank, energy rank (99 %), Roy–Vetterli's "
                 "effective rank, the Clauset–Shalizi–Newman power-law fit of the tail (α, "
                 "xmin, tail size, KS, and its goodness-of-fit p-value for a few channels), "
                 "the band energy share and the SKI error ‖T − T̂‖_F / ‖T‖_F at (m, r). "
                 "Takes a few seconds the first time.")


def kernels_download(inspected: Inspected, model) -> None:
    """Every layer's kernels at a chosen length n as one .npz (built when clicked), with
    what its arrays hold; or the sentence why this checkpoint has none."""
    st.markdown("**Kernels as arrays**")
    left, right = st.columns([1, 3], vertical_alignment="bottom")
    n = int(left.number_input(
        "Kernels at length n", 1, inspect_lab.MAX_DOWNLOAD_N, key="kernels_n",
        help=f"Each checkpoint opens at its training length (this one: n = "
             f"{inspected.about.train_n:,}); any n up to {inspect_lab.MAX_DOWNLOAD_N:,}."))
    refusal = inspect_lab.kernels_refusal(model, n)
    if refusal is not None:
        st.caption(f"No kernel arrays for this checkpoint: {refusal}.")
        return
    right.download_button(
        f"Every layer's kernels at n = {n:,} (.npz)", lambda: inspect_lab.kernels_npz(model, n),
        file_name=f"{_file_stem(inspected.key)}-kernels-n{n}.npz",
        mime="application/octet-stream", key="kernels_npz", icon=":material/download:",
        help="The learned coefficients t_k of every channel of every layer, for your own plots "
             "and papers. Takes a moment the first time at a large n.")
    st.caption(inspect_lab.kernels_layout(model))


def _file_stem(key: str) -> str:
    return key.replace("/", "-").replace(":", "-")
