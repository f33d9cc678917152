"""The paths that keep Inspect quick, tested for what they do (nothing here is timed).

The server-wide memo computes a view once for every caller, the warm-up prepares exactly
what the page then reads and waits for quiet, the length sweep comes in on its own thread,
and the atlas fragment still updates what its sliders change.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoint_views, memo, streamlit_internals, warmup
from tnn_core.lab import inspect as inspect_lab
from tnn_core.lab.common.quiet_timing import QuietTimer

APP = str(Path(__file__).resolve().parents[1] / "app.py")


# -- the server-wide memo --------------------------------------------------------------------
def test_concurrent_callers_share_one_computation():
    calls, gate = [], threading.Event()

    @memo.memo(max_entries=4)
    def slow(x: int, digest: str = "d", _note: str = "") -> int:
        calls.append(x)
        gate.wait(5)
        return 10 * x

    results = []
    threads = [threading.Thread(target=lambda: results.append(slow(3, _note="any")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    gate.set()
    for thread in threads:
        thread.join(5)
    assert results == [30] * 4 and calls == [3]  # "_note" is no part of the key
    assert slow.has(x=3) and slow(x=3) == 30 and calls == [3]  # by name: the same key


def test_the_memo_keeps_the_newest_entries_and_keeps_failures():
    calls = []

    @memo.memo(max_entries=2)
    def square(x: int) -> int:
        calls.append(x)
        if x < 0:
            raise ValueError(f"x must be >= 0; got {x}")
        return x * x

    for x in (1, 2, 1, 3):  # 2 is the least recently used when 3 comes
        square(x)
    assert square.has(1) and square.has(3) and not square.has(2)
    for _ in range(2):
        with pytest.raises(ValueError, match="got -1"):
            square(-1)
    assert calls == [1, 2, 3, -1]  # the failure was computed once


def test_a_started_value_arrives_on_its_own_thread_and_torch_threads_are_restored():
    seen = {}
    threads_before = torch.get_num_threads()

    @memo.memo(max_entries=2, threads=memo.VIEW_THREADS)
    def work(x: int) -> int:
        seen["threads"] = torch.get_num_threads()
        seen["thread"] = threading.current_thread().name
        return x + 1

    assert work.start(1).result(timeout=10) == 2
    assert seen == {"threads": memo.VIEW_THREADS, "thread": "memo-work"}
    assert work(2) == 3 and seen["thread"] == threading.current_thread().name
    assert torch.get_num_threads() == threads_before


# -- the warm-up -----------------------------------------------------------------------------
def test_the_warm_up_waits_for_quiet_and_outlives_a_failing_job(monkeypatch):
    monkeypatch.setattr(warmup, "QUIET_S", 0.2)
    monkeypatch.setattr(warmup, "IMPORTS", ())
    steps, script_ended = [], []

    def job(name: str, fail: bool = False):
        steps.append((name, time.monotonic()))
        yield
        if fail:
            raise RuntimeError("a broken checkpoint")
        steps.append((f"{name} again", time.monotonic()))
        yield

    def page_script():
        time.sleep(0.3)
        script_ended.append(time.monotonic())

    script = threading.Thread(target=page_script, name=streamlit_internals.SCRIPT_THREAD)
    script.start()  # a page script runs: no step before it ends and the quiet after it
    timer = QuietTimer()
    try:
        warmup._run(lambda: [job("a", fail=True), job("b")], timer)
    finally:
        timer.close()
    script.join()
    assert [name for name, _ in steps] == ["a", "b", "b again"]
    assert steps[0][1] >= script_ended[0] + 0.2


@pytest.mark.slow  # a listops length sweep (a digits model runs at its own length only)
def test_the_warm_up_prepares_exactly_what_the_page_reads(monkeypatch):
    """After the warm-up's steps for a checkpoint, opening it on Inspect computes nothing."""
    for _ in checkpoint_views._opening_view("listops-ski"):
        pass
    computed = []
    for name in ("atlas_view", "channel_matrix", "extrapolation", "length_sweep"):
        original = getattr(inspect_lab, name)
        monkeypatch.setattr(inspect_lab, name,
                            lambda *a, _name=name, _f=original, **k: computed.append(_name)
                            or _f(*a, **k))
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.session_state["_handoff"] = ("pages/inspect.py", {"checkpoint": "listops-ski"})
    at.switch_page("pages/inspect.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="checkpoint").value == "listops-ski"
    assert computed == []
    assert any("This model at 1×, 2× and 4×" in m.value for m in at.markdown)


def test_a_page_opened_during_the_warm_up_shows_the_same_views():
    """The warm-up thread and a session compute the same checkpoint at once: one result."""
    warming = threading.Thread(
        target=lambda: [None for _ in checkpoint_views._opening_view("digits-fd")])
    warming.start()
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.session_state["_handoff"] = ("pages/inspect.py", {"checkpoint": "digits-fd"})
    at.switch_page("pages/inspect.py").run()
    warming.join(120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    # the header's evaluation, done
    assert checkpoint_views.length_sweep("digits-fd", 120) is not None
    at.run()
    first = [(m.label, m.value) for m in at.metric], [c.proto.spec for c in at.get("plotly_chart")]
    at.run()
    assert ([(m.label, m.value) for m in at.metric],
            [c.proto.spec for c in at.get("plotly_chart")]) == first


# -- the page --------------------------------------------------------------------------------
def open_inspect(name: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.session_state["_handoff"] = ("pages/inspect.py", {"checkpoint": name})
    at.switch_page("pages/inspect.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def grid(at: AppTest) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["layout"]["title"]["text"].startswith("The first"))


def test_atlas_sliders_update_the_atlas_and_a_new_length_the_channel_view():
    at = open_inspect("digits-tno")
    before = grid(at)
    assert [trace["z"]["dtype"] for trace in before["data"]] == ["f4"] * 12
    at.slider(key="atlas_band").set_value(3).run()
    assert not at.exception
    assert any("with the band |k| ≤ 1" in m.value for m in at.markdown)
    at.toggle(key="atlas_off_band").set_value(True).run()
    assert grid(at)["layout"]["title"]["text"].startswith("The first 12 channels in this "
                                                            "order: T − band")
    assert grid(at)["data"] != before["data"]
    at.slider(key="atlas_n").set_value(40).run()
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any("applies at n = 40 (row 0 on top)" in title for title in titles)


@pytest.mark.slow  # waits for a charlm length sweep
def test_the_length_sweep_is_drawn_once_its_thread_is_done():
    at = open_inspect("charlm-tno-nodecay")
    checkpoint_views.start_length_sweep("charlm-tno-nodecay").result(timeout=120)
    at.run()
    assert any("at 1×, 2× and 4× its training length n = 128" in m.value for m in at.markdown)
    assert not any("the results appear here in a moment" in c.value for c in at.caption)
