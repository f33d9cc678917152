"""A lesson step's figures: the lab page a step's view names, drawn as that page's figures
(no iframe, no page around them) at the step's settings.

A step's settings are its view's controls, as the page's link spells them (select boxes by
their labels, switches as true/false); ``lock`` lists the controls drawn disabled. Each
figure keeps its state under the step's own key and leaves the lesson's URL alone
(``figures.show(..., link=False)``). ``lesson.VIEW_FIGURES`` lists the pages drawn here
and their figures: Basics', Decomposition's, Frequency's and Compare's own; for Inspect,
one learned channel on the Toeplitz figure, the atlas's medians, the band ablation and
TNN's Table 10; for Compress, one conversion's scores without its timing. A view of
another page (Speed, Train) opens that page embedded (pages/lessons.py).

A view's settings are read against the pages' declared controls (``view_settings``). Also
here, as they read them: the curve a sketch question is compared with (``sketch_curve``)
and the choice a computed question's data decide (``computed_answer``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import streamlit as st

from pages._ui import charts, checkpoint_views, checkpoints, circulant, frame, kernels, numbers
from pages._ui.controls import fields
from pages._ui.memo import memo
from pages._ui.session_keys import revealed as revealed_key
from pages.figures import decomposition, difference, fd_kernel, recurrent_fit, toeplitz
from pages.lessons.view_settings import (
    checkpoint_key,
    compare_source,
    conversion_setting,
    decomposition_source,
    fd_kernel_args,
    kept,
    label_key,
    read,
    slider_values,
)
from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.lesson import (
    BAND_SHARE_NAME,
    DECAY_PAIR,
    SIDES,
    SKI_ERROR_NAME,
    View,
    fd_response,
    opening_atlas,
    stored_or_computed,
    summary,
)
from tnn_core.lab.lesson import answers as lesson_answers
from tnn_core.lab.lesson import sketch as lesson_sketch

__all__ = ["show", "revealed", "sketch_curve", "computed_answer"]

METHODS = {"sample": "A sampled", "fit": "A fitted"}
ABLATION_BAND = 9  # lags Inspect's band ablation keeps in a step (the atlas's default)
CURVE_HEIGHT = 170  # CSS pixels of the error curve under the decomposition figure
TOEPLITZ_N, TOEPLITZ_DECAY, TOEPLITZ_CHANNEL = toeplitz.CONTROLS  # Basics' figure's sliders
RANK, BAND, DECAY = decomposition.CONTROLS  # the band + W A Wᵀ figure's
SIDE_SLIDERS = {c.name: c for c in difference.CONTROLS}  # each side's: a_rank, b_band, …


def revealed(key: str) -> bool:
    """Whether the question of the step drawn under ``key`` ("lesson:SLUG:NUMBER", as
    pages/lessons.py names it) is revealed: that page keeps it as "revealed:SLUG:NUMBER"."""
    return bool(st.session_state.get(revealed_key(key.removeprefix("lesson:")), False))


def show(view: View, wanted: tuple[str, ...], key: str) -> None:
    """Draw the figures ``wanted`` (of ``lesson.VIEW_FIGURES[view.path]``: a step's
    ``drawn``) of the view's page at its settings, their state under ``key``; until the
    step's question is revealed, without what the view withholds (``View.withheld``)."""
    if view.withheld and not revealed(key):
        view, key = view.before_reveal(), f"{key}:withheld"  # at Reveal, drawn afresh
        wanted = tuple(name for name in wanted if name not in view.withheld)
        if not wanted:
            st.caption("The figure appears with the answer: it shows it.")
            return
    settings, locked = dict(view.params), view.locked
    if view.path == "basics":
        _basics(settings, locked, wanted, key)
    elif view.path == "frequency":
        _frequency(settings, locked, wanted, key)
    elif view.path == "decomposition":
        _decomposition(settings, locked, wanted, key)
    elif view.path == "compare":
        _compare(settings, locked, key)
    elif view.path == "inspect":
        _inspect(settings, wanted, key)
    elif view.path == "compress":
        _conversion(checkpoint_key(settings), *conversion_setting(settings))
    else:
        raise ValueError(f"the {view.path} page has no figures to draw in a step")


def _basics(settings: Mapping, locked: tuple[str, ...], wanted: tuple[str, ...],
            key: str) -> None:
    """Basics' Toeplitz figure and its circulant embedding."""
    preset = label_key(settings, fields.PRESET.name, toeplitz.LABELS)
    chosen = {**slider_values(settings, ("n", "decay", "channel")),
              "causal": kept(settings, "causal", toeplitz.KEPT)}
    kernel = None
    if "toeplitz" in wanted:
        drawn = toeplitz.mount(preset, f"{key}:toeplitz", link=False, settings=chosen,
                               locked=locked)
        if drawn.kernel is None:
            frame.show_error(drawn.problem)
            return
        kernel = drawn.kernel
    if "circulant" in wanted:
        kernel = kernel or toeplitz.figure_kernel(
            preset, read(chosen, TOEPLITZ_N), read(chosen, TOEPLITZ_DECAY),
            chosen["causal"], frame.seed(), read(chosen, TOEPLITZ_CHANNEL), "")
        circulant.show(kernel.coeffs, float(np.abs(kernel.coeffs).max()) or 1.0)


def _frequency(settings: Mapping, locked: tuple[str, ...], wanted: tuple[str, ...],
               key: str) -> None:
    """Frequency's FD kernel figure and its decay."""
    n, depth = read(settings, fields.FREQUENCY_LENGTH), read(settings, fields.DEPTH)
    chosen = {"activation": kept(settings, "activation", fd_kernel.KEPT),
              "width": read(settings, fd_kernel.WIDTH),
              "smooth": kept(settings, "smooth", fd_kernel.KEPT),
              "causal": kept(settings, "causal", fd_kernel.KEPT)}
    if "fd_kernel" in wanted:
        setting = fd_kernel.mount(n, depth, f"{key}:fd_kernel", link=False,
                                  settings=chosen, locked=locked)
    else:
        setting = fd_kernel.Setting(**chosen, n=n, depth=depth, seed=frame.seed())
    if "decay" in wanted:
        view_now = fd_kernel.settled_view(setting.activation, setting.width, depth, n,
                                          setting.seed, setting.fd_input, setting.causal)
        fd_kernel.show_decay(setting, view_now, f"{key}:decay")


def _decomposition(settings: Mapping, locked: tuple[str, ...], wanted: tuple[str, ...],
                   key: str) -> None:
    """Decomposition's band + W A Wᵀ figure, with its error curve under it when wanted; or
    the recurrent fit and the s it needs at three λ, alone."""
    source = decomposition_source(settings)
    if not {"decomposition", "factors", "error_curve"} & set(wanted):
        _recurrent(source, settings, locked, wanted, key)
        return
    drawn = decomposition.mount(
        source, read(settings, fields.LENGTH), read(settings, fields.CAUSAL),
        read(settings, fields.METHOD), f"{key}:decomposition", link=False,
        settings=slider_values(settings, decomposition.STATE), locked=locked,
        factors="factors" in wanted, compact="error_curve" in wanted)
    if drawn is not None and "error_curve" in wanted:  # under it, on the same screen
        decomposition.show_curve(drawn, read(settings, fields.CAUSAL),
                                 f"{key}:error_curve", height=CURVE_HEIGHT)


def _recurrent(source: decomposition.KernelSource, settings: Mapping, locked: tuple[str, ...],
               wanted: tuple[str, ...], key: str) -> None:
    n, causal = read(settings, fields.LENGTH), read(settings, fields.CAUSAL)
    if "recurrent_fit" in wanted:
        coeffs, _ = source.kernel(n, read(settings, DECAY), causal)
        recurrent_fit.show(coeffs, read(settings, BAND), causal, f"{key}:recurrent_fit",
                           link=False, settings=slider_values(settings, ("modes",)), locked=locked)
    if "modes_against_decay" in wanted:
        recurrent_fit.decay_table(source, n, causal)


def _inspect(settings: Mapping, wanted: tuple[str, ...], key: str) -> None:
    """Inspect's figures of the view's checkpoint: one learned channel, the band ablation,
    the atlas's medians, TNN's Table 10."""
    checkpoint = checkpoint_key(settings)
    if "channel" in wanted:
        toeplitz.mount_learned(checkpoint, read(settings, fields.DRILL_LAYER),
                               read(settings, fields.DRILL_CHANNEL), f"{key}:channel")
    if "ablation" in wanted:
        _ablation(checkpoint)
    if "atlas" in wanted:
        _atlas_medians(checkpoint)
    if "table10" in wanted:
        _table10()


def _atlas_medians(checkpoint: str) -> None:
    """Inspect's kernel atlas at its opening setting (its n, band, rank and channels), as
    its per-layer medians: where each layer's energy sits and how well band + W A Wᵀ takes
    the rest."""
    model, info = checkpoints.load_checkpoint(checkpoint)
    n = summary(info).train_n
    n, band, rank = opening_atlas(model.config, n)
    medians = checkpoint_views.atlas(checkpoint, n, band, rank).layers  # Inspect's, kept
    with st.container(key="lesson-atlas", border=True):
        st.markdown(f"**{checkpoint}: the atlas's medians per layer** (n = {n}, band m = "
                    f"{band}, r = {rank}; every channel of each layer)")
        st.table({
            "layer": medians.layer.tolist(),
            BAND_SHARE_NAME: [f"{v:.0%}" for v in medians.locality],
            "fitted decay λ": [numbers.fmt(v, ".3f") for v in medians.decay],
            SKI_ERROR_NAME: [numbers.fmt(v, ".3f") for v in medians.low_rank]},
            hide_index=True)
        st.caption("Band energy share: ‖band(T)‖_F² / ‖T‖_F². SKI error: "
                   "‖T − band − W A Wᵀ‖_F / ‖T‖_F. Inspect draws every channel as a tile.")


def _table10() -> None:
    """TNN's Table 10 with the shipped pair: the same language model with and without
    decay, on the same windows from 1× to 16× its training length."""
    pair = checkpoint_views.decay_pair(DECAY_PAIR)
    with st.container(key="lesson-table10", border=True):
        st.plotly_chart(charts.decay_pair_chart(pair, height=330, text_size=18),
                        key="lesson-decay-pair")  # a projector's type size
        st.caption(pair.sentence())


def _ablation(checkpoint: str) -> None:
    """Inspect's band ablation at ABLATION_BAND lags: the task metric with every layer, and
    each layer alone, kept to its band, beside the full model's and chance."""
    ablation = checkpoint_views.band_ablation(checkpoint, ABLATION_BAND)
    name = ablation.full.metric_name
    with st.container(key="lesson-ablation", border=True):
        st.markdown(f"**{checkpoint}, every layer kept to its band ({ablation.band})**")
        _metrics([("Full kernels", ablation.full), ("Every layer, band only",
                                                    ablation.restricted)] + [
            (f"Layer {layer}, band only", scores)
            for layer, scores in enumerate(ablation.per_layer)], ablation.chance, name)
        st.caption(f"{name} at the training length n = {ablation.length} on the same "
                   f"{ablation.full.sequences:,} sequences for every variant (hover a value "
                   f"for its 95 % interval); \"Layer i, band only\": that layer alone "
                   f"kept to its band, the others whole. {ablation.sentence()}")


def _metrics(scored: list, chance: float, name: str) -> None:
    """Each (label, Scores) as a metric, its interval on hover, then chance: three a row."""
    cells = [*scored, ("Chance", None)]
    for start in range(0, len(cells), 3):
        for column, (label, scores) in zip(st.columns(3), cells[start:start + 3],
                                           strict=False):
            if scores is None:
                column.metric(label, numbers.format_metric(chance, name))
            else:
                column.metric(label, numbers.format_metric(scores.metric, name),
                              help=f"95 % interval "
                                   f"{numbers.format_interval(scores.ci95, name)}")


@memo(max_entries=8, spinner="Converting every layer…")
def _quick_conversion(digest: str, band: int, rank: int, method: str, _model,
                      _task) -> lesson_lab.QuickConversion:
    return stored_or_computed("quick_conversion", (digest,),
                              {"band": band, "rank": rank, "method": method},
                              lambda: lesson_lab.quick_conversion(_model, _task, band, rank,
                                                                  method))


def _conversion_result(checkpoint: str, band: int, rank: int,
                       method: str) -> lesson_lab.QuickConversion:
    found = checkpoints.opened(checkpoint)
    return _quick_conversion(found.digest, band, rank, method, _model=found.model,
                             _task=checkpoints.checkpoint_task(checkpoint))


def _conversion(checkpoint: str, band: int, rank: int, method: str) -> None:
    """Every layer of the checkpoint as band m + rank r, scored like its source (the
    Compress page times it and fine-tunes it too)."""
    result = _conversion_result(checkpoint, band, rank, method)
    name = result.metric_name
    with st.container(key="lesson-conversion", border=True):
        st.markdown(f"**{checkpoint}, every layer as band m = {band} + rank r = {rank} "
                    f"({method})**")
        _metrics([("Source", result.source), ("Every layer converted", result.converted)] + [
            (f"Layer {layer} alone", scores) for layer, scores in enumerate(result.alone)],
            result.chance, name)
        misses = ", ".join(f"layer {i} {e:.2f}" for i, e in enumerate(result.errors))
        st.caption(f"{name} at the training length on the same {result.source.sequences:,} "
                   f"sequences for every variant (hover a value for its 95 % interval). "
                   f"Each layer's relative error ‖T − T̂‖_F / ‖T‖_F: {misses}.")


def _compare(settings: Mapping, locked: tuple[str, ...], key: str) -> None:
    """The two settings side by side, their residuals on one colour scale (the page's
    strip B − A does not fit a step's screen)."""
    source = compare_source(settings)
    n, causal = read(settings, fields.SHARED_LENGTH), read(settings, fields.SHARED_CAUSAL)
    for side, column in zip(SIDES, st.columns(2, border=True), strict=True):
        with column:
            method = read(settings, fields.side_method(side))
            st.markdown(f"**Setting {side.upper()}** · {METHODS.get(method, method)}")
            names = tuple(f"{side}_{name}" for name in ("rank", "band", "decay"))
            difference.mount_side(side, source, n, causal, method, f"{key}:{side}", link=False,
                               settings=slider_values(settings, names), locked=locked,
                               compact=True)


@memo(max_entries=16)
def sketch_curve(view: View, name: str, seed: int) -> lesson_sketch.Curve:
    """The curve a sketch question of a step with ``view`` is compared with (``name``, of
    ``lesson_sketch.SKETCHES``), at the view's settings."""
    settings = dict(view.params)
    if name == "fit_error_against_r" and view.path == "decomposition":
        causal = read(settings, fields.CAUSAL)
        coeffs, _ = decomposition_source(settings).kernel(
            read(settings, fields.LENGTH), read(settings, DECAY), causal)
        return lesson_sketch.fit_error_against_r(coeffs, read(settings, BAND), causal)
    if name == "dense_cost_against_n":
        return lesson_sketch.dense_cost_against_n()
    if name == "decay_envelope" and view.path == "basics":
        return lesson_sketch.decay_envelope(read(settings, TOEPLITZ_DECAY))
    if name == "fd_kernel_decay" and view.path == "frequency":
        return lesson_sketch.fd_kernel_decay(kept(settings, "activation", fd_kernel.KEPT),
                                             *fd_kernel_args(settings, seed))
    raise ValueError(f"the sketch {name!r} needs a view of another page than {view.path!r}")


@memo(max_entries=16)
def computed_answer(view: View, name: str, choices: tuple[str, ...], seed: int) -> str:
    """Which of ``choices`` is right for a computed question (``name``, of
    ``lesson_answers.COMPUTED``) of a step with ``view``, at the view's settings."""
    settings = dict(view.params)
    if name == "never_to_roundoff" and view.path == "frequency":
        return lesson_answers.never_to_roundoff(choices, *fd_kernel_args(settings, seed))
    if name == "smaller_frobenius" and view.path == "compare":
        source = compare_source(settings)
        n, causal = read(settings, fields.SHARED_LENGTH), read(settings, fields.SHARED_CAUSAL)
        sides = [(read(settings, SIDE_SLIDERS[f"{side}_band"]),
                  read(settings, SIDE_SLIDERS[f"{side}_rank"]),
                  read(settings, fields.side_method(side))) for side in SIDES]
        decay = {read(settings, SIDE_SLIDERS[f"{side}_decay"]) for side in SIDES}
        if len(decay) != 1:
            raise ValueError("the two settings' kernels differ (their λ): compare methods "
                             "on one kernel")
        coeffs = kernels.preset_kernel(source, n, decay.pop(), causal, seed, 0)
        return lesson_answers.smaller_frobenius(choices, coeffs, sides, causal)
    if name == "fft_against_dense" and view.path == "basics":
        preset = label_key(settings, fields.PRESET.name, toeplitz.LABELS)
        kernel = toeplitz.figure_kernel(preset, read(settings, TOEPLITZ_N),
                                        read(settings, TOEPLITZ_DECAY),
                                        kept(settings, "causal", toeplitz.KEPT), seed,
                                        read(settings, TOEPLITZ_CHANNEL), "")
        return lesson_answers.fft_against_dense(choices, kernel.coeffs, seed)
    if name == "negative_lags" and view.path == "frequency":
        kernel = fd_response(kept(settings, "activation", fd_kernel.KEPT),
                             *fd_kernel_args(settings, seed)).kernel
        return lesson_answers.negative_lags(choices, kernel)
    if name == "band_only" and view.path == "inspect":  # the step's panel's measurement
        return lesson_answers.band_only(
            choices, checkpoint_views.band_ablation(checkpoint_key(settings), ABLATION_BAND))
    if name == "modes_against_decay" and view.path == "decomposition":
        source = decomposition_source(settings)
        return lesson_answers.modes_against_decay(choices, recurrent_fit.decay_kernels(
            source, read(settings, fields.LENGTH), read(settings, fields.CAUSAL)))
    if name == "conversion_loss" and view.path == "compress":
        return lesson_answers.conversion_loss(choices, _conversion_result(
            checkpoint_key(settings), *conversion_setting(settings)))
    raise ValueError(f"the computed answer {name!r} needs a view of another page than "
                     f"{view.path!r}")
