"""A lesson step's view settings as its page's link spells them, read against the page's
declared controls (``page_controls``' fields, ``figure_controls``' sliders): a setting the
view leaves out is the control's declared default, as the page opens without it. Select
boxes are spelled by their labels, switches as true/false. A value a figure keeps in the link
with no slider (Frequency's causal) is read against that figure's ``KEPT``.

The lessons' view parser (``lesson.VIEW_PAGES``) checks a view's names against the same
declarations (``url_controls.URL_CONTROLS``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pages import figures
from pages._ui import checkpoints, kernels
from pages._ui.controls import fields
from pages.figures import decomposition, fd_kernel

__all__ = ["read", "kept", "label_key", "key_of", "slider_values", "checkpoint_key",
           "decomposition_source", "compare_source", "fd_kernel_args", "conversion_setting"]


def read(settings: Mapping, declared: fields.Field | figures.Control):
    """The view's value of a declared control (a page's field, a figure's slider), as the
    page's link spells it, else its declared default (a widget declared without one opens
    at its range's low end)."""
    default = declared.default
    if default is None:  # the widget opens at its range's low end
        if declared.low is None:
            raise ValueError(f"the control {declared.name!r} declares neither a default nor "
                             "a low end: read its value with its options")
        default = declared.low
    return _typed_as(settings.get(declared.name, default), default)


def kept(settings: Mapping, name: str, defaults: Mapping):
    """A value a figure keeps in the link with no slider of its own (its ``KEPT``: Basics'
    causal, Frequency's activation, smooth and causal), else the figure's default; a
    switch as true/false."""
    return _typed_as(settings.get(name, defaults[name]), defaults[name])


def _typed_as(value, default):
    """``value`` as a link spells it, typed as ``default`` is: a switch from true/false, a
    number from its text (a whole number even when written 300.0), an option as it is."""
    if isinstance(default, bool):
        return str(value).lower() == "true"
    return value if isinstance(default, str) else type(default)(float(value))


def label_key(settings: Mapping, name: str, labels: Mapping[str, str]) -> str:
    """The key of a select box a link spells by its label (Basics' kernel, a source); unset,
    the box's first option."""
    return key_of(labels, settings.get(name, next(iter(labels.values()))), name)


def key_of(labels: Mapping[str, str], label: str, what: str) -> str:
    """The key whose label is ``label``; ValueError naming ``what`` if none is."""
    found = next((key for key, shown in labels.items() if shown == label), None)
    if found is None:
        raise ValueError(f"the step's {what} {label!r} is none of {sorted(labels.values())}")
    return found


def slider_values(settings: Mapping, names: tuple[str, ...]) -> dict:
    """The figure sliders among ``names`` that the view sets, as numbers."""
    return {name: float(settings[name]) for name in names if name in settings}


def checkpoint_key(settings: Mapping) -> str:
    """The view's checkpoint (by its label, as a link holds it), else the first offered."""
    choices = checkpoints.checkpoint_choices()
    return key_of(choices, settings.get(fields.CHECKPOINT.name, next(iter(choices.values()))),
                  fields.CHECKPOINT.name)


def decomposition_source(settings: Mapping) -> decomposition.KernelSource:
    """Decomposition's kernel source: a synthetic shape, typed coefficients, an operator's
    channel, or a checkpoint's layer and channel."""
    name = label_key(settings, fields.SOURCE.name, kernels.SOURCE_LABELS)
    if name == "checkpoint":
        return decomposition.KernelSource("checkpoint", read(settings, fields.CHANNEL),
                                          checkpoint=checkpoint_key(settings),
                                          layer=read(settings, fields.LAYER))
    return decomposition.KernelSource(name, read(settings, fields.OPERATOR_CHANNEL),
                                      text=settings.get("coefficients", ""))


def compare_source(settings: Mapping) -> str:
    """Compare's shared kernel (its key)."""
    label = settings.get(fields.SHARED_SOURCE.name)
    return fields.SHARED_SOURCE.default if label is None else key_of(
        kernels.SOURCE_LABELS, label, fields.SHARED_SOURCE.name)


def fd_kernel_args(settings: Mapping, seed: int) -> tuple:
    """Frequency's FD kernel at the view's settings but its activation: (width, depth, n,
    seed, the MLP's input, causal), as ``lesson.fd_response`` and the answers take them."""
    return (read(settings, fd_kernel.WIDTH), read(settings, fields.DEPTH),
            read(settings, fields.FREQUENCY_LENGTH), seed,
            "cosine" if kept(settings, "smooth", fd_kernel.KEPT) else "omega",
            kept(settings, "causal", fd_kernel.KEPT))


def conversion_setting(settings: Mapping) -> tuple[int, int, str]:
    """Compress's band m, rank r and method of the view."""
    return (read(settings, fields.COMPRESS_BAND), read(settings, fields.COMPRESS_RANK),
            read(settings, fields.COMPRESS_METHOD))
