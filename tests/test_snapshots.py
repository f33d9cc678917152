"""Kernels forming during training (issue 14): the snapshots a run keeps are the model's
kernels at their steps, stay bounded and evenly spaced, leave the run unchanged, survive
a checkpoint, are refused when hostile, and replay on the Train and Inspect pages."""

from __future__ import annotations

import json
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoints
from tnn_core.lab.train import snapshot_view
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training import loop
from tnn_core.training.checkpoint import CheckpointError, load, load_bytes, save
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.loop import Callbacks, train
from tnn_core.training.resume import Resume
from tnn_core.training.snapshots import (
    MAX_SNAPSHOTS,
    KernelSnapshots,
    SnapshotLayout,
    every_for,
    take_snapshot,
)
from tnn_core.training.tasks import get_task

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TASKS = {"digits": get_task("digits", {"size": 8}),
         "recall": get_task("recall", {"seq_len": 16, "num_pairs": 2, "num_queries": 2,
                                       "num_keys": 4, "num_values": 4})}


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest: tiny models, one thread


def tiny(task_name: str, kind: str, steps: int = 9, layers: int = 2, **changes) -> TrainConfig:
    task = TASKS[task_name]
    op = OperatorConfig(kind=kind, causal=task.kind == "lm", rank=8, band=5,
                        **({"heads": 4, "max_length": 16} if kind == "togeipi" else {}))
    model = model_for_task(ModelConfig(dim=8, layers=layers, operator=op), task)
    settings = {"task": task_name, "steps": steps, "batch_size": 8, "lr": 1e-2, "warmup": 2,
                "eval_every": 4, "eval_batches": 1, "eval_batch_size": 8, "device": "cpu",
                "model": model, **changes}
    return TrainConfig(**settings)


def tolerance(record: dict, i: int) -> float:
    """The int16 quantisation error of snapshot i: half a level, and float32 rounding."""
    return 0.5 * record["scales"][i] / 32767 + 1e-6


# -- the snapshots are the kernels -----------------------------------------------------------
@pytest.mark.parametrize(("task_name", "kind"), [("digits", "tno"), ("digits", "ski"),
                                                 ("recall", "fd"), ("recall", "tno")])
def test_every_snapshot_is_the_models_kernels_at_its_step(task_name, kind):
    task = TASKS[task_name]
    seen = {}
    config = tiny(task_name, kind, steps=9)
    layout_holder = {}

    def on_step(step, *_):
        if "layout" in layout_holder:
            seen[step] = take_snapshot(layout_holder["model"], layout_holder["layout"])

    original = loop.snapshot_layout

    def spy(model, n):  # the model and layout the loop snapshots
        layout_holder.update(model=model, layout=original(model, n))
        seen[0] = take_snapshot(model, layout_holder["layout"])
        return layout_holder["layout"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "snapshot_layout", spy)
        result = train(config, task, Callbacks(on_step=on_step))
    record = result.history["kernel_snapshots"]
    view = snapshot_view(record)
    assert view.steps.tolist() == list(range(0, 10))  # every_for(9) = 1
    for i, step in enumerate(view.steps):
        assert np.abs(view.kernels[i] - seen[int(step)]).max() <= tolerance(record, i), step

    layout = layout_holder["layout"]
    n = task.seq_len
    operators = result.model.operators()
    with torch.no_grad():
        final = np.stack([operators[layer].kernel(n)[list(layout.channels)].numpy()
                          for layer in layout.layers])  # (L, C, 2n-1)
    first, last = (lag + n - 1 for lag in layout.lags)
    assert np.abs(view.kernels[-1] - final[..., first:last + 1]).max() <= tolerance(record, -1)
    assert view.layers == (0, 1) and view.channels == (0, 1, 2, 3)
    causal = task.kind == "lm"
    assert layout.lags == ((0, n - 1) if causal else (-32, 32))


def test_snapshots_leave_the_run_unchanged_bit_for_bit():
    config = tiny("recall", "tno", steps=12)
    with_snapshots = train(config, TASKS["recall"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "snapshot_layout", lambda model, n: None)
        without = train(config, TASKS["recall"])
    assert "kernel_snapshots" in with_snapshots.history
    assert "kernel_snapshots" not in without.history
    assert with_snapshots.history["train_loss"] == without.history["train_loss"]
    assert [e["loss"] for e in with_snapshots.history["evals"]] == \
        [e["loss"] for e in without.history["evals"]]
    for name, tensor in without.model.state_dict().items():
        assert torch.equal(with_snapshots.model.state_dict()[name], tensor), name


def test_togeipi_models_have_no_snapshots():
    result = train(tiny("recall", "togeipi", steps=2), TASKS["recall"])
    assert result.status == "completed" and "kernel_snapshots" not in result.history


def test_a_resumed_run_keeps_the_same_snapshots():
    config = tiny("recall", "tno", steps=10, dtype="float64")
    straight = train(config, TASKS["recall"])
    stop = threading.Event()
    first = train(config, TASKS["recall"],
                  Callbacks(on_step=lambda step, *_: step == 5 and stop.set()), stop_event=stop)
    assert first.history["kernel_snapshots"]["steps"][-1] == 5
    resumed = train(config, TASKS["recall"],
                    resume=Resume(first.model.state_dict(), first.history, first.state))
    assert resumed.history["kernel_snapshots"] == straight.history["kernel_snapshots"]


# -- bounded and evenly spaced ---------------------------------------------------------------
LAYOUT = SnapshotLayout(n=8, layers=(0,), channels=(0, 1), lags=(-3, 3))


def filled(step: int) -> np.ndarray:
    return np.full(LAYOUT.shape, float(step), np.float32)


@pytest.mark.parametrize(("planned", "ran"), [(1, 1), (7, 7), (48, 48), (49, 49), (2000, 2000),
                                              (2000, 5003), (10, 150_000)])
def test_thinning_keeps_at_most_the_bound_evenly_spaced_with_the_last(planned, ran):
    snapshots = KernelSnapshots(LAYOUT, every_for(planned))
    for step in range(ran + 1):
        if snapshots.due(step):
            snapshots.add(step, filled(step))
            assert len(snapshots.steps) <= MAX_SNAPSHOTS
    snapshots.add(ran, filled(ran))  # the last step, as the loop adds it
    steps = snapshots.steps
    assert len(steps) <= MAX_SNAPSHOTS and steps[0] == 0 and steps[-1] == ran
    regular = steps[:-1] if steps[-1] % snapshots.every else steps
    assert np.all(np.diff(regular) == snapshots.every)  # evenly spaced
    assert ran - regular[-1] < snapshots.every  # up to the last step
    if ran == planned:
        assert len(steps) >= min(ran + 1, MAX_SNAPSHOTS // 2)  # not thinned more than needed
    kernels = snapshots.kernels()
    assert np.array_equal(kernels[:, 0, 0, 0], np.array(steps, np.float32))  # each its own


def test_a_record_of_a_2000_step_run_is_small():
    layout = SnapshotLayout(n=64, layers=(0, 1), channels=(0, 1, 2, 3), lags=(-32, 32))
    snapshots = KernelSnapshots(layout, every_for(2000))
    rng = np.random.default_rng(0)
    for step in [*range(0, 2001, snapshots.every), 2000]:
        snapshots.add(step, rng.standard_normal(layout.shape).astype(np.float32))
    assert len(snapshots.steps) == 49
    assert len(json.dumps(snapshots.to_record())) < 80_000


# -- checkpoints -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, dict]:
    result = train(tiny("digits", "tno", steps=6), TASKS["digits"])
    path = save(tmp_path_factory.mktemp("run") / "run.safetensors", result.model,
                TASKS["digits"].info(), result.history, result.model_config)
    return path, result.history


def test_snapshots_survive_a_checkpoint(saved):
    path, history = saved
    _, info = load(path)
    assert info.history["kernel_snapshots"] == history["kernel_snapshots"]
    view = snapshot_view(info.history["kernel_snapshots"])
    assert np.array_equal(view.kernels, snapshot_view(history["kernel_snapshots"]).kernels)


def _changed(record: dict, field: str, value) -> dict:
    return {**record, field: value}


HOSTILE = {
    "scales-nan": (lambda r: _changed(r, "scales", [float("nan")] * len(r["steps"])), "scales"),
    "scales-huge": (lambda r: _changed(r, "scales", [1e300] * len(r["steps"])), "scales"),
    "steps-too-many": (lambda r: {**r, "steps": list(range(51)), "scales": [1.0] * 51,
                                  "kernels": [r["kernels"][0]] * 51}, "steps"),
    "steps-huge": (lambda r: _changed(r, "steps", [10**30] * len(r["steps"])), "steps"),
    "steps-unordered": (lambda r: _changed(r, "steps", r["steps"][::-1]), "steps"),
    "scales-missing-one": (lambda r: _changed(r, "scales", r["scales"][1:]), "scales"),
    "shape-more-layers": (lambda r: _changed(r, "layers", [0, 1, 2]), "kernels"),
    "shape-too-many-channels": (lambda r: _changed(r, "channels", list(range(9))), "channels"),
    "lags-too-wide": (lambda r: _changed(r, "lags", [-40, 40]), "lags"),
    "n-huge": (lambda r: _changed(r, "n", 10**12), "n"),
    "kernels-not-base64": (lambda r: _changed(r, "kernels", ["*" * len(r["kernels"][0])]
                                               * len(r["steps"])), "kernels"),
    "kernels-huge-string": (lambda r: _changed(r, "kernels", ["A" * 3_000_000]
                                               + r["kernels"][1:]), "kernels"),
    "not-an-object": (lambda r: [1, 2, 3], "kernel_snapshots"),
    "unknown-field": (lambda r: {**r, "extra": 1}, "kernel_snapshots"),
}


def with_history(data: bytes, history: dict) -> bytes:
    """The safetensors ``data`` with its history metadata replaced by JSON of ``history``."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header["__metadata__"]["history"] = json.dumps(history)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + length:]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_snapshots_are_refused_naming_the_field(saved, case):
    path, history = saved
    change, field = HOSTILE[case]
    bad = {**history, "kernel_snapshots": change(history["kernel_snapshots"])}
    named = "kernel_snapshots must be an object" if field == "kernel_snapshots" \
        else rf"kernel_snapshots\.{field}\b"
    with pytest.raises(CheckpointError, match=f"hostile: bad history metadata: {named}"):
        load_bytes(with_history(path.read_bytes(), bad), "hostile")


# -- the pages -------------------------------------------------------------------------------
@pytest.fixture
def app(monkeypatch, tmp_path):
    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    yield at
    run = at.session_state["train_run"] if "train_run" in at.session_state else None
    if run is not None:
        run.stop()
        run.join(timeout=120)


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_train_shows_the_replay_and_inspect_replays_the_saved_run(app):
    at = app
    at.switch_page("pages/train.py").run()
    at.selectbox(key="task").set_value("digits")
    at.radio(key="operator").set_value("tno")
    at.radio(key="size").set_value("tiny")
    at.slider(key="steps").set_value(20)
    at.button[0].click()  # Start
    at.run()
    run = at.session_state["train_run"]
    run.join(timeout=300)
    at.run()
    assert not at.exception and run.snapshot().status == "completed"
    slider = at.select_slider(key="train_kernels_step")
    assert slider.options == [str(s) for s in range(0, 21)] and slider.value == 20
    assert "Layer 0 at step 20" in chart_titles(at)
    slider.set_value(3).run()
    assert "Layer 0 at step 3" in chart_titles(at)

    at.text_input(key="save_name").set_value("replayed")
    at.button(key="save").click().run()  # Save and inspect
    assert not at.exception, at.exception
    assert at.selectbox(key="checkpoint").value == "user/replayed"
    assert "Kernels during training" in [h.value for h in at.subheader]
    replay = at.select_slider(key="inspect_kernels_step")
    assert replay.value == 20
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"]["title"]["text"] == "Layer 0 at step 20")
    y_range = spec["layout"]["yaxis"]["range"]
    at.switch_page("pages/inspect.py")  # AppTest reruns the page it last switched to
    at.selectbox(key="checkpoint").set_value("user/replayed")
    at.select_slider(key="inspect_kernels_step").set_value(0).run()
    assert not at.exception
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"]["title"]["text"] == "Layer 0 at step 0")
    assert spec["layout"]["yaxis"]["range"] == y_range  # one y-range for every step
    assert len(spec["data"]) == 4  # the four kept channels


def test_inspect_of_a_shipped_checkpoint_says_it_has_none(app):
    at = app
    at.switch_page("pages/inspect.py").run()
    assert not at.exception
    assert any("holds no kernel snapshots" in c.value for c in at.caption)
    assert "Kernels during training" not in [h.value for h in at.subheader]
    with pytest.raises(KeyError):
        at.select_slider(key="inspect_kernels_step")
