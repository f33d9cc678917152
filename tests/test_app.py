"""AppTest: app.py and every page run without exception, widgets at their extremes."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.presets import SYNTHETIC, preset_kernel

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PRESETS = ["exponential", "spike_smooth", "oscillating", "tno", "ski", "fd"]



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


def plotly_array(value) -> np.ndarray:
    """A Plotly JSON array: a list, or {"dtype", "bdata"} with the bytes in base64."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value, dtype=float)


def test_home_page_renders_and_links_to_basics():
    at = open_page()
    assert at.title[0].value == "Toeplitz Lab"
    assert at.selectbox(key="device").options[:2] == ["auto", "cpu"]


BASICS_FIGURE = "basics-figure"  # the key of Basics' Toeplitz figure (pages/basics.py)


def figure(at: AppTest) -> dict:
    """The data Basics sends its Toeplitz figure (pages/figures/toeplitz.js)."""
    return json.loads(at.get("bidi_component")[0].proto.json)


def move(at: AppTest, **values) -> None:
    """What the figure's browser sends on release: its settled values; then the rerun."""
    state = at.session_state[BASICS_FIGURE] if BASICS_FIGURE in at.session_state else {}
    at.session_state[BASICS_FIGURE] = {**state, **values}
    at.run()


def figure_coefficients(data: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(data["kernel"]["coefficients"]), "<f8")


@pytest.mark.parametrize("preset", PRESETS)
def test_basics_every_preset_at_extreme_lengths(preset):
    at = open_page("pages/basics.py")
    at.selectbox(key="preset").set_value(preset).run()
    for n, decay, causal in itertools.product((1, 2, 4096), (0.5, 1.0), (False, True)):
        move(at, n=n, decay=decay, causal=causal)
        assert not at.exception, (preset, n, decay, causal)
        assert not at.error, (preset, n, decay, causal, [e.value for e in at.error])
        # The FFT product and the dense product agree on the page, for every setting.
        assert float(metric(at, "max |FFT − dense|")) < 1e-9
        # The figure gets a synthetic kernel's formula, which it evaluates itself, or an
        # operator's kernel computed at exactly this setting (FD-TNN has no decay).
        data = figure(at)
        if preset in SYNTHETIC:
            assert data["kernel"] == {"formula": preset}
            continue
        expected = preset_kernel(preset, n, decay, causal).numpy()
        assert np.array_equal(figure_coefficients(data), expected)
        assert (data["kernel"]["n"], data["kernel"]["causal"]) == (n, causal)
        assert data["kernel"]["decay"] == (None if preset == "fd" else decay)
        assert ("decay" in data["inactive"]) == (preset == "fd")


def test_basics_operator_channel_extremes_and_cpu_device():
    at = open_page()
    at.selectbox(key="device").set_value("cpu").run()
    at.switch_page("pages/basics.py").run()
    at.selectbox(key="preset").set_value("fd").run()
    for channel in (0, 15):
        move(at, channel=channel)
        assert not at.exception and not at.error
        assert figure(at)["kernel"]["channel"] == channel


def test_basics_draws_t_and_the_kernel_in_the_browser_only():
    """The figure draws T (every ⌈n/256⌉-th row and column: tests/test_figure_toeplitz.py)
    and the kernel; the page draws no second, server-side copy of them."""
    at = open_page("pages/basics.py")
    move(at, n=1024)
    assert figure(at)["cells"] == 256 and not at.get("plotly_chart")
    assert at.query_params["n"] == "1024"


def url_params(at: AppTest, keys: list[str]) -> dict[str, str]:
    """The query string a browser shows for these bound widgets, written as Streamlit writes
    it (AppTest does not see the frontend's URL): a select box's displayed label, numbers
    without a trailing .0, booleans in lower case."""
    params = {}
    for key in keys:
        widget = next(w for kind in ("selectbox", "slider", "number_input", "toggle",
                                     "text_input") for w in getattr(at, kind) if w.key == key)
        value = widget.value
        if widget.type == "selectbox":
            value = widget.options[widget.index]
        elif isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, float) and value == int(value):
            value = int(value)
        params[key] = str(value)
    return params


def open_link(page: str, params: dict[str, str]) -> AppTest:
    """A fresh session opened on ``page`` from a shared link with these query params."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


@pytest.mark.parametrize("settings", [
    dict(preset="tno", channel=3, n=100, decay=0.8, causal=True, cell=[70, 2], seed=7),
    dict(preset="custom", coefficients="1, -2, 3.5, 0.25, 0", causal=True, seed=3),
])
def test_basics_share_link_opens_the_same_kernel(settings):
    """Every control of Basics and the sidebar seed travel in the link: a fresh session
    opened from it shows the same figure, with the same kernel."""
    at = open_page("pages/basics.py")
    at.number_input(key="seed").set_value(settings["seed"]).run()
    at.selectbox(key="preset").set_value(settings["preset"]).run()
    move(at, **{k: v for k, v in settings.items() if k not in ("preset", "seed")})
    assert not at.exception and not at.error
    params = url_params(at, ["preset", "seed"])  # the bound widgets'
    params |= dict(at.query_params)  # the figure's values, which the page writes there
    keys = {"n", "decay", "causal", "channel", "cell_i", "cell_j"}
    keys |= {"coefficients"} if settings["preset"] == "custom" else set()
    assert keys <= set(params)
    shared = open_link("pages/basics.py", params)
    assert url_params(shared, ["preset", "seed"]) == url_params(at, ["preset", "seed"])
    assert dict(shared.query_params) == params
    assert figure(shared) == figure(at)
    assert not shared.error


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
    move(at, coefficients=text)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert figure(at)["kernel"] is None  # the figure keeps its text box, and draws nothing
    # The session keeps working: a valid kernel brings the page back.
    move(at, coefficients="0.5 1 0.5")
    assert not at.exception and not at.error
    assert float(metric(at, "max |FFT − dense|")) < 1e-12
    assert np.array_equal(figure_coefficients(figure(at)), [0.5, 1, 0.5])




@pytest.mark.slow  # a training run
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
    at.button(key="save").click().run()
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


# One shipped checkpoint per operator kind, the digits ones: opening a checkpoint starts its
# length sweep on a thread, which goes on under the tests after it: 6 to 11 s of CPU for
# listops and charlm (1×, 2× and 4× n), a fraction of a second for digits (1× only). All
# ten go through the page's lab calls in tests/test_shipped_checkpoints.py.
ONE_PER_KIND = ["digits-tno", "digits-ski", "digits-fd"]


def test_one_per_kind_covers_every_kind_shipped():
    shipped = (Path(APP).parent / "checkpoints").glob("*.safetensors")
    kinds = {path.stem.split("-")[1] for path in shipped}
    assert {name.split("-")[1] for name in ONE_PER_KIND} == kinds


@pytest.mark.parametrize("name", ONE_PER_KIND)
def test_inspect_page_loads_a_shipped_checkpoint_of_each_kind(name):
    at = open_page("pages/inspect.py")
    at.selectbox(key="checkpoint").set_value(name)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert metric(at, "Task") in ("charlm", "listops", "digits", "recall")


@pytest.mark.slow  # the atlas and a channel at n = 1024
def test_inspect_page_draws_one_subsampling_rule():
    """At n = 1024 the drilled-into channel draws every 6th row (192 at most, as on Basics),
    the atlas grid every 16th (64 at most), and the title says so."""
    import json

    at = open_page("pages/inspect.py")
    at.slider(key="atlas_n").set_value(1024).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    channel = next(s for s in specs
                   if "applies at n = 1024 (row 0 on top)" in s["layout"]["title"]["text"])
    assert channel["layout"]["title"]["text"].endswith("(1 row/column in 6 shown)")
    assert channel["data"][0]["z"]["shape"] == "171, 171"
    grid = next(s for s in specs if s["layout"]["title"]["text"].startswith("The first 12 "
                                                                          "channels"))
    assert [trace["z"]["shape"] for trace in grid["data"]] == ["64, 64"] * 12


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
    # Every timed point carries its quartiles as error bars, drawn at the data values.
    time_chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    for trace in time_chart["data"][:3]:
        rows = sorted((r for r in items if r["op"] == trace["name"]), key=lambda r: r["n"])
        assert list(plotly_array(trace["x"])) == [r["n"] for r in rows]
        assert list(plotly_array(trace["y"])) == [r["median_ms"] for r in rows]
        assert list(plotly_array(trace["error_y"]["array"])) == pytest.approx(
            [r["p75_ms"] - r["median_ms"] for r in rows])
    # Two lengths and three rounds: the slopes say they cannot be read as growth.
    slopes = at.dataframe[0].value
    assert all("2 lengths" in t and "3 rounds" in t for t in slopes["trust"])


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


@pytest.mark.slow  # a benchmark grid
def test_speed_page_pareto_caption_and_markers_match_the_data():
    at = open_page("pages/speed.py")
    assert any("Down and to the right is better" in m.value for m in at.markdown)
    at.select_slider(key="pareto_n").set_value(1024)
    at.button(key="pareto_run").click()
    at.run(timeout=300)
    at.session_state["pareto_job"].join(300)  # a background job: the next run draws it
    at.run(timeout=300)
    assert not at.exception and not at.error
    view = at.session_state["pareto"]
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert spec["layout"]["xaxis"]["type"] == "log"
    (vline,) = spec["layout"]["shapes"]
    assert vline["x0"] == vline["x1"] == 1.0  # "as fast as TNO" at speed-up 1 (a data value)
    for trace, series in zip(spec["data"], view.by_band, strict=True):
        assert list(plotly_array(trace["x"])) == pytest.approx(list(series.x))
        assert list(plotly_array(trace["error_x"]["arrayminus"])) == pytest.approx(
            list(series.x - series.low))
        assert all(lo <= x <= hi for lo, x, hi in zip(series.low, series.x, series.high,
                                                        strict=True))


@pytest.mark.slow  # a benchmark grid
def test_speed_page_measures_the_band_crossover():
    """The SKI-vs-TNO-over-m section measures without a grid run and plots one line per n."""
    at = open_page("pages/speed.py")
    at.select_slider(key="band_max_n").set_value(1024)
    at.button(key="band_run").click()
    at.run(timeout=300)
    at.session_state["band_job"].join(300)  # a background job: the next run draws it
    at.run(timeout=300)
    assert not at.exception and not at.error, [e.value for e in at.error]
    view = at.session_state["band_cross"]
    assert {r["band"] for r in view.records} == {4, 8, 16, 32, 64}
    assert [c["n"] for c in view.crossings] == [1024]
    assert all(r["ski_ms"] > 0 and r["tno_ms"] > 0 for r in view.records)
    assert [s.name for s in view.lines] == ["n = 1024"]
    assert at.get("plotly_chart") and at.dataframe
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    (hline,) = spec["layout"]["shapes"]
    assert hline["y0"] == hline["y1"] == 1.0  # speed-up 1 on the log axis, a data value
    assert [t["name"] for t in spec["data"]] == ["n = 1024", "n = 1024, flops"]
