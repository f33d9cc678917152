"""Lesson measurements computed once and kept beside the shipped checkpoints, so that a
class never waits for them: TNN's Table 10 pair, the band ablation, the quick conversions,
lesson 6's recurrent fits.

A stored measurement is one small JSON file in ``STORE_DIR``
(checkpoints/lesson-measurements/KIND-NAMES-PARAMS.json)::

    {"format": FORMAT, "kind": "band_ablation",
     "checkpoints": [["digits-tno", "<SHA-256 of digits-tno.safetensors>"]],
     "params": {"band": 9}, "result": {...}}

It is keyed by its kind, the SHA-256 of every checkpoint file it was computed from (in
order) and its parameters; a recurrent fit by the SHA-256 of its kernel's coefficients and
of the code that fits it instead (``recurrent_fit.fit_key``; its "checkpoints" name those
two). ``stored_or_computed`` returns the stored result when all three match what the
caller has loaded (the digests are those of the bytes the models came from:
``common.checkpoints.Opened.digest``), and otherwise computes it: a changed or replaced
checkpoint or kernel, changed fitting code, another parameter, another format, or a file
that is not what its kind holds (``measurement_codecs`` checks every field; files over
``MAX_FILE_BYTES`` are not read) is never trusted, only logged. The store is read once
per process and never written while the app runs. Each stored result is decoded once per
process (``preload``: the server's warm-up) and shared, read-only, as the memo shares
computed views.

``python -m tnn_core.lab.common.measurement_build --build`` computes
``LESSON_MEASUREMENTS`` on the shipped checkpoints and writes their files (about two
minutes on two cores); ``--check`` says which are missing or stale.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tnn_core.lab.common.measurement_codecs import CODECS, StoredValueError
from tnn_core.lab.common.recurrent_fit_result import LADDER
from tnn_core.training.checkpoint import SHIPPED_DIR

__all__ = ["FORMAT", "STORE_DIR", "MAX_FILE_BYTES", "Measurement", "LESSON_MEASUREMENTS",
           "read_store", "stored_or_computed", "preload", "encode_file", "build"]

_LOG = logging.getLogger(__name__)
FORMAT = 1  # raise it when a kind's result or its computation changes: every file recomputes
STORE_DIR = SHIPPED_DIR / "lesson-measurements"
MAX_FILE_BYTES = 8 * 2**20  # a Table 10 pair of charlm's windows is about 1 MB
Result = TypeVar("Result")


@dataclass(frozen=True)
class Measurement:
    """One measurement a lesson shows: its kind (of ``measurement_codecs.CODECS``), the
    shipped checkpoints it reads, in order, and its parameters (JSON values); for a fit of
    one kernel, ``kernel``: where its coefficients come from, as a step's view gives them
    (``measurement_build.lesson_kernel``), its checkpoints none."""

    kind: str
    checkpoints: tuple[str, ...]
    params: tuple[tuple[str, Any], ...]
    kernel: tuple[tuple[str, Any], ...] = ()

    @property
    def file_name(self) -> str:
        words = [self.kind, *self.checkpoints,
                 *(v if isinstance(v, str) else f"{k}{v}" for k, v in self.kernel),
                 *(f"{k}{v}" for k, v in self.params if isinstance(v, (str, int, float)))]
        return "-".join(words) + ".json"

    @property
    def inputs(self) -> tuple[str, ...]:
        """What each SHA-256 of its key is of: the checkpoint files, or the kernel and the
        code that fits it (``recurrent_fit.fit_key``)."""
        if not self.kernel:
            return self.checkpoints
        return (", ".join(f"{k} {v}" for k, v in self.kernel),
                "the fit's code (recurrent_fit.FIT_CODE)")


def _lesson_fit(**kernel) -> Measurement:
    """The recurrent fits, s of ``LADDER``, of the kernel a lesson 6 step draws."""
    return Measurement("recurrent_fit", (), (("ladder", LADDER),), tuple(kernel.items()))


# What the lessons show (tnn_core/lab/lessons: the Inspect and Compress steps' figures and
# computed answers, lesson 6's fits; tests/test_stored_measurements.py and
# tests/test_stored_recurrent_fits.py check that each one is listed here)
LESSON_MEASUREMENTS = (
    Measurement("decay_pair", ("charlm-tno-decay099", "charlm-tno-nodecay"),
                (("names", ("charlm-tno-decay099", "charlm-tno-nodecay")),
                 ("factors", (1, 2, 4, 8, 16)))),
    Measurement("band_ablation", ("digits-tno",), (("band", 9),)),
    Measurement("quick_conversion", ("digits-tno",),
                (("band", 3), ("rank", 8), ("method", "fit"))),
    Measurement("quick_conversion", ("digits-tno",),
                (("band", 9), ("rank", 16), ("method", "fit"))),
    # lesson 6: step 2's exact kernel, step 3's learned channel, step 4's channel at each λ
    _lesson_fit(source="oscillating", channel=0, n=64, decay=0.9, causal=True, seed=0),
    _lesson_fit(source="checkpoint", checkpoint="charlm-tno", layer=0, channel=0, n=128),
    *(_lesson_fit(source="tno", channel=0, n=256, decay=decay, causal=True, seed=0)
      for decay in (0.9, 0.99, 0.999)),
)


def _key(kind: str, digests: tuple[str, ...], params: Mapping[str, Any]) -> str:
    """Canonical text of what a stored result must match (tuples as JSON lists)."""
    return json.dumps([kind, list(digests), dict(params)], sort_keys=True)


def _read_file(path: Path) -> tuple[str, str, Mapping] | None:
    """(key, kind, encoded result) of one store file; None, logged, for one not valid."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise StoredValueError(f"the file is over {MAX_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
        stored = json.loads(text, parse_constant=_no_constant)
        if not isinstance(stored, dict) or stored.get("format") != FORMAT:
            raise StoredValueError(f"'format' must be {FORMAT}")
        kind, pairs, params = stored.get("kind"), stored.get("checkpoints"), stored.get("params")
        if kind not in CODECS or not isinstance(params, dict) or not isinstance(pairs, list) \
                or not all(isinstance(p, list) and len(p) == 2 and all(
                    isinstance(s, str) for s in p) for p in pairs):
            raise StoredValueError("'kind', 'checkpoints' [[name, sha256], ...] or 'params' "
                                   "is not what a store file holds")
        return _key(kind, tuple(sha for _, sha in pairs), params), kind, stored.get("result")
    except (OSError, ValueError, RecursionError) as err:  # JSON errors are ValueErrors
        _LOG.warning("stored measurement %s is not used: %s", path.name, err)
        return None


def _no_constant(name: str):
    raise StoredValueError(f"{name} is not a finite number")


def read_store(folder: Path) -> dict[str, tuple[str, Mapping]]:
    """Every valid store file of ``folder``: key -> (kind, encoded result); the files it
    cannot read are logged."""
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        read = _read_file(path)
        if read is not None:
            found[read[0]] = read[1:]
    return found


_LOCK = threading.Lock()
_READ: dict[Path, dict[str, tuple[str, Mapping]]] = {}  # per folder, read once
_DECODED: dict[tuple[Path, str], Any] = {}  # (folder, key) -> result, decoded once


def _decoded(folder: Path, key: str) -> Any | None:
    """The stored result of ``key`` in ``folder``, decoded once per process; None when
    there is none or it does not decode (logged)."""
    with _LOCK:
        if folder not in _READ:
            _READ[folder] = read_store(folder)
        if (folder, key) in _DECODED:
            return _DECODED[folder, key]
        kind, encoded = _READ[folder].get(key, (None, None))
    if kind is None:
        return None
    try:
        result = CODECS[kind][1](encoded)
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        _LOG.warning("the stored %s %s is not used: %s", kind, key, err)
        result = None
    with _LOCK:
        _DECODED[folder, key] = result
    return result


def stored_or_computed(kind: str, digests: tuple[str, ...], params: Mapping[str, Any],
                       compute: Callable[[], Result], folder: Path = STORE_DIR) -> Result:
    """The stored result of ``kind`` for checkpoints with SHA-256 ``digests`` (in order) at
    ``params`` when ``folder`` holds a valid one; else ``compute()``'s. Never trusts a
    stored value that does not decode (logged, then computed)."""
    found = _decoded(folder, _key(kind, digests, params))
    return compute() if found is None else found


def preload(folder: Path = STORE_DIR) -> Iterator[str]:
    """Decode every stored result of ``folder`` (its Scores' intervals, and the paired
    changes its sentence states), one per ``next``, for the server's warm-up: the first
    visitor then only looks it up. Yields each file's kind."""
    with _LOCK:
        if folder not in _READ:
            _READ[folder] = read_store(folder)
        entries = list(_READ[folder].items())
    for key, (kind, _) in entries:
        result = _decoded(folder, key)
        if result is not None and hasattr(result, "sentence"):
            result.sentence()
        yield kind


def encode_file(measurement: Measurement, digests: tuple[str, ...], result: Any) -> str:
    """The store file's text for ``result`` of ``measurement`` on inputs ``digests``."""
    return json.dumps({
        "format": FORMAT, "kind": measurement.kind,
        "checkpoints": [list(pair) for pair in zip(measurement.inputs, digests,
                                                   strict=True)],
        "params": dict(measurement.params), "result": CODECS[measurement.kind][0](result)},
        allow_nan=False, separators=(",", ":")) + "\n"


def build(measurement: Measurement, compute_on: Callable[[Measurement], tuple[tuple[str, ...],
                                                                              Any]],
          folder: Path = STORE_DIR) -> Path:
    """Compute ``measurement`` (``compute_on`` -> (digests, result)) and write its file."""
    digests, result = compute_on(measurement)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / measurement.file_name
    path.write_text(encode_file(measurement, digests, result), encoding="utf-8")
    with _LOCK:
        _READ.pop(folder, None)
        for stale in [k for k in _DECODED if k[0] == folder]:
            del _DECODED[stale]
    return path
