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

Also here, as they read a view's settings: the curve a sketch question is compared with
(``sketch_curve``) and the choice a computed question's data decide (``computed_answer``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import streamlit as st

from pages._ui import charts, checkpoint_views, checkpoints, circulant, frame, kernels, numbers
from pages._ui.memo import memo
from pages._ui.session_keys import revealed as revealed_key
from pages.figures import decomposition, difference, fd_kernel, recurrent_fit, toeplitz
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


def _whole(settings: Mapping, name: str, default: int) -> int:
    return int(float(settings.get(name, default)))


def _number(settings: Mapping, name: str, default: float) -> float:
    return float(settings.get(name, default))


def _switch(settings: Mapping, name: str, default: bool) -> bool:
    return str(settings.get(name, str(default))).lower() == "true"


def _key_of(labels: Mapping[str, str], label: str, what: str) -> str:
    found = next((key for key, shown in labels.items() if shown == label), None)
    if found is None:
        raise ValueError(f"the step's {what} {label!r} is none of {sorted(labels.values())}")
    return found


def _sliders(settings: Mapping, names: tuple[str, ...]) -> dict:
    return {name: float(settings[name]) for name in names if name in settings}


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
        _conversion(_checkpoint(settings), _whole(settings, "band", 9),
                    _whole(settings, "rank", 16), settings.get("method", "fit"))
    else:
        raise ValueError(f"the {view.path} page has no figures to draw in a step")


def _basics(settings: Mapping, locked: tuple[str, ...], wanted: tuple[str, ...],
            key: str) -> None:
    """Basics' Toeplitz figure and its circulant embedding."""
    preset = _key_of(toeplitz.LABELS, settings.get("preset", toeplitz.LABELS[
        "exponential"]), "kernel")
    chosen = {**_sliders(settings, ("n", "decay", "channel")),
              "causal": _switch(settings, "causal", False)}
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
            preset, _whole(chosen, "n", 64), _number(chosen, "decay", 0.9),
            chosen["causal"], frame.seed(), _whole(chosen, "channel", 0), "")
        circulant.show(kernel.coeffs, float(np.abs(kernel.coeffs).max()) or 1.0)


def _frequency(settings: Mapping, locked: tuple[str, ...], wanted: tuple[str, ...],
               key: str) -> None:
    """Frequency's FD kernel figure and its decay."""
    n, depth = _whole(settings, "n", 512), _whole(settings, "depth", 1)
    chosen = {"activation": settings.get("activation", fd_kernel.ACTIVATIONS[0]),
              "width": _whole(settings, "width", fd_kernel.WIDTH.default),
              "smooth": _switch(settings, "smooth", False),
              "causal": _switch(settings, "causal", True)}
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
    source = _decomposition_source(settings)
    if not {"decomposition", "factors", "error_curve"} & set(wanted):
        _recurrent(source, settings, locked, wanted, key)
        return
    drawn = decomposition.mount(
        source, _whole(settings, "n", 512), _switch(settings, "causal", False),
        settings.get("method", "sample"), f"{key}:decomposition", link=False,
        settings=_sliders(settings, decomposition.STATE), locked=locked,
        factors="factors" in wanted, compact="error_curve" in wanted)
    if drawn is not None and "error_curve" in wanted:  # under it, on the same screen
        decomposition.show_curve(drawn, _switch(settings, "causal", False),
                                 f"{key}:error_curve", height=CURVE_HEIGHT)


def _recurrent(source: decomposition.KernelSource, settings: Mapping, locked: tuple[str, ...],
               wanted: tuple[str, ...], key: str) -> None:
    n, causal = _whole(settings, "n", 512), _switch(settings, "causal", False)
    if "recurrent_fit" in wanted:
        coeffs, _ = source.kernel(n, _number(settings, "decay", decomposition.DEFAULT_DECAY),
                                  causal)
        recurrent_fit.show(coeffs, _whole(settings, "band", 9), causal, f"{key}:recurrent_fit",
                           link=False, settings=_sliders(settings, ("modes",)), locked=locked)
    if "modes_against_decay" in wanted:
        recurrent_fit.decay_table(source, n, causal)


def _inspect(settings: Mapping, wanted: tuple[str, ...], key: str) -> None:
    """Inspect's figures of the view's checkpoint: one learned channel, the band ablation,
    the atlas's medians, TNN's Table 10."""
    checkpoint = _checkpoint(settings)
    if "channel" in wanted:
        toeplitz.mount_learned(checkpoint, _whole(settings, "layer", 0),
                               _whole(settings, "channel", 0), f"{key}:channel")
    if "ablation" in wanted:
        _ablation(checkpoint)
    if "atlas" in wanted:
        _atlas_medians(checkpoint)
    if "table10" in wanted:
        _table10()


def _checkpoint(settings: Mapping) -> str:
    """The view's checkpoint (by its label, as a link holds it), else the first offered."""
    choices = checkpoints.checkpoint_choices()
    return _key_of(choices, settings.get("checkpoint", next(iter(choices.values()))),
                   "checkpoint")


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


def _decomposition_source(settings: Mapping) -> decomposition.KernelSource:
    name = _key_of(kernels.SOURCE_LABELS, settings.get("source", kernels.SOURCE_LABELS[
        "spike_smooth"]), "source")
    if name == "checkpoint":
        choices = checkpoints.checkpoint_choices()
        label = settings.get("checkpoint", next(iter(choices.values())))
        return decomposition.KernelSource(
            "checkpoint", _whole(settings, "channel", 0),
            checkpoint=_key_of(choices, label, "checkpoint"), layer=_whole(settings, "layer", 0))
    return decomposition.KernelSource(name, _whole(settings, "channel", 0),
                                      text=settings.get("coefficients", ""))


def _compare(settings: Mapping, locked: tuple[str, ...], key: str) -> None:
    """The two settings side by side, their residuals on one colour scale (the page's
    strip B − A does not fit a step's screen)."""
    source = _key_of(kernels.SOURCE_LABELS, settings.get("source", kernels.SOURCE_LABELS[
        "spike_smooth"]), "source")
    n, causal = _whole(settings, "n", 256), _switch(settings, "causal", False)
    for side, column in zip(SIDES, st.columns(2, border=True), strict=True):
        with column:
            method = settings.get(f"{side}_method", "sample")
            st.markdown(f"**Setting {side.upper()}** · {METHODS.get(method, method)}")
            names = tuple(f"{side}_{name}" for name in ("rank", "band", "decay"))
            difference.mount_side(side, source, n, causal, method, f"{key}:{side}", link=False,
                               settings=_sliders(settings, names), locked=locked,
                               compact=True)


@memo(max_entries=16)
def sketch_curve(view: View, name: str, seed: int) -> lesson_sketch.Curve:
    """The curve a sketch question of a step with ``view`` is compared with (``name``, of
    ``lesson_sketch.SKETCHES``), at the view's settings."""
    settings = dict(view.params)
    if name == "fit_error_against_r" and view.path == "decomposition":
        causal = _switch(settings, "causal", False)
        coeffs, _ = _decomposition_source(settings).kernel(
            _whole(settings, "n", 512), _number(settings, "decay", decomposition.DEFAULT_DECAY),
            causal)
        return lesson_sketch.fit_error_against_r(coeffs, _whole(settings, "band", 9), causal)
    if name == "dense_cost_against_n":
        return lesson_sketch.dense_cost_against_n()
    if name == "decay_envelope" and view.path == "basics":
        return lesson_sketch.decay_envelope(_number(settings, "decay", 0.9))
    if name == "fd_kernel_decay" and view.path == "frequency":
        return lesson_sketch.fd_kernel_decay(
            settings.get("activation", fd_kernel.ACTIVATIONS[0]),
            _whole(settings, "width", fd_kernel.WIDTH.default), _whole(settings, "depth", 1),
            _whole(settings, "n", 512), seed,
            "cosine" if _switch(settings, "smooth", False) else "omega",
            _switch(settings, "causal", True))
    raise ValueError(f"the sketch {name!r} needs a view of another page than {view.path!r}")


@memo(max_entries=16)
def computed_answer(view: View, name: str, choices: tuple[str, ...], seed: int) -> str:
    """Which of ``choices`` is right for a computed question (``name``, of
    ``lesson_answers.COMPUTED``) of a step with ``view``, at the view's settings."""
    settings = dict(view.params)
    if name == "never_to_roundoff" and view.path == "frequency":
        return lesson_answers.never_to_roundoff(
            choices, _whole(settings, "width", fd_kernel.WIDTH.default),
            _whole(settings, "depth", 1), _whole(settings, "n", 512), seed,
            "cosine" if _switch(settings, "smooth", False) else "omega",
            _switch(settings, "causal", True))
    if name == "smaller_frobenius" and view.path == "compare":
        source = _key_of(kernels.SOURCE_LABELS, settings.get("source", kernels.SOURCE_LABELS[
            "spike_smooth"]), "source")
        n, causal = _whole(settings, "n", 256), _switch(settings, "causal", False)
        sides = [(_whole(settings, f"{side}_band", 9), _whole(settings, f"{side}_rank", 32),
                  settings.get(f"{side}_method", "sample")) for side in SIDES]
        decay = {_number(settings, f"{side}_decay", decomposition.DEFAULT_DECAY) for side in SIDES}
        if len(decay) != 1:
            raise ValueError("the two settings' kernels differ (their λ): compare methods "
                             "on one kernel")
        coeffs = kernels.preset_kernel(source, n, decay.pop(), causal, seed, 0)
        return lesson_answers.smaller_frobenius(choices, coeffs, sides, causal)
    if name == "fft_against_dense" and view.path == "basics":
        preset = _key_of(toeplitz.LABELS, settings.get("preset", toeplitz.LABELS[
            "exponential"]), "kernel")
        kernel = toeplitz.figure_kernel(preset, _whole(settings, "n", 64),
                                        _number(settings, "decay", 0.9),
                                        _switch(settings, "causal", False), seed,
                                        _whole(settings, "channel", 0), "")
        return lesson_answers.fft_against_dense(choices, kernel.coeffs, seed)
    if name == "negative_lags" and view.path == "frequency":
        kernel = fd_response(settings.get("activation", fd_kernel.ACTIVATIONS[0]),
                             _whole(settings, "width", fd_kernel.WIDTH.default),
                             _whole(settings, "depth", 1), _whole(settings, "n", 512), seed,
                             "cosine" if _switch(settings, "smooth", False) else "omega",
                             _switch(settings, "causal", True)).kernel
        return lesson_answers.negative_lags(choices, kernel)
    if name == "band_only" and view.path == "inspect":  # the step's panel's measurement
        return lesson_answers.band_only(
            choices, checkpoint_views.band_ablation(_checkpoint(settings), ABLATION_BAND))
    if name == "modes_against_decay" and view.path == "decomposition":
        source = _decomposition_source(settings)
        return lesson_answers.modes_against_decay(choices, recurrent_fit.decay_kernels(
            source, _whole(settings, "n", 512), _switch(settings, "causal", False)))
    if name == "conversion_loss" and view.path == "compress":
        return lesson_answers.conversion_loss(choices, _conversion_result(
            _checkpoint(settings), _whole(settings, "band", 9), _whole(settings, "rank", 16),
            settings.get("method", "fit")))
    raise ValueError(f"the computed answer {name!r} needs a view of another page than "
                     f"{view.path!r}")
