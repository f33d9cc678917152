"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel.

Its sections live in ``pages/figures``, each given the open checkpoint (``Inspected``):
the uploads (a Toeplitz Lab checkpoint, or a model from the authors' code to import), the
header, the atlas with its band ablation, one channel, and the model beyond its training
length. The kernels its training kept and TNN's Table 10 are drawn here. Token mixers alone
(an imported model: no task) get every view of their kernels; a section that needs a task
is left out, and the header says in one line why."""

import streamlit as st
import torch

from pages._ui import (
    charts,
    checkpoint_views,
    checkpoints,
    frame,
    kernel_replay,
    session_keys,
    timing,
)
from pages._ui.controls import fields
from pages.inspect import (
    channel_drill,
    checkpoint_upload,
    extrapolation,
    foreign_upload,
    header,
    kernel_atlas,
    run_comparison,
    text_writing,
)
from pages.inspect.inspected import Inspected
from tnn_core.lab import inspect as inspect_lab


@st.fragment
def kernels_during_training(info) -> None:
    """The kernel snapshots its training kept, replayed; its slider reruns this alone."""
    try:
        view = inspect_lab.training_kernels(info)
    except ValueError as err:
        frame.show_error(err)
        return
    if view is None:
        st.caption("This checkpoint holds no kernel snapshots from its training; runs "
                   "trained now on the Train page or with the CLI keep them.")
        return
    st.subheader("Kernels during training")
    kernel_replay.kernel_replay(view, "inspect_kernels")


def table10() -> None:
    """TNN's Table 10: the shipped language model with and without decay, when both are here."""
    if not all(name in checkpoints.checkpoint_choices() for name in inspect_lab.DECAY_PAIR):
        return
    st.markdown("**TNN's Table 10: the same language model with and without decay**")
    if st.toggle("Measure both on the same windows at 1× to 16× their training length",
                 key="decay_pair",
                 help=f"{' and '.join(inspect_lab.DECAY_PAIR)} were trained identically "
                      "except for λ. Every length scores windows ending at the same text "
                      "positions. Takes a few seconds to a minute."):
        try:
            pair = checkpoint_views.decay_pair(inspect_lab.DECAY_PAIR)
        except (inspect_lab.CheckpointError, ValueError) as err:
            frame.show_error(err)
        else:
            st.plotly_chart(charts.decay_pair_chart(pair), key="chart-decay-pair")
            st.markdown(pair.sentence())


def main() -> None:
    """The page: the checkpoint chosen and opened, then its sections top to bottom."""
    frame.ensure_app_frame()
    frame.receive_values("pages/inspect.py")
    inspected, model, info = opened_checkpoint()
    open_at_training_length(inspected, model.config)

    # -- the header, another run beside it, writing text, the kernels during training ---------
    header.show(inspected, model, info)
    if inspected.kernels_only_reason is None:  # token mixers alone: no curves, no training
        run_comparison.show(inspected.key)
        text_writing.show(inspected, model, info)
        kernels_during_training(info)

    # -- kernel atlas -----------------------------------------------------------------------
    n = st.session_state[session_keys.ATLAS_N]  # what the page below draws
    kernel_atlas.show(inspected, n)

    # -- one channel ------------------------------------------------------------------------
    drilled = channel_drill.show(inspected, n)
    if drilled is None:
        timing.page_activity()
        st.stop()

    # -- extrapolation, TNN's Table 10 ------------------------------------------------------
    extrapolation.show(inspected, drilled)
    if inspected.kernels_only_reason is None:
        table10()

    timing.page_activity()  # the page script ends: the quiet that timings wait for starts now


def opened_checkpoint() -> tuple[Inspected, torch.nn.Module, inspect_lab.CheckpointInfo]:
    """The title, the uploads and the checkpoint chosen, opened: (inspected, model, info);
    stops the page with an error sentence when it cannot be loaded."""
    st.title("Inspect checkpoint")
    st.markdown("Open a trained model and look at the Toeplitz kernels it learned: how much "
                "of each channel's energy sits in a narrow band around the diagonal, how fast "
                "the rest decays, how well SKI's low-rank part would hold it, whether the model "
                "needs it, and how the model does beyond the length it was trained on.")

    checkpoint_upload.show()
    foreign_upload.show()
    key = checkpoints.checkpoint_select(
        "No checkpoints yet: train one on the Train page, or upload one above.",
        fields.INSPECT_CHECKPOINT)
    try:
        model, info = checkpoints.load_checkpoint(key)
    except (inspect_lab.CheckpointError, ValueError) as err:
        frame.show_error(err)
        timing.page_activity()
        st.stop()
    try:
        task, task_error = checkpoints.checkpoint_task(key), None
    except ValueError as err:
        task, task_error = None, err
    if task is not None:
        checkpoint_views.start_length_sweep(key)  # it runs while the sections above it are drawn
    return Inspected.of(key, model, info, task, task_error), model, info


def open_at_training_length(inspected: Inspected, config) -> None:
    """Every checkpoint opens at its own training length (and SKI at its own band m):
    ``config`` is its model's configuration."""
    key = inspected.key
    if (st.session_state.get(session_keys.INSPECT_OPENED) != key
            or session_keys.ATLAS_N not in st.session_state):
        st.session_state[session_keys.INSPECT_OPENED] = key
        n, band, rank = inspect_lab.opening_atlas(config, inspected.about.train_n)
        st.session_state.update({session_keys.ATLAS_N: n, session_keys.ATLAS_BAND: band,
                                 session_keys.ATLAS_RANK: rank})
        st.session_state[session_keys.KERNELS_N] = inspected.about.train_n
    st.session_state.setdefault(session_keys.KERNELS_N, inspected.about.train_n)


main()
