"""Compress's messages on uploads it cannot use as they are (issue 35, third pass): a
refusal names the file, not an internal id; a model trained shorter than the page's defaults
opens with the defaults brought within it (said in a caption, no error); a source the
conversion would refuse is refused before anything starts, in a sentence with no class name;
counts agree with their nouns. Every file is built here, small."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.compress_fixtures import APP
from tests.hostile import HISTORY, TASK_INFO, tiny_checkpoint, tiny_model
from tnn_core.compress import CompressionPlan, convert
from tnn_core.lab.common.uploads import upload_key
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.checkpoint import save

INTERNAL = re.compile(r"upload:[0-9a-f]{12}|/work/|/tmp/|\.venv|Traceback|[A-Z][a-z]+Error\b")


def saved(model: torch.nn.Module, task: dict = TASK_INFO) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return save(Path(folder) / "model.safetensors", model, task, HISTORY).read_bytes()


def recurrent_checkpoint() -> bytes:
    """The hostile corpus's tiny causal tno (n = 16) with both layers made recurrences of 4
    modes, as ``python -m tnn_core.compress ... --recurrent --state 4`` writes it."""
    converted, _ = convert(tiny_model(), CompressionPlan.recurrent(2, 4), 16)
    return saved(converted.eval())


def one_layer_checkpoint() -> bytes:
    torch.manual_seed(0)
    return saved(build_model(ModelConfig(task="lm", vocab_size=17, num_classes=2, dim=8,
                                         layers=1, operator=OperatorConfig(causal=True))).eval())


def scaled_checkpoint(scale: float) -> bytes:
    """The tiny model with every weight set to ``scale`` (a trained one stays below 5)."""
    model = tiny_model()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(scale)
    return saved(model)


def compress_with_upload(name: str, data: bytes) -> AppTest:
    """A session that uploads ``data`` on Inspect (where uploads are) and opens Compress."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.file_uploader(key="upload").upload(name, data, "application/octet-stream").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.switch_page("pages/compress.py").run()
    at.selectbox(key="checkpoint").set_value(upload_key(data)).run()  # the upload, chosen
    assert not at.exception, at.exception
    return at


def shown(at: AppTest) -> list[str]:
    return [e.value for e in [*at.error, *at.warning, *at.info, *at.caption, *at.markdown]]


def test_an_ssm_upload_is_refused_by_its_file_name():
    """Before: "That setting cannot be used: upload:ca48e9f42291 is a ssm model and cannot be
    converted: ..." (the internal key, "a ssm", and "setting" for a file)."""
    at = compress_with_upload("rec.safetensors", recurrent_checkpoint())
    (error,) = [e.value for e in at.error]
    assert "rec.safetensors" in error and "ssm" in error and "already is a recurrence" in error
    assert "upload:" not in error and "setting" not in error
    assert not INTERNAL.search(error), error


def test_a_model_trained_at_16_opens_with_its_defaults_brought_within_it():
    """Before: a red "That setting cannot be used: every layer: rank must be an integer in
    [2, n] = [2, 16]; got 32" on opening, before anything was touched."""
    at = compress_with_upload("tiny.safetensors", tiny_checkpoint())
    assert not at.error, [e.value for e in at.error]
    assert at.number_input(key="rank").value == 16  # r at most n0 = 16
    assert at.number_input(key="band").value == 9  # within 2 n0 - 2 = 30: unchanged
    notes = [c.value for c in at.caption if c.value.startswith("Brought within")]
    assert len(notes) == 1 and "n0 = 16" in notes[0], [c.value for c in at.caption]
    assert re.search(r": r (32 → 16|starts at 16, not 32)\.$", notes[0]), notes  # r alone
    assert not at.button(key="convert").disabled
    # a value the user chose beyond the model is refused by the widget's own range
    assert at.number_input(key="rank").max == 16


def test_a_value_kept_from_a_longer_model_is_brought_within_a_shorter_one():
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/compress.py").run()  # digits-tno, n0 = 64
    at.number_input(key="rank").set_value(48).run()
    assert not at.error
    at.switch_page("pages/inspect.py").run()
    tiny = tiny_checkpoint()
    at.file_uploader(key="upload").upload("tiny.safetensors", tiny,
                                          "application/octet-stream").run()
    at.switch_page("pages/compress.py").run()
    at.selectbox(key="checkpoint").set_value(upload_key(tiny)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key="rank").value == 16
    assert any("r 48 → 16" in c.value for c in at.caption), [c.value for c in at.caption]


def test_a_one_layer_model_is_one_layer():
    """Before: "recall: tno, causal, 1 layers × 8 channels"."""
    at = compress_with_upload("one.safetensors", one_layer_checkpoint())
    assert any("1 layer × 8 channels" in c.value for c in at.caption), \
        [c.value for c in at.caption]
    assert not any("1 layers" in text for text in shown(at))


@pytest.mark.slow  # an upload, two page runs and a refusal
def test_a_source_the_conversion_refuses_is_refused_before_anything_starts():
    """Before: the conversion started, failed on its thread and showed "The conversion
    failed: ValueError: the source's ... reaches |w| = 2e+04 ..."."""
    at = compress_with_upload("huge.safetensors", scaled_checkpoint(2e4))
    assert not at.error, [e.value for e in at.error]
    at.button(key="convert").click().run()
    assert not at.exception
    assert "compress_job" not in at.session_state  # nothing started
    (error,) = [e.value for e in at.error]
    assert "|w| = 2e+04" in error and not INTERNAL.search(error), error
    at.button(key="search").click().run()
    assert "compress_search" not in at.session_state
    assert any("|w| = 2e+04" in e.value for e in at.error)
    assert not any(INTERNAL.search(text) for text in shown(at)), shown(at)


def test_the_page_never_shows_an_internal_key_or_a_server_path():
    for name, data in (("rec.safetensors", recurrent_checkpoint()),
                       ("tiny.safetensors", tiny_checkpoint())):
        at = compress_with_upload(name, data)
        leaks = [text for text in shown(at) if INTERNAL.search(text)]
        assert not leaks, (name, leaks)
        assert json.dumps(at.session_state["checkpoint"]).startswith('"upload:')  # kept inside
