"""Page "Train": train a small TNN, SKI-TNN or FD-TNN model and watch it learn."""

import time

import plotly.graph_objects as go
import streamlit as st

from pages._ui import checkpoints, frame, kernel_replay, numbers, session, session_keys
from tnn_core.lab.train import (
    LIVE_RUNS,
    MAX_TEXT_BYTES,
    SIZES,
    Autosave,
    BackgroundRun,
    NoPlace,
    app_config,
    app_task,
    autosave_path,
    autosaves,
    claim_training_place,
    discard_autosave,
    form_values,
    new_owner_key,
    new_run,
    progress_view,
    resumed_run,
    snapshot_view,
)

TASKS = {
    "charlm": "Characters: next-character prediction on Python's own source (causal)",
    "listops": "ListOps: evaluate nested MIN / MAX / MED / SUM_MOD expressions",
    "digits": "Digits: classify 8 × 8 handwritten digits read pixel by pixel",
    "recall": "Associative recall: recall the value of a key seen earlier (causal)",
}


OWNER = "owner"  # the address's owner key: a reload of the owner's page still controls the run


def watch(run_id: str, run: BackgroundRun, owner_key: str | None = None) -> None:
    """Show ``run`` in this session: the address names it (a reload finds it again) and the
    form shows its settings. With the run's owner key (this session started or resumed it,
    or reloads the page that did) the session controls it: Stop, Save, and the session's
    end stops it (saved). Without, it only watches: no Stop, and its end changes nothing
    (a class shares links; only the student who started a run may end it)."""
    owner_key = owner_key if LIVE_RUNS.owns(run_id, owner_key) else None
    if owner_key is not None:
        run.stop_when_collected(session.session_token())
    st.session_state.update({session_keys.TRAIN_RUN: run, session_keys.TRAIN_RUN_ID: run_id,
                             session_keys.TRAIN_OWNER_KEY: owner_key,
                             session_keys.TRAIN_FORM: form_values(run.config)})
    show_in_address(run_id, owner_key)


def show_in_address(run_id: str, owner_key: str | None) -> None:
    st.query_params["run"] = run_id
    if owner_key is not None:
        st.query_params[OWNER] = owner_key
    elif OWNER in st.query_params:
        del st.query_params[OWNER]


def watch_from_list(run_id: str) -> None:
    """The list's Watch button (a callback, so it may set the form's widgets)."""
    run = LIVE_RUNS.get(run_id)
    if run is not None:
        watch(run_id, run)
        st.session_state.update(st.session_state[session_keys.TRAIN_FORM])


def start_in_a_place(make_run) -> bool:
    """Start the run of ``make_run()`` ((its id, the run not started); ValueError says why
    it cannot be made), this session's, in a training place of the server; nothing is made
    before a place is. False, with the reason in ``train_refusal``, when no place is free
    or the run cannot be made."""
    try:
        slot = claim_training_place(session.session_id())
    except NoPlace as refusal:
        st.session_state[session_keys.TRAIN_REFUSAL] = refusal
        return False
    try:
        run_id, run = make_run()
    except BaseException as err:
        slot.release()  # never handed to a run
        if not isinstance(err, ValueError):
            raise
        st.session_state[session_keys.TRAIN_REFUSAL] = err
        return False
    owner_key = new_owner_key()
    started = LIVE_RUNS.start(run_id, run, owner_key, slot)
    watch(run_id, started, owner_key if started is run else None)
    return True


def resume(run_id: str) -> None:
    """The list's Resume and Open buttons: continue the autosave to its steps."""
    if start_in_a_place(lambda: (run_id, resumed_run(checkpoints.USER_CHECKPOINTS, run_id,
                                                     frame.device()))):
        st.session_state.update(st.session_state[session_keys.TRAIN_FORM])


def show_refusal() -> None:
    """Why the last Start or Resume started nothing: a full server (a warning) or a run
    that cannot be made (an error)."""
    refusal = st.session_state.pop(session_keys.TRAIN_REFUSAL, None)
    if isinstance(refusal, NoPlace):
        st.warning(str(refusal), icon=":material/hourglass_top:")
    elif refusal is not None:
        frame.show_error(refusal)


def address_run() -> tuple[str, BackgroundRun | None, str | None] | None:
    """(the run id in the address, its run if the server still has it, the owner key in the
    address); None without one. A reload keeps the address, so this is how the page finds
    its run again, and its owner keeps control."""
    run_id = st.query_params.get("run")
    if not run_id:
        return None
    try:
        autosave_path(checkpoints.USER_CHECKPOINTS, run_id)
    except ValueError as err:
        st.error(f"The address names no run of this page: {err}", icon=":material/error:")
        return None
    return run_id, LIVE_RUNS.get(run_id), st.query_params.get(OWNER)


def main() -> None:
    """The page: the form, then this session's run (live while it runs) or, without one, the
    autosaved runs."""
    frame.ensure_app_frame()
    st.title("Train")
    st.markdown("Train a small model on a real task, on this machine, and watch the loss and the "
                "validation metric as it learns. The run goes on in the background: the other "
                "pages keep working. It is autosaved every tenth of its steps, when you press "
                "Stop and when it ends; reload the page and it is still here, running, or "
                "listed below to resume if it stopped (closing the tab stops it, saved).")
    run, in_address = this_sessions_run()
    owner_key = st.session_state.get(session_keys.TRAIN_OWNER_KEY)
    running = run is not None and not run.snapshot().finished  # a watcher's view follows it too
    if start_from_form(train_form(start_disabled=running and owner_key is not None)):
        run = st.session_state[session_keys.TRAIN_RUN]
        owner_key = st.session_state[session_keys.TRAIN_OWNER_KEY]
        running = True
    show_refusal()
    if run is None:
        if in_address is not None:
            st.info(f"The run of this address, {in_address[0]}, is no longer running on this "
                    "server. If it was autosaved, it is listed below: resume it from there.",
                    icon=":material/history:")
        st.info("Choose a task and press **Start**. A small model trains in a minute or two "
                "on a laptop CPU.", icon=":material/school:")
        autosave_list()
        st.stop()
    run_id = st.session_state[session_keys.TRAIN_RUN_ID]
    show_in_address(run_id, owner_key)  # kept after a visit to another page
    if owner_key is None:
        st.info(f"Run {run_id} belongs to another browser session: you can watch it here, but "
                "only the session that started it can stop it or save it. Start a run of your "
                "own with the form above.", icon=":material/visibility:")
    if running:
        live(run, run_id, owner_key)
    else:
        ended_run(run, run_id, owner_key)


def this_sessions_run() -> tuple[BackgroundRun | None, tuple | None]:
    """(the run this session shows, or None; what ``address_run`` found when the session
    had none). While a run exists the form shows the settings it was started with, also
    after the person visits another page (Streamlit forgets a widget's value when its page
    is left)."""
    run: BackgroundRun | None = st.session_state.get(session_keys.TRAIN_RUN)
    in_address = address_run() if run is None else None
    if in_address is not None and in_address[1] is not None:
        watch(*in_address)
        run = in_address[1]
    for form_key, value in st.session_state.get(session_keys.TRAIN_FORM, {}).items():
        st.session_state.setdefault(form_key, value)
    return run, in_address


def train_form(start_disabled: bool) -> dict | None:
    """The run's settings form: its values once Start is pressed, else None."""
    with st.form("train-form", border=True):
        c1, c2, c3 = st.columns(3)
        task_name = c1.selectbox("Task", list(TASKS), format_func=TASKS.get, key="task",
                                 help="What the model learns. Causal tasks train a language model; "
                                      "the others a bidirectional classifier.")
        kind = c1.radio("Operator", ["tno", "ski", "fd"], horizontal=True, key="operator",
                        help="tno: TNN's RPE MLP with decay. ski: band + low rank (bidirectional "
                             "tasks; causal SKI uses the interpolated kernel with an FFT). fd: "
                             "frequency-domain RPE.")
        size = c1.radio("Size", list(SIZES), index=1, horizontal=True, key="size",
                        help="tiny: width 32, 1 layer. small: 64, 2 layers. medium: 128, 2 layers.")
        steps = c2.slider("Steps", 10, 5000, 300, step=10, key="steps",
                          help="Optimizer updates (batches of 32 sequences).")
        lr = c2.select_slider("Learning rate", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2], value=3e-3,
                              key="lr", help="Peak AdamW learning rate, after 10% warm-up.")
        decay = c3.slider("Decay λ", 0.50, 1.00, 0.99, step=0.005, key="train_decay",
                          help="tno: the decay λ^|k| on the kernel. ski: the inverse time warp.")
        rank = c3.slider("Inducing points r", 2, 128, 32, key="train_rank",
                         help="SKI only: rank of the low-rank part.")
        band = c3.slider("Band m", 1, 64, 9, key="train_band", help="SKI only: taps of the band.")
        text = None
        if task_name == "charlm":
            text = st.file_uploader("Your own text (optional, UTF-8)", type=["txt", "md",
                                    "py", "csv", "json", "rst"], key="train_text",
                                    max_upload_size=MAX_TEXT_BYTES // 2**20,
                                    help="Train on this text instead of Python's source. It is "
                                         "split 90/10 into training and validation.")
        # one run of one's own at a time; watching another's leaves Start free
        start = st.form_submit_button("Start", type="primary", disabled=start_disabled,
                                      icon=":material/play_arrow:")
    if not start:
        return None
    return {"task_name": task_name, "kind": kind, "size": size, "steps": steps, "lr": lr,
            "decay": decay, "rank": rank, "band": band, "text": text}


def start_from_form(form: dict | None) -> bool:
    """Start the run the form describes (None: Start was not pressed); True when it
    started, else why not on the page (an error) or in ``train_refusal``."""
    if form is None:
        return False
    text = form["text"]
    try:
        data, data_name = (text.getvalue(), text.name) if text is not None else (None, "")
        task = app_task(form["task_name"], data, data_name)
        config = app_config(task, form["kind"], form["size"], form["steps"], form["lr"],
                            form["decay"], form["rank"], form["band"], frame.device(),
                            frame.seed())
    except ValueError as err:
        frame.show_error(err)
    else:
        text_data = text.getvalue() if text is not None else None
        return start_in_a_place(lambda: new_run(config, task, text_data,
                                                checkpoints.USER_CHECKPOINTS))
    return False


def ended_run(run: BackgroundRun, run_id: str, owner_key: str | None) -> None:
    """A run that has ended: its last state, how it ended, its owner's Save form, and the
    autosaved runs."""
    progress = run.snapshot()
    draw(run, run_id, progress)
    if progress.status in ("completed", "stopped"):
        st.success(progress.message.capitalize() + ".", icon=":material/check_circle:")
    else:
        st.error(f"The run {progress.status}: {progress.message}", icon=":material/error:")
    if run.result is not None and owner_key is not None:
        with st.form("save-form"):
            name = st.text_input("Save as", run_id, key="save_name",
                                 help="1 to 64 letters, digits, _ and -, saved exactly as "
                                      "typed (any other name is refused, never changed). "
                                      "Saved under checkpoints/user/, shared by everyone on "
                                      "this server: a name already taken is refused, never "
                                      "overwritten. The run's autosave is then deleted.")
            if st.form_submit_button("Save and inspect", key="save", icon=":material/save:"):
                try:
                    key = checkpoints.save_as(run.result, name)
                except ValueError as err:
                    frame.show_error(err)
                else:
                    discard_autosave(checkpoints.USER_CHECKPOINTS, run_id)
                    frame.open_page("pages/inspect.py", {session_keys.CHECKPOINT: key})
    autosave_list()


def status_text(save: Autosave, live: set[str]) -> str:
    if save.run_id in live:
        return "running"
    if not save.resumable:
        return f"{save.status}, not resumable"
    return {"checkpoint": "interrupted (the server stopped)"}.get(save.status, save.status)


def autosave_list() -> None:
    """The autosaved runs, each with what can be done with it (drawn while this session
    runs none: one run at a time)."""
    saves = autosaves(checkpoints.USER_CHECKPOINTS)
    if not saves:
        return
    st.subheader("Autosaved runs")
    st.caption("Shared by everyone on this server. Resume continues a run to its steps with "
               "the updates it would have made without the interruption; Open brings back "
               "a completed one to save it under a name.")
    live = LIVE_RUNS.running()
    for save in saves:
        saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(save.saved_at))
        text, act, drop = st.container(border=True).columns([4, 1, 1],
                                                            vertical_alignment="center")
        text.markdown(f"**{save.run_id}** · {save.description} · step {save.step} of "
                      f"{save.steps} · {status_text(save, live)} · saved {saved}")
        if save.run_id in live:
            act.button("Watch", key=f"watch-{save.run_id}", on_click=watch_from_list,
                       args=(save.run_id,), icon=":material/visibility:")
            continue
        if save.resumable:
            label = "Open" if save.step == save.steps else "Resume"
            act.button(label, key=f"resume-{save.run_id}", on_click=resume,
                       args=(save.run_id,), icon=":material/play_arrow:")
        with drop.popover("Discard", icon=":material/delete:"):
            st.button(f"Delete {save.run_id} for good", key=f"discard-{save.run_id}",
                      on_click=discard_autosave, args=(checkpoints.USER_CHECKPOINTS, save.run_id),
                      type="primary")


def draw(run: BackgroundRun, run_id: str, progress) -> None:
    """The run's progress: its metrics, its loss and validation curves, its autosave and
    the kernels it keeps."""
    view = progress_view(progress)
    st.progress(view.fraction, text=f"{progress.status}: step {progress.step} / "
                                    f"{progress.steps}, {progress.elapsed_s:.0f} s")
    m = st.columns(4)
    m[0].metric("Training loss", numbers.fmt(view.last_loss, ".3f")
                if view.last_loss is not None else "—")
    name = run.task.metric_name
    m[1].metric(f"Validation {name}", "—" if view.last_metric is None else
                numbers.format_metric(view.last_metric, name),
                help="The run's periodic evaluation on its fixed validation batches (cheaper "
                     "than the evaluation set Inspect scores a saved model on).")
    if view.last_interval is not None:
        low, high = view.last_interval
        m[1].caption(f"95 % interval {numbers.format_interval((low, high), name)} · "
                     f"{view.last_sequences:,} sequences")
    m[2].metric("Throughput (tokens/s)", f"{progress.tokens_per_s:,.0f}",
                help="Training tokens per second over the last steps, on this machine.")
    m[3].metric("Chance level", numbers.format_metric(run.task.chance, name),
                help="What guessing achieves on this metric.")
    left, right = st.columns(2)
    if len(view.losses):
        fig = go.Figure(go.Scatter(x=view.loss_steps, y=view.losses, mode="lines",
                                   name="train loss"))
        if len(view.eval_steps):
            fig.add_scatter(x=view.eval_steps, y=view.eval_losses, mode="lines+markers",
                            name="validation loss")
        fig.update_layout(title="Loss", xaxis_title="step", yaxis_title="cross-entropy (nats)",
                          height=320, margin=dict(l=10, r=10, t=40, b=10))
        left.plotly_chart(fig, key="chart-loss")
    if len(view.eval_steps):
        low, high = view.eval_intervals.T  # (e,) each
        fig = go.Figure(go.Scatter(x=view.eval_steps, y=view.eval_metrics,
                                   mode="lines+markers", name="validation",
                                   error_y=dict(type="data", array=high - view.eval_metrics,
                                                arrayminus=view.eval_metrics - low)))
        fig.add_hline(y=run.task.chance, line_dash="dot", annotation_text="chance")
        fig.update_layout(title=f"Validation {run.task.metric_name} (95 % intervals)",
                          xaxis_title="step",
                          yaxis_title=run.task.metric_name, height=320,
                          margin=dict(l=10, r=10, t=40, b=10))
        right.plotly_chart(fig, key="chart-metric")
    autosave_note(run, run_id, progress)
    view = (snapshot_view(progress.kernel_snapshots)
            if progress.kernel_snapshots is not None else None)
    if view is not None and view.steps.size:  # none kept yet (or none finite): nothing to replay
        st.markdown("**Kernels forming**")
        kernel_replay.kernel_replay(view, "train_kernels", live=not progress.finished)


def autosave_note(run: BackgroundRun, run_id: str, progress) -> None:
    """When the run was last autosaved, or why that failed."""
    if progress.autosave_error is not None:
        st.warning(f"The last autosave failed: {progress.autosave_error}. The run goes on; "
                   "the previous autosave is kept.", icon=":material/warning:")
    elif progress.saved_step is not None:
        st.caption(f"Autosaved as {run_id} at step {progress.saved_step} (every "
                   f"{run.config.checkpoint_every} steps, on Stop and at the end).")


@st.fragment(run_every=0.5)
def live(run: BackgroundRun, run_id: str, owner_key: str | None) -> None:
    """The running run, drawn again every half second; its owner's Stop button."""
    progress = run.snapshot()
    draw(run, run_id, progress)
    if progress.finished:
        st.rerun(scope="app")  # draw the finished run once, without polling
    if owner_key is not None and st.button("Stop", icon=":material/stop:", key="stop"):
        run.stop()


main()
