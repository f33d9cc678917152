"""The one schema of a checkpoint's ``history``: what the loader accepts, and all a reader
may read.

    history = validated_history(raw)   # a new, normalised dict; ValueError names the field

Writers: the training loop (``loop._Record``: ``now``, ``evaluate``), its resume, and
``compress.pipeline.save_converted`` (the source's history plus a fine-tuning evaluation and
``compression``). Readers: the Inspect page's lab modules (a checkpoint's summary, its
training kernels), the loop's resume, the compress pipeline. Every key is optional:

    command, message       text: a string of at most MAX_TEXT characters
    metric_name, device, status, dtype, torch, version, started
                           labels: a string of at most MAX_LABEL characters
    steps                  an integer in [0, MAX_STEP]; world_size in [1, MAX_STEP]
    wall_s, tokens_per_s   measurements: a number >= 0
    train_loss             [steps] finite numbers, one per update (index = step - 1)
    resumed_at             integers in [0, MAX_STEP], the steps a run was resumed from
    evals                  at most MAX_EVALS objects: ``step`` an integer in [0, MAX_STEP],
                           at most MAX_EVAL_KEYS more keys (labels), each a number >= 0 or
                           null (``metric``, ``loss``, ``accuracy``, ``lr`` ...); an
                           ``accuracy``, and ``metric`` when metric_name is "accuracy", at
                           most 1; ``ci95`` the metric's interval [low, high] with
                           low <= high, or null (``training.scores``)
    kernel_snapshots       ``KernelSnapshots.from_record``
    train_config           an object (``TrainConfig.to_dict()``; the loader migrates it)
    compression            an object (older converted files' record); no page reads inside it
    lineage                where a converted or fine-tuned checkpoint came from (written by
                           ``compress.pipeline.save_converted``): an object with, each
                           optional, ``source`` {name: label, sha256: 64 hex digits},
                           ``plan`` (an object), ``imported`` (an object: the format,
                           module and every setting of a model imported by
                           ``tnn_core.convert``), ``finetune`` {steps: integer, lr: number,
                           parameters: label}, ``metrics`` {source, converted, finetuned:
                           each {metric: number, ci95: [low, high], sequences: integer}} and
                           ``commands`` (at most MAX_COMMANDS texts, oldest first)

Normalised, never refused:

* null anywhere at the top level means "not recorded": the key is left out, as if absent;
* a measurement that is not finite (inf, NaN: an evaluation of a diverged model, an edited
  file) is not recorded: left out at the top level, null in an evaluation. So a reader
  shows a finite number or says it is not available;
* a kernel snapshot record with no steps is left out (``KernelSnapshots.add`` keeps no
  kernels that are not finite, so a run can end with none);
* every string, keys included and inside ``train_config`` and ``compression``, has its
  lone surrogates replaced by U+FFFD: they cannot be encoded as UTF-8 (a page would fail
  to send them), and a command line holds one for each byte that is not UTF-8
  (``os.fsdecode``'s surrogateescape);
* keys outside the schema are dropped, so no reader can read an unchecked one.

Anything else of the wrong type or out of range raises ValueError of one sentence naming
the field, the value and what is allowed.
"""

from __future__ import annotations

import math
import re

from tnn_core.checks import is_integer, is_number, short_repr
from tnn_core.training.snapshots import MAX_STEP, KernelSnapshots

__all__ = ["MAX_TEXT", "MAX_LABEL", "MAX_EVALS", "MAX_EVAL_KEYS", "MAX_COMMANDS", "TEXTS",
           "LABELS", "validated_history", "final_metrics"]

MAX_TEXT = 100_000  # characters of command or message (the header's 4 MB bounds the rest)
MAX_LABEL = 200  # characters of a label, and of an evaluation's key
MAX_EVALS = 100_000  # evaluation entries
MAX_EVAL_KEYS = 64  # metrics in one evaluation entry (ours hold 12)
TEXTS = ("command", "message")
LABELS = ("metric_name", "device", "status", "dtype", "torch", "version", "started")
MEASUREMENTS = ("wall_s", "tokens_per_s")
OBJECTS = ("train_config", "compression")
_SCHEMA = (*TEXTS, *LABELS, *MEASUREMENTS, *OBJECTS, "steps", "world_size", "train_loss",
           "resumed_at", "evals", "kernel_snapshots", "lineage")
MAX_COMMANDS = 16  # commands in a lineage: the source's, then each conversion's
_SHA256 = re.compile(r"[0-9a-f]{64}")
_AT_MOST_ONE = ("accuracy",)  # evaluation keys that are fractions
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str decoded from JSON, only lone ones


def _finite(value) -> bool:
    """Whether a number is finite (an integer too large for a float is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _without_surrogates(value):
    """``value`` (parsed JSON) with lone surrogates replaced by U+FFFD in every string."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _string(name: str, value, longest: int) -> str:
    if not isinstance(value, str) or len(value) > longest:
        raise ValueError(f"{name} must be a string of at most {longest:,} characters; got "
                         f"{short_repr(value)}")
    return value


def _integer(name: str, value, low: int) -> int:
    if not (is_integer(value) and low <= value <= MAX_STEP):
        raise ValueError(f"{name} must be an integer in [{low}, {MAX_STEP:,}]; got "
                         f"{short_repr(value)}")
    return int(value)


def _measurement(name: str, value, highest: float = math.inf) -> float | int | None:
    """A number in [0, highest], None when not finite (not recorded)."""
    if not is_number(value):
        raise ValueError(f"{name} must be a number or null; got {short_repr(value)}")
    if not _finite(value):
        return None
    if not 0 <= value <= highest:
        raise ValueError(f"{name} must be in [0, {highest:g}]; got {short_repr(value)}")
    return value


def _list(name: str, value, longest: int) -> list:
    if not (isinstance(value, list) and len(value) <= longest):
        raise ValueError(f"{name} must be a list of at most {longest:,} entries; got "
                         f"{short_repr(value)}")
    return value


def _eval(i: int, entry, metric_name: str | None) -> dict:
    where = f"evals[{i}]"
    if not (isinstance(entry, dict) and is_integer(entry.get("step"))):
        raise ValueError(f"{where} must be an object with an integer step; got "
                         f"{short_repr(entry)}")
    if len(entry) > 1 + MAX_EVAL_KEYS:
        raise ValueError(f"{where} must hold at most {MAX_EVAL_KEYS} metrics besides step; got "
                         f"{len(entry) - 1}")
    out = {"step": _integer(f"{where}.step", entry["step"], 0)}
    for key, value in entry.items():
        if key == "step":
            continue
        if len(key) > MAX_LABEL:
            raise ValueError(f"{where} has a key of {len(key):,} characters; the limit is "
                             f"{MAX_LABEL}")
        fraction = key in _AT_MOST_ONE or (key in ("metric", "ci95") and
                                           metric_name == "accuracy")
        highest = 1.0 if fraction else math.inf
        if value is None:
            out[key] = None
        elif key == "ci95":
            out[key] = _interval(f"{where}.ci95", value, highest)
        else:
            out[key] = _measurement(f"{where}.{key}", value, highest)
    return out


def _interval(name: str, value, highest: float) -> list[float] | None:
    """[low, high] of two numbers in [0, highest]; None when either is not finite."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError(f"{name} must be a list [low, high] or null; got {short_repr(value)}")
    low, high = (_measurement(name, end, highest) for end in value)
    if low is None or high is None:
        return None
    if low > high:
        raise ValueError(f"{name} must have low <= high; got {short_repr(value)}")
    return [low, high]


def _lineage(raw) -> dict:
    """The ``lineage`` object of the module docstring, typed; unknown keys dropped."""
    if not isinstance(raw, dict):
        raise ValueError(f"lineage must be an object; got {short_repr(raw)}")
    out: dict = {}
    if "source" in raw:
        source = _object("lineage.source", raw["source"])
        out["source"] = {"name": _string("lineage.source.name", source.get("name"), MAX_LABEL),
                         "sha256": _string("lineage.source.sha256", source.get("sha256"), 64)}
        if not _SHA256.fullmatch(out["source"]["sha256"]):
            raise ValueError(f"lineage.source.sha256 must be 64 lower-case hex digits; got "
                             f"{short_repr(out['source']['sha256'])}")
    if "plan" in raw:
        out["plan"] = _object("lineage.plan", raw["plan"])
    if "imported" in raw:  # tnn_core.convert: the source's format and every setting used
        out["imported"] = _object("lineage.imported", raw["imported"])
    if "finetune" in raw:
        tune = _object("lineage.finetune", raw["finetune"])
        out["finetune"] = {"steps": _integer("lineage.finetune.steps", tune.get("steps"), 0),
                           "lr": _measurement("lineage.finetune.lr", tune.get("lr"), 1.0),
                           "parameters": _string("lineage.finetune.parameters",
                                                 tune.get("parameters"), MAX_LABEL)}
    if "metrics" in raw:
        metrics = _object("lineage.metrics", raw["metrics"])
        out["metrics"] = {}
        for stage in ("source", "converted", "finetuned"):
            if metrics.get(stage) is None:
                continue
            entry, where = _object(f"lineage.metrics.{stage}", metrics[stage]), \
                f"lineage.metrics.{stage}"
            out["metrics"][stage] = {
                "metric": _measurement(f"{where}.metric", entry.get("metric")),
                "ci95": _interval(f"{where}.ci95", entry.get("ci95"), math.inf),
                "sequences": _integer(f"{where}.sequences", entry.get("sequences"), 1)}
    if "commands" in raw:
        out["commands"] = [_string(f"lineage.commands[{i}]", v, MAX_TEXT) for i, v in
                           enumerate(_list("lineage.commands", raw["commands"], MAX_COMMANDS))]
    return out


def _object(name: str, value) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object; got {short_repr(value)}")
    return value


def validated_history(raw) -> dict:
    """``raw`` (a parsed history) checked against the module docstring's schema and
    normalised: a new dict holding schema keys only. ValueError of one sentence naming
    the field, the value and what is allowed."""
    if not isinstance(raw, dict):
        raise ValueError(f"must be a JSON object; got {short_repr(raw)}")
    raw = _without_surrogates({k: v for k, v in raw.items() if k in _SCHEMA and v is not None})
    out: dict = {}
    for key in TEXTS:
        if key in raw:
            out[key] = _string(key, raw[key], MAX_TEXT)
    for key in LABELS:
        if key in raw:
            out[key] = _string(key, raw[key], MAX_LABEL)
    for key in MEASUREMENTS:
        if key in raw and (value := _measurement(key, raw[key])) is not None:
            out[key] = value
    for key in OBJECTS:
        if key in raw:
            if not isinstance(raw[key], dict):
                raise ValueError(f"{key} must be an object; got {short_repr(raw[key])}")
            out[key] = raw[key]
    if "steps" in raw:
        out["steps"] = _integer("steps", raw["steps"], 0)
    if "world_size" in raw:
        out["world_size"] = _integer("world_size", raw["world_size"], 1)
    if "train_loss" in raw:
        losses = _list("train_loss", raw["train_loss"], MAX_STEP)
        bad = next((i for i, v in enumerate(losses) if not (is_number(v) and _finite(v))),
                   None)
        if bad is not None:
            raise ValueError(f"train_loss[{bad}] must be a finite number (a run stops before "
                             f"it records a loss that is not); got {short_repr(losses[bad])}")
        out["train_loss"] = losses
    if "resumed_at" in raw:
        out["resumed_at"] = [_integer(f"resumed_at[{i}]", v, 0) for i, v in
                             enumerate(_list("resumed_at", raw["resumed_at"], MAX_EVALS))]
    if "lineage" in raw:
        out["lineage"] = _lineage(raw["lineage"])
    if "evals" in raw:
        out["evals"] = [_eval(i, entry, out.get("metric_name")) for i, entry in
                        enumerate(_list("evals", raw["evals"], MAX_EVALS))]
    if "kernel_snapshots" in raw:
        record = raw["kernel_snapshots"]
        if KernelSnapshots.from_record(record).steps:
            out["kernel_snapshots"] = record
    return out


def final_metrics(history: dict) -> dict:
    """The last evaluation of a history ({} when it has none)."""
    evals = history.get("evals") or [{}]
    return evals[-1]
