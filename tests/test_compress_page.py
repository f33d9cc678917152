"""The Compress page (AppTest) and the view logic behind it (``tnn_core.lab.compress``): a
conversion runs in the background and its numbers reach the page; bad sources and bad plans
are refused with a sentence; Inspect and Decomposition open it with their settings."""

from __future__ import annotations

import json
import math
import time

import pytest
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoint_views
from tests.compress_fixtures import (
    APP,
    JOB_TIMEOUT_S,
    SMALL_CHARLM_LENGTH,
    small_charlm_checkpoint,
)
from tnn_core.compress import CompressionPlan, convert
from tnn_core.compress.measure import Speedup
from tnn_core.lab import compress as lab
from tnn_core.training import checkpoint
from tnn_core.training.evaluate import score
from tnn_core.training.tasks import task_from_info
from tnn_core.training.verdicts import TOLERANCE


def finish(at: AppTest, name: str):
    """Wait for the page's background job ``name`` and draw the page once it has ended."""
    job = at.session_state[name]
    job.join(timeout=JOB_TIMEOUT_S)
    assert job.snapshot()[2], "the job did not end in time"
    at.run()
    assert not at.exception, at.exception
    return job


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


# -- the page --------------------------------------------------------------------------------
def test_the_page_opens_on_a_convertible_checkpoint(compress_page):
    at = compress_page
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert not at.error
    assert any("trained at n0 = 64" in c.value for c in at.caption)
    assert any("press **Convert**" in i.value for i in at.info)
    assert not at.button(key="convert").disabled


def test_converting_digits_tno_shows_the_metrics_and_saves(compress_page, tmp_path):
    at = compress_page
    at.number_input(key="band").set_value(9)
    at.number_input(key="rank").set_value(16).run()
    at.button(key="convert").click().run()
    assert not at.exception and not at.error
    assert at.button(key="convert").disabled  # one job at a time
    job = finish(at, "compress_job")
    result = job.result
    assert job.snapshot()[3] is None and not result.stopped
    assert result.plan == CompressionPlan.uniform(2, 9, 16, "fit")
    assert result.source is checkpoint_views.evaluation("digits-tno")  # the caption's, not redone
    unit = lab.Unit("accuracy", True)
    assert metric(at, "Source accuracy") == unit.show(result.source.metric)
    assert metric(at, "Converted accuracy") == unit.show(result.converted.metric)
    low, high = result.converted.ci95  # each metric with its interval, and the verdict
    assert f"95 % interval {unit.show(low)} to {unit.show(high)}" in [c.value for c in at.caption]
    assert any(m.value.startswith("Converted, the model ") and "95 % interval" in m.value
               for m in at.markdown)
    assert metric(at, "Chance accuracy") == "10.0 %"
    assert metric(at, "After fine-tuning") == "—"
    assert metric(at, "Speed-up at n = 64 (1× n0)") == f"{result.speedups[1].ratio:.2f}×"
    assert metric(at, "Speed-up at n = 256 (4× n0)") == f"{result.speedups[4].ratio:.2f}×"
    assert metric(at, "Parameters") == f"{result.parameters[1]:,}"
    layers = at.dataframe[-1].value
    assert list(layers["relative error"]) == pytest.approx(result.errors)
    assert 0 < max(result.errors) < 0.2  # digits-tno's tails are smooth: r = 16 holds them
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert bars["data"][0]["x"] == ["source", "converted", "chance"]
    assert bars["data"][0]["y"] == pytest.approx([100 * result.source.metric,
                                                  100 * result.converted.metric, 10.0])
    assert bars["data"][0]["error_y"]["array"][0] == pytest.approx(
        100 * (result.source.ci95[1] - result.source.metric))
    # Save and inspect: the converted model opens on Inspect as a SKI model of the same task.
    at.text_input(key="compress_save_name").set_value("digits-m9r16")
    at.button(key="compress_save").click().run()
    assert not at.exception, at.exception
    assert (tmp_path / "digits-m9r16.safetensors").is_file()
    assert at.selectbox(key="checkpoint").value == "user/digits-m9r16"
    assert metric(at, "Operator, bidirectional") == "ski"
    _, info = checkpoint.load(tmp_path / "digits-m9r16.safetensors")
    assert info.history["lineage"]["source"]["name"] == "digits-tno.safetensors"
    assert any(m.value.startswith("**Lineage.** converted from digits-tno.safetensors")
               for m in at.markdown)  # Inspect shows where it came from


def test_a_stopped_conversion_says_what_is_missing(compress_page):
    at = compress_page
    at.number_input(key="finetune_steps").set_value(5000).run()
    at.button(key="convert").click().run()
    at.session_state["compress_job"].stop()  # what the Stop button does
    job = finish(at, "compress_job")
    assert job.result.stopped and job.result.finetune_steps < 5000
    (warning,) = [w for w in at.warning if not w.value.startswith("This plan adds")]
    assert warning.value.startswith("Stopped")
    assert "speed-ups not measured" in warning.value or \
        f"after {job.result.finetune_steps} of 5000" in warning.value


@pytest.mark.parametrize("name", ["digits-ski", "listops-ski"])
def test_a_ski_checkpoint_is_refused_with_a_sentence(compress_page, name):
    at = compress_page
    at.selectbox(key="checkpoint").set_value(name).run()
    assert not at.exception
    assert len(at.error) == 1
    assert "cannot be converted" in at.error[0].value and "tno and fd" in at.error[0].value
    assert not at.button  # nothing to convert or search


@pytest.mark.parametrize(("band", "rank"), [(9, 100), (200, 16), (9, 65)])
def test_a_plan_beyond_the_training_length_cannot_be_entered(compress_page, band, rank):
    """The inputs stop at what digits-tno (n0 = 64) allows, m ≤ 2 n0 − 2 and r ≤ n0: a value
    beyond is not taken (the plan stays as it was), and nothing is refused."""
    at = compress_page
    at.number_input(key="band").set_value(band)
    at.number_input(key="rank").set_value(rank).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert (at.number_input(key="band").max, at.number_input(key="rank").max) == (126, 64)
    assert at.number_input(key="band").value <= 126 and at.number_input(key="rank").value <= 64
    assert not at.button(key="convert").disabled


def test_a_plan_that_adds_parameters_is_flagged_before_converting(compress_page):
    """At n0 = 64, r = 32 knots per channel outnumber the kernel generator they replace."""
    at = compress_page
    at.number_input(key="band").set_value(9)
    at.number_input(key="rank").set_value(32).run()
    model, _ = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-tno.safetensors")
    plan = CompressionPlan.uniform(2, 9, 32, "fit")
    added = lab.added_parameters(model.config, plan, 64)
    converted, _ = convert(model, plan, 64)  # the estimate is the converted model's count
    assert added == sum(p.numel() for p in converted.parameters()) - sum(
        p.numel() for p in model.parameters()) > 0
    assert [w.value for w in at.warning if w.value.startswith(f"This plan adds {added:,} ")]
    at.number_input(key="rank").set_value(8).run()
    assert not [w for w in at.warning if w.value.startswith("This plan adds")]


def test_per_layer_plans_keep_a_layer_and_refuse_keeping_all(compress_page):
    at = compress_page
    at.toggle(key="per_layer").set_value(True).run()
    at.selectbox(key="layer_method_1").set_value("keep").run()
    assert not at.error and not at.button(key="convert").disabled
    at.selectbox(key="layer_method_0").set_value("keep").run()
    assert len(at.error) == 1 and "every layer is kept" in at.error[0].value


def test_the_allowed_drop_stops_at_the_source_accuracy(compress_page):
    """A drop of accuracy beyond the source's own would put "source, δ worse" below 0 %."""
    delta = compress_page.number_input(key="search_delta_digits-tno")
    model, info = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-tno.safetensors")
    source = score(model, task_from_info(info.task)).metric  # 0.781
    assert delta.max == pytest.approx(math.floor(1000 * source) / 10)
    assert 0 < delta.value <= delta.max
    assert delta.value == pytest.approx(100 * TOLERANCE["accuracy"])  # not the source's ±4.4
    assert "paired 95 % interval" in delta.help


@pytest.mark.slow  # a search: conversions, scores, timings
def test_a_small_search_draws_sensitivity_and_pareto_and_loads_the_best(compress_page):
    at = compress_page
    at.multiselect(key="search_bands").set_value([9])
    at.multiselect(key="search_ranks").set_value([16, 32])
    default = at.number_input(key="search_delta_digits-tno")
    default.set_value(5.0).run()
    at.button(key="search").click().run()
    assert not at.exception and not at.error
    job = finish(at, "compress_search")
    result = job.result
    assert job.snapshot()[3] is None and len(result.scores) >= 2
    assert result.source is checkpoint_views.evaluation("digits-tno")
    charts = {json.loads(c.proto.spec)["layout"]["title"]["text"].split(":")[0]: json.loads(
        c.proto.spec) for c in at.get("plotly_chart")}
    sensitivity = charts["Sensitivity"]
    assert [trace["name"] for trace in sensitivity["data"]] == ["layer 0 alone", "layer 1 alone"]
    assert sensitivity["data"][0]["x"] == ["m=9, r=16", "m=9, r=32"]
    assert sensitivity["data"][0]["y"] == pytest.approx(
        [100 * result.sensitivity[0][p] for p in [(9, 16), (9, 32)]])
    pareto = charts["Candidates"]
    shown = sorted(i[0] for trace in pareto["data"] for i in trace["customdata"])
    assert shown == list(range(len(result.scores)))  # each candidate once
    if result.best is None:  # the timings could not separate the plans: said, none named
        assert result.tied and any("tied for the fastest" in m.value for m in at.markdown)
        (tied,) = [t for t in pareto["data"] if t["name"] == "tied for the fastest within δ"]
        assert sorted(i[0] for i in tied["customdata"]) == sorted(result.tied)
        return
    (best,) = [t for t in pareto["data"] if t["name"] == "fastest within δ"]
    assert best["customdata"] == [[result.best]]
    assert best["x"] == pytest.approx([result.scores[result.best].speedups[1].ratio])
    at.button(key="load_best").click().run()
    assert not at.exception
    plan = result.scores[result.best].plan
    if all(layer == plan.layers[0] for layer in plan.layers):
        assert (at.number_input(key="band").value, at.number_input(key="rank").value) == (
            plan.layers[0].band, plan.layers[0].rank)
    else:
        assert at.toggle(key="per_layer").value


# -- links from the other pages --------------------------------------------------------------
def test_inspect_opens_compress_with_its_checkpoint():
    """digits-fd, not Compress's default digits-tno: its caption names fd. (Compress scores
    the source's evaluation set: listops-fd's 2,048 sequences of 128 take 3 s of CPU,
    digits-fd's 360 of 64 a quarter of a second.)"""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.selectbox(key="checkpoint").set_value("digits-fd").run()
    at.button(key="open_compress").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Compress"
    assert at.selectbox(key="checkpoint").value == "digits-fd"
    assert any(c.value.startswith("digits: fd, bidirectional") and "trained at n0 = 64" in
               c.value for c in at.caption)


def test_inspect_offers_no_compression_of_a_ski_checkpoint():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.selectbox(key="checkpoint").set_value("digits-ski").run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "open_compress"]


def test_decomposition_carries_m_and_r_to_compress():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/decomposition.py").run()
    at.selectbox(key="source").set_value("checkpoint").run()
    at.slider(key="n").set_value(64)
    at.session_state["decomposition_figure"] = {"band": 5, "rank": 24}  # the figure's, released
    at.run()
    (button,) = [b for b in at.button if b.key == "open_compress"]
    assert button.label == "Compress this model with m = 5, r = 24"
    button.click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Compress"
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert (at.number_input(key="band").value, at.number_input(key="rank").value) == (5, 24)


# -- the view logic --------------------------------------------------------------------------
def test_units_show_accuracy_in_points_and_bpc_as_it_is():
    accuracy, bpc = lab.Unit("accuracy", True), lab.Unit("bpc", False)
    assert accuracy.show(0.78055) == "78.1 %" and bpc.show(2.5) == "2.500 bpc"
    assert accuracy.drop_from_display(1.0) == pytest.approx(0.01)
    assert bpc.drop_from_display(0.05) == pytest.approx(0.05)
    assert accuracy.drop_text(0.0125) == "1.2 points worse"
    assert bpc.drop_text(-0.02) == "0.020 bits per character better"
    assert accuracy.change(0.80, 0.78) == "+2.0 points vs the source"


def test_a_speed_row_calls_a_verdict_only_when_its_interval_excludes_one():
    ratios = (1.8, 1.9, 1.95, 2.0, 2.0, 2.05, 2.1, 2.2, 2.3)
    faster = lab.speed_row(1, Speedup(64, tuple(5.0 * r for r in ratios), (5.0,) * 9))
    assert faster.ratio == pytest.approx(2.0)
    assert faster.ratio_ci == pytest.approx((1.9, 2.2))  # the 2nd and 8th of 9
    assert faster.verdict == "faster"
    ratios = (0.7, 0.8, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5)  # median 1.05, interval 0.8-1.3
    noisy = lab.speed_row(4, Speedup(256, tuple(9.0 * r for r in ratios), (9.0,) * 9))
    assert noisy.verdict == "within noise"
    slower = lab.speed_row(4, Speedup(256, (9.0,) * 9, tuple(9.0 / r for r in (0.5,) * 9)))
    assert slower.verdict == "slower"


def test_make_plan_names_the_layer_the_value_and_the_range():
    model, _ = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-tno.safetensors")
    config = model.config
    plan = lab.make_plan([(9, 16, "fit"), (5, 8, "sample")], config, 64, uniform=False)
    assert plan.layers[1].method == "sample"
    with pytest.raises(ValueError, match=r"^layer 1: rank must be .*\[2, n\].*; got 80 "
                                         r"\(the training length n = 64\)"):
        lab.make_plan([(9, 16, "fit"), (9, 80, "fit")], config, 64, uniform=False)
    with pytest.raises(ValueError, match=r"^every layer: rank must be .*\[2, 65536\]; got 1"):
        lab.make_plan([(9, 1, "fit")] * 2, config, 64, uniform=True)
    ski, _ = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-ski.safetensors")
    with pytest.raises(ValueError, match=r"^layer 0 is a ski operator and cannot be converted"):
        lab.make_plan([(9, 16, "fit"), (9, 16, "keep")], ski.config, 64, uniform=False)


def test_the_progress_line_says_what_each_stage_is_doing():
    import numpy as np

    from tnn_core.training.scores import Scores

    unit = lab.Unit("accuracy", True)
    right = Scores("accuracy", True, np.zeros(4), np.array([1.0, 1.0, 1.0, 0.0]), np.ones(4))
    assert lab.progress_text([], unit) == "Converting the layers…"
    assert lab.progress_text([("metric", right, right)], unit).startswith(
        "Source 75.0 %, converted 75.0 %")
    assert lab.progress_text([("finetuned", right)], unit) == "Fine-tuned: 75.0 %"
    assert lab.progress_text([("retime", 3, 2)], unit).startswith(
        "Re-timing the 3 fastest plans within δ (round 2)")
    with pytest.raises(ValueError, match="unknown progress item 'other'"):
        lab.progress_text([("other",)], unit)


def test_the_sweep_table_lays_out_each_s_and_says_what_never_decays():
    """Planted rows: the table and caption of ``lab.state_sweep``, fitted rows not needed."""
    model, _ = checkpoint.load(checkpoint.SHIPPED_DIR / "charlm-tno.safetensors")
    rows = [{"state": 1, "errors": [0.3, 0.2], "undamped": [0, 0]},
            {"state": 2, "errors": [0.04, 0.05], "undamped": [0, 2]},
            {"state": 3, "errors": [0.01, 0.01], "undamped": [0, 0]}]
    table = lab.sweep_table(model.config, rows)
    assert [row["s"] for row in table] == [1, 2, 3]
    assert table[1] == {"s": 2, "layer 0": 0.04, "layer 1": 0.05,
                        lab.NEVER_DECAYING: "layer 1: 2"}
    assert table[0][lab.NEVER_DECAYING] == "—"
    caption = lab.sweep_caption(rows)
    assert "s = 2 is the first whose every layer's error is at most 0.05" in caption
    assert "At s = 2 a fitted pole sits on |z| = 1: that mode never decays" in caption
    unknown = [{**row, "undamped": [None, None]} for row in rows]  # no layer counted
    assert lab.NEVER_DECAYING not in lab.sweep_table(model.config, unknown)[0]
    assert "never decays" not in lab.sweep_caption(unknown)


def test_the_page_tries_the_study_s_states_up_to_8():
    from tnn_core.compress.recurrent_study import STATE_SWEEP
    assert lab.PAGE_STATES == tuple(s for s in STATE_SWEEP if s <= 8) == tuple(range(1, 9))


@pytest.mark.slow  # a small causal model's two layers fitted at s = 1..8, then 1 and 4 again
def test_a_recurrent_form_shows_each_layer_s_error_for_every_s(compress_page, tmp_path):
    at = compress_page
    path = small_charlm_checkpoint(tmp_path)  # compress_page saves to and lists tmp_path
    at.run()
    at.selectbox(key="checkpoint").set_value("user/small-charlm").run()
    at.radio(key="compress_form").set_value("recurrent (SSM), s modes").run()
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not any("s" in frame.value.columns for frame in at.dataframe):
        assert time.monotonic() < deadline and not at.exception, at.exception
        assert any(c.value == lab.SWEEP_WAITING for c in at.caption)
        time.sleep(0.5)
        at.run()
    table = next(frame.value for frame in at.dataframe if "s" in frame.value.columns)
    assert list(table["s"]) == list(lab.PAGE_STATES)
    model, _ = checkpoint.load(path)
    for s in (1, 4):
        _, errors = convert(model, CompressionPlan.recurrent(2, s), SMALL_CHARLM_LENGTH)
        row = table[table["s"] == s]
        assert [float(row[f"layer {i}"].iloc[0]) for i in (0, 1)] == pytest.approx(errors)
    assert any(c.value.startswith("Each layer's relative error with s = 1 to 8 modes")
               for c in at.caption)
