"""Lesson measurements as plain JSON values and back, exactly (``stored_measurements``).

Every kind of measurement a lesson shows has an ``encode`` (result -> JSON-able dict) and a
``decode`` (dict -> result) in ``CODECS``. A decoded result is the computed one: floats
travel as Python's shortest round-trip repr, each array keeps its dtype, and ``Scores``
recompute their interval from the same per-sequence sums; a recurrent fit's complex poles
and residues travel as their real and imaginary parts. ``decode`` trusts nothing in its
input: every field is checked for its type, finiteness, length and bounds, and anything
else raises ``StoredValueError`` naming the field (the store then recomputes).

Letters: N sequences, L layers, F length factors; n a kernel's length, q the fits of a
ladder, s modes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tnn_core.lab.common.band_ablation import BandAblation
from tnn_core.lab.common.conversion import QuickConversion
from tnn_core.lab.common.decay_pair import DecayPair
from tnn_core.lab.common.recurrent_fit_result import RecurrentFit
from tnn_core.training.scores import Scores

__all__ = ["StoredValueError", "CODECS", "MAX_SEQUENCES", "MAX_ITEMS"]

MAX_SEQUENCES = 1_000_000  # N a stored Scores may hold
MAX_ITEMS = 64  # layers, length factors, models: any other list a result holds
ARRAY_DTYPES = ("float64", "float32", "int64", "int32", "bool")  # what Scores arrays are


class StoredValueError(ValueError):
    """A stored value is not what its kind holds: the store recomputes it."""


def _field(value: Mapping, name: str) -> Any:
    if not isinstance(value, Mapping):
        raise StoredValueError(f"expected an object holding {name!r}, got "
                               f"{type(value).__name__}")
    if name not in value:
        raise StoredValueError(f"{name!r} is missing")
    return value[name]


def _str(value: Mapping, name: str) -> str:
    found = _field(value, name)
    if not isinstance(found, str) or len(found) > 1000:
        raise StoredValueError(f"{name!r} must be a string of at most 1000 characters")
    return found


def _bool(value: Mapping, name: str) -> bool:
    found = _field(value, name)
    if not isinstance(found, bool):
        raise StoredValueError(f"{name!r} must be true or false, got {found!r:.40}")
    return found


def _float(value: Mapping, name: str) -> float:
    found = _field(value, name)
    if isinstance(found, bool) or not isinstance(found, (int, float)) \
            or not math.isfinite(found):
        raise StoredValueError(f"{name!r} must be a finite number, got {found!r:.40}")
    return float(found)


def _int(value: Mapping, name: str, low: int = 0, high: int = 2**31) -> int:
    found = _field(value, name)
    if isinstance(found, bool) or not isinstance(found, int) or not low <= found <= high:
        raise StoredValueError(f"{name!r} must be a whole number in [{low}, {high}], got "
                               f"{found!r:.40}")
    return found


def _list(value: Mapping, name: str, length: int | None = None,
          limit: int = MAX_ITEMS) -> list:
    found = _field(value, name)
    if not isinstance(found, list) or len(found) > limit or (
            length is not None and len(found) != length):
        wanted = f"{length}" if length is not None else f"at most {limit}"
        raise StoredValueError(f"{name!r} must be a list of {wanted} items")
    return found


def _array(value: Mapping, name: str) -> np.ndarray:
    """{"dtype": one of ARRAY_DTYPES, "values": [...]} -> a 1-D array of that dtype, finite."""
    found = _field(value, name)
    dtype = _str(found, "dtype")
    if dtype not in ARRAY_DTYPES:
        raise StoredValueError(f"{name!r}'s dtype must be one of {ARRAY_DTYPES}, got "
                               f"{dtype!r:.40}")
    items = _list(found, "values", limit=MAX_SEQUENCES)
    kind = bool if dtype == "bool" else float if dtype.startswith("float") else int
    if not all(type(v) is kind or (kind is float and type(v) is int) for v in items):
        raise StoredValueError(f"{name!r} must hold {kind.__name__} values only")
    array = np.array(items, dtype=dtype)  # OverflowError for an int out of range
    if kind is float and not np.isfinite(array).all():
        raise StoredValueError(f"{name!r} must hold finite values only")
    return array


def _encode_array(array: np.ndarray) -> dict:
    return {"dtype": str(array.dtype), "values": array.tolist()}


def encode_scores(scores: Scores) -> dict:
    return {"metric_name": scores.metric_name, "higher_is_better": scores.higher_is_better,
            "loss": _encode_array(scores.loss), "correct": _encode_array(scores.correct),
            "targets": _encode_array(scores.targets), "contiguous": scores.contiguous}


def decode_scores(value: Mapping) -> Scores:
    """Scores (their interval recomputed from the same sums: the same interval)."""
    return Scores(_str(value, "metric_name"), _bool(value, "higher_is_better"),
                  _array(value, "loss"), _array(value, "correct"), _array(value, "targets"),
                  _bool(value, "contiguous"))


def _scores_list(value: Mapping, name: str, length: int | None = None) -> tuple[Scores, ...]:
    return tuple(decode_scores(item) for item in _list(value, name, length))


def encode_band_ablation(result: BandAblation) -> dict:
    return {"band": result.band, "length": result.length, "chance": result.chance,
            "full": encode_scores(result.full), "restricted": encode_scores(result.restricted),
            "per_layer": [encode_scores(s) for s in result.per_layer]}


def decode_band_ablation(value: Mapping) -> BandAblation:
    return BandAblation(band=_str(value, "band"), length=_int(value, "length", 1),
                        chance=_float(value, "chance"),
                        full=decode_scores(_field(value, "full")),
                        restricted=decode_scores(_field(value, "restricted")),
                        per_layer=_scores_list(value, "per_layer"))


def encode_quick_conversion(result: QuickConversion) -> dict:
    return {"metric_name": result.metric_name, "chance": result.chance,
            "source": encode_scores(result.source),
            "converted": encode_scores(result.converted),
            "alone": [encode_scores(s) for s in result.alone], "errors": list(result.errors)}


def decode_quick_conversion(value: Mapping) -> QuickConversion:
    alone = _scores_list(value, "alone")
    errors = tuple(_float({"error": e}, "error") for e in _list(value, "errors", len(alone)))
    return QuickConversion(metric_name=_str(value, "metric_name"),
                           chance=_float(value, "chance"),
                           source=decode_scores(_field(value, "source")),
                           converted=decode_scores(_field(value, "converted")),
                           alone=alone, errors=errors)


def encode_decay_pair(result: DecayPair) -> dict:
    return {"names": list(result.names), "decays": list(result.decays),
            "train_n": result.train_n, "metric_name": result.metric_name,
            "chance": result.chance, "factor": _encode_array(result.factor),
            "length": _encode_array(result.length),
            "last": [[encode_scores(s) for s in row] for row in result.last],
            "every": [[encode_scores(s) for s in row] for row in result.every]}


def decode_decay_pair(value: Mapping) -> DecayPair:
    factor, length = _array(value, "factor"), _array(value, "length")
    count = len(factor)
    if not 0 < count <= MAX_ITEMS or len(length) != count:
        raise StoredValueError(f"'factor' and 'length' must hold 1 to {MAX_ITEMS} values "
                               f"each, as many of one as of the other")
    names = tuple(_str({"name": n}, "name") for n in _list(value, "names", 2))
    decays = tuple(_float({"decay": d}, "decay") for d in _list(value, "decays", 2))
    rows = {part: tuple(_scores_list({"row": row}, "row", count)
                        for row in _list(value, part, 2)) for part in ("last", "every")}
    return DecayPair(names=names, decays=decays, train_n=_int(value, "train_n", 1),
                     metric_name=_str(value, "metric_name"), chance=_float(value, "chance"),
                     factor=factor, length=length, last=rows["last"], every=rows["every"])


def _typed(value: Mapping, name: str, dtype: str, length: int) -> np.ndarray:
    """``_array`` of exactly ``dtype`` and ``length``, read-only (a stored result is shared)."""
    array = _array(value, name)
    if array.dtype != dtype or len(array) != length:
        raise StoredValueError(f"{name!r} must hold {length} {dtype} values, got "
                               f"{len(array)} {array.dtype}")
    array.setflags(write=False)
    return array


def _encode_complex(values: np.ndarray) -> dict:
    return {"real": _encode_array(values.real), "imag": _encode_array(values.imag)}


def _complex_arrays(value: Mapping, name: str, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """List ``name`` of {"real", "imag"} -> complex arrays of ``lengths``, read-only."""
    found = []
    for item in _list(value, name, len(lengths)):
        length = int(lengths[len(found)])
        array = _typed(item, "real", "float64", length) + 1j * _typed(
            item, "imag", "float64", length)
        array.setflags(write=False)
        found.append(array)
    return tuple(found)


def encode_recurrent_fit(fit: RecurrentFit) -> dict:
    return {"n": fit.n, "column": _encode_array(fit.column), "modes": _encode_array(fit.modes),
            "poles": [_encode_complex(z) for z in fit.poles],
            "residues": [_encode_complex(c) for c in fit.residues], "direct": fit.direct,
            "errors": _encode_array(fit.errors), "undamped": _encode_array(fit.undamped)}


def decode_recurrent_fit(value: Mapping) -> RecurrentFit:
    """A RecurrentFit whose every array has its length (column n, q fits of s modes each,
    s ascending in 1..MAX_ITEMS), finite errors, d = k_0 and 0 <= undamped <= s."""
    n = _int(value, "n", 1, MAX_SEQUENCES)
    column = _typed(value, "column", "float64", n)
    modes = _array(value, "modes")
    if modes.dtype != "int64" or not 0 < len(modes) <= MAX_ITEMS or modes[0] < 1 \
            or modes[-1] > MAX_ITEMS or np.any(np.diff(modes) <= 0):
        raise StoredValueError(f"'modes' must be 1 to {MAX_ITEMS} int64 values rising within "
                               f"1..{MAX_ITEMS}")
    modes.setflags(write=False)
    direct, errors = _float(value, "direct"), _typed(value, "errors", "float64", len(modes))
    undamped = _typed(value, "undamped", "int64", len(modes))
    if direct != column[0] or np.any(errors < 0) or np.any(undamped < 0) \
            or np.any(undamped > modes):
        raise StoredValueError("'direct' must be the column's k_0, 'errors' at least 0 and "
                               "'undamped' within 0..s")
    return RecurrentFit(n=n, column=column, modes=modes,
                        poles=_complex_arrays(value, "poles", modes),
                        residues=_complex_arrays(value, "residues", modes), direct=direct,
                        errors=errors, undamped=undamped)


# kind -> (encode, decode)
CODECS: dict[str, tuple[Callable[[Any], dict], Callable[[Mapping], Any]]] = {
    "band_ablation": (encode_band_ablation, decode_band_ablation),
    "quick_conversion": (encode_quick_conversion, decode_quick_conversion),
    "decay_pair": (encode_decay_pair, decode_decay_pair),
    "recurrent_fit": (encode_recurrent_fit, decode_recurrent_fit),
}
