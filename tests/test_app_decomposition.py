"""The Decomposition page in AppTest: extremes, clamps, links, the hand-off from Inspect,
markers on their data, warnings, and work done only when asked."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from test_app import open_link, open_page, plotly_array, url_params

DECOMPOSITION_FIGURE = "decomposition_figure"  # the band + W A Wᵀ figure's key (r, m, λ)
DECOMPOSITION_FIGURE_CONTROLS = ("rank", "band", "decay")


def decomposition_figures(at: AppTest) -> dict[str, dict]:
    """The data the Decomposition page sends its figures: {"decomposition": .., "error_curve":
    ..} (pages/figures/decomposition.js and error_curve.js)."""
    return {e.proto.component_name.removeprefix("toeplitz_lab_"): json.loads(e.proto.json)
            for e in at.get("bidi_component")}


def settle_decomposition(at: AppTest, **values) -> None:
    """What the band + W A Wᵀ figure's browser sends on release (rank, band, decay)."""
    state = (at.session_state[DECOMPOSITION_FIGURE] if DECOMPOSITION_FIGURE in at.session_state
             else {})
    at.session_state[DECOMPOSITION_FIGURE] = {**state, **values}


def decomposition(**settings) -> AppTest:
    at = open_page("pages/decomposition.py")
    if "source" in settings:  # some widgets appear only for some sources
        at.selectbox(key="source").set_value(settings.pop("source")).run()
    browser_decay = any(c["name"] == "decay"
                        for c in decomposition_figures(at)["decomposition"]["controls"])
    for key, value in settings.items():
        if key in ("rank", "band") or (key == "decay" and browser_decay):
            settle_decomposition(at, **{key: value})
        elif key == "decay" and not any(w.key == "decay" for w in at.slider):
            continue  # λ does not apply (FD-TNN, typed and learned kernels)
        else:
            widget = {"source": at.selectbox, "method": at.radio, "causal": at.toggle,
                      "coefficients": at.text_input, "channel": at.number_input}.get(key,
                                                                                   at.slider)
            widget(key=key).set_value(value)
    at.run()
    assert not at.exception, settings
    return at


def figure_kernel(data: dict) -> np.ndarray:
    """The kernel the band + W A Wᵀ figure decomposes: the server's lags, or base λ^|k| +
    extra at its λ (what the browser computes, tests/test_figure_decomposition.py)."""
    kernel = data["kernel"]
    unpack = lambda name: np.frombuffer(base64.b64decode(kernel[name]), "<f8")  # noqa: E731
    if "coeffs" in kernel:
        return unpack("coeffs")
    n = kernel["n"]
    decay = next(c["value"] for c in data["controls"] if c["name"] == "decay")
    return unpack("base") * decay ** np.abs(np.arange(-(n - 1), n)) + unpack("extra")


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
    from tnn_core.analysis.decompose import decompose
    from tnn_core.lab.decomposition import drawn

    at = decomposition(source=source, **settings)
    assert not at.error, [e.value for e in at.error]
    data = decomposition_figures(at)["decomposition"]
    n, method = settings["n"], settings.get("method", "sample")
    decay = (settings.get("decay", 0.99) if source in ("tno", "ski", "spike_smooth",
                                                       "exponential", "oscillating") else None)
    want = drawn(n, settings["band"], settings["rank"], decay, method)
    assert data["numbers"]["drawn"] == want  # the server's numbers are for this view
    assert (data["fitted"] is not None) == (method == "fit")
    # SKI may do worse than the zero matrix (sampled A at r = 2 on an oscillating kernel),
    # but the error the figure shows (tnn_core's, cross-tested there) is never below the
    # optimum shown beside it.
    t = figure_kernel(data)
    shown = decompose(t, settings["band"], settings["rank"], causal=settings.get(
        "causal", False), method=method).errors.relative_frobenius
    assert shown >= data["numbers"]["optimalFrobenius"] * (1 - 1e-2) - 1e-12


def test_decomposition_large_n_runs():
    at = decomposition(n=4096, rank=32, band=9)
    assert not at.error
    data = decomposition_figures(at)
    assert data["decomposition"]["kernel"]["n"] == data["error_curve"]["n"] == 4096


@pytest.mark.parametrize(
    ("settings", "drawn_as"),
    [
        ({"n": 16, "rank": 17}, "n=16&band=9&rank=16"),  # r > n
        ({"n": 16, "rank": 4, "band": 31}, "n=16&band=30&rank=4"),  # m > 2n - 2
        ({"source": "custom"}, "n=5&band=8&rank=5"),  # the typed default fixes n = 5
    ],
)
def test_decomposition_clamps_settings_to_n(settings, drawn_as):
    """The figure draws (and says, tests/test_figure_decomposition.py) r and m clamped to
    what n allows; the server's numbers are for those."""
    at = decomposition(**settings)
    assert not at.error, [e.value for e in at.error]
    data = decomposition_figures(at)
    assert data["decomposition"]["numbers"]["drawn"].startswith(drawn_as + "&")
    assert data["decomposition"]["numbers"]["spectral"] is not None
    assert data["error_curve"]["rank"] == int(drawn_as.split("rank=")[1])
    if "source" in settings:  # typed coefficients fix n: the length slider is disabled
        assert at.slider(key="n").disabled
        return
    at.slider(key="n").set_value(64).run()  # the session keeps working
    settle_decomposition(at, rank=8, band=5)
    at.run()
    assert not at.exception and not at.error
    assert decomposition_figures(at)["decomposition"]["numbers"]["drawn"].startswith(
        "n=64&band=5&rank=8&")


def test_decomposition_at_n_1_says_there_is_nothing_to_decompose():
    at = decomposition(n=1)
    assert not at.error
    assert any("n = 1: T is the 1 × 1 matrix" in i.value for i in at.info)
    assert decomposition_figures(at) == {}


def test_decomposition_all_zero_kernel_says_relative_errors_are_undefined():
    at = decomposition(source="custom", coefficients="0 0 0 0 0 0 0", rank=2, band=1)
    assert not at.error
    assert any("zero" in w.value for w in at.warning)
    numbers = decomposition_figures(at)["decomposition"]["numbers"]
    assert numbers["spectral"] is None and numbers["optimalFrobenius"] is None  # shown "—"


SECTIONS = ("cell_open", "theorem1_open", "profiles_open")  # the expanders drawn when open


def decomposition_shown(at: AppTest) -> dict:
    """What the Decomposition page shows, less the timings (they differ run to run): its
    texts, charts and what it sends its figures."""
    timed = ("SKI: band + W A Wᵀ", "FFT product (TNO)", "Dense product")
    return {"metrics": [(m.label, m.value, m.proto.delta) for m in at.metric
                        if m.label not in timed],
            "captions": [c.value for c in at.caption if "quartiles" not in c.value],
            "info": [i.value for i in at.info],
            "warnings": [w.value for w in at.warning],
            "charts": [json.loads(c.proto.spec) for c in at.get("plotly_chart")],
            "figures": decomposition_figures(at)}


def decomposition_link(at: AppTest, keys: list[str]) -> dict[str, str]:
    """The query string of the page's bound widgets and of its figure's controls."""
    widgets = [key for key in keys if any(w.key == key for kind in (
        "selectbox", "slider", "number_input", "toggle", "text_input") for w in getattr(at, kind))]
    return url_params(at, widgets) | {"method": at.radio(key="method").value} | {
        key: at.query_params[key] for key in DECOMPOSITION_FIGURE_CONTROLS
        if key in at.query_params}


@pytest.mark.parametrize("settings", [
    dict(source="tno", channel=3, n=200, decay=0.9, band=7, rank=24, method="fit",
         causal=True, seed=5),
    dict(source="oscillating", n=300, decay=0.95, band=11, rank=40),
    dict(source="custom", coefficients="1 0.5 -2 3 0.25 0.1 0", band=3, rank=3),
    dict(source="checkpoint", layer=1, channel=7, n=96),
])
def test_decomposition_share_link_round_trip(settings):
    """Set the controls, write the URL the browser shows for the bound widgets and the
    figure, open a fresh session on it (the sections open): the same controls, the same
    numbers, captions, charts and figures' data."""
    at = open_page("pages/decomposition.py")
    if "seed" in settings:
        at.number_input(key="seed").set_value(settings.pop("seed")).run()
    at.selectbox(key="source").set_value(settings.pop("source")).run()
    figure_values = {key: settings.pop(key) for key in DECOMPOSITION_FIGURE_CONTROLS
                     if key in settings and not (key == "decay" and any(
                         w.key == "decay" for w in at.slider))}
    settle_decomposition(at, **figure_values)
    for key, value in settings.items():
        widget = {"method": at.radio, "causal": at.toggle, "coefficients": at.text_input,
                  "channel": at.number_input, "layer": at.number_input}.get(key, at.slider)
        widget(key=key).set_value(value)
    for key in SECTIONS:
        at.session_state[key] = True
    at.run()
    assert not at.exception and not at.error
    keys = ["source", "n", "decay", "causal", "seed", "channel", "layer", "checkpoint",
            "coefficients"]
    params = decomposition_link(at, keys)
    assert {k: params[k] for k in figure_values} == {k: str(v) for k, v in figure_values.items()}
    shared = open_link("pages/decomposition.py", params)
    for key in SECTIONS:
        shared.session_state[key] = True
    shared.run()
    assert decomposition_link(shared, keys) == params
    assert decomposition_shown(shared) == decomposition_shown(at)


def test_decomposition_receives_a_kernel_from_inspect():
    """Inspect's "Open this kernel in Decomposition" sends its values with _ui.frame.open_page:
    the page applies them before drawing its widgets and shows that kernel."""
    at = open_page()
    at.session_state["_handoff"] = ("pages/decomposition.py", {
        "source": "checkpoint", "checkpoint": "digits-tno", "layer": 1, "channel": 40, "n": 64})
    at.switch_page("pages/decomposition.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="source").value == "checkpoint"
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert any(c.value.startswith("Source: checkpoint digits-tno, layer 1, channel 40 ")
               and c.value.endswith("; n = 64.") for c in at.caption)
    assert "_handoff" not in at.session_state  # applied once
    settle_decomposition(at, rank=8)  # and the controls stay the person's
    at.run()
    assert at.number_input(key="channel").value == 40


def test_decomposition_markers_sit_at_their_data_and_log_axes_stay_on_data():
    from tnn_core.lab.decomposition import CURVE_FLOOR, ROUNDOFF_FLOOR

    at = decomposition(source="exponential", n=64, rank=24, band=9)
    curve = decomposition_figures(at)["error_curve"]
    assert (curve["rank"], curve["band"]) == (24, 9)  # the figure marks r at its data value
    assert 64 in curve["exact"]  # r = n: exact, said, not drawn
    for name in ("sample", "fit", "optimal"):
        assert min(v for v in curve[name] if v is not None) >= CURVE_FLOOR
        assert curve[name][curve["ranks"].index(64)] is None
    for key in ("cell_open", "profiles_open"):
        at.session_state[key] = True
    at.run()
    specs = {s["layout"].get("title", {}).get("text", "").split(":")[0]: s
             for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))}
    spectrum = specs["Singular values of the smooth part T_s (same for every r)"]
    (line,) = spectrum["layout"]["shapes"]
    assert line["x0"] == line["x1"] == 24
    sigma = plotly_array(spectrum["data"][0]["y"])
    assert sigma.min() >= ROUNDOFF_FLOOR * sigma.max()
    profiles = decomposition_figures(at)["profiles"]  # its floor: the figure leaves out
    assert profiles["floor"] == ROUNDOFF_FLOOR  # what is below it (test_figure_profiles.py)
    assert profiles["drawn"] == [["n", 64], ["decay", "0.99"]] and profiles["response"]


def test_decomposition_warns_about_aliasing_and_errors_above_one():
    at = decomposition(source="oscillating", n=512, rank=32, band=9)
    assert any(w.value.startswith("Aliasing: the inducing points are h = 16.5") for w in at.warning)
    assert any("> 1" in w.value for w in at.warning)
    assert not any(m.label == "Causality leakage" for m in at.metric)


def test_decomposition_computes_theorem_1_and_timings_only_when_asked():
    """Closed sections cost the server nothing on a settled move; opened, they show."""
    at = decomposition(n=128, rank=16, band=9)
    assert not [s for s in at.subheader if "Theorem" in s.value] and not at.metric
    at.session_state["theorem1_open"] = True
    at.run()
    assert any(m.label == "Theorem 1 right-hand side" for m in at.metric)
