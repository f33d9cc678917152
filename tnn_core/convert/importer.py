"""A checkpoint of the authors' code as the lab's kernels-only model, exactly.

``import_foreign(foreign, flags)`` finds the mixers (``mixers.find_mixers``), resolves the
settings their tensors do not hold (``settings.resolve``: saved args, flags, the README's
defaults), maps each onto the lab's operator (``mixers.lab_mixer``) and loads the tensors
into a ``models.MixerStack``: one operator per layer, D channels each. The embedding, gates
and head of the source are not the lab's (a BPE vocabulary, another norm), so they are left
out and the checkpoint says so (``training.tasks.kernels_only_info``).

Its lineage records the source's name, format and SHA-256 and every setting used with
where it came from; ``save_imported`` writes it as a Toeplitz Lab checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tnn_core.convert.mixers import NotImportable, find_mixers, lab_mixer
from tnn_core.convert.reader import ForeignFile
from tnn_core.convert.settings import ImportSettings, resolve, settings_record
from tnn_core.models import ModelConfig, build_model
from tnn_core.training import checkpoint
from tnn_core.training.tasks import kernels_only_info

__all__ = ["Imported", "import_foreign", "save_imported", "NotImportable"]

_FORMATS = {"fairseq checkpoint (args)": "ski-tnn (fairseq)",
            "fairseq checkpoint (cfg)": "ski-tnn (fairseq)"}


@dataclass(frozen=True)
class Imported:
    """The lab's model of a foreign checkpoint, and what its file records."""

    model: nn.Module  # models.MixerStack, evaluation mode
    settings: ImportSettings
    origin: dict  # setting -> "saved args", "flag" or "default"
    task_info: dict  # training.tasks.kernels_only_info
    history: dict  # {"lineage": ...}: the source and every setting used
    modules: tuple[str, ...]  # the authors' module of each layer ("Tno", "TnoFD")


def import_foreign(foreign: ForeignFile, flags: dict, name: str,
                   command: str = "") -> Imported:
    """The kernels-only model of ``foreign`` (read by ``reader.read_foreign``); ``name``
    is the source's file name, ``command`` the command line that asked (for the lineage).
    NotImportable or ValueError naming what cannot be imported."""
    mixers = find_mixers(foreign.tensors)  # a module the lab refuses is named first
    saved = foreign.settings if isinstance(foreign.settings, dict) else {}
    settings, origin = resolve(saved, flags)
    mapped = [lab_mixer(mixer, settings, origin) for mixer in mixers]
    widths = {channels for _, channels, _ in mapped}
    if len(widths) != 1:
        raise NotImportable(f"its mixers have different channel counts {sorted(widths)}; the "
                            f"lab's kernels-only model holds one width")
    configs = tuple(config for config, _, _ in mapped)
    model_config = ModelConfig(task="kernels", dim=widths.pop(), layers=len(mapped),
                               expand_ratio=1, operator=configs[0],
                               layer_operators=() if len(set(configs)) == 1 else configs)
    model = build_model(model_config)
    dtype = torch.float64 if any(t.dtype == torch.float64 for _, _, s in mapped
                                 for t in s.values()) else torch.float32
    state = {f"layers.{i}.{k}": v.to(dtype) for i, (_, _, s) in enumerate(mapped)
             for k, v in s.items()}
    for key, wanted in model.state_dict().items():
        got = state.get(key)
        if got is None or got.shape != wanted.shape:
            layer, rest = key.split(".", 2)[1:]
            raise NotImportable(f"{mixers[int(layer)].prefix}: its tensor for the lab's {rest} "
                                f"has shape {None if got is None else tuple(got.shape)}; the "
                                f"mixer's other tensors need {tuple(wanted.shape)}")
    model.to(dtype).load_state_dict(state, strict=True)
    model.eval()
    module = "TnoFD" if settings.mixer == "tno_fd" else "Tno"
    fmt = _FORMATS.get(foreign.container, "tnn-pytorch or ski-tnn state dict")
    source = {"name": name[-200:], "format": fmt, "sha256": foreign.sha256}
    lineage = {"source": {"name": source["name"], "sha256": foreign.sha256},
               "imported": {"format": fmt, "container": foreign.container, "module": module,
                            "prefixes": [m.prefix for m in mixers][:64],
                            "settings": settings_record(settings, origin)},
               "commands": [command] if command else []}
    return Imported(model, settings, origin, kernels_only_info(settings.length, source),
                    {"lineage": lineage}, (module,) * len(mixers))


def save_imported(imported: Imported, path: str | os.PathLike) -> Path:
    """Write ``imported`` as a Toeplitz Lab checkpoint (``training.checkpoint.save``)."""
    return checkpoint.save(path, imported.model, imported.task_info, imported.history)
