"""Page "Compress": turn a trained TNN or FD-TNN into band + low rank and measure the cost."""

import math

import streamlit as st

from pages._ui import checkpoint_views, checkpoints, controls, frame, session, session_keys, timing
from pages._ui.controls import fields
from pages._ui.memo import VIEW_THREADS, memo
from pages.compress import conversion, plan_search
from tnn_core.lab import compress as lab

PARAMETER_LABELS = {"all": "all parameters",
                    "low_rank": "only the converted layers' band taps and knots"}
ERROR_MEANING = (f"**Relative error** of a layer: {lab.RELATIVE_ERROR} over its channels at "
                 "the training length, T the n0 × n0 Toeplitz matrix of a channel's kernel and "
                 "T̂ its conversion's (0: exact; the band's lags are fitted exactly, so it is "
                 "what the rest misses, measured against the whole matrix).")
RECURRENT_MEANING = ("**Recurrent error**: the same ratio, the lag 0 kept exactly and the other "
                     "lags fitted by s damped exponentials.")
BAND_LOW_RANK, RECURRENT = "band + low rank", "recurrent (SSM), s modes"
RECURRENT_HELP = (
    "recurrent: each channel's kernel at the training length fitted by s damped complex "
    "exponentials (a matrix pencil), so the layer becomes a diagonal state-space model "
    "h ← z ⊙ h + x, y = d x + Re(c · h): it writes text keeping s numbers per channel "
    "instead of every input so far (Inspect's Write text shows both). Causal models only: a "
    "recurrence runs forward in time.")


def bring_within(key: str, name: str, low: int, high: int, noted: list[str] | None) -> None:
    """The kept value of the number input ``key`` (``name`` in words) brought within [low,
    high], what this source allows, and noted in the list ``noted`` (if the input shows it)."""
    kept = st.session_state.get(key)
    if kept is not None and not low <= kept <= high:
        st.session_state[key] = max(low, min(int(kept), high))
        if noted is not None:
            noted.append(f"{name} {kept} → {st.session_state[key]}")


def default_within(key: str, name: str, low: int, high: int, default: int,
                   noted: list[str] | None) -> int:
    """``default`` of the number input ``key`` brought within [low, high] (noted in ``noted``
    if a list), and its kept value too (``bring_within``)."""
    fitted = max(low, min(default, high))
    if noted is not None and key not in st.session_state and fitted != default:
        noted.append(f"{name} starts at {fitted}, not {default}")
    bring_within(key, name, low, high, noted)
    return fitted


def recurrent_choice(causal: bool, per_layer: bool, n0: int,
                     changed: list[str]) -> tuple[bool, int]:
    """The form of every layer (band + low rank, or for a causal source a recurrence) and its
    s: (whether recurrent, s). Values brought within n0 are noted in ``changed``."""
    f1, f2 = st.columns([2, 1])
    if not causal and st.session_state.get(session_keys.COMPRESS_FORM) == RECURRENT:
        st.session_state[session_keys.COMPRESS_FORM] = BAND_LOW_RANK
    st.session_state.setdefault(session_keys.COMPRESS_STATE,
                                default_within(session_keys.COMPRESS_STATE, "s", 1, n0, 16,
                                               changed if causal else None))
    form = f1.radio("Convert every layer to", [BAND_LOW_RANK, RECURRENT],
                    key="compress_form",
                    horizontal=True, disabled=per_layer or not causal,
                    help=f"{BAND_LOW_RANK}: SKI's short band of m taps plus r inducing points. "
                         f"{RECURRENT_HELP}")
    if not causal:
        f1.caption("Recurrent (SSM) is offered for causal models only: this one reads both "
                   "directions, and a recurrence runs forward in time.")
    state = int(f2.number_input(
        "Modes s", 1, n0, key="compress_state",
        disabled=per_layer or not causal or form != RECURRENT,
        help=f"Damped complex exponentials per channel, 1 to n0 = {n0}. Each holds one "
             "complex number of state while writing. Fitting takes a while: every channel's "
             "kernel, several pencil orders."))
    return causal and form == RECURRENT, state


def largest_band_rank(n0: int) -> tuple[int, int]:
    """The largest m and r a model trained at ``n0`` takes: 2 n0 − 2 and n0, within the
    declared ranges."""
    m, r = fields.COMPRESS_BAND, fields.COMPRESS_RANK
    return max(m.low, min(2 * n0 - 2, m.high)), max(r.low, min(n0, r.high))


def band_rank_method(columns, n0: int, changed: list[str],
                     disabled: bool) -> tuple[int, int, str]:
    """Every layer's band m, rank r and low-rank A in three ``columns``, each brought within
    what a model trained at ``n0`` allows (what changed noted in ``changed``)."""
    m, r = fields.COMPRESS_BAND, fields.COMPRESS_RANK
    most_band, most_rank = largest_band_rank(n0)
    band = int(controls.control(columns[0].number_input, m, high=most_band, value=default_within(
        session_keys.BAND, "m", m.low, most_band, m.default, changed), disabled=disabled,
        says={"most": 2 * n0 - 2}))
    rank = int(controls.control(columns[1].number_input, r, high=most_rank, value=default_within(
        session_keys.RANK, "r", r.low, most_rank, r.default, changed), disabled=disabled,
        says={"n0": n0}))
    method = controls.control(columns[2].radio, fields.COMPRESS_METHOD, horizontal=True,
                              disabled=disabled)
    return band, rank, method


def layer_row(i: int, default: tuple, per_layer: bool, config, most: tuple[int, int, int],
              changed: list[str]) -> tuple[int, int, str, int]:
    """Layer i's (m, r, method, s) in the per-layer table, within ``most`` (the largest m, r
    and s) and noted in ``changed`` if brought there."""
    operator, (most_band, most_rank, n0) = config.operator, most
    key = {name: session_keys.layer_plan(name, i) for name in ("band", "rank", "method", "state")}
    for name, value in zip(key, default, strict=True):
        st.session_state.setdefault(key[name], value)
    if st.session_state[key["method"]] not in lab.methods(operator.causal):
        st.session_state[key["method"]] = "fit"  # a recurrence, from a causal source
    for name, low, high in (("band", 1, most_band), ("rank", 2, most_rank), ("state", 1, n0)):
        bring_within(key[name], f"layer {i}'s {name}", low, high, changed if per_layer else None)
    r1, r2, r3, r4 = st.columns(4)
    band = int(r1.number_input(f"Layer {i}: band m", 1, most_band, key=key["band"],
                               disabled=not per_layer))
    rank = int(r2.number_input(f"Layer {i}: inducing points r", 2, most_rank,
                               key=key["rank"], disabled=not per_layer))
    method = r3.selectbox(f"Layer {i}: method", lab.methods(operator.causal),
                          key=key["method"], disabled=not per_layer,
                          help=f"{config.layer_operator(i).kind} layer. sample, fit: band + "
                               f"low rank. keep: not converted."
                               + (f" {RECURRENT_HELP}" if operator.causal else ""))
    state = int(r4.number_input(f"Layer {i}: modes s", 1, n0, key=key["state"],
                                disabled=not per_layer or method != "recurrent",
                                help=f"For 'recurrent': exponentials per channel, 1 to n0 = "
                                     f"{n0}."))
    return band, rank, method, state


def running(job: lab.BackgroundJob | None) -> bool:
    return job is not None and not job.snapshot()[2]


def start(job_key: str, make_job, label: str, kept: tuple[str, object]) -> None:
    """A Convert or Search press: ``make_job()`` started in a place of the server's heavy
    work as ``job_key``, stopped when this session ends, ``kept`` (a session key, a value
    about the job) kept beside it, and the page drawn again with it running (the buttons
    disabled). A refusal (a plan the work refuses, no place free) is said here instead."""
    try:
        job = make_job()
        job.stop_when_collected(session.session_token())
        lab.start_in_place(job, session.session_id(), label)
    except lab.NoPlace as busy:
        st.warning(str(busy), icon=":material/hourglass_top:")
        return
    except ValueError as err:
        st.error(f"{label.capitalize()} cannot start: {str(err).rstrip('.')}.",
                 icon=":material/error:")
        return
    st.session_state[job_key], st.session_state[kept[0]] = job, kept[1]
    st.rerun()


@memo(max_entries=16, spinner="Fitting band + low rank to every layer's kernels…")
def band_errors(digest: str, n0: int, band: int, rank: int, method: str, _model):
    return lab.band_errors(_model, n0, band, rank, method)


@memo(max_entries=16, spinner="Fitting s modes to every layer's kernels…")
def recurrent_errors(digest: str, n0: int, state: int, _model):
    return lab.recurrent_errors(_model, n0, state)


@memo(max_entries=8, threads=VIEW_THREADS)  # a fit a minute long: drawn when it is done
def sweep_errors(digest: str, n0: int, _model):
    return lab.error_sweep(_model, n0, lab.PAGE_STATES)


def state_sweep(key: str, model, n0: int) -> None:
    """Each layer's error at every s the page tries (``lab.state_sweep``), fitted aside."""
    found = sweep_errors.start(checkpoints.opened(key).digest, n0, _model=model)
    if not found.done():
        return timing.poll_until(found.done, lambda: st.caption(lab.SWEEP_WAITING))
    if isinstance(found.exception(), ValueError):
        return frame.show_error(found.exception())
    st.dataframe(lab.sweep_table(model.config, found.result()), hide_index=True, column_config={
        f"layer {i}": st.column_config.NumberColumn(format="%.2e")
        for i in range(model.config.layers)})
    st.caption(lab.sweep_caption(found.result()))


def kernels_only(key: str, model, record: dict) -> None:
    """A checkpoint of token mixers alone (no task): why nothing is scored, and each layer's
    error of band + low rank (and, causal, of the recurrence) at the length it records."""
    config, n0, causal = model.config, lab.kernels_length(record), model.config.operator.causal
    changed: list[str] = []
    st.info(f"{lab.kernels_only_reason(record)} So there is no task score, converted score or "
            "speed-up here: only how much of each layer's kernels a plan misses.",
            icon=":material/info:")
    c1, c2, c3, c4 = st.columns(4)
    band, rank, method = band_rank_method((c1, c2, c3), n0, changed, disabled=False)
    state = int(c4.number_input("Modes s", 1, n0, default_within(
        session_keys.COMPRESS_STATE, "s", 1, n0, 16, changed if causal else None),
        key="compress_state",
        disabled=not causal, help="Damped exponentials per channel (causal models only)."))
    if changed:
        st.caption(f"Brought within n0 = {n0}: {'; '.join(changed)}.")
    digest, band_column, recurrent_column = checkpoints.opened(key).digest, None, None
    try:
        band_column = band_errors(digest, n0, band, rank, method, _model=model)
    except ValueError as err:
        frame.show_error(err)
    try:
        recurrent_column = recurrent_errors(digest, n0, state, _model=model) if causal else None
    except ValueError as err:
        frame.show_error(err)
    st.caption(f"{config.operator.kind}, {'causal' if causal else 'bidirectional'}, "
               f"{config.layers} layer{'s' if config.layers > 1 else ''} × {config.dim} "
               f"channels; each layer's kernels fitted at n0 = {n0}, the length the checkpoint "
               f"records: band + low rank with m = {band}, r = {rank}, {method}"
               + (f"; a recurrence of s = {state} modes." if causal else "."))
    st.dataframe(lab.error_rows(config, band_column, recurrent_column), hide_index=True,
                 column_config={column: st.column_config.NumberColumn(format="%.2e")
                                for column in (lab.BAND_COLUMN, lab.RECURRENT_COLUMN)})
    st.markdown(ERROR_MEANING + (" " + RECURRENT_MEANING if causal else ""))


def progress(job: lab.BackgroundJob, stop_key: str, unit: lab.Unit,
             finetune_steps: int = 0) -> None:
    """The running job's progress bar and its Stop button, polled until it ends."""
    def waiting() -> None:
        fraction, items, _, _ = job.snapshot()
        st.progress(fraction, text=f"{lab.progress_text(items, unit, finetune_steps)} "
                                   f"({fraction:.0%})")
        if st.button("Stop", icon=":material/stop:", key=stop_key, disabled=job.stopped):
            job.stop()

    timing.poll_until(lambda: job.snapshot()[2], waiting)


def main() -> None:
    """The page: the source, then the plan and its conversion, then the search."""
    frame.ensure_app_frame()
    frame.receive_values("pages/compress.py")
    st.title("Compress")
    st.markdown(
        "A trained TNN or FD-TNN applies one learned Toeplitz matrix per channel. Convert each "
        "layer into SKI's **band + low rank** (a short convolution of $m$ taps plus a part "
        "interpolated from $r$ inducing points, fitted to the kernel at the training length "
        "$n_0$), then see what it costs the task, how much faster the whole model runs, and "
        "whether a short fine-tuning wins back what was lost. A causal model can instead "
        "become a **recurrence** of $s$ modes per channel, which writes text at the same cost "
        "per character at any length. Or let the **search** find the fastest plan within a "
        "budget on the metric.")
    key, model, task = opened_source()
    config, n0 = model.config, task.seq_len
    unit = lab.Unit(task.metric_name, task.higher_is_better)
    source_scores = checkpoint_views.evaluation(key)
    evaluation_set = (f"the task's evaluation set, {task.describe_evaluation()}: the same "
                      f"{source_scores.sequences:,} sequences for the source and every "
                      "converted model, so each change is measured pair by pair")
    st.caption(f"{task.name}: {config.operator.kind}, "
               f"{'causal' if config.operator.causal else 'bidirectional'}, {config.layers} "
               f"layer{'s' if config.layers > 1 else ''} × {config.dim} channels, trained at "
               f"n0 = {n0}. The {unit.name} is measured on {evaluation_set}; the source "
               f"scores {source_scores.text()}.")
    convert_job: lab.BackgroundJob | None = st.session_state.get(session_keys.COMPRESS_JOB)
    search_job: lab.BackgroundJob | None = st.session_state.get(session_keys.COMPRESS_SEARCH)
    busy = running(convert_job) or running(search_job)
    plan, method = plan_section(key, model, n0)
    convert_button(key, model, task, plan, busy)
    if running(convert_job):
        progress(convert_job, "compress_stop", unit,
                 st.session_state[session_keys.COMPRESS_JOB_ABOUT]["steps"])
    elif convert_job is not None:
        conversion.show(convert_job, st.session_state[session_keys.COMPRESS_JOB_ABOUT], unit,
                        evaluation_set, ERROR_MEANING)
    else:
        st.info("Choose a plan and press **Convert**: a small model converts and is measured "
                "in seconds.", icon=":material/compress:")
    search_section(key, model, task, unit, source_scores, method, busy)
    if running(search_job):
        progress(search_job, "search_stop", unit)
    elif search_job is not None:
        plan_search.show(search_job, st.session_state[session_keys.COMPRESS_SEARCH_KEY],
                         evaluation_set)
    timing.page_activity()  # the page script ends: the quiet that timings wait for starts now


def opened_source() -> tuple:
    """The checkpoint chosen, opened: (key, model, task); else the page stops, saying why."""
    key = checkpoints.checkpoint_select(
        "No checkpoints yet: train one on the Train page, or upload one on the Inspect page.",
        fields.COMPRESS_CHECKPOINT)
    try:
        model, info = checkpoints.load_checkpoint(key)
        task = None if lab.is_kernels_only(info.task) else checkpoints.checkpoint_task(key)
    except (lab.CheckpointError, ValueError) as err:
        frame.show_error(err)
        timing.page_activity()
        st.stop()
    if not lab.convertible(model.config):
        kind = model.config.operator.kind
        why = {"togeipi": "that is not one Toeplitz matrix per channel",
               "ssm": "that already is a recurrence"}.get(kind, "that already is band + low rank")
        shown = checkpoints.checkpoint_choices()[key] if key.startswith("upload:") else key
        st.error(f"{shown} cannot be converted: its mixer is {kind}, and {why}. Only tno and "
                 "fd checkpoints can be; choose one of those.", icon=":material/error:")
        timing.page_activity()
        st.stop()
    if task is None:
        kernels_only(key, model, info.task)
        timing.page_activity()
        st.stop()
    return key, model, task


def plan_section(key: str, model, n0: int) -> tuple:
    """The plan: (the plan, or None after an error sentence; the search's method A)."""
    st.subheader("Plan")
    most_band, most_rank = largest_band_rank(n0)
    config, changed = model.config, []
    per_layer = st.session_state.get(session_keys.PER_LAYER, False)
    recurrent, state_s = recurrent_choice(config.operator.causal, per_layer, n0, changed)
    band, rank, method = band_rank_method(st.columns(3), n0, changed,
                                          disabled=per_layer or recurrent)
    with st.expander("Per layer", icon=":material/layers:", expanded=per_layer):
        per_layer = st.toggle("Set each layer on its own", key="per_layer",
                              help="Instead of the same plan everywhere. 'keep' leaves a layer "
                                   "as it is.")
        default = (band, rank, "recurrent" if recurrent else method, state_s)
        rows = [layer_row(i, default, per_layer, config, (most_band, most_rank, n0), changed)
                for i in range(config.layers)]
    if changed:
        st.caption(f"Brought within what this model allows (trained at n0 = {n0}: m ≤ "
                   f"{most_band}, r ≤ {most_rank}, s ≤ {n0}): {'; '.join(changed)}.")
    try:
        uniform = (band, rank, "recurrent", state_s) if recurrent else (band, rank, method)
        plan = lab.make_plan(rows if per_layer else [uniform] * config.layers, config, n0,
                             uniform=not per_layer)
    except ValueError as err:
        plan = None
        frame.show_error(err)
    if recurrent or (per_layer and any(row[2] == "recurrent" for row in rows)):
        state_sweep(key, model, n0)
    if plan is not None and (larger := lab.larger_model_sentence(config, plan, n0)) is not None:
        st.warning(larger, icon=":material/warning:")
    return plan, method


def convert_button(key: str, model, task, plan, busy: bool) -> None:
    """The fine-tuning after the conversion, and the Convert button."""
    f1, f2, f3 = st.columns(3)
    steps = int(f1.number_input("Fine-tuning steps", 0, 5000, 0, step=10, key="finetune_steps",
                                help="AdamW steps on the training split after the conversion "
                                     "(batches of 32); 0: none."))
    lr = f2.select_slider("Fine-tuning learning rate", [1e-4, 3e-4, 1e-3, 3e-3, 1e-2],
                          value=3e-4, key="finetune_lr", disabled=steps == 0)
    parameters = f3.radio("Fine-tune", lab.FINETUNE_PARAMETERS, key="finetune_parameters",
                          format_func=PARAMETER_LABELS.get, disabled=steps == 0)
    if st.button("Convert", type="primary", icon=":material/compress:", key="convert",
                 disabled=busy or plan is None,
                 help="Disabled while a conversion or a search runs: they would share the "
                      "CPU and disturb each other's timings."):
        start("compress_job", lambda: lab.conversion_job(
            model, task, plan, steps, lr, parameters, frame.device(),
            checkpoint_views.evaluation(key)), "a conversion",
            ("compress_job_about", {"key": key, "steps": steps}))


def search_section(key: str, model, task, unit: lab.Unit, source_scores, method: str,
                   busy: bool) -> None:
    """The search's budget δ and grid of (m, r), and the Search button."""
    st.subheader("Search: the fastest plan within a budget")
    st.markdown(lab.SEARCH_EXPLAINED)
    s1, s2, s3 = st.columns(3)
    tolerance, points = lab.default_delta(unit.name), None
    # an accuracy cannot drop below 0: δ stops at the source's accuracy, in points
    most = (max(math.floor(unit.scale * source_scores.metric * 10) / 10, 0.1)
            if unit.name == "accuracy" else 10.0)
    delta_display = s1.number_input(
        f"Allowed drop δ ({unit.drop_unit})", 0.0, most,
        min(round(unit.scale * tolerance, 1 if unit.name == "accuracy" else 3), most),
        step=0.5 if unit.name == "accuracy" else 0.01, key=f"search_delta_{key}",
        help=f"How much worse than the source a plan may be: percentage points of accuracy "
             f"(at most the source's own), or bits per character, against the upper end of "
             f"the drop's paired 95 % interval (the same {source_scores.sequences:,} sequences "
             f"for the source and the plan). It starts at {lab.amount(tolerance, unit.name)}, "
             "the lab's quality tolerance, the one every verdict uses.")
    bands = s2.multiselect("Bands m to try", lab.GRID_BANDS, default=list(lab.GRID_BANDS),
                           key="search_bands",
                           help="With the ranks: the grid of (m, r) pairs (those valid at n0).")
    ranks = s3.multiselect("Ranks r to try", lab.GRID_RANKS, default=list(lab.GRID_RANKS),
                           key="search_ranks", help="The method is the plan's 'Low-rank A' above.")
    try:
        points = lab.search_points(task.seq_len, bands, ranks)
    except ValueError as err:
        frame.show_error(err)
    delta = unit.drop_from_display(delta_display)
    if st.button("Search", icon=":material/travel_explore:", key="search",
                 disabled=busy or points is None,
                 help="Disabled while a conversion or a search runs."):
        start("compress_search", lambda: lab.search_job(
            model, task, delta, method, points, frame.device(),
            checkpoint_views.evaluation(key)), "a plan search", ("compress_search_key", key))


main()
