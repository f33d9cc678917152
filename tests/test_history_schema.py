"""One schema for a checkpoint's history (issue 21): the loader accepts exactly what
``training.history`` validates, and Inspect shows every accepted shape without an
exception and without "inf" or "nan".

Every case is a tiny real checkpoint (tests/hostile.py) with its history rewritten.
"""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hostile import HISTORY, tiny_checkpoint, with_json, with_metadata
from safetensors import safe_open
from streamlit.testing.v1 import AppTest

from tnn_core.compress.pipeline import save_converted
from tnn_core.compress.plan import CompressionPlan
from tnn_core.lab.inspect import summary, training_kernels
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import SHIPPED_DIR, CheckpointError, load_bytes, read_info
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.history import MAX_LABEL, MAX_TEXT, validated_history
from tnn_core.training.loop import train
from tnn_core.training.scores import Scores
from tnn_core.training.snapshots import KernelSnapshots, SnapshotLayout
from tnn_core.training.tasks import get_task

APP = str(Path(__file__).resolve().parents[1] / "app.py")
GOOD = tiny_checkpoint()
TASK = get_task("recall", {"seq_len": 16, "num_pairs": 2, "num_queries": 2, "num_keys": 6,
                           "num_values": 10})  # hostile.TASK_INFO
NOT_FINITE = re.compile(r"\b(inf|-inf|nan|infinity)\b", re.IGNORECASE)

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest: tiny models, one thread


def snapshots(steps: list[int]) -> dict:
    """A valid kernel snapshot record of ``steps`` (one layer, one channel, lags -2..2)."""
    record = KernelSnapshots(SnapshotLayout(16, (0,), (0,), (-2, 2)), 1)
    for step in steps:
        record.add(step, np.linspace(-1, 1, 5, dtype=np.float32).reshape(1, 1, 5) * (step + 1))
    return record.to_record()


def trained_history() -> dict:
    """What the training loop writes: a 5-step run of a model like the tiny checkpoint's."""
    model = model_for_task(ModelConfig(dim=8, layers=2, operator=OperatorConfig(
        kind="tno", causal=True)), TASK)
    config = TrainConfig(task="recall", steps=5, batch_size=4, lr=1e-2, warmup=1, eval_every=2,
                         eval_batches=1, eval_batch_size=4, device="cpu", model=model)
    return train(config, TASK, command="python -m tnn_core.training \udcff").history


def converted_history(tmp_path: Path, source: dict) -> dict:
    """What ``compress.pipeline.save_converted`` writes over a source history."""
    _, info = load_bytes(with_json(GOOD, "history", source), "source.safetensors")
    model, _ = load_bytes(GOOD)
    def scores(right: int) -> Scores:  # 10 sequences, ``right`` of them correct
        return Scores("accuracy", True, np.full(10, 1.8), (np.arange(10) < right) * 1.0,
                      np.ones(10))

    result = SimpleNamespace(
        model=model, finetune_steps=2, finetune_losses=[2.0, 1.9], finetune_lr=3e-4,
        finetune_parameters="all", metric_name="accuracy",
        plan=CompressionPlan.uniform(2, 3, 4), errors=[0.1, None], source=scores(5),
        converted=scores(3), finetuned=scores(4))
    path = save_converted(tmp_path / "converted.safetensors", result, info)
    return load_bytes(path.read_bytes())[1].history


# -- the accepted shapes: name -> (history, what the loader makes of it) ----------------------
def accepted() -> dict[str, dict]:
    base = {**HISTORY, "steps": 10, "device": "cpu", "train_loss": [2.0, 1.5]}
    return {
        "empty": {},
        "no evals": {**base, "evals": []},
        "metric null": {**base, "evals": [{"step": 0, "metric": 0.5},
                                          {"step": 10, "metric": None}]},
        "metric missing": {**base, "evals": [{"step": 0, "metric": 0.5},
                                             {"step": 10, "loss": 1.2}]},
        "no eval has a metric": {**base, "evals": [{"step": 0}, {"step": 10, "loss": 1.2}]},
        "metric inf": {**base, "evals": [{"step": 0, "metric": 0.5},
                                         {"step": 10, "metric": math.inf}]},
        "metric nan": {**base, "evals": [{"step": 0, "metric": math.nan},
                                         {"step": 10, "metric": 0.7}]},
        "one eval": {**base, "evals": [{"step": 3, "metric": 0.2}]},
        "repeated eval step": {**base, "evals": [{"step": 10, "metric": 0.2},
                                                 {"step": 10, "metric": 0.3}]},
        "lone surrogate in the command": {**base, "command": "python \ud800 -m x"},
        "lone surrogates everywhere": {**base, "device": "\udcff", "metric_name": "\ud800",
                                       "message": "a\udc80b",
                                       "evals": [{"step": 0, "metric": 0.5, "\ud800": 1}]},
        "wall_s inf": {**base, "wall_s": math.inf, "tokens_per_s": math.inf},
        "wall_s nan": {**base, "wall_s": math.nan},
        "wall_s missing": {k: v for k, v in base.items() if k != "wall_s"},
        "nulls": {**base, "command": None, "wall_s": None, "steps": None, "device": None,
                  "metric_name": None, "evals": None, "train_loss": None},
        "no train_loss": {**base, "train_loss": []},
        "no metric_name": {k: v for k, v in base.items() if k != "metric_name"},
        "zero snapshots": {**base, "kernel_snapshots": snapshots([])},
        "one snapshot": {**base, "kernel_snapshots": snapshots([0])},
        "three snapshots": {**base, "kernel_snapshots": snapshots([0, 1, 2])},
        "unknown keys": {**base, "extra": {"x": [1, 2]}, "wall_s_extra": "inf"},
        "the longest command": {**base, "command": "x" * MAX_TEXT},
    }


ACCEPTED = accepted()


def the_loader_reads(history: dict) -> dict:
    return load_bytes(with_json(GOOD, "history", history))[1].history


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_loader_accepts_and_normalises(name):
    history = the_loader_reads(ACCEPTED[name])
    assert validated_history(history) == history  # normalised: a fixed point
    text = json.dumps(history, allow_nan=False)  # finite numbers only (else ValueError)
    text.encode("utf-8")  # no lone surrogate left
    json.dumps(history, ensure_ascii=False).encode("utf-8")
    for entry in history.get("evals", []):
        assert isinstance(entry["step"], int)
        assert all(v is None or math.isfinite(v) for k, v in entry.items() if k != "step")
    assert set(history) <= {"command", "message", "metric_name", "device", "status", "dtype",
                            "torch", "version", "started", "wall_s", "tokens_per_s",
                            "train_config", "compression", "steps", "world_size",
                            "train_loss", "resumed_at", "evals", "kernel_snapshots"}


def test_what_normalising_does():
    assert the_loader_reads(ACCEPTED["metric inf"])["evals"][1]["metric"] is None
    assert "wall_s" not in the_loader_reads(ACCEPTED["wall_s inf"])
    assert "tokens_per_s" not in the_loader_reads(ACCEPTED["wall_s inf"])
    assert the_loader_reads(ACCEPTED["lone surrogate in the command"])["command"] == \
        "python \ufffd -m x"
    assert "kernel_snapshots" not in the_loader_reads(ACCEPTED["zero snapshots"])
    assert "extra" not in the_loader_reads(ACCEPTED["unknown keys"])
    nulls = the_loader_reads(ACCEPTED["nulls"])
    assert not {"command", "wall_s", "steps", "evals"} & set(nulls)


def test_every_history_our_own_code_writes_is_accepted(tmp_path):
    """The training loop's (a command line with a byte that is not UTF-8 holds a lone
    surrogate), save_converted's over it, and every shipped checkpoint's."""
    written = trained_history()
    assert written["kernel_snapshots"]["steps"] and written["evals"]
    loaded = the_loader_reads(written)
    assert loaded["command"].endswith("\ufffd")
    assert loaded["evals"] == written["evals"]
    assert loaded["train_loss"] == written["train_loss"]
    assert loaded["kernel_snapshots"] == written["kernel_snapshots"]
    converted = converted_history(tmp_path, written)
    assert converted["lineage"]["finetune"]["steps"] == 2
    assert converted["lineage"]["commands"][0].endswith("\ufffd")  # the source's command
    assert converted["steps"] == 2 and converted["train_loss"] == [2.0, 1.9]  # its own
    low, high = converted["evals"][-1].pop("ci95")
    assert converted["evals"][-1] == {"step": 2, "metric": 0.4, "loss": 1.8, "accuracy": 0.4,
                                      "sequences": 10}
    assert low < 0.4 < high
    for path in sorted(SHIPPED_DIR.glob("*.safetensors")):
        with safe_open(str(path), "pt") as f:
            stored = json.loads(f.metadata()["history"])
        assert read_info(path).history["evals"] == stored["evals"], path.name


@pytest.mark.parametrize("name", ["metric null", "metric missing", "no eval has a metric",
                                  "metric inf", "nulls", "wall_s inf", "zero snapshots",
                                  "one snapshot", "empty"])
def test_the_summary_shows_finite_numbers_or_says_not_recorded(name):
    _, info = load_bytes(with_json(GOOD, "history", ACCEPTED[name]))
    about = summary(info)
    assert all(math.isfinite(v) for v in about.eval_metric)
    assert len(about.eval_steps) == len(about.eval_metric)
    assert about.wall_s is None or math.isfinite(about.wall_s)
    assert not NOT_FINITE.search(about.training_note())
    view = training_kernels(info)
    assert view is None or len(view.steps) >= 1
    if name in ("no eval has a metric", "empty", "nulls"):
        assert math.isnan(about.final_metric) and about.final_step is None
    if name == "metric null":
        assert (about.final_metric, about.final_step) == (0.5, 0)


# -- the refused shapes: each names its field ------------------------------------------------
REFUSED = {
    "a list": ([1], r"must be a JSON object"),
    "wall_s negative": ({"wall_s": -1.0}, r"wall_s must be in \[0, inf\]; got -1.0"),
    "wall_s a string": ({"wall_s": "long"}, r"wall_s must be a number or null; got 'long'"),
    "wall_s a bool": ({"wall_s": True}, r"wall_s must be a number or null; got True"),
    "tokens_per_s a list": ({"tokens_per_s": [1]}, r"tokens_per_s must be a number"),
    "steps negative": ({"steps": -1}, r"steps must be an integer in \[0, 1,000,000,000\]"),
    "steps a float": ({"steps": 1.5}, r"steps must be an integer .*got 1.5"),
    "world_size 0": ({"world_size": 0}, r"world_size must be an integer in \[1, "),
    "train_loss a dict": ({"train_loss": {"0": 1}}, r"train_loss must be a list"),
    "train_loss nan": ({"train_loss": [1.0, math.nan]}, r"train_loss\[1\] must be a finite "
                                                        r"number"),
    "train_loss a string": ({"train_loss": ["a"]}, r"train_loss\[0\] must be a finite number"),
    "evals a dict": ({"evals": {"step": 0}}, r"evals must be a list"),
    "evals missing step": ({"evals": [{"metric": 1}]}, r"evals\[0\] must be an object with "
                                                        r"an integer step"),
    "evals step negative": ({"evals": [{"step": -1}]}, r"evals\[0\].step must be an integer"),
    "evals step a bool": ({"evals": [{"step": True}]}, r"evals\[0\] must be an object with an "
                                                        r"integer step"),
    "evals metric a string": ({"evals": [{"step": 0, "metric": "good"}]},
                              r"evals\[0\].metric must be a number or null; got 'good'"),
    "evals loss negative": ({"evals": [{"step": 0, "loss": -2}]},
                            r"evals\[0\].loss must be in \[0, inf\]; got -2"),
    "evals accuracy above 1": ({"evals": [{"step": 0, "accuracy": 1.5}]},
                               r"evals\[0\].accuracy must be in \[0, 1\]; got 1.5"),
    "evals metric above 1 for accuracy": (
        {"metric_name": "accuracy", "evals": [{"step": 0, "metric": 50}]},
        r"evals\[0\].metric must be in \[0, 1\]; got 50"),
    "evals with too many keys": ({"evals": [{"step": 0, **{f"m{i}": 0 for i in range(65)}}]},
                                 r"evals\[0\] must hold at most 64 metrics"),
    "evals key too long": ({"evals": [{"step": 0, "m" * 201: 0}]},
                           r"evals\[0\] has a key of 201 characters"),
    "command a number": ({"command": 123}, r"command must be a string of at most 100,000 "
                                           r"characters; got 123"),
    "command too long": ({"command": "x" * (MAX_TEXT + 1)}, r"command must be a string of at "
                                                            r"most 100,000 characters"),
    "device too long": ({"device": "m" * (MAX_LABEL + 1)},
                        r"device must be a string of at most 200 characters"),
    "device a list": ({"device": ["cpu"]}, r"device must be a string"),
    "resumed_at a string": ({"resumed_at": ["x"]}, r"resumed_at\[0\] must be an integer"),
    "train_config a list": ({"train_config": [1]}, r"train_config must be an object"),
    "compression a string": ({"compression": "yes"}, r"compression must be an object"),
    "snapshots steps decreasing": ({"kernel_snapshots": {**snapshots([0, 1]), "steps": [1, 0]}},
                                   r"kernel_snapshots.steps must be 1 to 50 increasing"),
    "snapshots a list": ({"kernel_snapshots": [1]}, r"kernel_snapshots must be an object"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_loader_refuses_with_one_sentence_naming_the_field(name):
    history, message = REFUSED[name]
    with pytest.raises(CheckpointError, match=r"bad history metadata: " + message) as caught:
        load_bytes(with_json(GOOD, "history", history))
    text = str(caught.value)
    assert "\n" not in text and len(text) < 400, text
    text.encode("utf-8")  # a page can send it


def test_a_history_the_loader_cannot_parse_names_it():
    with pytest.raises(CheckpointError, match="metadata history is not JSON"):
        load_bytes(with_metadata(GOOD, history="{"))


# -- Inspect, with each accepted shape uploaded --------------------------------------------
SHOWN_ON_THE_PAGE = ("title", "subheader", "markdown", "caption", "metric", "error", "warning",
                     "info", "success", "toast", "json", "text", "code", "exception")


def page_text(at: AppTest) -> str:
    """Every text element's proto, labels and help included."""
    return "\n".join(str(element.proto) for kind in SHOWN_ON_THE_PAGE for element in at.get(kind))


def plotted(values) -> np.ndarray:
    """A Plotly trace's values: a list, or a typed array {"dtype", "bdata": base64}."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), values["dtype"])
    return np.array(values, dtype=float)


@pytest.fixture(scope="module")
def inspect_page():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/inspect.py").run()
    assert not at.exception
    return at


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_inspect_shows_every_accepted_history(inspect_page, name):
    at = inspect_page
    data = with_json(GOOD, "history", ACCEPTED[name])
    at.file_uploader(key="upload").upload(f"{name}.safetensors", data,
                                          "application/octet-stream")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="checkpoint").value.startswith("upload:")
    text = page_text(at)
    assert not NOT_FINITE.search(text), NOT_FINITE.search(text)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["layout"].get("title", {}).get("text", "").startswith("Validation"):
            assert all(np.isfinite(plotted(trace["y"])).all() for trace in spec["data"])


def test_the_metric_name_is_the_tasks_whatever_the_history_says():
    """Inspect reads the history's numbers as the task's metric: a file calling a recall
    model's accuracy "bpc" reads as accuracy (bounded by 1), never as bits per character."""
    from tests.hostile import HISTORY, tiny_checkpoint, with_json
    from tnn_core.training.checkpoint import CheckpointError, load_bytes

    _, info = load_bytes(with_json(tiny_checkpoint(), "history",
                                   {**HISTORY, "metric_name": "bpc"}))
    assert info.history["metric_name"] == "accuracy"
    with pytest.raises(CheckpointError, match=r"evals\[0\]\.metric"):
        load_bytes(with_json(tiny_checkpoint(), "history", {
            **HISTORY, "metric_name": "bpc", "evals": [{"step": 0, "metric": 2.0}]}))
