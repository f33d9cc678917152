"""Compress's recurrent form (AppTest): a causal source offers "recurrent (SSM), s modes"
for every layer and per layer, a bidirectional one says why not; the converted model has
SSM layers, shows s and its errors, saves, and writes text on Inspect."""

from __future__ import annotations

import pytest

from tests.compress_fixtures import JOB_TIMEOUT_S, small_charlm_checkpoint
from tnn_core.compress import CompressionPlan
from tnn_core.generate import Sampling, vocab_of, write
from tnn_core.lab import compress as lab
from tnn_core.training import checkpoint

RECURRENT = "recurrent (SSM), s modes"


def test_a_bidirectional_source_says_why_it_has_no_recurrent_form(compress_page):
    at = compress_page  # digits-tno, bidirectional
    form = at.radio(key="compress_form")
    assert form.disabled and form.value == "band + low rank"
    assert any(c.value.startswith("Recurrent (SSM) is offered for causal models only")
               for c in at.caption)
    assert at.number_input(key="compress_state").disabled
    assert "recurrent" not in at.selectbox(key="layer_method_0").options
    assert not at.button(key="convert").disabled  # band + low rank as before


@pytest.mark.slow  # a small causal model converted, scored, timed, saved, opened and writing
def test_a_recurrent_plan_converts_to_ssm_layers_saves_and_writes(compress_page, tmp_path):
    at = compress_page
    # compress_page saves to and lists tmp_path. Seed 5: its greedy text varies (seed 0's is
    # "fffff" then newlines, and a code block drops a text's last newline)
    small_charlm_checkpoint(tmp_path, seed=5)
    at.run()
    at.selectbox(key="checkpoint").set_value("user/small-charlm").run()
    form = at.radio(key="compress_form")
    assert not form.disabled and RECURRENT in form.options
    assert at.number_input(key="band").disabled is False
    form.set_value(RECURRENT).run()
    assert at.number_input(key="band").disabled and at.number_input(key="rank").disabled
    at.number_input(key="compress_state").set_value(8).run()
    assert not at.error, [e.value for e in at.error]
    at.button(key="convert").click().run()
    assert not at.exception, at.exception
    job = at.session_state["compress_job"]
    job.join(timeout=JOB_TIMEOUT_S)
    at.run()
    assert not at.exception and job.snapshot()[3] is None
    result = job.result
    assert result.plan == CompressionPlan.recurrent(2, 8)
    assert at.caption[[c.value for c in at.caption].index(
        "Plan: layer 0: recurrent, s = 8; layer 1: recurrent, s = 8.")]
    layers = at.dataframe[-1].value
    assert list(layers["plan"]) == ["recurrent, s = 8"] * 2
    assert list(layers["relative error"]) == pytest.approx(result.errors)
    assert 0 < max(result.errors) < 0.05  # its decayed kernels are near-exponential
    assert any("its error is ‖T − T̂‖_F / ‖T‖_F like every layer's, the diagonal counted in "
               "‖T‖_F" in c.value for c in at.caption)
    unit = lab.Unit("bpc", False)
    low, high = result.converted.ci95
    assert f"95 % interval {unit.show(low)} to {unit.show(high)}" in [c.value for c in at.caption]
    # Save and inspect: SSM layers, and the Write text section writes with the recurrence.
    at.text_input(key="compress_save_name").set_value("charlm-ssm8")
    at.button(key="compress_save").click().run()
    assert not at.exception, at.exception
    model, info = checkpoint.load(tmp_path / "charlm-ssm8.safetensors")
    assert [op.config.kind for op in model.operators()] == ["ssm", "ssm"]
    assert at.selectbox(key="checkpoint").value == "user/charlm-ssm8"
    at.switch_page("pages/inspect.py").run()  # AppTest's next run: Inspect again
    assert at.selectbox(key="checkpoint").value == "user/charlm-ssm8"
    at.number_input(key="write_characters").set_value(30)
    at.number_input(key="write_temperature").set_value(0.0).run()
    at.button(key="write_generate").click().run()
    writing = at.session_state["inspect_writings"]["user/charlm-ssm8"]
    writing.join(timeout=JOB_TIMEOUT_S)
    at.run()
    assert not at.exception, at.exception
    expected = "".join(write(model.eval(), vocab_of(info.task), "def ", 30, Sampling(0.0)))
    assert at.code[0].value == "def " + expected
    assert any(m.value.startswith("**user/charlm-ssm8**: recurrence, s = 8 in both layers")
               for m in at.markdown)
    # 8 complex64 modes × 8 channels × 2 layers, at any context
    assert next(m.value for m in at.metric if m.label == "State per sequence") == "1.0 KiB"


def test_per_layer_recurrent_has_its_own_s(compress_page):
    at = compress_page
    at.selectbox(key="checkpoint").set_value("charlm-tno").run()
    at.toggle(key="per_layer").set_value(True).run()
    assert at.number_input(key="layer_state_0").disabled  # not recurrent yet
    at.selectbox(key="layer_method_0").set_value("recurrent").run()
    at.number_input(key="layer_state_0").set_value(4)
    at.selectbox(key="layer_method_1").set_value("keep").run()
    assert not at.error and not at.button(key="convert").disabled
    model, _ = checkpoint.load(checkpoint.SHIPPED_DIR / "charlm-tno.safetensors")
    plan = lab.make_plan([(9, 32, "recurrent", 4), (9, 32, "keep", 16)], model.config, 256,
                         uniform=False)
    assert plan.describe() == "layer 0: recurrent, s = 4; layer 1: kept"
