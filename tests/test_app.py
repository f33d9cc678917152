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


FREQUENCY_KERNEL = "frequency-kernel"  # the key of the Frequency page's kernel figure


def frequency_figures(at: AppTest) -> dict[str, dict]:
    """The data the Frequency page sends its figures: {"fd_kernel": .., "profiles": ..}."""
    return {e.proto.component_name.removeprefix("toeplitz_lab_"): json.loads(e.proto.json)
            for e in at.get("bidi_component")}


def settle_frequency(at: AppTest, **values) -> None:
    """What the kernel figure's browser sends on release (activation, width, smooth, causal);
    then the rerun."""
    state = at.session_state[FREQUENCY_KERNEL] if FREQUENCY_KERNEL in at.session_state else {}
    at.session_state[FREQUENCY_KERNEL] = {**state, **values}
    at.run()


def decay_kernels(data: dict) -> dict[str, np.ndarray]:
    return {k["label"]: np.frombuffer(base64.b64decode(k["coeffs"]), "<f8")
            for k in data["kernels"]}


@pytest.mark.parametrize("activation", ["relu", "silu", "gelu"])
def test_frequency_page_extremes(activation):
    """Every setting at its extremes: the kernel figure gets each width's weights at this
    depth, the decay figure this setting's kernels (causal: exactly 0 at negative lags)."""
    from tnn_core.analysis.fd_response import fd_response
    from tnn_core.core.toeplitz import fft_size
    from tnn_core.lab.frequency import WIDTHS

    at = open_page("pages/frequency.py")
    for n, width, depth, smooth, causal in [(1, 1, 0, False, True), (4096, 128, 4, True, False),
                                            (2, 1, 4, True, True), (3, 128, 0, False, False)]:
        at.slider(key="n").set_value(n)
        at.slider(key="depth").set_value(depth)
        settle_frequency(at, activation=activation, width=width, smooth=smooth, causal=causal)
        assert not at.exception and not at.error, (activation, n, width, depth, smooth)
        figures = frequency_figures(at)
        fd = figures["fd_kernel"]
        assert (fd["n"], fd["N"], fd["depth"]) == (n, fft_size(n), depth)
        assert (fd["activation"], fd["smooth"], fd["causal"]) == (activation, smooth, causal)
        assert fd["controls"][0]["value"] == width
        for e in WIDTHS:  # float32 each: 2e + depth (e² + e) + 3e + 3 parameters
            assert len(base64.b64decode(fd["weights"][str(e)])) == 4 * (
                5 * e + depth * (e * e + e) + 3)
        kernels = decay_kernels(figures["profiles"])
        assert list(kernels)[0] == activation and len(kernels) == 3
        fd_input = "cosine" if smooth else "omega"
        for name, kernel in kernels.items():
            assert np.array_equal(kernel, fd_response(name, width, depth, n, 0, fd_input,
                                                      causal).kernel), name
            if causal:  # causality: FD.kernel(n) is exactly zero at negative lags
                assert np.all(kernel[: n - 1] == 0.0)
        assert {k: at.query_params[k] for k in ("activation", "width", "smooth", "causal")} == {
            "activation": activation, "width": str(width), "smooth": str(smooth).lower(),
            "causal": str(causal).lower()}


def frequency_shown(at: AppTest) -> dict:
    """What the Frequency page shows: its texts and what it sends its figures."""
    return {"info": [i.value for i in at.info], "latex": [x.value for x in at.latex],
            "captions": [c.value for c in at.caption], "figures": frequency_figures(at)}


FIGURE_VALUES = ("activation", "width", "smooth", "causal")


def test_frequency_share_link_round_trip():
    """Set every control, open a fresh session on the URL those values make: the same
    controls and the same page."""
    at = open_page("pages/frequency.py")
    at.slider(key="n").set_value(301)
    at.slider(key="depth").set_value(2)
    settle_frequency(at, activation="silu", width=8, causal=False, smooth=True)
    assert not at.exception and not at.error
    link = {**url_params(at, ["n", "depth"]), **{k: at.query_params[k] for k in FIGURE_VALUES}}
    assert link == {"n": "301", "depth": "2", "activation": "silu", "width": "8",
                    "smooth": "true", "causal": "false"}
    fresh = open_link("pages/frequency.py", link)
    assert (fresh.slider(key="n").value, fresh.slider(key="depth").value) == (301, 2)
    assert frequency_shown(fresh) == frequency_shown(at)
    fd = frequency_figures(fresh)["fd_kernel"]
    assert (fd["activation"], fd["controls"][0]["value"], fd["smooth"], fd["causal"]) == (
        "silu", 8, True, False)


def test_frequency_link_values_it_cannot_use_are_named():
    fresh = open_link("pages/frequency.py", {"activation": "tanh", "width": "24",
                                             "causal": "yes", "smooth": "TRUE"})
    assert not fresh.error
    (notice,) = [w.value for w in fresh.warning]
    assert "`activation` = ` tanh ` is not one of the 3 choices" in notice
    assert "`width` = 24 is not one of the widths offered" in notice
    assert "`causal` = ` yes ` is not true or false" in notice
    fd = frequency_figures(fresh)["fd_kernel"]
    assert (fd["activation"], fd["controls"][0]["value"], fd["smooth"], fd["causal"]) == (
        "gelu", 32, True, True)


def test_frequency_lessons_lock_figure_controls_and_sliders():
    fresh = open_link("pages/frequency.py", {"lock": "activation,causal,n"})
    assert frequency_figures(fresh)["fd_kernel"]["locked"] == ["activation", "causal"]
    assert fresh.slider(key="n").disabled and not fresh.slider(key="depth").disabled


def plotly_array(value) -> np.ndarray:
    """A Plotly JSON array: a list, or {"dtype", "bdata"} with the bytes in base64."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value, dtype=float)


@pytest.mark.parametrize(("smooth", "causal"), [(True, True), (False, False)])
def test_frequency_page_uses_the_operators_grid_and_fit_window(smooth, causal):
    from tnn_core.core.toeplitz import fft_size
    from tnn_core.lab.frequency import FIT_FLOOR, FIT_SHARE, FIT_START

    at = open_page("pages/frequency.py")
    at.slider(key="n").set_value(301)
    settle_frequency(at, smooth=smooth, causal=causal)
    N = fft_size(301)
    assert N == 640  # not 2n = 602: the page shows the operator's grid
    assert any(f"N = {N}" in x.value for x in at.latex)
    assert any(f"N = {N} = fft_size(301)" in c.value for c in at.caption)
    figures = frequency_figures(at)
    assert figures["fd_kernel"]["N"] == N
    decay = figures["profiles"]
    # the fit window and the round-off floor the decay figure uses (its arithmetic:
    # tests/test_figure_profiles.py), and the setting it follows
    assert decay["fit"] == {"start": FIT_START, "end": min(N // FIT_SHARE, 300),
                            "floor": FIT_FLOOR}
    assert decay["floor"] == FIT_FLOOR and decay["causal"] == causal
    assert decay["follows"] == "fd_kernel"
    assert dict(decay["drawn"]) == {"activation": "gelu", "width": 32,
                                    "smooth": str(smooth).lower(),
                                    "causal": str(causal).lower(), "n": 301, "depth": 1,
                                    "seed": 0}
    assert all(len(k) == 2 * 301 - 1 for k in decay_kernels(decay).values())


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
    at = open_page("pages/inspect_checkpoint.py")
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
    at = open_page("pages/inspect_checkpoint.py")
    at.selectbox(key="checkpoint").set_value(name)
    at.slider(key="atlas_channels").set_value(4)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert metric(at, "Task") in ("charlm", "listops", "digits", "recall")


def test_inspect_page_draws_one_subsampling_rule():
    """At n = 1024 the drilled-into channel draws every 6th row (192 at most, as on Basics),
    the atlas grid every 16th (64 at most), and the title says so."""
    import json

    at = open_page("pages/inspect_checkpoint.py")
    at.slider(key="atlas_channels").set_value(4)
    at.slider(key="atlas_n").set_value(1024).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    channel = next(s for s in specs
                   if "applies at n = 1024 (row 0 on top)" in s["layout"]["title"]["text"])
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
