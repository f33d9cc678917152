"""A model from the authors' code on the Inspect page (issue 36): an uploaded file imported
as the lab's kernels-only checkpoint (``import_upload``), what such a checkpoint says about
where it came from (``imported_about``), and every layer's kernels as a NumPy download for
any checkpoint whose channels each apply one Toeplitz matrix (``kernels_npz``).

The import is ``tnn_core.convert``'s: ``reader.read_foreign`` reads the bytes without
running anything in them, ``importer.import_foreign`` maps the authors' ``Tno``/``TnoFD``
onto the lab's operators exactly, or refuses in one sentence (a ValueError: SKITno, a
hostile file, a setting that contradicts the file's saved arguments). The settings a
state dict does not hold come from the file's saved arguments, else from the page (the
``flags``), else from the authors' README (``convert.settings``).

The download is ``analysis.kernel_arrays``: ``layer0``, ``layer1``, … each [D, 2n − 1]
holding t_k for k = −(n − 1) … n − 1 (zeros at a causal model's negative lags).

Letters: L layers, D channels per layer, n length.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePath

import torch
from torch import nn

from tnn_core.analysis.kernel_arrays import kernel_arrays, npz_bytes
from tnn_core.convert.importer import import_foreign
from tnn_core.convert.reader import read_foreign
from tnn_core.convert.settings import AUTHOR_ACTIVATIONS, DECAYS, MIXERS, ImportSettings
from tnn_core.operators import CHANNEL_KINDS
from tnn_core.training import checkpoint
from tnn_core.training.checkpoint import CheckpointInfo
from tnn_core.training.tasks import MAX_KERNEL_LENGTH, is_kernels_only, kernels_only_reason

__all__ = ["FOREIGN_SUFFIXES", "IMPORT_CHOICES", "IMPORT_NUMBERS", "README_SETTINGS",
           "MAX_DOWNLOAD_NUMBERS", "MAX_DOWNLOAD_N", "ImportedUpload", "ImportSetting",
           "ImportedAbout", "import_upload", "imported_about", "is_kernels_only",
           "kernels_only_reason", "kernels_refusal", "kernels_npz", "kernels_layout"]

FOREIGN_SUFFIXES = ("pt", "bin", "pth", "safetensors")  # what the authors' code writes
# the settings the page offers, each None ("from the file, else the README") or one of these
IMPORT_CHOICES = {"causal": (True, False), "mixer": MIXERS, "par_type": (1, 2, 3),
                  "decay": DECAYS, "rpe_act": tuple(AUTHOR_ACTIVATIONS),
                  "act_type": tuple(AUTHOR_ACTIVATIONS), "residual": (True, False)}
IMPORT_NUMBERS = {"gamma": (0.0, 1.0), "heads": (1, 4096), "length": (1, MAX_KERNEL_LENGTH)}
README_SETTINGS = ImportSettings()  # the authors' README defaults (gamma 0.9 below n = 100)
MAX_DOWNLOAD_NUMBERS = 50_000_000  # L·D·(2n − 1) numbers a download holds: 200 MB float32
MAX_DOWNLOAD_N = MAX_KERNEL_LENGTH
_NAMES = {"gamma": "gamma (λ of a multi-decay)", "length": "length (its kernels open at)"}
_ORIGINS = {"saved args": "the file's saved training arguments", "flag": "chosen at import",
            "default": "the authors' README default"}
_SHOWN = 80  # characters of a recorded value the page shows
_MARKDOWN = set("\\`*_{}[]()<>#+-.!|~$")  # escaped in a file's name on the page


@dataclass(frozen=True)
class ImportedUpload:
    """An uploaded file from the authors' code, imported: the lab checkpoint's bytes."""

    name: str  # the name it joins the session's uploads under
    data: bytes  # a kernels-only Toeplitz Lab checkpoint (``training.checkpoint``)
    layers: int
    channels: int  # per layer
    module: str  # the authors' module of its mixers ("Tno", "TnoFD")

    def sentence(self) -> str:
        layers = f"{self.layers} layer{'s' if self.layers != 1 else ''}"
        return (f"Imported {layers} of {self.channels} channels, each the authors' "
                f"{self.module} as their code computes it.")


def import_upload(name: str, data: bytes, flags: dict) -> ImportedUpload:
    """The kernels-only checkpoint of the uploaded file ``name`` (its ``data``); ``flags``
    maps a setting of ``IMPORT_CHOICES``/``IMPORT_NUMBERS`` to its value, None for "from
    the file, else the README". ValueError (CheckpointError, NotImportable): one sentence."""
    chosen = {field: value for field, value in flags.items() if value is not None}
    foreign = read_foreign(data, name)
    imported = import_foreign(foreign, chosen, name, _command(name, chosen))
    model = imported.model
    return ImportedUpload(f"{name}, imported",
                          checkpoint.to_bytes(model, imported.task_info, imported.history),
                          model.config.layers, model.config.dim, imported.modules[0])


def _command(name: str, flags: dict) -> str:
    """The ``python -m tnn_core.convert`` command that imports the same file the same way."""
    words = ["python", "-m", "tnn_core.convert", name, "--out",
             f"{PurePath(name).stem or 'imported'}.safetensors"]
    for field, value in flags.items():
        option = f"--{field.replace('_', '-')}"
        words += ([option if value else f"--no-{option[2:]}"] if isinstance(value, bool)
                  else [option, str(value)])
    return shlex.join(words)


@dataclass(frozen=True)
class ImportSetting:
    """One setting an import used, as its file records it."""

    name: str
    value: str
    origin: str  # in words: its saved arguments, chosen at import, the README's default


@dataclass(frozen=True)
class ImportedAbout:
    """Where a kernels-only checkpoint came from, as its task record and lineage say."""

    name: str  # the source file's name
    format: str  # "tnn-pytorch or ski-tnn state dict", "ski-tnn (fairseq)", …
    sha256: str  # the source's SHA-256, 64 hex digits ("" when not recorded)
    module: str | None  # the authors' module of its mixers; None when not recorded
    settings: tuple[ImportSetting, ...]  # every setting used; () when not recorded
    commands: tuple[str, ...]  # the commands that made it, oldest first
    length: int  # the length its kernels open at (the source's training length)

    @property
    def sha_prefix(self) -> str:
        return self.sha256[:12] or "not recorded"

    def markdown(self) -> str:
        """Its file, format, module, SHA-256 prefix and opening length, on three lines (the
        names as the file records them, markdown escaped)."""
        module = f" · the authors' {_escaped(self.module)}" if self.module else ""
        return (f"**{_escaped(self.name)}**  \n{_escaped(self.format)}{module}  \nSHA-256 "
                f"{_escaped(self.sha_prefix)}… · its kernels open at n = {self.length:,}")


def _escaped(text: str) -> str:
    """``text`` shown as itself in markdown: every punctuation mark backslash-escaped."""
    return "".join(f"\\{c}" if c in _MARKDOWN else c for c in text)


def imported_about(info: CheckpointInfo) -> ImportedAbout | None:
    """What a kernels-only checkpoint records about its source; None for one with a task.
    Read from the validated task record and lineage; a field it does not hold is shown as
    not recorded, never guessed."""
    if not is_kernels_only(info.task):
        return None
    source = info.task.get("source") or {}
    lineage = (info.history or {}).get("lineage") or {}
    record = lineage.get("imported") if isinstance(lineage.get("imported"), dict) else {}
    settings = record.get("settings") if isinstance(record.get("settings"), dict) else {}
    rows = tuple(ImportSetting(_NAMES.get(name, str(name)[:_SHOWN]),
                               str(entry.get("value"))[:_SHOWN],
                               _ORIGINS.get(entry.get("from"), str(entry.get("from"))[:_SHOWN]))
                 for name, entry in settings.items() if isinstance(entry, dict))
    module = record.get("module")
    return ImportedAbout(
        name=source.get("name", "not recorded"), format=source.get("format", "not recorded"),
        sha256=source.get("sha256", ""), module=str(module)[:_SHOWN] if module else None,
        settings=rows, commands=tuple(lineage.get("commands", ())),
        length=int(info.task["settings"]["seq_len"]))


def kernels_refusal(model: nn.Module, n: int) -> str | None:
    """Why ``model``'s kernels at length n cannot be downloaded; None when they can."""
    config = model.config
    for i in range(config.layers):
        kind = config.layer_operator(i).kind
        if kind not in CHANNEL_KINDS:
            return (f"layer {i} is a {kind} mixer, whose channels share one Toeplitz part per "
                    f"head, so it has no kernel per channel to export")
    numbers = sum(op.dim for op in model.operators()) * (2 * n - 1)
    if numbers > MAX_DOWNLOAD_NUMBERS:
        return (f"the kernels at n = {n:,} are {numbers:,} numbers; a download holds at most "
                f"{MAX_DOWNLOAD_NUMBERS:,}: choose a smaller n")
    return None


def kernels_npz(model: nn.Module, n: int) -> bytes:
    """Every layer's kernels at length n as one ``.npz`` (``kernel_arrays``); ValueError
    with ``kernels_refusal``'s sentence when they cannot be downloaded."""
    refusal = kernels_refusal(model, n)
    if refusal is not None:
        raise ValueError(refusal)
    return npz_bytes(kernel_arrays(model.operators(), n))


def kernels_layout(model: nn.Module) -> str:
    """What the download holds, in a sentence or three (its arrays, their columns, zeros)."""
    config = model.config
    dtype = "float64" if next(model.parameters()).dtype == torch.float64 else "float32"
    last = config.layers - 1
    names = {0: "`layer0`", 1: "`layer0` and `layer1`"}.get(last, f"`layer0` … `layer{last}`")
    text = (f"{names}, one array per layer, each [channels, 2n − 1] {dtype}: column j holds "
            f"t_k at lag k = j − (n − 1), so k runs −(n − 1) … n − 1 and column n − 1 is lag 0 "
            f"(`numpy.load(file)['layer0']`).")
    if config.operator.causal:
        text += " This model is causal: its negative lags, columns 0 … n − 2, are zeros."
    if any(config.layer_operator(i).kind == "ski" and not config.layer_operator(i).causal
           for i in range(config.layers)):
        text += (" A bidirectional SKI layer applies band + W A Wᵀ, which is not Toeplitz: "
                 "its array is the Toeplitz kernel it interpolates.")
    return text
