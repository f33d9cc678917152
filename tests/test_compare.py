"""Compare A/B: the lab against the decomposition computed directly, and the page."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.dense import display_indices
from tnn_core.analysis.presets import preset_kernel
from tnn_core.lab.compare import change_text, compare_side, difference
from tnn_core.lab.decomposition import HEATMAP_CELLS

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
        errors = decompose(coeffs, s["band"], s["rank"], causal=causal,
                           method=s["method"]).errors
        assert side.relative_spectral == errors.relative_spectral
        assert side.relative_frobenius == errors.relative_frobenius
        assert side.relative_optimal_frobenius == errors.relative_optimal_frobenius
        np.testing.assert_array_equal(side.idx, np.arange(n))  # small n: every entry drawn
        T = np.array([[coeffs[n - 1 + i - j] for j in range(n)] for i in range(n)])
        np.testing.assert_allclose(side.residual, T - side.approximation, atol=1e-12)
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
    idx = display_indices(n, HEATMAP_CELLS)
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


# -- the page --------------------------------------------------------------------------------
def open_compare(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({key: str(value) for key, value in params.items()})
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    return at


def numbers(at: AppTest) -> dict[str, str]:
    """Every metric and every caption by its text, so a change anywhere shows."""
    shown = {m.label: m.value for m in at.metric}
    shown |= {f"caption {i}": c.value for i, c in enumerate(at.caption)}
    return shown


def test_page_renders_both_columns_and_the_difference():
    at = open_compare(n=64)
    labels = [m.label for m in at.metric]
    for side in "AB":
        for what in ("spectral error", "Frobenius error", "SVD optimum"):
            assert f"{side}: {what}" in labels
    assert "spectral error, B vs A" in labels
    assert not at.error
    assert len(at.get("image")) == 4  # two residuals, the difference and its colour bar
    assert len(at.get("plotly_chart")) == 4  # a kernel and an error curve per column


def test_changing_b_band_changes_only_b_and_the_difference():
    at = open_compare(n=64)
    before = numbers(at)
    at.slider(key="b_band").set_value(1).run()
    assert not at.exception
    after = numbers(at)
    changed = {label for label in before if before[label] != after[label]}
    assert changed, "moving B's band changed nothing"
    for label in changed:
        assert label.startswith(("B:", "caption")) or "B vs A" in label, label
    assert all(before[k] == after[k] for k in before if k.startswith("A:"))
    a_caption = next(v for v in after.values() if v.startswith("A: n = "))
    assert a_caption in before.values()  # A's setting line is untouched
    b_caption = next(v for v in after.values() if v.startswith("B: n = "))
    assert "m = 1," in b_caption


def test_impossible_rank_shows_an_error_in_one_column_only():
    at = open_compare(n=64, b_rank=100)  # A keeps r = 32
    assert len(at.error) == 1
    assert "rank" in at.error[0].value
    labels = [m.label for m in at.metric]
    assert "A: spectral error" in labels
    assert not any(label.startswith("B:") for label in labels)
    assert any("needs both settings" in i.value for i in at.info)
    assert len(at.get("image")) == 1  # A's residual only: no B, no difference


def test_a_link_opens_the_comparison_it_names():
    at = open_compare(n=32, a_method="sample", b_method="fit", a_band=1, b_band=9, b_rank=8)
    assert at.radio(key="a_method").value == "sample"
    assert at.radio(key="b_method").value == "fit"
    assert at.slider(key="a_band").value == 1 and at.slider(key="b_band").value == 9
    coeffs = preset_kernel("spike_smooth", 32, 0.99).numpy()
    expected = decompose(coeffs, 9, 8, method="fit").errors.relative_spectral
    shown = next(m.value for m in at.metric if m.label == "B: spectral error")
    assert shown == f"{expected:.2e}"


def test_another_pages_value_of_a_shared_name_is_not_used():
    """Streamlit keeps a URL-bound widget's value under its key when its page is left (here:
    Decomposition's n and causal); Compare's shared controls live under their own keys, so
    it opens at its defaults, or at its link, and writes them to the URL by their names."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.session_state["n"], at.session_state["causal"] = 1000, True  # another page's
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert (at.slider(key="compare_n").value, at.toggle(key="compare_causal").value) == (256, False)
    assert (at.query_params["n"], at.query_params["causal"]) == ("256", "false")
    linked = open_compare(n=100, causal="true")
    assert (linked.slider(key="compare_n").value, linked.toggle(key="compare_causal").value) == (
        100, True)
