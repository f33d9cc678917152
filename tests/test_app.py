"""AppTest: app.py and every page run without exception, widgets at their extremes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PRESETS = ["exponential", "spike_smooth", "oscillating", "tno", "ski", "fd"]


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch):
    """Run every AppTest run as the server runs after its first page view.

    Streamlit treats a `pages/` folder as "MPA v1" until app.py first calls
    st.navigation; a real server does so once, and `_ui.ensure_app_frame` reruns that
    first view through app.py. AppTest resets the flag before every run, which would
    make every run a first view and drop button clicks in the rerun. The first view of
    a deep link is covered by the browser test instead."""
    init = PagesManager.__init__

    def patched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", patched)


def open_page(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    if page:
        at.switch_page(page).run()
        assert not at.exception
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_home_page_renders_and_links_to_basics():
    at = open_page()
    assert at.title[0].value == "Toeplitz Lab"
    assert at.selectbox(key="device").options[:2] == ["auto", "cpu"]


@pytest.mark.parametrize("preset", PRESETS)
def test_basics_every_preset_at_extreme_lengths(preset):
    at = open_page("pages/basics.py")
    at.selectbox(key="preset").set_value(preset).run()
    for n, decay, causal in itertools.product((1, 2, 1024), (0.5, 1.0), (False, True)):
        at.slider(key="n").set_value(n)
        at.slider(key="decay").set_value(decay)
        at.toggle(key="causal").set_value(causal)
        at.run()
        assert not at.exception, (preset, n, decay, causal)
        assert not at.error, (preset, n, decay, causal, [e.value for e in at.error])
        # The FFT product and the dense product agree on the page, for every setting.
        assert float(metric(at, "max |FFT − dense|")) < 1e-9


def test_basics_operator_channel_extremes_and_cpu_device():
    at = open_page()
    at.selectbox(key="device").set_value("cpu").run()
    at.switch_page("pages/basics.py").run()
    at.selectbox(key="preset").set_value("fd").run()
    for channel in (0, 15):
        at.number_input(key="channel").set_value(channel).run()
        assert not at.exception and not at.error


def test_basics_heatmap_has_row_zero_on_top_and_is_subsampled_for_large_n():
    import json

    at = open_page("pages/basics.py")
    at.slider(key="n").set_value(1024).run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["yaxis"]["autorange"] == "reversed"
    z = spec["data"][0]["z"]  # plotly encodes arrays as {"dtype", "bdata", "shape"}
    assert z["shape"] == "171, 171"  # 1024 rows drawn as every ⌈1024/192⌉ = 6th
    assert spec["layout"]["title"]["text"].endswith("(1 row/column in 6 shown)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 2", "odd count"),
        ("1, nan, 3", "finite"),
        ("a b c", "must be numbers"),
        ("", "got none"),
    ],
)
def test_basics_bad_custom_kernel_shows_error_and_recovers(text, message):
    at = open_page("pages/basics.py")
    at.selectbox(key="preset").set_value("custom").run()
    at.text_input(key="coefficients").set_value(text).run()
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    # The session keeps working: a valid kernel brings the page back.
    at.text_input(key="coefficients").set_value("0.5 1 0.5").run()
    assert not at.exception and not at.error
    assert float(metric(at, "max |FFT − dense|")) < 1e-12


@pytest.mark.parametrize("activation", ["relu", "silu", "gelu"])
def test_frequency_page_extremes(activation):
    at = open_page("pages/frequency.py")
    at.selectbox(key="activation").set_value(activation).run()
    for n, width, depth, smooth in [(1, 1, 0, False), (4096, 128, 4, True), (2, 1, 4, True)]:
        at.slider(key="n").set_value(n)
        at.slider(key="width").set_value(width)
        at.slider(key="depth").set_value(depth)
        at.toggle(key="smooth").set_value(smooth)
        at.run()
        assert not at.exception and not at.error, (activation, n, width, depth, smooth)
        # Causality on the page: the negative lags are exactly zero.
        assert metric(at, "max |k[t]| at t < 0") == "0.0e+00"


def decomposition(**settings) -> AppTest:
    at = open_page("pages/decomposition.py")
    if "source" in settings:  # some widgets appear only for some sources
        at.selectbox(key="source").set_value(settings.pop("source")).run()
    for key, value in settings.items():
        widget = {"source": at.selectbox, "method": at.radio, "causal": at.toggle,
                  "coefficients": at.text_input, "channel": at.number_input}.get(key, at.slider)
        widget(key=key).set_value(value)
    at.run()
    assert not at.exception, settings
    return at


@pytest.mark.parametrize("source", ["spike_smooth", "exponential", "oscillating", "tno", "ski",
                                    "fd"])
@pytest.mark.parametrize(
    "settings",
    [
        {"n": 64, "rank": 2, "band": 1},
        {"n": 64, "rank": 64, "band": 64, "method": "fit"},  # r = n, m = n
        {"n": 2, "rank": 2, "band": 1, "decay": 1.0, "causal": True},
        {"n": 300, "rank": 128, "band": 17, "decay": 0.5, "method": "fit"},
    ],
)
def test_decomposition_extremes(source, settings):
    at = decomposition(source=source, **settings)
    assert not at.error, [e.value for e in at.error]
    # SKI may do worse than the zero matrix (sampled A at r = 2 on an oscillating
    # kernel), but never better than the optimum shown beside it.
    shown = next(m for m in at.metric if m.label == "Relative Frobenius error")
    optimum = float(shown.proto.delta.split()[-1])
    assert float(shown.value) >= optimum * (1 - 1e-2) - 1e-12


def test_decomposition_large_n_runs():
    at = decomposition(n=4096, rank=32, band=9)
    assert not at.error


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"n": 1}, "n"),  # nothing to decompose at n = 1
        ({"n": 16, "rank": 17}, "rank"),  # r > n
        ({"n": 16, "rank": 4, "band": 31}, "band"),  # m >= 2n - 1
    ],
)
def test_decomposition_bad_settings_show_an_error(settings, message):
    at = decomposition(**settings)
    assert len(at.error) == 1 and message in at.error[0].value
    at.slider(key="n").set_value(64).run()  # the session keeps working
    at.slider(key="rank").set_value(8).run()
    at.slider(key="band").set_value(5).run()
    assert not at.exception and not at.error


def test_decomposition_all_zero_kernel_says_relative_errors_are_undefined():
    at = decomposition(source="custom", coefficients="0 0 0 0 0 0 0", rank=2, band=1)
    assert not at.error
    assert any("zero" in w.value for w in at.warning)
    assert metric(at, "Relative Frobenius error") == "—"


def test_train_page_starts_and_stops_a_tiny_run():
    at = open_page("pages/train.py")
    assert any("press **Start**" in i.value for i in at.info)
    at.selectbox(key="task").set_value("recall")
    at.radio(key="size").set_value("tiny")
    at.slider(key="steps").set_value(2000)
    at.button[0].click()  # the form's Start button
    at.run()
    assert not at.exception and not at.error
    run = at.session_state["train_run"]
    assert run.snapshot().status == "running"
    run.stop()  # what the Stop button does
    run.join(timeout=120)
    at.run()
    assert not at.exception
    progress = run.snapshot()
    assert progress.status == "stopped" and progress.step < 2000
    assert any("stopped by request" in s.value.lower() for s in at.success)
    # A finished run can be saved; a bad name is refused with a sentence.
    at.text_input(key="save_name").set_value("../evil")
    at.button[-1].click().run()
    assert not at.exception
    assert len(at.error) == 1 and "name must be" in at.error[0].value


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"\x00\x01\x02binary" * 200, "binary"), (b"caf\xe9 " * 500, "UTF-8")],
)
def test_train_page_rejects_a_bad_text_upload(data, message):
    at = open_page("pages/train.py")
    at.selectbox(key="task").set_value("charlm").run()
    at.file_uploader(key="train_text").upload("notes.txt", data, "text/plain")
    at.button[0].click()
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert "train_run" not in at.session_state


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x80\x04\x95" + b"x" * 64, "pickle"),
        (b"PK\x03\x04" + b"x" * 64, "torch.save"),
        (b"hello, this is not a checkpoint", "safetensors"),
    ],
)
def test_inspect_page_shows_an_error_for_a_bad_upload(data, message):
    at = open_page("pages/inspect.py")
    at.file_uploader(key="upload").upload("bad.safetensors", data, "application/octet-stream")
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value, [e.value for e in at.error]


SHIPPED = sorted(p.stem for p in (Path(APP).parent / "checkpoints").glob("*.safetensors"))


@pytest.mark.parametrize("name", SHIPPED)
def test_inspect_page_loads_every_shipped_checkpoint(name):
    at = open_page("pages/inspect.py")
    at.selectbox(key="checkpoint").set_value(name)
    at.slider(key="atlas_channels").set_value(4)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert metric(at, "Task") in ("charlm", "listops", "digits", "recall")


def test_inspect_page_draws_one_subsampling_rule():
    """At n = 1024 the drilled-into channel draws every 6th row (192 at most, as on Basics),
    the atlas grid every 16th (64 at most), and the title says so."""
    import json

    at = open_page("pages/inspect.py")
    at.slider(key="atlas_channels").set_value(4)
    at.slider(key="atlas_n").set_value(1024).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    channel = next(s for s in specs if s["layout"]["title"]["text"].startswith("T at n = 1024"))
    assert channel["layout"]["title"]["text"].endswith("(1 row/column in 6 shown)")
    assert channel["data"][0]["z"]["shape"] == "171, 171"
    grid = next(s for s in specs if s["layout"]["title"]["text"].startswith("The first 12"))
    assert [trace["z"]["shape"] for trace in grid["data"]] == ["64, 64"] * 8  # 2 layers × 4


def test_decomposition_opens_a_learned_kernel():
    at = open_page("pages/decomposition.py")
    at.selectbox(key="source").set_value("checkpoint").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.number_input(key="layer").set_value(1)
    at.number_input(key="channel").set_value(5)
    at.run()
    assert not at.exception and not at.error
    assert any("layer 1, channel 5" in c.value for c in at.caption)


def test_speed_page_runs_a_tiny_grid_and_offers_csv():
    at = open_page("pages/speed.py")
    assert any("Run benchmark" in i.value for i in at.info)
    at.multiselect(key="bench_ops").set_value(["tno", "ski", "fd"])
    at.radio(key="bench_mode").set_value("forward")
    at.select_slider(key="bench_ns").set_value((256, 512))
    at.select_slider(key="bench_batch").set_value(1)
    at.select_slider(key="bench_dim").set_value(8)
    at.slider(key="bench_repeats").set_value(3)
    at.button[0].click()
    at.run()
    assert not at.exception and not at.error
    job = at.session_state["bench_job"]
    job.join(timeout=120)
    at.run()
    at.run()  # the first run after the job stores its records; the second draws them
    assert not at.exception and not at.error, [e.value for e in at.error]
    fraction, items, done, error = job.snapshot()
    assert done and error is None and len(items) == 3 * 2
    assert {r["op"] for r in items} == {"tno", "ski", "fd"}
    assert all(r["median_ms"] > 0 for r in items)
    assert at.get("download_button"), "results are downloadable as CSV"


def test_speed_page_cancel_stops_the_grid():
    at = open_page("pages/speed.py")
    at.select_slider(key="bench_ns").set_value((256, 16384))
    at.button[0].click()
    at.run()
    job = at.session_state["bench_job"]
    job.stop()  # what the Cancel button does
    job.join(timeout=300)
    at.run()
    assert not at.exception
    fraction, items, done, error = job.snapshot()
    assert done and error is None and fraction < 1.0


def test_speed_page_measures_the_band_crossover():
    """The SKI-vs-TNO-over-m section measures without a grid run and plots one line per n."""
    at = open_page("pages/speed.py")
    at.select_slider(key="band_max_n").set_value(1024)
    at.button(key="band_run").click()
    at.run(timeout=300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    view = at.session_state["band_cross"]
    assert {r["band"] for r in view.records} == {4, 8, 16, 32, 64}
    assert [c["n"] for c in view.crossings] == [1024]
    assert all(r["ski_ms"] > 0 and r["tno_ms"] > 0 for r in view.records)
    assert [s.name for s in view.lines] == ["n = 1024"]
    assert at.get("plotly_chart") and at.dataframe
