"""AppTest: app.py and every page run without exception, widgets at their extremes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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
    assert z["shape"] == "256, 256"  # 1024 rows drawn as every 4th


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
