"""The Frequency page in AppTest: extremes, links, locks and the operator's grid."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from test_app import open_link, open_page, url_params

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
        for name, kernel in kernels.items():  # the page computes on one torch thread, and
            # the summation order of a matmul depends on the thread count: equal to round-off
            reference = fd_response(name, width, depth, n, 0, fd_input, causal).kernel
            np.testing.assert_allclose(kernel, reference, rtol=0,
                                       atol=1e-13 * np.abs(reference).max(), err_msg=name)
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
