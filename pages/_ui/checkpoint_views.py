"""Inspect's views of one checkpoint, computed once for the whole server (``memo``), keyed
by the checkpoint's digest. Compress and the lessons draw some of them too. ``warm_up`` is
the start-up work (``warmup``) that computes the opening view of the shipped checkpoints
that ``TOEPLITZ_LAB_WARM_UP`` names (all of them unless it says otherwise)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future

import streamlit as st

from pages._ui import session, session_keys
from pages._ui.checkpoints import (
    USER_CHECKPOINTS,
    checkpoint_task,
    load_task,
    open_file,
    opened,
)
from pages._ui.memo import VIEW_THREADS, memo
from tnn_core.lab import inspect as lab
from tnn_core.lab.common.checkpoints import checkpoint_path
from tnn_core.lab.common.stored_measurements import stored_or_computed

_LOG = logging.getLogger(__name__)
WARM_UP_VARIABLE = "TOEPLITZ_LAB_WARM_UP"

@memo(max_entries=32, threads=VIEW_THREADS)  # its caller draws a progress bar
def _atlas(digest: str, n: int, band: int, rank: int, _model,
           _on_progress=None) -> lab.AtlasView:
    return lab.atlas_view(_model, n, band, rank, _on_progress)


@memo(max_entries=32, spinner="Reading the matrix the model applies…", threads=VIEW_THREADS)
def _channel_matrix(digest: str, n: int, layer: int, channel: int,
                    _model) -> lab.ChannelMatrix:
    return lab.channel_matrix(_model, n, layer, channel)


@memo(max_entries=32, threads=VIEW_THREADS,
      spinner="Evaluating the kernel at 1×, 2× and 4× the length…")
def _extrapolation(digest: str, train_n: int, layer: int, channel: int,
                   _model) -> lab.Extrapolation:
    return lab.extrapolation(_model, train_n, layer, channel)


@memo(max_entries=16, threads=VIEW_THREADS)
def _length_sweep(digest: str, _model, _task) -> lab.LengthSweep:
    return lab.length_sweep(_model, _task)


@memo(max_entries=32, spinner="Scoring the evaluation set…")
def _evaluation(digest: str, _model, _task):
    return lab.evaluation(_model, _task)


@memo(max_entries=8)
def _model_report(digest: str, _model, _info, _task):
    return lab.model_report(_model, _info, _task)


@memo(max_entries=16, spinner="Restricting every layer to its band…", threads=lab.JOB_THREADS)
def _band_ablation(digest: str, band: int, _model, _task, _on_progress=None,
                   _stop_event=None) -> lab.BandAblation:
    return stored_or_computed("band_ablation", (digest,), {"band": band},
                              lambda: lab.band_ablation(_model, _task, band, _on_progress,
                                                        _stop_event))


@memo(max_entries=2, spinner="Scoring both models on the same windows…")
def _decay_pair(keys: tuple[str, str], digests: tuple[str, str], _models,
                _task_of) -> lab.DecayPair:
    """Table 10's pair, stored beside the checkpoints or scored; ``_task_of()`` builds the
    task only when it is scored (charlm's costs 2 s)."""
    return stored_or_computed("decay_pair", digests,
                              {"names": keys, "factors": lab.PAIR_FACTORS},
                              lambda: lab.decay_pair(_models, keys, _task_of()))


def atlas(key: str, n: int, band: int, rank: int, on_progress=None) -> lab.AtlasView:
    """The atlas of every channel (``lab.atlas_view``); ``on_progress(done, total)`` after
    each layer measured here (not when another session or the warm-up measures it)."""
    found = opened(key)
    return _atlas(found.digest, n, band, rank, _model=found.model, _on_progress=on_progress)


def channel_matrix(key: str, n: int, layer: int, channel: int) -> lab.ChannelMatrix:
    found = opened(key)
    return _channel_matrix(found.digest, n, layer, channel, _model=found.model)


def extrapolation(key: str, train_n: int, layer: int, channel: int) -> lab.Extrapolation:
    found = opened(key)
    return _extrapolation(found.digest, train_n, layer, channel, _model=found.model)


def start_length_sweep(key: str) -> Future:
    """Start the length sweep on a thread of its own (unless it runs or ran): its future,
    the one this session watches. ValueError when the task cannot be rebuilt here."""
    found = opened(key)
    watched = st.session_state.setdefault(session_keys.WATCHED_SWEEPS, {})
    if found.digest not in watched:
        watched[found.digest] = _length_sweep.start(found.digest, _model=found.model,
                                                    _task=checkpoint_task(key))
    return watched[found.digest]


def retry_length_sweep(key: str) -> None:
    """Forget this session's sweep of ``key`` (one stopped at its time limit): the next
    ``start_length_sweep`` computes it again."""
    st.session_state.get(session_keys.WATCHED_SWEEPS, {}).pop(opened(key).digest, None)


def length_sweep(key: str, wait_s: float) -> lab.LengthSweep | None:
    """The length sweep (``start_length_sweep``), or None if it still runs after ``wait_s``
    seconds; ValueError when the task cannot be rebuilt or evaluated here."""
    try:
        return start_length_sweep(key).result(timeout=wait_s)
    except TimeoutError:
        return None


def evaluation(key: str):
    """The checkpoint's Scores on its task's evaluation set; ValueError when its task cannot
    be rebuilt here. Once the length sweep has run, its 1× row: the same scores (Inspect
    opened first, or the warm-up), not computed again."""
    found = opened(key)
    task = checkpoint_task(key)
    if _length_sweep.has(found.digest, _model=found.model, _task=task):  # FACTORS[0] is 1
        try:
            return _length_sweep(found.digest, _model=found.model, _task=task).scores[0]
        except ValueError:  # a longer length failed (too long for the text, too slow)
            pass
    return _evaluation(found.digest, _model=found.model, _task=task)


def model_report(key: str):
    """The model card and per-layer report of a checkpoint; ValueError when it cannot be
    reported."""
    found = opened(key)
    return _model_report(found.digest, _model=found.model, _info=found.info,
                         _task=checkpoint_task(key))


def band_ablation(key: str, band: int) -> lab.BandAblation:
    """The band ablation, computed here if no one has (a lesson's step waits for it)."""
    found = opened(key)
    return _band_ablation(found.digest, band, _model=found.model, _task=checkpoint_task(key))


def finished_band_ablation(key: str, band: int) -> lab.BandAblation | None:
    """The band ablation if it has been computed (kept for the server by digest and band),
    else None; ValueError when it failed or the task cannot be rebuilt."""
    found = opened(key)
    task = checkpoint_task(key)
    if not _band_ablation.has(found.digest, band, _model=found.model, _task=task):
        return None
    return _band_ablation(found.digest, band, _model=found.model, _task=task)


def start_band_ablation(key: str, band: int) -> lab.BackgroundJob:
    """The band ablation as a background job, started in a place for heavy work claimed for
    this session (NoPlace: its sentence) and stopped when the session ends; its progress is
    the fraction of batches scored (items: (scored, total)), and its result is kept as
    ``finished_band_ablation``'s."""
    found = opened(key)
    task = checkpoint_task(key)

    def run(on_progress, stop_event) -> lab.BandAblation:
        return _band_ablation(found.digest, band, _model=found.model, _task=task,
                              _on_progress=on_progress, _stop_event=stop_event)

    job = lab.BackgroundJob(run)
    job.stop_when_collected(session.session_token())
    lab.start_in_place(job, session.session_id(), "a band ablation")
    return job


def decay_pair(keys: tuple[str, str]) -> lab.DecayPair:
    """TNN's Table 10 for two checkpoints of one task (the first one's)."""
    found = [opened(key) for key in keys]
    return _decay_pair(keys, tuple(f.digest for f in found),
                       _models=tuple(f.model for f in found),
                       _task_of=lambda: checkpoint_task(keys[0]))


def warm_up_names(setting: str | None) -> tuple[str, ...]:
    """The shipped checkpoints a warm-up prepares, in ``SHIPPED_ORDER``: every one when
    ``setting`` is unset or "all", none for "none", else the comma-separated names it
    lists. ValueError names a name that is not a shipped checkpoint."""
    shipped = tuple(name for name, _ in lab.SHIPPED_ORDER)
    if setting is None or setting.strip() == "all":
        return shipped
    asked = {name.strip() for name in setting.split(",")} - {"", "none"}
    unknown = sorted(asked - set(shipped))
    if unknown:
        raise ValueError(f"{WARM_UP_VARIABLE}={setting!r} names {', '.join(unknown)}, which "
                         f"is not a shipped checkpoint; use all, none or names among "
                         f"{', '.join(shipped)}")
    return tuple(name for name in shipped if name in asked)


def warm_up() -> list:
    """Inspect's opening view of each shipped checkpoint that ``TOEPLITZ_LAB_WARM_UP``
    names, for ``warmup.start``: one job per checkpoint in ``SHIPPED_ORDER``, one step per
    view. No Streamlit calls. A setting it cannot read is logged, and nothing prepared."""
    try:
        names = warm_up_names(os.environ.get(WARM_UP_VARIABLE))
    except ValueError as err:
        _LOG.error("%s: the start-up prepares no checkpoint", err)
        return []
    return [_opening_view(name) for name in names]


def _opening_view(name: str):
    path = checkpoint_path(name, USER_CHECKPOINTS)
    if not path.is_file():
        return
    found = open_file(str(path), path.stat().st_mtime_ns)
    yield "model"
    train_n = lab.summary(found.info).train_n
    n, band, rank = lab.opening_atlas(found.model.config, train_n)
    _atlas(found.digest, n, band, rank, _model=found.model)
    yield "atlas"
    _channel_matrix(found.digest, n, 0, 0, _model=found.model)
    yield "channel matrix"
    _extrapolation(found.digest, train_n, 0, 0, _model=found.model)
    yield "extrapolation"
    try:
        task = load_task(found.task_key, _record=found.info.task)
    except ValueError:  # the page says why; nothing more to prepare
        return
    yield "task"
    _length_sweep(found.digest, _model=found.model, _task=task)
    yield "length sweep"
