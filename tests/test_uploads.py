"""Uploaded checkpoints: one copy per content for the server, byte budgets, and the
Inspect page telling a person when an upload was dropped."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.lab.common.uploads import SessionUploads, UploadStore, upload_key

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SHIPPED = Path(APP).parent / "checkpoints" / "digits-tno.safetensors"


def test_the_store_keeps_the_newest_uploads_within_its_budget():
    store = UploadStore(budget=10)
    store.put("a", b"12345")
    store.put("b", b"1234")
    store.put("a", b"12345")  # touched again: now the newest
    store.put("c", b"123")  # 12 bytes > 10: the oldest, b, goes
    assert (store.get("a"), store.get("b"), store.get("c")) == (b"12345", None, b"123")
    assert store.size == 8
    with pytest.raises(ValueError, match="at most 10 bytes; got 11"):
        store.put("d", b"x" * 11)


def test_the_store_is_safe_from_many_sessions_at_once():
    store = UploadStore(budget=1000)
    threads = [threading.Thread(target=lambda i=i: [store.put(f"{i}-{j}", b"x" * 10)
                                                    for j in range(200)]) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.size <= 1000


def test_a_session_drops_its_oldest_uploads_and_says_which():
    session = SessionUploads(budget=10)
    assert session.add("k1", "one.safetensors", 6) == []
    assert session.add("k2", "two.safetensors", 6) == ["one.safetensors"]
    assert session.names() == {"k2": "two.safetensors"}
    assert session.add("k3", "big.safetensors", 50) == ["two.safetensors"]  # keeps the newest


def test_upload_keys_name_the_content():
    assert upload_key(b"a") == upload_key(b"a") != upload_key(b"b")
    assert upload_key(b"a").startswith("upload:") and len(upload_key(b"a")) == 19


def test_inspect_opens_an_upload_and_says_when_one_was_dropped():
    first = SHIPPED.read_bytes()
    second = SHIPPED.with_name("digits-fd.safetensors").read_bytes()
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.session_state["uploads"] = SessionUploads(budget=len(first) + len(second) - 1)
    at.file_uploader(key="upload").upload("first.safetensors", first, "application/octet-stream")
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="checkpoint").value == upload_key(first)
    at.file_uploader(key="upload").upload("second.safetensors", second,
                                          "application/octet-stream")
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox(key="checkpoint").value == upload_key(second)
    assert "first.safetensors (uploaded)" not in at.selectbox(key="checkpoint").options
    assert "second.safetensors (uploaded)" in at.selectbox(key="checkpoint").options
    assert any("first.safetensors" in t.value for t in at.toast)


SAMPLE = ("dim 8000", "layers 10^6", "seq_len 200000", "json nested 100000 deep", "dtype a list",
          "data_offsets a string", "metadata a string", "evals missing step",
          "classes disagree with the task", "header length 2^63")


def test_inspect_refuses_hostile_uploads_with_a_sentence():
    """A sample of tests/hostile.py's corpus uploaded on Inspect: st.error, never an
    exception, and the page goes on with what it showed."""
    from tests.hostile import cases, tiny_checkpoint

    corpus = cases(tiny_checkpoint())
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/inspect.py").run()
    shown = at.selectbox(key="checkpoint").value
    for name in SAMPLE:
        at.file_uploader(key="upload").upload(f"{name}.safetensors", corpus[name],
                                              "application/octet-stream")
        at.run()
        assert not at.exception, name
        assert any("cannot be used" in e.value for e in at.error), name
        assert at.selectbox(key="checkpoint").value == shown, name


def test_inspect_refuses_issue_21s_uploads_before_allocating(tmp_path):
    """A model of which one sequence at 4x its length does not fit the memory limit is
    refused with the budget's sentence before anything is allocated. The corpus's 12.8 MB
    SKI of rank 65536 (it took the server to 4 GB and a 32 GiB request) and the 48-layer
    model whose evaluation never ended open now: one sequence of each fits, so their
    evaluations go in chunks within the limit, in the background. A charlm model naming
    /etc/passwd as its text opens, and asks for its text."""
    from tests.test_hostile_corpus import charlm_checkpoint, ski_checkpoint

    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/inspect.py").run()
    shown = at.selectbox(key="checkpoint").value
    long = charlm_checkpoint(tmp_path / "long.safetensors", dim=64, seq_len=65_536)
    at.file_uploader(key="upload").upload("long.safetensors", long.read_bytes(),
                                          "application/octet-stream")
    at.run()
    assert not at.exception
    assert any("the limit is 1,024 MiB" in e.value for e in at.error), [e.value for e in at.error]
    assert at.selectbox(key="checkpoint").value == shown
    for name, path in (("ski", ski_checkpoint(tmp_path / "ski.safetensors", 65536)),
                       ("deep", charlm_checkpoint(tmp_path / "deep.safetensors", layers=48,
                                                  dim=44, seq_len=1700))):
        at.file_uploader(key="upload").upload(f"{name}.safetensors", path.read_bytes(),
                                              "application/octet-stream")
        at.run()
        assert not at.exception, name
        assert at.selectbox(key="checkpoint").value == upload_key(path.read_bytes()), name
    legacy = charlm_checkpoint(tmp_path / "lm.safetensors", settings={"text": "/etc/passwd"},
                               source={"kind": "file", "name": "x.txt", "sha256": "0" * 64})
    at.file_uploader(key="upload").upload("lm.safetensors", legacy.read_bytes(),
                                          "application/octet-stream")
    at.run()
    assert not at.exception
    assert at.selectbox(key="checkpoint").value == upload_key(legacy.read_bytes())
    assert any("which the checkpoint does not hold" in m.value
               for m in [*at.error, *at.warning, *at.info]), [e.value for e in at.error]
