"""Compare A/B: the lab against the decomposition computed directly, and the page
(AppTest). (The figures and the app in Chromium: test_compare_browser.py.)"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import display_indices
from tnn_core.analysis.presets import preset_kernel
from tnn_core.lab.common.browser_data import packed
from tnn_core.lab.common.decomposition_figures import drawn, figure_data, synthetic_parts
from tnn_core.lab.compare import (
    DIFFERENCE_CELLS,
    change_text,
    compare_side,
    difference,
    difference_figure_data,
    side_drawn,
    side_figure_data,
)

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def approximation(coeffs, band, rank, causal, method) -> np.ndarray:
    """band + W A Wᵀ, every entry, from the decomposition directly."""
    dec = decompose(coeffs, band, rank, causal=causal, method=method)
    return dec.band_matrix() + dec.low_rank_matrix()  # (n, n)


@pytest.mark.parametrize("n", [2, 3, 17, 31])
@pytest.mark.parametrize("causal", [False, True])
def test_sides_and_difference_match_the_decomposition(n, causal):
    a_setting = dict(band=1, rank=2, method="sample", decay=0.99)
    b_setting = dict(band=min(9, 2 * n - 2), rank=n, method="fit", decay=1.0)
    kernels = {}
    sides = []
    for s in (a_setting, b_setting):
        coeffs = preset_kernel("spike_smooth", n, s["decay"], causal).numpy()
        kernels[s["decay"]] = coeffs
        side = compare_side(coeffs, s["band"], s["rank"], causal, s["method"], s["decay"])
        dec = decompose(coeffs, s["band"], s["rank"], causal=causal, method=s["method"])
        errors = dec.errors
        assert side.relative_spectral == errors.relative_spectral
        assert side.relative_frobenius == errors.relative_frobenius
        assert side.relative_optimal_spectral == errors.relative_optimal_spectral
        assert side.relative_optimal_frobenius == errors.relative_optimal_frobenius
        np.testing.assert_array_equal(side.inducing_values, dec.A_coeffs)  # fit's A, or k̃'s
        np.testing.assert_array_equal(side.idx, np.arange(n))  # small n: every entry drawn
        np.testing.assert_allclose(side.approximation, approximation(
            coeffs, s["band"], s["rank"], causal, s["method"]), atol=1e-12)
        sides.append(side)
    diff = difference(*sides)
    expected = (approximation(kernels[1.0], b_setting["band"], n, causal, "fit")
                - approximation(kernels[0.99], 1, 2, causal, "sample"))
    np.testing.assert_allclose(diff.approximation, expected, atol=1e-12)
    assert diff.limit == pytest.approx(np.abs(expected).max())
    assert diff.kernel_gap == pytest.approx(np.abs(kernels[1.0] - kernels[0.99]).max())
    spectral = diff.numbers[0]
    assert spectral.delta == sides[1].relative_spectral - sides[0].relative_spectral


def test_large_n_draws_the_same_sampled_rows_on_both_sides():
    n = 1000
    coeffs = preset_kernel("exponential", n, 0.99).numpy()
    a = compare_side(coeffs, 9, 32, False, "sample", 0.99)
    b = compare_side(coeffs, 9, 8, False, "sample", 0.99)
    idx = display_indices(n, DIFFERENCE_CELLS)
    np.testing.assert_array_equal(a.idx, idx)
    dec = decompose(coeffs, 9, 8)
    np.testing.assert_allclose(b.approximation,
                               dec.band_matrix(idx) + dec.low_rank_matrix(idx), atol=1e-12)
    assert difference(a, b).kernel_gap == 0


def test_sides_of_different_length_are_refused():
    a = compare_side(preset_kernel("exponential", 8, 0.9).numpy(), 3, 4, False, "fit", 0.9)
    b = compare_side(preset_kernel("exponential", 9, 0.9).numpy(), 3, 4, False, "fit", 0.9)
    with pytest.raises(ValueError, match="same n"):
        difference(a, b)


def test_impossible_rank_names_the_field():
    with pytest.raises(ValueError, match="rank"):
        compare_side(preset_kernel("exponential", 8, 0.9).numpy(), 3, 9, False, "fit", 0.9)


@pytest.mark.parametrize(("a", "b", "words"), [
    (1.0, 0.31, "B is 3.2× smaller"), (1.0, 1.04, "B is 1.04× larger"),
    (2.0, 50.0, "B is 25× larger"), (1.0, 1.001, "B is within 0.5 % of A"),
    (0.5, 0.5, "B equals A"), (0.0, 1.0, "A is 0, B is not"),
    (float("nan"), 1.0, "undefined on one side")])
def test_change_text_says_which_way(a, b, words):
    assert change_text(a, b) == words


def test_a_sides_drawn_names_its_settings_after_its_prefix():
    assert side_drawn("a", 256, 9, 32, 0.99, "sample") == (
        "n=256&a_band=9&a_rank=32&a_decay=0.99&a_method=sample")
    assert side_drawn("b", 64, 1, 8, None, "fit") == "n=64&b_band=1&b_rank=8&b_method=fit"
    with pytest.raises(ValueError, match="side must be one of"):
        side_drawn("c", 64, 1, 8, None, "fit")


def test_a_side_is_the_decomposition_figure_under_a_prefix():
    """One builder: Compare's side data is the Decomposition page's for the same view, with
    the side's names in ``drawn`` and its prefix keys added."""
    from tnn_core.lab.decomposition import decomposition_view

    n = 40
    coeffs = preset_kernel("spike_smooth", n, 0.9).numpy()
    side = side_figure_data("b", compare_side(coeffs, 9, 8, False, "fit", 0.9), False, 0.9,
                            None)
    page = figure_data(decomposition_view(coeffs, 9, 8, False, "fit"), None, False, "T", 0.9,
                       "fit", drawn(n, 9, 8, 0.9, "fit"))
    plain = drawn(n, 9, 8, 0.9, "fit")
    for data in (side["numbers"], side["fitted"]):
        assert data["drawn"] == side_drawn("b", n, 9, 8, 0.9, "fit")
        data["drawn"] = plain
    assert {k: v for k, v in side.items() if k not in ("prefix", "scaleWith", "factors")} == page


def test_the_figure_data_of_a_side_and_of_the_difference():
    n = 40
    coeffs = preset_kernel("spike_smooth", n, 0.9).numpy()
    a = compare_side(coeffs, 5, 8, False, "fit", 0.9)
    b = compare_side(coeffs, 9, 8, False, "sample", 0.9)
    data = side_figure_data("a", a, False, 0.9, None)
    want = "n=40&a_band=5&a_rank=8&a_decay=0.9&a_method=fit"
    assert data["prefix"] == "a_" and data["scaleWith"] == "b_"
    assert data["numbers"]["drawn"] == data["fitted"]["drawn"] == want
    assert data["numbers"]["spectral"] == a.relative_spectral
    assert base64.b64decode(data["fitted"]["coeffs"]) == decompose(
        coeffs, 5, 8, method="fit").A_coeffs.astype("<f8").tobytes()
    assert np.frombuffer(base64.b64decode(data["kernel"]["coeffs"]), "<f8").tolist() == (
        coeffs.tolist())
    parts = synthetic_parts("spike_smooth", n, False)
    synthetic = side_figure_data("b", b, False, 0.9, parts)
    assert synthetic["fitted"] is None and "coeffs" not in synthetic["kernel"]
    assert synthetic["kernel"]["base"] == packed(parts[0])
    diff = difference(a, b)
    strip = difference_figure_data(diff, n, (want, side_drawn("b", n, 9, 8, 0.9, "sample")))
    assert [k for k, _ in strip["drawn"]] == ["n", "a_band", "a_rank", "a_decay", "a_method",
                                               "b_band", "b_rank", "b_decay", "b_method"]
    values = np.frombuffer(base64.b64decode(strip["values"]), "<f4").reshape(n, n)
    np.testing.assert_array_equal(values, diff.approximation.astype(np.float32))
    assert strip["rows"] == list(range(n)) and strip["limit"] == diff.limit
    assert [c["words"] for c in strip["numbers"]] == [c.words for c in diff.numbers]


# -- the page --------------------------------------------------------------------------------
def open_compare(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({key: str(value) for key, value in params.items()})
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    return at


def figures(at: AppTest) -> dict[str, dict]:
    """The data the page sends its figures: {"a": A's band + W A Wᵀ figure, "b": B's,
    "difference": the strip}."""
    out = {}
    for element in at.get("bidi_component"):
        data = json.loads(element.proto.json)
        name = element.proto.component_name.removeprefix("toeplitz_lab_")
        out[data["prefix"].rstrip("_") if name == "decomposition" else name] = data
    return out


def controls(data: dict) -> dict:
    return {c["name"]: c["value"] for c in data["controls"]}


def settle(at: AppTest, side: str, **values) -> None:
    """What one side's figure sends from the browser on release; then the rerun."""
    key = f"compare_{side}_figure"
    state = at.session_state[key] if key in at.session_state else {}
    at.session_state[key] = {**state, **values}
    at.run()
    assert not at.exception


def test_page_draws_both_settings_and_the_difference_as_figures_only():
    at = open_compare(n=64)
    shown = figures(at)
    assert set(shown) == {"a", "b", "difference"}
    assert controls(shown["a"]) == {"a_rank": 32, "a_band": 9, "a_decay": 0.99}
    assert controls(shown["b"]) == {"b_rank": 32, "b_band": 9, "b_decay": 0.99}
    assert (shown["a"]["scaleWith"], shown["b"]["scaleWith"]) == ("b_", "a_")  # one scale
    assert shown["a"]["numbers"]["drawn"] == "n=64&a_band=9&a_rank=32&a_decay=0.99&a_method=sample"
    assert shown["b"]["fitted"]["drawn"] == "n=64&b_band=9&b_rank=32&b_decay=0.99&b_method=fit"
    assert "B vs A" not in str(at.metric)  # the numbers are in the figures now
    assert not at.get("image") and not at.get("plotly_chart")  # the old server pictures: gone
    assert not at.error
    coeffs = preset_kernel("spike_smooth", 64, 0.99).numpy()
    for side, method in (("a", "sample"), ("b", "fit")):
        errors = decompose(coeffs, 9, 32, method=method).errors
        assert shown[side]["numbers"]["spectral"] == errors.relative_spectral
    assert [c["label"] for c in shown["difference"]["numbers"]] == [
        "spectral error", "Frobenius error", "SVD optimum"]


def test_settling_b_band_changes_only_b_and_the_difference():
    at = open_compare(n=64)
    before = figures(at)
    settle(at, "b", b_band=1)
    after = figures(at)
    assert after["a"] == before["a"]
    assert after["b"] != before["b"] and controls(after["b"])["b_band"] == 1
    assert after["b"]["numbers"]["drawn"] == "n=64&b_band=1&b_rank=32&b_decay=0.99&b_method=fit"
    assert after["difference"] != before["difference"]
    assert ["b_band", "1"] in after["difference"]["drawn"]
    assert at.query_params["b_band"] == "1" and at.query_params["a_band"] == "9"


def test_a_rank_beyond_n_is_drawn_clamped_in_one_side_only():
    at = open_compare(n=64, b_rank=100)  # the slider allows 512; n = 64 allows r = 64
    shown = figures(at)
    assert controls(shown["b"])["b_rank"] == 100  # the figure draws r = 64 and says so
    assert shown["b"]["numbers"]["drawn"] == "n=64&b_band=9&b_rank=64&b_decay=0.99&b_method=fit"
    assert shown["a"]["numbers"]["drawn"].startswith("n=64&a_band=9&a_rank=32&")
    assert not at.error and "difference" in shown


def test_a_link_opens_the_comparison_it_names():
    at = open_compare(n=32, a_method="sample", b_method="fit", a_band=1, b_band=9, b_rank=8)
    assert at.radio(key="a_method").value == "sample"
    assert at.radio(key="b_method").value == "fit"
    shown = figures(at)
    assert (controls(shown["a"])["a_band"], controls(shown["b"])["b_band"]) == (1, 9)
    coeffs = preset_kernel("spike_smooth", 32, 0.99).numpy()
    expected = decompose(coeffs, 9, 8, method="fit").errors.relative_spectral
    assert shown["b"]["numbers"]["spectral"] == expected


def test_the_issues_link_opens_with_its_ranks():
    at = open_compare(a_rank=8, b_rank=64)
    shown = figures(at)
    assert (controls(shown["a"])["a_rank"], controls(shown["b"])["b_rank"]) == (8, 64)
    assert ["a_rank", "8"] in shown["difference"]["drawn"]
    assert ["b_rank", "64"] in shown["difference"]["drawn"]
    assert (at.query_params["a_rank"], at.query_params["b_rank"]) == ("8", "64")


def test_fd_has_no_decay_and_a_lesson_locks_a_sides_controls():
    at = open_compare(source="Fresh FD-TNN operator (fd)", n=32, lock="a_rank,b_band")
    shown = figures(at)
    assert set(controls(shown["a"])) == {"a_rank", "a_band"} and shown["a"]["decay"] is None
    assert shown["a"]["locked"] == ["a_rank"] and shown["b"]["locked"] == ["b_band"]
    assert "a_decay" not in shown["a"]["numbers"]["drawn"]


def test_n_1_says_what_to_do():
    at = open_compare(n=1)
    assert not figures(at) and "Set n ≥ 2" in at.info[0].value


def test_another_pages_value_of_a_shared_name_is_not_used():
    """Streamlit keeps a URL-bound widget's value under its key when its page is left (here:
    Decomposition's n and causal, and its figure's rank); Compare's shared controls live
    under their own keys and its figures under their own names, so it opens at its
    defaults, or at its link, and writes them to the URL by their names."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state["n"], at.session_state["causal"] = 1000, True  # another page's
    at.session_state["decomposition_figure"] = {"rank": 100, "band": 3}
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert (at.slider(key="compare_n").value, at.toggle(key="compare_causal").value) == (256, False)
    assert (at.query_params["n"], at.query_params["causal"]) == ("256", "false")
    shown = figures(at)
    assert controls(shown["a"])["a_rank"] == controls(shown["b"])["b_rank"] == 32
    linked = open_compare(n=100, causal="true")
    assert (linked.slider(key="compare_n").value, linked.toggle(key="compare_causal").value) == (
        100, True)
