"""Page "Train": train a small TNN, SKI-TNN or FD-TNN model and watch it learn."""

import time

import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from tnn_core.lab.train import (
    SIZES,
    TRAINING_NICE,
    TRAINING_THREADS,
    app_config,
    app_task,
    progress_view,
    snapshot_view,
)
from tnn_core.training.background import BackgroundRun
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

_ui.ensure_app_frame()

TASKS = {
    "charlm": "Characters: next-character prediction on Python's own source (causal)",
    "listops": "ListOps: evaluate nested MIN / MAX / MED / SUM_MOD expressions",
    "digits": "Digits: classify 8 × 8 handwritten digits read pixel by pixel",
    "recall": "Associative recall: recall the value of a key seen earlier (causal)",
}


st.title("Train")
st.markdown("Train a small model on a real task, on this machine, and watch the loss and the "
            "validation metric as it learns. The run goes on in the background: the other "
            "pages keep working, and the run stops when you press Stop or close the tab.")

FORM_KEYS = ("task", "operator", "size", "steps", "lr", "train_decay", "train_rank",
             "train_band")

run: BackgroundRun | None = st.session_state.get("train_run")
running = run is not None and not run.snapshot().finished
# Streamlit forgets a widget's value when its page is left. While a run exists, the form
# shows the settings it was started with, also after the person visits another page.
for form_key, value in st.session_state.get("train_form", {}).items():
    st.session_state.setdefault(form_key, value)

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
    start = st.form_submit_button("Start", type="primary", disabled=running,
                                  icon=":material/play_arrow:")

if start:
    try:
        data, data_name = (text.getvalue(), text.name) if text is not None else (None, "")
        task = app_task(task_name, data, data_name)
        config = app_config(task, kind, size, steps, lr, decay, rank, band, _ui.device(),
                            _ui.seed())
    except ValueError as err:
        _ui.show_error(err)
    else:
        run = BackgroundRun(config, task, command=f"app: {config.to_dict()}",
                            threads=TRAINING_THREADS, nice=TRAINING_NICE)
        token = _ui.session_token()
        run.stop_when_collected(token)
        run.start()
        st.session_state["train_run"] = run
        st.session_state["train_form"] = {k: st.session_state[k] for k in FORM_KEYS}
        running = True

if run is None:
    st.info("Choose a task and press **Start**. A small model trains in a minute or two on "
            "a laptop CPU.", icon=":material/school:")
    st.stop()


def draw(progress) -> None:
    view = progress_view(progress)
    st.progress(view.fraction, text=f"{progress.status}: step {progress.step} / "
                                    f"{progress.steps}, {progress.elapsed_s:.0f} s")
    m = st.columns(4)
    m[0].metric("Training loss", _ui.fmt(view.last_loss, ".3f")
                if view.last_loss is not None else "—")
    m[1].metric(f"Validation {run.task.metric_name}", _ui.fmt(view.last_metric, ".3f")
                if view.last_metric is not None else "—")
    m[2].metric("Throughput (tokens/s)", f"{progress.tokens_per_s:,.0f}",
                help="Training tokens per second over the last steps, on this machine.")
    m[3].metric("Chance level", _ui.fmt(run.task.chance, ".3f"),
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
        fig = go.Figure(go.Scatter(x=view.eval_steps, y=view.eval_metrics,
                                   mode="lines+markers", name="validation"))
        fig.add_hline(y=run.task.chance, line_dash="dot", annotation_text="chance")
        fig.update_layout(title=f"Validation {run.task.metric_name}", xaxis_title="step",
                          yaxis_title=run.task.metric_name, height=320,
                          margin=dict(l=10, r=10, t=40, b=10))
        right.plotly_chart(fig, key="chart-metric")
    view = (snapshot_view(progress.kernel_snapshots)
            if progress.kernel_snapshots is not None else None)
    if view is not None and view.steps.size:  # none kept yet (or none finite): nothing to replay
        st.markdown("**Kernels forming**")
        _ui.kernel_replay(view, "train_kernels", live=not progress.finished)


@st.fragment(run_every=0.5)
def live() -> None:
    progress = run.snapshot()
    draw(progress)
    if progress.finished:
        st.rerun(scope="app")  # draw the finished run once, without polling
    if st.button("Stop", icon=":material/stop:", key="stop"):
        run.stop()


if running:
    live()
else:
    progress = run.snapshot()
    draw(progress)
    if progress.status in ("completed", "stopped"):
        st.success(progress.message.capitalize() + ".", icon=":material/check_circle:")
    else:
        st.error(f"The run {progress.status}: {progress.message}", icon=":material/error:")
    if run.result is not None:
        with st.form("save-form"):
            default = (f"{run.config.task}-{run.config.model.operator.kind}-"
                       f"{time.strftime('%H%M%S')}")
            name = st.text_input("Save as", default, key="save_name", max_chars=64,
                                 help="1 to 64 letters, digits, _ and -. Saved under "
                                      "checkpoints/user/, shared by everyone on this server: "
                                      "a name already taken is refused, never overwritten.")
            if st.form_submit_button("Save and inspect", icon=":material/save:"):
                try:
                    key = _ui.save_run(run.result, name)
                except ValueError as err:
                    _ui.show_error(err)
                else:
                    _ui.open_page("pages/inspect.py", {"checkpoint": key})
