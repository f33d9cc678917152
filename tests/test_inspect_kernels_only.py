"""Inspect with a model from the authors' code (issue 36): a kernels-only checkpoint opens
with what it is and one line on why it has no score; a file from tnn-pytorch imports
through the page's expander; a refusal or a hostile file is one sentence; the kernels
download holds every layer's ``kernel(n)``.

The download's bytes are the ones a click would fetch: the page's deferred callable, run
by the media file manager of its last run (``keep_media``). The imported kernels are
compared with ``authors_layout.tno_kernel``, our float64 evaluation of the authors'
formulas, to 1e-5 of the largest coefficient (float32 weights)."""

from __future__ import annotations

import argparse
import io
import os
import pickle
from pathlib import Path, PurePath

import numpy as np
import pytest
import torch
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest, app_test

from tests.authors_layout import rpe_state, tnn_stack_state, tno_kernel
from tests.kernels_only import kernels_only_bytes
from tnn_core.lab import inspect as inspect_lab
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training import checkpoint

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TRACEBACK_WORDS = ("Traceback", 'File "')


@pytest.fixture
def keep_media(monkeypatch) -> list[MediaFileManager]:
    """The media file managers of each AppTest run, kept (AppTest drops its own)."""
    made: list[MediaFileManager] = []

    class Kept(MediaFileManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(app_test, "MediaFileManager", Kept)
    return made


def downloaded(at: AppTest, media: list[MediaFileManager], key: str) -> bytes:
    """The bytes the download button ``key`` gives when clicked."""
    buttons = [b for b in at.get("download_button") if b.proto.id.endswith(key)]
    assert len(buttons) == 1, f"one download button {key!r}"
    url = media[-1].execute_deferred(buttons[0].proto.deferred_file_id)
    return media[-1].read_file(PurePath(url).stem).content


def inspect_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    return at


def upload(at: AppTest, data: bytes, name: str = "tnn-import.safetensors") -> AppTest:
    at.file_uploader(key="upload").upload(name, data, "application/octet-stream").run()
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    for error in at.error:
        assert not any(word in error.value for word in TRACEBACK_WORDS), error.value


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def source_line(at: AppTest) -> str:
    """The header's "Imported from": file, format, module, SHA-256, opening length."""
    lines = [m.value for m in at.markdown if "SHA-256" in m.value]
    assert len(lines) == 1, lines
    return lines[0]


def import_file(at: AppTest, data: bytes, name: str, **settings) -> AppTest:
    """The expander's upload of ``data``, its settings, then Import."""
    at.file_uploader(key="foreign_upload").upload(name, data, "application/octet-stream")
    at.run()
    for field, value in settings.items():
        widget = (at.number_input if field in inspect_lab.IMPORT_NUMBERS else at.selectbox)
        widget(key=f"import_{field}").set_value(value)
    at.button(key="foreign_import").click().run()
    return at


def saved(state) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def loaded(data: bytes):
    return checkpoint.load_bytes(data, "test")


@pytest.mark.slow
def test_a_kernels_only_checkpoint_opens_with_its_facts_and_one_reason():
    data = kernels_only_bytes(layers=2, dim=24, causal=True, n=64)
    at = upload(inspect_page(), data)
    assert_clean(at)
    assert at.selectbox(key="checkpoint").value.startswith("upload:")
    shown = metrics(at)
    assert shown == {"Task": "none", "Operator, causal": "tno", "Channels × layers": "24 × 2"}
    info = loaded(data)[1]
    assert source_line(at) == inspect_lab.imported_about(info).markdown()
    assert source_line(at).startswith("**tnn\\_stack\\.pt**  \ntnn\\-pytorch  \nSHA-256 "
                                      f"{'ab' * 6}… · its kernels open at n = 64")
    reason = inspect_lab.kernels_only_reason(info.task)
    assert [i.value for i in at.info] .count(reason) == 1, "the reason, once, in the header"
    subheaders = {h.value for h in at.subheader}
    assert {"Kernel atlas", "Layer 0, channel 0", "Beyond the training length"} <= subheaders
    assert not subheaders & {"Write text", "Kernels during training"}
    assert not [e for e in at.expander if e.label == "Compare with another run"]
    at.number_input(key="layer").set_value(1).run()
    at.number_input(key="channel").set_value(23).run()
    assert_clean(at)
    assert "Layer 1, channel 23" in {h.value for h in at.subheader}


@pytest.mark.slow
def test_a_trained_run_compared_with_token_mixers_says_why_they_have_no_score():
    data = kernels_only_bytes()
    at = upload(inspect_page(), data)
    imported = at.selectbox(key="checkpoint").value
    at.selectbox(key="checkpoint").set_value("digits-tno").run()
    at.selectbox(key="compare_with").set_value(imported).run()
    assert_clean(at)
    reason = inspect_lab.kernels_only_reason(loaded(data)[1].task)
    assert any(c.value.endswith(reason) for c in at.caption)


@pytest.mark.slow
@pytest.mark.parametrize("causal", [True, False])
def test_the_kernels_download_is_every_layers_kernel(keep_media, causal):
    data = kernels_only_bytes(layers=2, dim=24, causal=causal, n=64)
    model, _ = loaded(data)
    at = upload(inspect_page(), data)
    for n in (64, 7):  # its training length, then one chosen
        if n != 64:
            at.number_input(key="kernels_n").set_value(n).run()
        assert_clean(at)
        arrays = np.load(io.BytesIO(downloaded(at, keep_media, "kernels_npz")))
        assert sorted(arrays.files) == ["layer0", "layer1"]
        for i, op in enumerate(model.operators()):
            assert arrays[f"layer{i}"].shape == (24, 2 * n - 1)
            np.testing.assert_allclose(arrays[f"layer{i}"], op.kernel(n).detach().numpy(),
                                       rtol=1e-6, atol=1e-7)
            if causal:
                assert not arrays[f"layer{i}"][:, : n - 1].any(), "zeros at negative lags"
    layout = [c.value for c in at.caption if "k = j − (n − 1)" in c.value]
    assert len(layout) == 1 and ("causal" in layout[0]) == causal


@pytest.mark.slow
def test_a_tnn_pytorch_stack_imports_through_the_page_exactly(keep_media):
    state = tnn_stack_state(seed=3, layers=2, dim=4, rpe_layers=1, gamma=0.9)
    at = import_file(inspect_page(), saved(state), "tnn_stack.pt", causal=True, length=32)
    assert_clean(at)
    assert not at.error
    assert at.selectbox(key="checkpoint").value.startswith("upload:")
    assert metrics(at)["Channels × layers"] == "12 × 2"
    assert source_line(at).startswith("**tnn\\_stack\\.pt**  \n")
    assert "the authors' Tno" in source_line(at) and "open at n = 32" in source_line(at)
    table = next(d.value for d in at.dataframe if "origin" in d.value.columns)
    rows = {row.setting: (row.value, row.origin) for row in table.itertuples()}
    assert rows["causal"] == ("True", "chosen at import")
    assert rows["length (its kernels open at)"] == ("32", "chosen at import")
    assert rows["par_type"] == ("1", "the authors' README default")
    assert any("--causal --length 32" in c.value for c in at.code), "the equivalent command"
    arrays = np.load(io.BytesIO(downloaded(at, keep_media, "kernels_npz")))
    for i in range(2):
        theirs = tno_kernel(state, f"{i}.token_mixer.toep.", 32, causal=True)
        ours = arrays[f"layer{i}"].astype(np.float64)
        assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(theirs).max()


def _fairseq(args: argparse.Namespace, extra: dict) -> dict:
    rng = np.random.default_rng(0)
    layer = {k.removeprefix("x."): v for k, v in rpe_state(rng, "x.", 8, 1, 4).items()} | extra
    return {"model": {f"decoder.layers.0.self_attn.gtu.toep.{k}": v for k, v in layer.items()},
            "args": args}


@pytest.mark.slow
@pytest.mark.parametrize("source,settings,words", [
    (_fairseq(argparse.Namespace(tno_type="skitno"), {"inducing": torch.zeros(8)}), {},
     ("SKITno",)),
    (_fairseq(argparse.Namespace(causal=True), {}), {"causal": False},
     ("contradicts the checkpoint's saved training arguments",)),
])
def test_a_refusal_is_the_librarys_one_sentence(source, settings, words):
    at = import_file(inspect_page(), saved(source), "checkpoint_best.pt", **settings)
    assert_clean(at)
    assert len(at.error) == 1 and all(word in at.error[0].value for word in words)
    assert at.error[0].value.count(". ") <= 1
    assert not any(key.startswith("upload:") for key in at.selectbox(key="checkpoint").options)


class _RunsCode:
    """A pickle that would create ``path`` if anything ever unpickled it for real."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def _hostile(marker: Path) -> dict[str, bytes]:
    zipped = saved({"w": torch.zeros(4)})
    return {"random.pt": np.random.default_rng(1).bytes(4096),
            "runs-code.pt": pickle.dumps(_RunsCode(marker), protocol=2),
            "runs-code-in-zip.pt": saved({"model": {}, "args": _RunsCode(marker)}),
            "truncated.pt": zipped[: len(zipped) // 2],
            "huge-header.safetensors": (2**40).to_bytes(8, "little") + b"{}",
            "empty.bin": b""}


@pytest.mark.slow
def test_hostile_bytes_end_in_one_sentence_and_run_nothing(tmp_path):
    marker = tmp_path / "ran"
    at = inspect_page()
    for name, data in _hostile(marker).items():
        if not data:
            continue  # an empty upload is no file to the widget: Import stays disabled
        import_file(at, data, name)
        assert_clean(at)
        assert len(at.error) == 1, (name, [e.value for e in at.error])
        assert not marker.exists(), name
    with pytest.raises(ValueError, match="empty"):
        inspect_lab.import_upload("empty.bin", b"", {})


@pytest.mark.slow
def test_a_togeipi_checkpoint_says_why_its_kernels_cannot_be_downloaded():
    config = ModelConfig(task="kernels", dim=8, layers=1, expand_ratio=1,
                         operator=OperatorConfig(kind="togeipi", heads=2, max_length=64))
    model = build_model(config).eval()
    refusal = inspect_lab.kernels_refusal(model, 64)
    assert refusal is not None and "togeipi" in refusal
    with pytest.raises(ValueError, match="togeipi"):
        inspect_lab.kernels_npz(model, 64)
    info = {"name": "kernels", "settings": {"seq_len": 64},
            "source": {"name": "t.pt", "format": "test", "sha256": "cd" * 32}}
    at = upload(inspect_page(), checkpoint.to_bytes(model, info, {}))
    assert_clean(at)
    assert not [b for b in at.get("download_button") if b.proto.id.endswith("kernels_npz")]
    assert any(refusal in c.value for c in at.caption)


@pytest.mark.parametrize("kind", ["tno", "ski", "fd"])
@pytest.mark.parametrize("causal", [True, False])
def test_every_channel_kind_exports_its_kernels(kind, causal):
    config = ModelConfig(task="kernels", dim=6, layers=3, expand_ratio=1,
                         operator=OperatorConfig(kind=kind, causal=causal))
    model = build_model(config).eval()
    assert inspect_lab.kernels_refusal(model, 9) is None
    arrays = np.load(io.BytesIO(inspect_lab.kernels_npz(model, 9)))
    assert arrays.files == ["layer0", "layer1", "layer2"]
    for i, op in enumerate(model.operators()):
        np.testing.assert_array_equal(arrays[f"layer{i}"], op.kernel(9).detach().numpy())
        assert not causal or not arrays[f"layer{i}"][:, :8].any()
    layout = inspect_lab.kernels_layout(model)
    assert "`layer0` … `layer2`" in layout and ("causal" in layout) == causal
    assert ("not Toeplitz" in layout) == (kind == "ski" and not causal)


def test_a_download_too_large_is_refused_before_anything_is_computed():
    model, _ = loaded(kernels_only_bytes(layers=2, dim=24))
    n = inspect_lab.MAX_DOWNLOAD_NUMBERS // 48 + 1
    assert "choose a smaller n" in inspect_lab.kernels_refusal(model, n)
    assert inspect_lab.kernels_refusal(model, 512) is None


def test_what_an_imported_checkpoint_says_about_itself():
    _, info = loaded(kernels_only_bytes())
    about = inspect_lab.imported_about(info)
    assert (about.name, about.format, about.sha_prefix) == ("tnn_stack.pt", "tnn-pytorch",
                                                            "ab" * 6)
    assert about.settings == () and about.length == 64 and about.module is None
    made = inspect_lab.import_upload("stack.pt", saved(tnn_stack_state(1, 1, 2)),
                                     {"causal": False, "heads": None, "par_type": 2})
    about = inspect_lab.imported_about(loaded(made.data)[1])
    assert about.module == "Tno" and about.sha256 != ""
    assert about.commands == ("python -m tnn_core.convert stack.pt --out stack.safetensors "
                              "--no-causal --par-type 2",)
    assert {s.name: s.origin for s in about.settings}["heads"] == "the authors' README default"
    shipped = Path(APP).parent / "checkpoints" / "digits-tno.safetensors"
    assert inspect_lab.imported_about(checkpoint.load(shipped)[1]) is None
