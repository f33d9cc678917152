"""Compare runs (issue 24, item 6): the config diff and the aligned curves read from real
shipped checkpoints, and Inspect's comparison (pages/inspect/run_comparison.py) drawn by
AppTest: the table, the charts' traces, axes and chance, the final metrics, and a broken
second checkpoint as an error sentence."""

import base64
import dataclasses
import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from pages.inspect.run_comparison import final_text
from tnn_core.lab.inspect.run_comparison import (
    FinalMetric,
    config_diff,
    curves,
    final_metric,
    settings,
)
from tnn_core.training import checkpoint
from tnn_core.training.evaluate import score
from tnn_core.training.scores import difference
from tnn_core.training.tasks import task_from_info
from tnn_core.training.verdicts import change_text

DECAY, NO_DECAY = "charlm-tno-decay099", "charlm-tno-nodecay"


def shipped(name: str) -> checkpoint.CheckpointInfo:
    return checkpoint.read_info(checkpoint.SHIPPED_DIR / f"{name}.safetensors")


def with_history(info: checkpoint.CheckpointInfo, **changes) -> checkpoint.CheckpointInfo:
    """``info`` with history keys replaced (None: removed), as a file could record it."""
    history = {k: v for k, v in {**info.history, **changes}.items() if v is not None}
    return dataclasses.replace(info, history=history)


# -- the config diff -------------------------------------------------------------------------
def test_the_decay_pair_differs_in_the_decay_alone():
    rows = config_diff(shipped(DECAY), shipped(NO_DECAY))
    assert [row.field for row in rows if row.differs] == ["model.operator.decay"]
    first = rows[0]
    assert (first.value_a, first.value_b, first.only_in) == (0.99, 1.0, None)


@pytest.mark.parametrize("name", ["digits-tno", "charlm-tno", "listops-ski"])
def test_a_run_against_itself_differs_nowhere(name):
    rows = config_diff(shipped(name), shipped(name))
    assert rows and not any(row.differs for row in rows)
    assert [row.field for row in rows] == list(settings(shipped(name)))


def test_fields_are_dotted_and_sections_are_not_repeated():
    fields = settings(shipped(DECAY))
    assert fields["model.operator.decay"] == 0.99
    assert fields["task.settings.seq_len"] == 128
    assert fields["training.lr"] == 0.003 and fields["training.batch_size"] == 16
    assert not any(f.startswith(("training.model", "task.vocab")) for f in fields)


def test_differences_come_first_each_section_in_order():
    rows = config_diff(shipped("digits-tno"), shipped("charlm-tno"))
    flags = [row.differs for row in rows]
    assert flags == sorted(flags, reverse=True)  # every difference before every equal field
    sections = [row.field.split(".")[0] for row in rows if row.differs]
    order = {"model": 0, "task": 1, "training": 2}
    assert [order[s] for s in sections] == sorted(order[s] for s in sections)
    equal = [row.field.split(".")[0] for row in rows if not row.differs]
    assert [order[s] for s in equal] == sorted(order[s] for s in equal)


def test_a_field_only_one_run_records_is_shown_as_such():
    old = with_history(shipped(DECAY), train_config=None)  # a file with no training config
    rows = {row.field: row for row in config_diff(old, shipped(DECAY))}
    lr = rows["training.lr"]
    assert (lr.only_in, lr.differs, lr.value_a, lr.value_b) == ("b", True, None, 0.003)
    seq_len = {row.field: row for row in config_diff(shipped(DECAY),
                                                     shipped("digits-tno"))}
    assert seq_len["task.settings.seq_len"].only_in == "a"
    assert seq_len["task.settings.size"].only_in == "b"
    text = seq_len["task.settings.text"]  # recorded as null by charlm, absent for digits
    assert (text.value_a, text.only_in, text.differs) == (None, "a", True)
    assert seq_len["model.operator.decay"].only_in is None  # both record it, equal
    assert not seq_len["model.operator.decay"].differs


# -- the curves ------------------------------------------------------------------------------
def test_curves_are_the_history_aligned_by_evaluation():
    info = shipped(DECAY)
    evals = info.history["evals"]
    run = curves(info)
    assert run.metric_name == "bpc"
    np.testing.assert_array_equal(run.step, [e["step"] for e in evals])
    np.testing.assert_array_equal(run.metric, [e["metric"] for e in evals])
    np.testing.assert_array_equal(run.loss, [e["loss"] for e in evals])
    np.testing.assert_array_equal(run.wall_s, [e["wall_s"] for e in evals])
    np.testing.assert_array_equal(run.tokens, run.step * 16 * 1 * 128)  # batch × ranks × n
    assert math.isnan(run.train_loss[0])  # no training step before step 0
    np.testing.assert_array_equal(run.train_loss[1:], [e["train_loss"] for e in evals[1:]])
    assert run.recorded("step") and run.recorded("tokens") and run.recorded("wall_s")


def test_what_an_evaluation_does_not_record_is_nan_never_a_guess():
    info = shipped("digits-tno")
    evals = [dict(e) for e in info.history["evals"]]
    del evals[2]["loss"], evals[2]["wall_s"]
    run = curves(with_history(info, evals=evals, world_size=None))
    assert math.isnan(run.loss[2]) and math.isnan(run.wall_s[2])
    assert np.isfinite(run.loss[[0, 1, 3]]).all()
    assert np.isnan(run.tokens).all()  # the world size is not recorded: no token count
    assert not run.recorded("wall_s") and not run.recorded("tokens") and run.recorded("step")
    two_ranks = curves(with_history(info, world_size=2))
    np.testing.assert_array_equal(two_ranks.tokens, two_ranks.step * 32 * 2 * 64)
    empty = curves(with_history(info, evals=None))
    assert len(empty.step) == 0 and not empty.recorded("step")


# -- the final metric and its interval -------------------------------------------------------
def test_the_final_metric_has_no_interval_unless_recorded():
    info = shipped(DECAY)
    final = final_metric(info)
    last = info.history["evals"][-1]
    assert (final.value, final.step, final.ci95, final.sequences) == (
        last["metric"], 600, None, None)
    assert final_text(final) == f"{last['metric']:.3f} bpc, no interval recorded"


def test_a_recorded_interval_and_its_sequences_are_shown():
    info = shipped("digits-tno")
    evals = [dict(e) for e in info.history["evals"]]
    evals[-1] |= {"ci95": [0.735, 0.822], "sequences": 360}
    final = final_metric(with_history(info, evals=evals))
    assert (final.ci95, final.sequences) == ((0.735, 0.822), 360)
    assert final_text(final) == "78.1 [73.5, 82.2] %, 360 sequences"
    evals[-1].pop("sequences")  # an interval without its N is not shown as one
    assert final_metric(with_history(info, evals=evals)).ci95 is None


def test_no_evaluation_gives_no_final_metric():
    final = final_metric(with_history(shipped("digits-tno"), evals=None))
    assert math.isnan(final.value) and final.step is None
    assert final_text(FinalMetric("bpc", math.nan, None, None, None)) == \
        "no evaluation recorded it"


# -- the page's comparison -------------------------------------------------------------------
def _comparison_page(key):
    from pages.inspect import run_comparison

    run_comparison.show(key)


def compared(key: str, other: str | None) -> AppTest:
    at = AppTest.from_function(_comparison_page, args=(key,), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    if other is not None:
        at.selectbox(key="compare_with").set_value(other).run()
        assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> dict:
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def numbers(data) -> list:
    """A chart's x or y: a list, or Plotly's typed array ({dtype, bdata}) decoded."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return data


def test_the_page_offers_every_other_checkpoint_and_waits_for_a_choice():
    at = compared(DECAY, None)
    box = at.selectbox(key="compare_with")
    assert DECAY not in box.options and len(box.options) >= 9
    assert box.value is None and not at.get("plotly_chart") and not at.dataframe


@pytest.mark.slow  # scores both charlm models at 1x to 16x their length
def test_the_page_overlays_the_decay_pair_and_diffs_their_configs():
    at = compared(DECAY, NO_DECAY)
    shown = charts(at)
    metric = shown["Validation bpc during training (lower is better)"]
    assert [trace["name"] for trace in metric["data"]] == [DECAY, NO_DECAY]
    for trace, name in zip(metric["data"], (DECAY, NO_DECAY), strict=True):
        history = shipped(name).history["evals"]
        assert numbers(trace["y"]) == pytest.approx([e["metric"] for e in history])
        assert numbers(trace["x"]) == [e["step"] for e in history]
    layout = metric["layout"]
    assert layout["xaxis"]["title"]["text"] == "step"
    assert layout["yaxis"]["title"]["text"] == "bits per character (bpc)"
    (chance,) = layout["shapes"]
    assert chance["y0"] == pytest.approx(math.log2(101)) and chance["line"]["dash"] == "dash"
    assert layout["annotations"][0]["text"] == "chance 6.66 bpc"
    loss = next(spec for title, spec in shown.items() if title.startswith("Loss"))
    assert loss["layout"]["yaxis"]["title"]["text"] == "cross-entropy (nats)"
    assert [t["name"] for t in loss["data"]] == [f"{DECAY}, validation", f"{DECAY}, training",
                                                 f"{NO_DECAY}, validation",
                                                 f"{NO_DECAY}, training"]

    metrics = [(m.label, m.value) for m in at.metric]  # both on the one evaluation set
    scored = [score(checkpoint.load(checkpoint.SHIPPED_DIR / f"{name}.safetensors")[0],
                    task_from_info(shipped(name).task)) for name in (DECAY, NO_DECAY)]
    assert metrics == [(DECAY, f"{scored[0].metric:.3f} bpc"),
                       (NO_DECAY, f"{scored[1].metric:.3f} bpc")]
    assert all("no interval recorded" in c.value for c in at.caption if "at step 600" in c.value)
    change = difference(scored[0], scored[1], paired=True)  # one task: paired, with interval
    assert [m.value for m in at.markdown if m.value.startswith("On the same 2,208 sequences")] \
        == [f"On the same 2,208 sequences the second run is {change_text(change)} than the "
            "first."]

    table = at.dataframe[0].value
    assert list(table.columns) == ["field", DECAY, NO_DECAY, ""]
    assert table.iloc[0].tolist() == ["model.operator.decay", "0.99", "1.0", "differs"]
    assert (table[""].iloc[1:] == "same").all()
    styles = at.dataframe[0].proto.arrow_data.styler.styles  # only the difference highlighted
    assert "row0_col0" in styles and "background-color" in styles and "row1_" not in styles
    assert any("1 of" in c.value and "fields differ" in c.value for c in at.caption)


@pytest.mark.slow  # scores both charlm models on the evaluation set
def test_the_x_axis_can_be_tokens_or_wall_time():
    at = compared(DECAY, NO_DECAY)
    at.radio(key="compare_axis").set_value("tokens").run()
    metric = charts(at)["Validation bpc during training (lower is better)"]
    assert metric["layout"]["xaxis"]["title"]["text"] == "training tokens"
    assert numbers(metric["data"][0]["x"])[-1] == 600 * 16 * 128
    loss = next(spec for title, spec in charts(at).items() if title.startswith("Loss"))
    assert loss["layout"]["xaxis"]["title"]["text"] == "training tokens"
    assert all(numbers(trace["x"])[-1] == 600 * 16 * 128 for trace in loss["data"])
    at.radio(key="compare_axis").set_value("wall_s").run()
    metric = charts(at)["Validation bpc during training (lower is better)"]
    assert metric["layout"]["xaxis"]["title"]["text"] == "wall time (s)"
    assert numbers(metric["data"][1]["x"])[-1] == pytest.approx(shipped(NO_DECAY).history["wall_s"],
                                                       abs=0.01)


def test_accuracies_are_drawn_in_percent_with_chance_at_ten():
    at = compared("digits-tno", "digits-ski")
    metric = charts(at)["Validation accuracy during training (higher is better)"]
    layout = metric["layout"]
    assert layout["yaxis"]["title"]["text"] == "accuracy (%)"
    assert layout["yaxis"]["range"] == [0, 100]
    (chance,) = layout["shapes"]
    assert chance["y0"] == pytest.approx(10.0)
    assert layout["annotations"][0]["text"] == "chance 10 %"
    final = shipped("digits-ski").history["evals"][-1]["metric"]
    assert numbers(metric["data"][1]["y"])[-1] == pytest.approx(100 * final)
    assert at.metric[1].value == f"{100 * final:.1f} %"


def test_runs_of_different_metrics_share_only_the_loss_axis():
    at = compared("digits-tno", DECAY)  # a charlm model the decay pair's test scored already
    titles = list(charts(at))
    assert len(titles) == 1 and titles[0].startswith("Loss")
    assert any("different metrics (accuracy and bpc)" in c.value for c in at.caption)
    table = at.dataframe[0].value.set_index("field")
    seq_len = shipped(DECAY).task["settings"]["seq_len"]
    assert table.loc["task.settings.seq_len"].tolist() == ["—", str(seq_len), f"only in {DECAY}"]
    assert table.loc["model.operator.causal"].tolist() == ["false", "true", "differs"]


def test_a_checkpoint_that_fails_to_load_is_an_error_sentence(tmp_path, monkeypatch):
    from pages._ui import checkpoints

    (tmp_path / "broken.safetensors").write_bytes(b"this is not a checkpoint")
    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    at = compared(DECAY, "user/broken")
    assert len(at.error) == 1 and at.error[0].value.startswith("That file cannot be used")
    assert not at.get("plotly_chart") and not at.dataframe
