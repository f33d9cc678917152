"""Page "Compress": turn a trained TNN or FD-TNN into band + low rank and measure the cost."""

import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _ui
from tnn_core.compress.measure import FINETUNE_PARAMETERS
from tnn_core.compress.plan import METHODS
from tnn_core.compress.planner import GRID_BANDS, GRID_RANKS
from tnn_core.lab import compress as lab
from tnn_core.operators.config import MAX_SIZE
from tnn_core.training.background import BackgroundJob
from tnn_core.training.checkpoint import CheckpointError

_ui.ensure_app_frame()
_ui.receive_values("pages/compress.py")

PARAMETER_LABELS = {"all": "all parameters",
                    "low_rank": "only the converted layers' band taps and knots"}
ERROR_MEANING = ("**Relative error** of a layer: ‖T − T̂‖_F / ‖T − band(T)‖_F over its "
                 "channels at the training length, the share of the kernel's off-band part "
                 "that band + low rank misses (0: exact; 1: as bad as dropping everything off "
                 "the band).")


def running(job: BackgroundJob | None) -> bool:
    return job is not None and not job.snapshot()[2]


def load_plan(source: str, plan) -> None:
    """Set the checkpoint to ``source`` and the plan controls to ``plan`` (a callback: it
    runs before the widgets are drawn)."""
    st.session_state["checkpoint"] = source
    first = plan.layers[0]
    uniform = all(layer == first for layer in plan.layers) and not first.kept
    st.session_state["per_layer"] = not uniform
    if uniform:
        st.session_state.update(band=first.band, rank=first.rank, method=first.method)
    for i, layer in enumerate(plan.layers):
        st.session_state[f"layer_band_{i}"] = layer.band
        st.session_state[f"layer_rank_{i}"] = layer.rank
        st.session_state[f"layer_method_{i}"] = layer.method
    st.toast(f"Loaded into the plan controls: {plan.describe()}", icon=":material/tune:")


def start_conversion(source: str, model, task, plan, steps: int, lr: float,
                     parameters: str) -> None:
    """The Convert button: the conversion starts before the page is drawn, so the page shows
    it running (and the buttons disabled) at once."""
    job = lab.conversion_job(model, task, plan, steps, lr, parameters, _ui.device())
    job.stop_when_collected(_ui.session_token())
    job.start()
    st.session_state["compress_job"] = job
    st.session_state["compress_job_about"] = {"key": source, "steps": steps}


def start_search(source: str, model, task, delta: float, method: str,
                 points: list[tuple[int, int]]) -> None:
    """The Search button (see ``start_conversion``)."""
    job = lab.search_job(model, task, delta, method, points, _ui.device())
    job.stop_when_collected(_ui.session_token())
    job.start()
    st.session_state["compress_search"] = job
    st.session_state["compress_search_key"] = source


st.title("Compress")
st.markdown(
    "A trained TNN or FD-TNN applies one learned Toeplitz matrix per channel. Convert each "
    "layer into SKI's **band + low rank** (a short convolution of $m$ taps plus a part "
    "interpolated from $r$ inducing points, fitted to the kernel at the training length "
    "$n_0$), then see what it costs the task, how much faster the whole model runs, and "
    "whether a short fine-tuning wins back what was lost. Or let the **search** find the "
    "fastest plan within a budget on the metric.")

# -- the source --------------------------------------------------------------------------------
key = _ui.checkpoint_select(
    "No checkpoints yet: train one on the Train page, or upload one on the Inspect page.",
    "Shipped examples, your saved runs and this session's uploads (upload on the Inspect "
    "page). Only tno and fd models can be converted: their layers apply one learned Toeplitz "
    "matrix per channel.")
try:
    model, info = _ui.load_checkpoint(key)
    if not lab.convertible(model.config):
        kind = model.config.operator.kind
        why = ("its mixer is not one Toeplitz matrix per channel" if kind == "togeipi"
               else "it already is band + low rank")
        raise ValueError(f"{key} is a {kind} model and cannot be converted: {why}. Only tno "
                         "and fd checkpoints can be; choose one of those")
    task = _ui.checkpoint_task(key)
except (CheckpointError, ValueError) as err:
    _ui.show_error(err)
    _ui.page_activity()
    st.stop()
config, n0 = model.config, task.seq_len
unit = lab.Unit(task.metric_name, task.higher_is_better)
operator = config.operator
source_scores = _ui.evaluation(key)
EVALUATION_SET = (f"the task's evaluation set, {task.describe_evaluation()}: the same "
                  f"{source_scores.sequences:,} sequences for the source and every converted "
                  "model, so each change is measured pair by pair")
st.caption(f"{task.name}: {operator.kind}, {'causal' if operator.causal else 'bidirectional'}, "
           f"{config.layers} layers × {config.dim} channels, trained at n0 = {n0}. The "
           f"{unit.name} is measured on {EVALUATION_SET}; the source scores "
           f"{unit.interval_text(source_scores)}.")

convert_job: BackgroundJob | None = st.session_state.get("compress_job")
search_job: BackgroundJob | None = st.session_state.get("compress_search")
busy = running(convert_job) or running(search_job)

# -- the plan ----------------------------------------------------------------------------------
st.subheader("Plan")
per_layer = st.session_state.get("per_layer", False)
c1, c2, c3 = st.columns(3)
band = int(_ui.from_link(c1.number_input, "Band m", 1, MAX_SIZE, 9, key="band",
                         disabled=_ui.locked("band") or (per_layer),
                         bind="query-params",
                         help=f"Taps of the band: lags |k| ≤ m//2 (causal: 0 ≤ k < m). At "
                              f"most 2 n0 − 2 = {2 * n0 - 2}."))
rank = int(_ui.from_link(c2.number_input, "Inducing points r", 2, MAX_SIZE, 32, key="rank",
                         disabled=_ui.locked("rank") or (per_layer),
                         bind="query-params",
                         help=f"Rank of the low-rank part (causal: knots of the tail), from "
                              f"2 to n0 = {n0}."))
method = _ui.from_link(c3.radio, "Low-rank A", ["sample", "fit"], index=1, key="method",
                       horizontal=True, disabled=_ui.locked("method") or (per_layer),
                       bind="query-params",
                       help="fit: least squares, the smallest Frobenius error. sample: the kernel "
                            "read at the inducing lags, as SKI-TNN does. The search uses it too.")
with st.expander("Per layer", icon=":material/layers:", expanded=per_layer):
    per_layer = st.toggle("Set each layer on its own", key="per_layer",
                          help="Instead of the same m, r and method everywhere. 'keep' leaves "
                               "a layer as it is.")
    rows = []
    for i in range(config.layers):
        for name, value in (("band", band), ("rank", rank), ("method", method)):
            st.session_state.setdefault(f"layer_{name}_{i}", value)
        r1, r2, r3 = st.columns(3)
        rows.append((
            int(r1.number_input(f"Layer {i}: band m", 1, MAX_SIZE, key=f"layer_band_{i}",
                                disabled=not per_layer)),
            int(r2.number_input(f"Layer {i}: inducing points r", 2, MAX_SIZE,
                                key=f"layer_rank_{i}", disabled=not per_layer)),
            r3.selectbox(f"Layer {i}: method", METHODS, key=f"layer_method_{i}",
                         disabled=not per_layer,
                         help=f"{config.layer_operator(i).kind} layer. keep: not converted.")))
try:
    plan = lab.make_plan(rows if per_layer else [(band, rank, method)] * config.layers,
                         config, n0, uniform=not per_layer)
except ValueError as err:
    plan = None
    _ui.show_error(err)
if plan is not None and (added := lab.added_parameters(config, plan, n0)) > 0:
    st.warning(f"This plan adds {added:,} parameters to the source's "
               f"{sum(p.numel() for p in model.parameters()):,}: its band taps and knots "
               "outnumber the kernel generators they replace, so it makes the model larger; "
               "a smaller r or m does not.", icon=":material/warning:")

f1, f2, f3 = st.columns(3)
steps = int(f1.number_input("Fine-tuning steps", 0, 5000, 0, step=10, key="finetune_steps",
                            help="AdamW steps on the training split after the conversion "
                                 "(batches of 32); 0: none."))
lr = f2.select_slider("Fine-tuning learning rate", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2], value=3e-4,
                      key="finetune_lr", disabled=steps == 0)
parameters = f3.radio("Fine-tune", FINETUNE_PARAMETERS, format_func=PARAMETER_LABELS.get,
                      key="finetune_parameters", disabled=steps == 0)
st.button("Convert", type="primary", icon=":material/compress:", key="convert",
          disabled=busy or plan is None, on_click=start_conversion,
          args=(key, model, task, plan, steps, lr, parameters),
          help="Disabled while a conversion or a search runs: they would share the CPU and "
               "disturb each other's timings.")


def progress(job: BackgroundJob, stop_key: str, finetune_steps: int = 0) -> None:
    """The running job's progress bar and its Stop button, polled until it ends."""
    def waiting() -> None:
        fraction, items, _, _ = job.snapshot()
        st.progress(fraction, text=lab.progress_text(items, unit, finetune_steps))
        if st.button("Stop", icon=":material/stop:", key=stop_key, disabled=job.stopped):
            job.stop()

    _ui.poll_until(lambda: job.snapshot()[2], waiting)


def conversion_results(job: BackgroundJob, about: dict) -> None:
    *_, error = job.snapshot()
    if error is not None:
        st.error(f"The conversion failed: {error}", icon=":material/error:")
        return
    view = lab.result_view(job.result, about["steps"])
    st.subheader(f"Converted {about['key']}")
    st.caption(f"Plan: {view.plan}.")
    if view.stop_note:
        st.warning(view.stop_note, icon=":material/stop:")
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
                      delta_color=unit.delta_color, help=f"{what} On {EVALUATION_SET}.")
        column.caption(f"95 % interval {unit.show(low)} to {unit.show(high)}")
    m[3].metric(f"Chance {unit.name}", unit.show(view.chance),
                help="What a uniform guess scores.")
    st.markdown(view.verdict)

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

    left, right = st.columns([2, 3])
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
    left.plotly_chart(fig, key="chart-compress-metric")
    with right:
        st.markdown("**Timing**")
        if view.speeds:
            where = (_ui.device() if _ui.device() != "cpu" else
                     f"CPU, {lab.JOB_THREADS} thread{'s' if lab.JOB_THREADS > 1 else ''}")
            st.dataframe(pd.DataFrame({
                "length n": [f"{r.length} ({r.factor}× n0)" for r in view.speeds],
                "source ms (quartiles)": [f"{r.source_ms:.2f} ({r.source_quartiles[0]:.2f}–"
                                          f"{r.source_quartiles[1]:.2f})" for r in view.speeds],
                "converted ms (quartiles)": [f"{r.converted_ms:.2f} ("
                                             f"{r.converted_quartiles[0]:.2f}–"
                                             f"{r.converted_quartiles[1]:.2f})"
                                             for r in view.speeds],
                "speed-up (95 % interval)": [f"{r.ratio:.2f}× ({r.ratio_ci[0]:.2f}–"
                                             f"{r.ratio_ci[1]:.2f})" for r in view.speeds]}),
                hide_index=True)
            st.caption(f"The whole model, forward + backward on 8 sequences of random tokens, "
                       f"measured on this machine just now ({where}): medians of "
                       f"{view.speeds[0].repeats} interleaved rounds of source and converted "
                       "after warm-up, quartiles in brackets; the speed-up is the median of "
                       "the rounds' ratios with its distribution-free 95 % interval. Other "
                       "work on the server (another page, another session) adds noise.")
        else:
            st.caption("The speed was not measured: the conversion was stopped first.")
    st.markdown("**Per layer**")
    st.dataframe(pd.DataFrame({
        "layer": [layer for layer, _, _ in view.layers],
        "plan": [plan_text for _, plan_text, _ in view.layers],
        "relative error": [error for _, _, error in view.layers]}), hide_index=True,
        column_config={"relative error": st.column_config.NumberColumn(format="%.4f")})
    st.caption(ERROR_MEANING + " A kept layer has none.")

    with st.form("compress-save"):
        name = st.text_input("Save as", lab.save_name(about["key"], time.strftime("%H%M%S")),
                             key="compress_save_name",
                             help="1 to 64 letters, digits, _ and -. Saved under "
                                  "checkpoints/user/ like the Train page's runs, shared by "
                                  "everyone on this server: a name already taken is refused.")
        if st.form_submit_button("Save and inspect", icon=":material/save:", key="compress_save"):
            try:
                saved = lab.save(job.result, _ui.load_checkpoint(about["key"])[1], name,
                                 _ui.USER_CHECKPOINTS)
            except (CheckpointError, ValueError) as err:
                _ui.show_error(err)
            else:
                _ui.open_page("pages/inspect_checkpoint.py", {"checkpoint": saved})


if running(convert_job):
    progress(convert_job, "compress_stop", st.session_state["compress_job_about"]["steps"])
elif convert_job is not None:
    conversion_results(convert_job, st.session_state["compress_job_about"])
else:
    st.info("Choose a plan and press **Convert**: a small model converts and is measured in "
            "seconds.", icon=":material/compress:")

# -- the search --------------------------------------------------------------------------------
st.subheader("Search: the fastest plan within a budget")
st.markdown(
    "The search first converts **each layer alone** at every (m, r) of the grid and measures "
    "the drop of the metric (its sensitivity), then builds candidate plans (every grid point "
    "on all layers, and per layer the cheapest point whose drop stays within a share of δ), "
    "scores them **most promising first**, and keeps the **fastest at the training length "
    "within δ** of the source: a plan is within δ only when the whole 95 % interval of its "
    "drop is, and it is the fastest only when its speed-up's interval lies above every other "
    f"plan's (the plans tied for it are re-timed up to {lab.SPEED_ROUNDS} times, then reported "
    "as tied). A minute or so for a small model.")
s1, s2, s3 = st.columns(3)
noise = lab.default_delta(source_scores)
delta_display = s1.number_input(
    f"Allowed drop δ ({unit.drop_unit})", 0.0, 100.0 if unit.name == "accuracy" else 10.0,
    round(unit.scale * noise, 1 if unit.name == "accuracy" else 3),
    step=0.5 if unit.name == "accuracy" else 0.01, key=f"search_delta_{key}",
    help=f"How much worse than the source a plan may be: percentage points of accuracy, or "
         f"bits per character. It starts at {unit.amount(noise)}: the half-width of the "
         f"source's 95 % interval on {source_scores.sequences:,} sequences (the metric's own "
         "noise) or the lab's quality tolerance, whichever is larger. A smaller δ asks for a "
         "precision the evaluation set does not have.")
bands = s2.multiselect("Bands m to try", GRID_BANDS, default=list(GRID_BANDS), key="search_bands",
                       help="With the ranks: the grid of (m, r) pairs (those valid at n0).")
ranks = s3.multiselect("Ranks r to try", GRID_RANKS, default=list(GRID_RANKS), key="search_ranks",
                       help="The method is the plan's 'Low-rank A' above.")
try:
    points = lab.search_points(n0, bands, ranks)
except ValueError as err:
    points = None
    _ui.show_error(err)
st.button("Search", icon=":material/travel_explore:", key="search",
          disabled=busy or points is None, on_click=start_search,
          args=(key, model, task, unit.drop_from_display(delta_display), method, points),
          help="Disabled while a conversion or a search runs.")


def pick_plan() -> None:
    """A click on a point of the Pareto chart loads that plan into the controls."""
    selected = st.session_state["chart-pareto"].selection.points
    job = st.session_state.get("compress_search")
    if selected and job is not None and job.result is not None:
        index = selected[0]["customdata"]
        load_plan(st.session_state["compress_search_key"],
                  job.result.scores[int(index[0] if isinstance(index, list) else index)].plan)


def search_results(job: BackgroundJob, source_key: str) -> None:
    *_, error = job.snapshot()
    if error is not None:
        st.error(f"The search failed: {error}", icon=":material/error:")
        return
    view = lab.search_view(job.result, _ui.checkpoint_task(source_key))
    shown = view.unit
    st.markdown(f"**{source_key}**: " + view.verdict)
    if view.stopped:
        st.warning(f"Stopped: {len(view.candidates)} of {view.planned or 'the'} candidate "
                   "plans were scored; only what was measured is shown.",
                   icon=":material/stop:")
    if view.points:
        fig = go.Figure()
        labels = [f"m={m}, r={r}" for m, r in view.points]
        for layer, drops in enumerate(view.sensitivity):
            fig.add_bar(x=labels, y=[shown.scale * d for d in drops], name=f"layer {layer} alone")
        _ui.hline(fig, shown.scale * view.delta, f"δ = {shown.scale * view.delta:g}",
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
                   + f", on {EVALUATION_SET}. No bar: no change; below 0 the converted layer "
                   "happened to score better. The dashed line is the whole plan's budget δ.")
    if not view.candidates:
        return
    fig = go.Figure()
    groups = (("candidate", lambda c: not (c.front or c.best or c.tied),
               dict(color="#9e9e9e", size=9)),
              ("on the front", lambda c: c.front and not (c.best or c.tied),
               dict(color="#1f77b4", size=11)),
              ("tied for the fastest within δ", lambda c: c.tied,
               dict(color="#ff7f0e", size=13, symbol="diamond")),
              ("fastest within δ", lambda c: c.best, dict(color="#d62728", size=16,
                                                          symbol="star")))
    for name, chosen, marker in groups:
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
    _ui.hline(fig, shown.scale * view.source.metric, f"source {shown.show(view.source.metric)}",
              line_dash="dash", line_color="black")
    _ui.hline(fig, shown.scale * view.threshold, f"source, δ worse: {shown.show(view.threshold)}",
              line_dash="dot", line_color="red")
    if low <= view.chance <= high:
        _ui.hline(fig, shown.scale * view.chance, f"chance {shown.show(view.chance)}",
                  line_dash="dot", line_color="grey")
    else:
        fig.add_annotation(x=0, xref="paper", y=0 if view.chance < low else 1, yref="paper",
                           xanchor="left", yanchor="bottom" if view.chance < low else "top",
                           showarrow=False, font=dict(color="grey"),
                           text=f"chance {shown.show(view.chance)}: far "
                                f"{'below' if view.chance < low else 'above'} this axis")
    _ui.vline(fig, 1.0, "as fast as the source", line_dash="dot", line_color="grey")
    fig.update_yaxes(range=[shown.scale * low, shown.scale * high])
    fig.update_layout(title="Candidates: metric against speed-up (click a point to load its "
                            "plan)", height=420, xaxis_title="measured speed-up at n0 "
                            "(forward+backward, whole model, ×)",
                      yaxis_title=f"{shown.name} ({shown.suffix})",
                      margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select")
    st.plotly_chart(fig, key="chart-pareto", on_select=pick_plan, selection_mode="points")
    st.caption("Each point is one plan: its speed-up measured on this machine at the "
               "training length (bars: its 95 % interval) and its "
               f"{shown.name} on the same sequences as the source. Blue: the front of this "
               "chart, plans no other plan beats in both drop and speed-up; the red star: the "
               "fastest plan within δ, named only when its interval lies above every other's; "
               "orange diamonds: plans within δ tied for the fastest. Within δ means the whole "
               "95 % interval of the drop, not only the point, is above the red line. Click a "
               "point, or use the button below the table, to load a plan into the controls "
               "above; then press Convert.")
    st.dataframe(pd.DataFrame({
        "order scored": [c.index + 1 for c in view.candidates],
        "plan": [c.label for c in view.candidates],
        shown.name: [shown.show(c.metric) for c in view.candidates],
        "drop (95 % interval; + is worse)": [
            f"{shown.drop_text(c.drop)} ({shown.drop_range(*c.drop_ci)})"
            for c in view.candidates],
        "within δ": [c.within for c in view.candidates],
        "speed-up at n0 (95 % interval)": [
            f"{c.speed.ratio:.2f}× ({c.speed.ratio_ci[0]:.2f}–{c.speed.ratio_ci[1]:.2f})"
            for c in view.candidates],
        "speed-up at 4× n0": [c.speed_long.ratio if c.speed_long else None
                              for c in view.candidates],
        "parameters": [c.parameters for c in view.candidates],
        "on the front": [c.front for c in view.candidates],
        "fastest": ["yes" if c.best else "tied" if c.tied else "" for c in view.candidates]}),
        hide_index=True,
        column_config={"speed-up at 4× n0": st.column_config.NumberColumn(format="%.2f×"),
                       "parameters": st.column_config.NumberColumn(format="localized")})
    if view.best is not None:
        st.button("Load the best plan into the controls", icon=":material/tune:",
                  key="load_best", on_click=load_plan, args=(source_key, view.best.plan))


if running(search_job):
    progress(search_job, "search_stop")
elif search_job is not None:
    search_results(search_job, st.session_state["compress_search_key"])

_ui.page_activity()  # the page script ends: the quiet that timings wait for starts now
