"""The Toeplitz matrix and kernel figure (pages/figures/toeplitz.js) against tnn_core, and on
the Basics page in Chromium.

The maths: the figure's own functions, run in a plain page, against the Python core over
awkward n (1, 2, 7, 100, 257, 1024), λ and causal, to 1e-9 of the kernel's largest |t_k|:
the synthetic presets' t_k (presets.synthetic_kernel), the rows and columns drawn
(dense.display_indices), the entries drawn T[i, j] = t_{i-j} (dense.dense_toeplitz), the
followed cell's lag and the count of cells on its diagonal (linked_cell), and a kernel the
server sends (typed, with causal applied in the browser; an operator's, drawn only at the
setting it was computed for).

The page: moving the figure's controls with the keyboard redraws every value in the
browser (data-drawn follows), a link opens exactly its view, a click picks a cell, T is
drawn with row 0 on top, and no setting of Basics reaches another page.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qsl

import numpy as np
import pytest
from test_browser import SHOTS, server  # noqa: F401 - server is a fixture
from test_figure_fft import js_page, unpack_float64

from pages.figures import script
from tests.app_idle import follow_socket, wait_idle
from tnn_core.analysis.dense import dense_toeplitz, display_indices
from tnn_core.analysis.presets import SYNTHETIC, parse_coefficients, synthetic_kernel
from tnn_core.lab.basics import FIGURE_CELLS, figure_kernel
from tnn_core.lab.common.linked_cell import linked_cell

pytestmark = pytest.mark.browser

SIZES = [1, 2, 7, 100, 257, 1024]
SETTINGS = [(0.5, False), (0.9, True), (0.99, False), (1.0, True)]  # (λ, causal)
RTOL = 1e-9  # of the kernel's largest |t_k|
CELLS = [(48, 16), (5, 300), (0, 1023)]  # below, above and at the corner of the diagonal;
# beyond a small n, where the figure clamps them to n - 1

# The figure's maths at one setting, as plain arrays.
COMPUTE = """([name, n, decay, causal, cells, followed]) => {
  const t = presetKernel(name, n, decay, causal);
  const idx = shownIndices(n, cells);
  const entries = packFloat64(idx.flatMap((i) => idx.map((j) => toeplitzEntry(t, i, j))));
  return {t: Array.from(t), idx, entries,
          cells: followed.map(([i, j]) => followedCell(n, i, j))};
}"""


@pytest.fixture(scope="module")
def maths(chromium):
    page = js_page(chromium, script("toeplitz"))
    yield page
    page.close()


def close(js, py) -> bool:
    js, py = np.asarray(js, dtype=np.float64), np.asarray(py, dtype=np.float64)
    scale = max(float(np.abs(py).max(initial=0.0)), np.finfo(np.float64).tiny)
    return js.shape == py.shape and float(np.abs(js - py).max(initial=0.0)) <= RTOL * scale


@pytest.mark.parametrize("name", SYNTHETIC)
@pytest.mark.parametrize("n", SIZES)
def test_the_figure_computes_what_tnn_core_does(maths, name, n):
    for decay, causal in SETTINGS:
        got = maths.evaluate(COMPUTE, [name, n, decay, causal, FIGURE_CELLS, CELLS])
        t = synthetic_kernel(name, n, decay, causal).numpy()
        idx = display_indices(n, FIGURE_CELLS)
        where = (name, n, decay, causal)
        assert close(got["t"], t), where
        assert got["idx"] == idx.tolist(), where
        entries = unpack_float64(got["entries"], (len(idx), len(idx)))
        assert close(entries, dense_toeplitz(t, idx)), where
        for (i, j), shown in zip(CELLS, got["cells"], strict=True):
            cell = linked_cell(n, None, min(i, n - 1), min(j, n - 1))
            assert (shown["i"], shown["j"]) == (cell.i, cell.j), where
            assert shown["lag"] == cell.lag, where
            assert shown["count"] == len(cell.diagonal_rows), where


KERNEL_AT = """([kernel, setting]) => {
  const t = kernelAt(kernel, setting);
  return t === null ? null : Array.from(t);
}"""


@pytest.mark.parametrize("causal", [False, True])
def test_typed_coefficients_and_their_causal_part(maths, causal):
    text = "1, -2, 3.5, 0.25, 0, 7e-3, 12"
    kernel = figure_kernel("custom", 64, 0.9, causal, text=text)  # n and λ are ignored
    setting = {"n": 64, "decay": 0.9, "causal": causal, "channel": 0}
    got = maths.evaluate(KERNEL_AT, [kernel.browser, setting])
    assert close(got, parse_coefficients(text, causal).numpy())
    assert close(got, kernel.coeffs)


def test_an_operator_kernel_is_drawn_only_where_it_was_computed(maths):
    kernel = figure_kernel("tno", 100, 0.9, True, seed=3, channel=5)
    packed = base64.b64decode(kernel.browser["coefficients"])
    assert np.array_equal(np.frombuffer(packed, "<f8"), kernel.coeffs)
    setting = {"n": 100, "decay": 0.9, "causal": True, "channel": 5}
    assert close(maths.evaluate(KERNEL_AT, [kernel.browser, setting]), kernel.coeffs)
    for change in ({"n": 101}, {"decay": 0.91}, {"causal": False}, {"channel": 4}):
        assert maths.evaluate(KERNEL_AT, [kernel.browser, {**setting, **change}]) is None
    fd = figure_kernel("fd", 100, 0.9, False)  # FD-TNN has no decay: any λ draws it
    assert maths.evaluate(KERNEL_AT, [fd.browser, {**setting, "causal": False, "channel": 0,
                                                   "decay": 0.5}]) is not None


# -- the figure on the Basics page ----------------------------------------------------------
FIGURE = "[data-testid='figure'][data-figure='toeplitz']"


@pytest.fixture(scope="module")
def app_page(chromium, server):  # noqa: F811 - the imported fixtures
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 900}))
    yield page
    page.close()


def open_view(page, url: str) -> None:
    page.goto(url)
    wait_idle(page)
    page.locator(f"{FIGURE}[data-drawn]").wait_for()


def drawn(page) -> dict[str, str]:
    return dict(parse_qsl(page.locator(FIGURE).get_attribute("data-drawn")))


def no_exception(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    exceptions = page.locator("[data-testid='stException']")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def url_values(page) -> dict[str, str]:
    return dict(parse_qsl(page.url.split("?", 1)[1])) if "?" in page.url else {}


@pytest.mark.parametrize("preset", ["exponential", "spike_smooth"])
def test_keyboard_moves_redraw_every_value_in_the_browser(app_page, server, preset):  # noqa: F811
    """Each arrow key on n and λ redraws that value at once; after the server settles, the
    address holds the last one and the figure still shows it."""
    from playwright.sync_api import expect

    label = {"exponential": "Exponential decay λ^|k|", "spike_smooth": "Spike plus smooth"}
    page = app_page
    open_view(page, f"{server}/basics?preset={label[preset]}&n=1024&decay=0.9")
    assert drawn(page)["name"] == preset and drawn(page)["n"] == "1024"
    for name, keys, values in (("n", ["ArrowRight"] * 5 + ["ArrowLeft"] * 2,
                                [1025, 1026, 1027, 1028, 1029, 1028, 1027]),
                               ("decay", ["ArrowLeft"] * 4, [0.89, 0.88, 0.87, 0.86])):
        control = page.locator(f"{FIGURE} input[name='{name}']")
        for key, value in zip(keys, values, strict=True):
            control.focus()  # a settle's rerun may redraw the page around the slider
            control.press(key)
            expect(page.locator(FIGURE)).to_have_attribute(
                "data-drawn", re.compile(rf"(^|&){name}={value}(&|$)"), timeout=10_000)
        wait_idle(page)  # n's settles answered before λ's keys (a CI run lost λ's first)
    assert drawn(page)["n"] == "1027" and drawn(page)["decay"] == "0.86"
    assert url_values(page)["n"] == "1027" and url_values(page)["decay"] == "0.86"
    no_exception(page, f"toeplitz-figure-moved-{preset}")


def test_a_link_opens_exactly_its_view_and_a_click_picks_a_cell(app_page, server):  # noqa: F811
    page = app_page
    open_view(page, f"{server}/basics?preset=Oscillating&n=200&decay=0.95&causal=true"
                    "&cell_i=10&cell_j=3")
    assert drawn(page) == {"name": "oscillating", "n": "200", "decay": "0.95",
                           "causal": "true", "cell_i": "10", "cell_j": "3"}
    assert page.locator(f"{FIGURE} input[name='causal']").is_checked()
    said = page.locator(f"{FIGURE} .caption.followed").inner_text()
    assert said.startswith("T[10, 3] = t_7 = ") and "all 193 cells" in said
    # row 0 on top: causal, so the cell just below the main diagonal is coloured and the
    # one just above it white
    colour = """(canvas, [i, j]) => {
      const [left, top, side] = canvas.dataset.frame.split(' ').map(Number);
      const at = (v) => Math.floor((v + 0.5) / 200 * side);
      return Array.from(canvas.getContext('2d').getImageData(left + at(j), top + at(i), 1, 1).data);
    }"""
    matrix = page.locator(f"{FIGURE} canvas.matrix")
    assert matrix.evaluate(colour, [100, 99]) != [255, 255, 255, 255]
    assert matrix.evaluate(colour, [99, 100]) == [255, 255, 255, 255]
    no_exception(page, "toeplitz-figure-link")
    # a lesson's locked control is shown at its value, disabled
    open_view(page, f"{server}/basics?n=8&lock=n,cell_i")
    assert page.locator(f"{FIGURE} input[name='n']").is_disabled()
    assert page.locator(f"{FIGURE} input[type='number']").first.is_disabled()
    assert page.locator(f"{FIGURE} input[name='decay']").is_enabled()
    # a click on the cell (15, 4) of a 20 × 20 T follows it
    open_view(page, f"{server}/basics?n=20")
    box = matrix.bounding_box()
    left, top, side = map(float, matrix.get_attribute("data-frame").split())
    page.mouse.click(box["x"] + left + 4.5 / 20 * side, box["y"] + top + 15.5 / 20 * side)
    assert (drawn(page)["cell_i"], drawn(page)["cell_j"]) == ("15", "4")
    assert page.locator(f"{FIGURE} .caption.followed").inner_text().startswith(
        "T[15, 4] = t_11 = ")
    wait_idle(page)
    assert (url_values(page)["cell_i"], url_values(page)["cell_j"]) == ("15", "4")
    assert (drawn(page)["cell_i"], drawn(page)["cell_j"]) == ("15", "4")


def set_value(control, value) -> None:
    """Move a range input or tick a box as a person's release would: input, then change."""
    control.evaluate("""(input, value) => {
      if (input.type === 'checkbox') input.checked = value; else input.value = String(value);
      input.dispatchEvent(new Event('input', {bubbles: true}));
      input.dispatchEvent(new Event('change', {bubbles: true}));
    }""", value)


# Every slider's value on the page: Streamlit's (aria-valuenow) and figures' range inputs.
SLIDER_VALUES = """sliders => sliders.map(s => s.getAttribute('aria-valuenow') ?? s.value)"""


def test_no_setting_of_basics_reaches_another_page(app_page, server):  # noqa: F811
    """Basics at n = 167, causal, λ = 0.7: Decomposition and Compare, opened from the
    sidebar, open at their own defaults, not at Basics' values."""
    page = app_page
    open_view(page, f"{server}/basics")
    set_value(page.locator(f"{FIGURE} input[name='n']"), 167)
    set_value(page.locator(f"{FIGURE} input[name='decay']"), 0.7)
    set_value(page.locator(f"{FIGURE} input[name='causal']"), True)
    wait_idle(page)
    assert {k: url_values(page)[k] for k in ("n", "decay", "causal")} == {
        "n": "167", "decay": "0.7", "causal": "true"}
    sidebar = page.locator("[data-testid='stSidebarNav']")
    for title, path in (("Decomposition", "decomposition"), ("Compare A/B", "compare")):
        sidebar.get_by_role("link", name=title).click()
        page.wait_for_url(re.compile(rf"/{path}"))
        wait_idle(page)
        main = page.locator("[data-testid='stMain']")
        values = main.locator("[role='slider'], input[type='range']").evaluate_all(
            SLIDER_VALUES)
        assert values and "167" not in values and "0.7" not in values, (path, values)
        assert {url_values(page).get(k) for k in ("n", "decay", "causal")}.isdisjoint(
            {"167", "0.7", "true"}), (path, page.url)
        boxes = main.locator("input[type='checkbox']")
        assert not any(boxes.nth(k).is_checked() for k in range(boxes.count())), path
        no_exception(page, f"after-basics-{path}")


def test_compare_neither_takes_nor_gives_a_setting(app_page, server):  # noqa: F811
    """Decomposition at n = 1000: Compare opens at its own n = 256. Compare moved to n = 257,
    causal: Basics and Decomposition open without those values."""
    page = app_page
    page.goto(f"{server}/decomposition?n=1000")
    wait_idle(page)
    sidebar = page.locator("[data-testid='stSidebarNav']")
    main = page.locator("[data-testid='stMain']")
    sidebar.get_by_role("link", name="Compare A/B").click()
    page.wait_for_url(re.compile(r"/compare"))
    wait_idle(page)
    length = main.locator("[data-testid='stSlider']").filter(
        has_text="Length n (shared)").get_by_role("slider")
    assert length.input_value() == "256"
    assert (url_values(page)["n"], url_values(page)["causal"]) == ("256", "false")
    length.focus()
    length.press("ArrowRight")
    wait_idle(page)
    main.get_by_text("Causal (shared)").click()
    wait_idle(page)
    assert (url_values(page)["n"], url_values(page)["causal"]) == ("257", "true")
    no_exception(page, "compare-moved")
    sidebar.get_by_role("link", name="Toeplitz basics").click()
    page.wait_for_url(re.compile(r"/basics"))
    wait_idle(page)
    assert (drawn(page)["n"], drawn(page)["causal"]) == ("64", "false")
    sidebar.get_by_role("link", name="Decomposition").click()
    page.wait_for_url(re.compile(r"/decomposition"))
    wait_idle(page)
    values = main.locator("[role='slider'], input[type='range']").evaluate_all(SLIDER_VALUES)
    assert values and "257" not in values, values
    assert url_values(page).get("n") != "257" and url_values(page).get("causal") != "true"
    assert not any(box.is_checked() for box in main.locator("input[type='checkbox']").all())
    no_exception(page, "decomposition-after-compare")
