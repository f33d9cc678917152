"""Lesson measurements kept beside the shipped checkpoints (tnn_core.lab.common
.stored_measurements): used when the checkpoints' SHA-256 and the parameters match, never
trusted otherwise (a changed checkpoint, a malformed or hostile file), and equal to what
the app computes."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

from tnn_core.lab.common import stored_measurements as store
from tnn_core.lab.common.band_ablation import BandAblation
from tnn_core.lab.common.checkpoints import SHIPPED_DIR, open_file
from tnn_core.lab.common.conversion import QuickConversion
from tnn_core.lab.common.decay_pair import DecayPair
from tnn_core.lab.common.measurement_build import compute_shipped, digests
from tnn_core.lab.common.measurement_codecs import CODECS
from tnn_core.lab.lesson import load_lessons
from tnn_core.training.scores import Scores

SHA = "ab" * 32


def scores(seed: int, n: int = 40) -> Scores:
    rng = np.random.default_rng(seed)
    return Scores("accuracy", True, rng.random(n) * 3, rng.integers(0, 2, n),
                  np.ones(n, dtype=np.int64))


ABLATION = BandAblation("|k| ≤ 4", 64, 0.1, scores(0), scores(1), (scores(2), scores(3)))
MEASUREMENT = store.Measurement("band_ablation", ("digits-tno",), (("band", 9),))


def write(folder, result=ABLATION, digest=SHA, measurement=MEASUREMENT):
    folder.mkdir(exist_ok=True)
    path = folder / measurement.file_name
    path.write_text(store.encode_file(measurement, (digest,), result), encoding="utf-8")
    return path


class Counted:
    """A computation that counts its calls and returns ``value``."""

    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def same(a, b, rel: float = 0.0) -> bool:
    """Field by field: Scores by their sums and intervals, arrays by dtype and values,
    floats to ``rel`` (0: exactly)."""
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        return np.array_equal(a, b) if rel == 0 or a.dtype.kind not in "fc" else np.allclose(
            a, b, rtol=rel, atol=0)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(
            same(x, y, rel) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a):
        fields = [f.name for f in dataclasses.fields(a)]
        extra = ["metric", "ci95"] if isinstance(a, Scores) else []
        return type(a) is type(b) and all(same(getattr(a, name), getattr(b, name), rel)
                                          for name in fields + extra)
    if isinstance(a, float) and rel:
        return isinstance(b, float) and b == pytest.approx(a, rel=rel, abs=0)
    return type(a) is type(b) and a == b


def test_a_matching_file_is_used_without_computing(tmp_path):
    write(tmp_path)
    compute = Counted(None)
    found = store.stored_or_computed("band_ablation", (SHA,), {"band": 9}, compute, tmp_path)
    assert compute.calls == 0
    assert same(found, ABLATION) and found.sentence() == ABLATION.sentence()


@pytest.mark.parametrize("digests, params", [
    (("cd" * 32,), {"band": 9}),  # another checkpoint's bytes
    ((SHA, SHA), {"band": 9}),  # another number of checkpoints
    ((SHA,), {"band": 7}),  # another parameter
])
def test_another_checkpoint_or_parameter_is_computed(tmp_path, digests, params):
    write(tmp_path)
    compute = Counted("computed")
    assert store.stored_or_computed("band_ablation", digests, params, compute,
                                    tmp_path) == "computed"
    assert compute.calls == 1


def hostile_files():
    good = json.loads(store.encode_file(MEASUREMENT, (SHA,), ABLATION))
    full = good["result"]["full"]

    def edited(change):
        copy = json.loads(json.dumps(good))
        change(copy)
        return json.dumps(copy)

    return {
        "not JSON": "{\"format\": 1, ",
        "a list": "[1, 2, 3]",
        "another format": edited(lambda d: d.update(format=store.FORMAT + 1)),
        "an unknown kind": edited(lambda d: d.update(kind="os.system")),
        "NaN chance": edited(lambda d: d["result"].update(chance=float("nan"))),
        "a string for a number": edited(lambda d: d["result"].update(length="64")),
        "a huge integer": edited(lambda d: d["result"]["full"]["targets"].update(
            values=[10**30] * len(full["targets"]["values"]))),
        "an object dtype": edited(lambda d: d["result"]["full"]["loss"].update(dtype="object")),
        "strings in an array": edited(lambda d: d["result"]["full"]["loss"].update(
            values=["1"] * len(full["loss"]["values"]))),
        "unequal lengths": edited(lambda d: d["result"]["full"]["loss"].update(
            values=full["loss"]["values"][:-1])),
        "a missing field": edited(lambda d: d["result"].pop("restricted")),
        "no result": edited(lambda d: d.pop("result")),
        "deep nesting": json.dumps(good)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "over the size limit": json.dumps(good) + " " * store.MAX_FILE_BYTES,
    }


@pytest.mark.parametrize("name", list(hostile_files()))
def test_a_malformed_or_hostile_file_is_computed_not_trusted(tmp_path, name):
    tmp_path.joinpath(MEASUREMENT.file_name).write_text(hostile_files()[name], encoding="utf-8")
    compute = Counted("computed")
    assert store.stored_or_computed("band_ablation", (SHA,), {"band": 9}, compute,
                                    tmp_path) == "computed"
    assert compute.calls == 1


def test_one_bad_file_leaves_the_others_usable(tmp_path):
    write(tmp_path)
    tmp_path.joinpath("broken.json").write_text("{", encoding="utf-8")
    assert set(store.read_store(tmp_path)) == {store._key("band_ablation", (SHA,), {"band": 9})}


def test_a_changed_byte_in_a_shipped_checkpoint_is_computed_again(tmp_path):
    """The real chain: a copy of digits-tno keys the shipped store by its SHA-256; one byte
    of its weights changed, the same lookup computes."""
    copy = tmp_path / "digits-tno.safetensors"
    shutil.copyfile(SHIPPED_DIR / "digits-tno.safetensors", copy)
    params = {"band": 9}
    compute = Counted("computed")
    found = store.stored_or_computed("band_ablation", (open_file(copy).digest,), params, compute)
    assert compute.calls == 0 and isinstance(found, BandAblation)
    data = bytearray(copy.read_bytes())
    data[-1] ^= 1  # the last byte of the last tensor: still a valid checkpoint
    copy.write_bytes(bytes(data))
    changed = open_file(copy).digest
    assert store.stored_or_computed("band_ablation", (changed,), params, compute) == "computed"
    assert compute.calls == 1


def test_every_shipped_store_file_matches_the_shipped_checkpoints():
    """A retrained checkpoint, or a change to the recurrent fit's code, needs `python -m
    tnn_core.lab.common.measurement_build --build` (`make lesson-measurements`): otherwise
    its lesson steps compute again on every fresh server."""
    for measurement in store.LESSON_MEASUREMENTS:
        compute = Counted(None)
        found = store.stored_or_computed(measurement.kind, digests(measurement),
                                         dict(measurement.params), compute)
        assert compute.calls == 0, f"{measurement.file_name} is missing or stale"
        assert type(found).__name__ == {"band_ablation": "BandAblation", "decay_pair": "DecayPair",
                                        "quick_conversion": "QuickConversion",
                                        "recurrent_fit": "RecurrentFit"}[measurement.kind]


def test_every_lesson_measurement_is_stored():
    """Each Inspect or Compress step of the shipped lessons that shows a measurement (its
    figures, its computed answer), at the settings pages/lessons/steps.py resolves."""
    from pages.lessons.steps import ABLATION_BAND

    listed = {(m.kind, m.checkpoints, m.params) for m in store.LESSON_MEASUREMENTS}
    lessons, errors = load_lessons()
    assert not errors
    asked = 0
    for lesson in lessons:
        for step in lesson.steps:
            view = step.view
            if view is None or view.path not in ("inspect", "compress"):
                continue
            settings = dict(view.params)
            name = settings.get("checkpoint", "digits-tno").split(" · ")[0]
            computed = step.question.computed if step.question else ""
            if "table10" in step.drawn:
                pair = ("charlm-tno-decay099", "charlm-tno-nodecay")
                wanted = ("decay_pair", pair, (("names", pair), ("factors", (1, 2, 4, 8, 16))))
            elif "ablation" in step.drawn or computed == "band_only":
                wanted = ("band_ablation", (name,), (("band", ABLATION_BAND),))
            elif "conversion" in step.drawn or computed == "conversion_loss":
                wanted = ("quick_conversion", (name,), (
                    ("band", int(settings.get("band", 9))), ("rank", int(settings.get(
                        "rank", 16))), ("method", settings.get("method", "fit"))))
            else:
                continue
            asked += 1
            assert wanted in listed, f"{lesson.title}, {step.title}: {wanted} is not stored"
    assert asked >= 4


def pair_scores(seed: int) -> tuple[Scores, ...]:
    return tuple(dataclasses.replace(scores(seed + f), metric_name="bpc",
                                     higher_is_better=False, contiguous=True) for f in range(3))


@pytest.mark.parametrize("kind, result", [
    ("band_ablation", ABLATION),
    ("quick_conversion", QuickConversion("accuracy", 0.1, scores(4), scores(5),
                                         (scores(6), scores(7)), (0.27, 1 / 3))),
    ("decay_pair", DecayPair(("a", "b"), (0.99, 1.0), 128, "bpc", 6.66, np.array([1, 2, 4]),
                             np.array([128, 256, 512]), (pair_scores(0), pair_scores(3)),
                             (pair_scores(6), pair_scores(9)))),
])
def test_a_stored_result_reads_back_exactly(kind, result):
    encode, decode = CODECS[kind]
    back = decode(json.loads(json.dumps(encode(result), allow_nan=False)))
    assert same(back, result)


# the scores are sums of float32 model outputs: another CPU may differ in the last bits
# (the store is built on one machine, checked on another), never in a printed digit
ACROSS_MACHINES = 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("measurement", store.LESSON_MEASUREMENTS,
                         ids=lambda m: m.file_name.removesuffix(".json"))
def test_the_stored_result_is_the_computed_one(measurement):
    """Stored == computed: every count exactly, every sum, metric and interval to
    ACROSS_MACHINES (exactly on the machine that built the store)."""
    digests, computed = compute_shipped(measurement)
    stored = store.stored_or_computed(measurement.kind, digests, dict(measurement.params),
                                      lambda: pytest.fail("no stored result"))
    assert same(stored, computed, ACROSS_MACHINES)
