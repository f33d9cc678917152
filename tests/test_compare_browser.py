"""Compare A/B in Chromium: the band + W A Wᵀ figure mounted twice (a_, b_) with the
difference strip, and the app: keyboard moves of A's r and B's m redraw only their own
figure. (The lab and the page: test_compare.py.)"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pytest
import test_browser
from test_figure_fft import attribute_becomes, js_page

from pages.figures import script
from tests.app_idle import follow_socket, wait_idle
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.presets import preset_kernel
from tnn_core.lab.common.decomposition_figures import synthetic_parts
from tnn_core.lab.compare import (
    compare_side,
    difference,
    difference_figure_data,
    side_drawn,
    side_figure_data,
)

APP = str(Path(__file__).resolve().parents[1] / "app.py")


# -- the figures in Chromium, with a made-up component (no server) -------------------------
# Both sides in one page: one module (decomposition.js) mounted into two hosts.
SIDES_STATE = """() => { const {roots, sent} = window.__sides;
  const side = (r) => ({drawn: r.getAttribute('data-drawn'),
    server: r.querySelector('.server').getAttribute('data-stale'),
    scale: r.querySelector('.scale').textContent,
    residual: r.querySelector('.title-R').textContent,
    names: [...r.querySelectorAll('input')].map((i) => i.name)});
  return {a: side(roots.a_), b: side(roots.b_), sent}; }"""
MOUNT_TWO = """([a, b]) => {
  document.body.replaceChildren();
  const sent = [], roots = {};
  for (const data of [a, b]) {
    const host = document.createElement('div');
    document.body.appendChild(host);
    const setStateValue = (name, value) => sent.push([name, value]);
    mountFigure({data, parentElement: host, setStateValue});
    roots[data.prefix] = host.querySelector('[data-testid="figure"]');
  }
  window.__sides = {roots, sent};
  return (SIDES_STATE)();  // at once: before any later task (a details' toggle) redraws
}""".replace("SIDES_STATE", SIDES_STATE)
MOVE_SIDE = """([prefix, name, value]) => {
  const input = window.__sides.roots[prefix].querySelector(`input[name="${name}"]`);
  input.value = String(value);
  input.dispatchEvent(new Event('input'));
  input.dispatchEvent(new Event('change'));
}"""


def side_data(side: str, n: int, rank: int, band: int, decay: float, numbers: bool) -> dict:
    """A side's figure data as the page sends it (its kernel a synthetic preset)."""
    coeffs = preset_kernel("spike_smooth", n, decay).numpy()
    view = compare_side(coeffs, band, rank, False, "sample", decay)
    data = side_figure_data(side, view, False, decay, synthetic_parts("spike_smooth", n, False))
    if not numbers:
        data["numbers"] = None
    spec = {"min": 2, "max": 512, "step": 1, "help": ""}
    data["controls"] = [{**spec, "name": f"{side}_rank", "label": "r", "value": rank},
                        {**spec, "name": f"{side}_band", "label": "m", "min": 1, "value": band},
                        {"name": f"{side}_decay", "label": "λ", "min": 0.5, "max": 1,
                         "step": 0.005, "value": decay, "help": ""}]
    return data


def largest_residual(n: int, rank: int, band: int, decay: float) -> float:
    t = preset_kernel("spike_smooth", n, decay).numpy()
    return float(np.abs(decompose(t, band, rank).residual_matrix()).max())


def said_scale(caption: str) -> float:
    """The shared residual scale a figure's caption states."""
    found = re.search(r"residual shares one with the other setting's, ±([-+.\deE]+),", caption)
    assert found, caption
    return float(found[1])


def check_two_sides(page) -> None:
    """The two sides mounted at n = 100 (A: r = 8, B: r = 32), then A's r and B's m moved:
    each data-drawn follows its own control under its own names, the other's does not
    change, the values go back under the prefixed names, and both residuals stay on one
    scale, the larger max|residual| of the two."""
    state = page.evaluate(MOUNT_TWO, [side_data("a", 100, 8, 9, 0.9, True),
                                      side_data("b", 100, 32, 9, 0.9, True)])
    assert state["a"]["drawn"] == "n=100&a_band=9&a_rank=8&a_decay=0.9&a_method=sample"
    assert state["b"]["drawn"] == "n=100&b_band=9&b_rank=32&b_decay=0.9&b_method=sample"
    assert state["a"]["names"] == ["a_rank", "a_band", "a_decay"]
    assert state["a"]["server"] == state["b"]["server"] == "false"  # numbers for the drawn
    shared = max(largest_residual(100, 8, 9, 0.9), largest_residual(100, 32, 9, 0.9))
    for side in "ab":  # each says the shared scale, though B mounted after A
        assert said_scale(state[side]["scale"]) == pytest.approx(shared, rel=5e-3)
        assert "shared" in state[side]["residual"]
    page.evaluate(MOVE_SIDE, ["a_", "a_rank", 9])
    moved = page.evaluate(SIDES_STATE)
    assert moved["a"]["drawn"] == "n=100&a_band=9&a_rank=9&a_decay=0.9&a_method=sample"
    assert moved["b"]["drawn"] == state["b"]["drawn"]
    assert moved["a"]["server"] == "true" and moved["b"]["server"] == "false"
    shared = max(largest_residual(100, 9, 9, 0.9), largest_residual(100, 32, 9, 0.9))
    # B's residual rescaled in the same frame
    assert said_scale(moved["b"]["scale"]) == pytest.approx(shared, rel=5e-3)
    page.evaluate(MOVE_SIDE, ["b_", "b_band", 10])
    moved = page.evaluate(SIDES_STATE)
    assert moved["b"]["drawn"] == "n=100&b_band=10&b_rank=32&b_decay=0.9&b_method=sample"
    assert moved["a"]["drawn"] == "n=100&a_band=9&a_rank=9&a_decay=0.9&a_method=sample"
    assert moved["sent"] == [["a_rank", 9], ["b_band", 10]]


@pytest.mark.browser
def test_two_sides_draw_and_send_under_their_own_names(chromium):
    page = js_page(chromium, script("decomposition"))
    try:
        check_two_sides(page)
    finally:
        page.close()


# Mistakes the test above must catch: a prefix left off, a scale not shared.
PLANTED = [
    ("return params.map(([name, value]) => [name === 'n' ? name : prefix + name, value]);",
     "return params;"),  # data-drawn without the prefix
    ("setStateValue(spec.name, value);", "setStateValue(name, value);"),  # sent as "rank"
    ("    drawResidual(root, dec, residualScale(state, dec), true);\n", ""),  # not rescaled
    ("  if (params.peerLimit !== dec.residualLimit) announceDrawn", "  if (false) announceDrawn"),
]


@pytest.mark.browser
@pytest.mark.parametrize(("line", "mistake"), PLANTED)
def test_a_planted_mistake_fails_the_two_sides(chromium, line, mistake):
    source = script("decomposition")
    assert source.count(line) == 1, line
    page = js_page(chromium, source.replace(line, mistake))
    try:
        with pytest.raises(AssertionError):
            check_two_sides(page)
    finally:
        page.close()


DIFFERENCE_STATE = """() => { const r = document.querySelector('[data-figure="difference"]');
  return {drawn: r.getAttribute('data-drawn'),
          stale: r.querySelector('.body').getAttribute('data-stale'),
          text: r.innerText}; }"""


@pytest.mark.browser
def test_the_difference_is_stale_while_a_side_shows_another_setting(chromium):
    n = 30
    coeffs = preset_kernel("spike_smooth", n, 0.9).numpy()
    a = compare_side(coeffs, 9, 8, False, "sample", 0.9)
    b = compare_side(coeffs, 9, 16, False, "sample", 0.9)
    drawn_a, drawn_b = (side_drawn(s, n, 9, r, 0.9, "sample") for s, r in (("a", 8), ("b", 16)))
    data = difference_figure_data(difference(a, b), n, (drawn_a, drawn_b))
    page = js_page(chromium, script("difference"))
    try:
        page.evaluate("""(data) => { const host = document.createElement('div');
          document.body.replaceChildren(host);
          window.__mount = () => mountFigure({data, parentElement: host, setStateValue: () => {}});
          window.__mount(); }""", data)
        state = page.evaluate(DIFFERENCE_STATE)
        assert state["drawn"] == "&".join(f"{k}={v}" for k, v in data["drawn"])
        assert state["stale"] == "false"
        assert all(c["words"] in state["text"] for c in data["numbers"]), state["text"]
        hear = "([prefix, drawn]) => announce('decomposition', {prefix, drawn})"
        page.evaluate(hear, ["a_", drawn_a])
        assert page.evaluate(DIFFERENCE_STATE)["stale"] == "false"
        page.evaluate(hear, ["b_", side_drawn("b", n, 10, 16, 0.9, "sample")])  # B's m moved
        assert page.evaluate(DIFFERENCE_STATE)["stale"] == "true"
        page.evaluate(hear, ["b_", drawn_b])  # and back
        assert page.evaluate(DIFFERENCE_STATE)["stale"] == "false"
        cells = page.evaluate("""() => { const c = document.querySelector('[data-picture="D"]');
          return [c.width, c.height]; }""")
        assert cells == [n, n]
    finally:
        page.close()


# -- the app in Chromium --------------------------------------------------------------------
server = test_browser.server  # its fixture; the page comes from this module's Chromium
SIDE = "[data-testid='figure'][data-figure='decomposition']"
DIFFERENCE = "[data-testid='figure'][data-figure='difference']"


def figure_of(page, side: str):
    return page.locator(SIDE).filter(has=page.locator(f"input[name='{side}_rank']"))


# Records, in the page's own clock, what the figures show right after the range input
# ``name`` handles its next `input` event (this listener runs after the figure's own): a
# fast server cannot answer in between, as it can between two Playwright reads.
RECORD_NEXT_INPUT = """(name) => {
  const all = [];
  const walk = (root) => root.querySelectorAll('*').forEach((e) => {
    all.push(e);
    if (e.shadowRoot) walk(e.shadowRoot);
  });
  walk(document);
  const input = all.find((e) => e.matches(`input[name="${name}"]`));
  const figures = all.filter((e) => e.getAttribute('data-testid') === 'figure');
  const side = (f) => (f.dataset.figure === 'difference' ? 'difference'
    : f.querySelector('input[name="a_rank"]') ? 'a' : 'b');
  window.__recorded = null;
  input.addEventListener('input', () => {
    window.__recorded = Object.fromEntries(figures.map((f) => [side(f), {
      drawn: f.getAttribute('data-drawn'),
      stale: f.querySelector('.server, .body').getAttribute('data-stale')}]));
  }, {once: true});
}"""


def url_value(page, key: str) -> str | None:
    return dict(parse_qsl(page.url.partition("?")[2])).get(key)


@pytest.mark.browser
def test_keyboard_moves_of_a_r_and_b_m_redraw_only_their_own_figure(chromium, server):
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 900}))
    try:
        page.goto(f"{server}/compare?a_rank=8&b_rank=64")
        wait_idle(page)
        a, b = figure_of(page, "a"), figure_of(page, "b")
        want_a = "n=256&a_band=9&a_rank=8&a_decay=0.99&a_method=sample"
        want_b = "n=256&b_band=9&b_rank=64&b_decay=0.99&b_method=fit"
        assert (a.get_attribute("data-drawn"), b.get_attribute("data-drawn")) == (want_a, want_b)
        assert page.locator(f"{DIFFERENCE} .body").get_attribute("data-stale") == "false"
        for figure in (a, b):  # both residuals, and the sentence above them, on the first screen
            box = figure.locator("[data-picture='R']").bounding_box()
            assert box["y"] + box["height"] < 900 and box["width"] > 60, box
        sentence = page.get_by_text("Look at the two residuals")
        assert sentence.bounding_box()["y"] < 300
        test_browser.assert_clean(page, "compare-first-screen")
        # B is fit: while it waits for the server's A it draws A sampled, and says so
        moved_b = want_b.replace("b_band=9", "b_band=10")
        moves = [(a, b, "a_rank", "ArrowRight", want_a.replace("a_rank=8", "a_rank=9"), None),
                 (b, a, "b_band", "ArrowRight", moved_b,
                  moved_b.replace("b_method=fit", "b_method=sample"))]
        for figure, other, name, key, want, drawing in moves:
            before = other.get_attribute("data-drawn")
            page.evaluate(RECORD_NEXT_INPUT, name)
            figure.locator(f"input[name='{name}']").focus()
            page.keyboard.press(key)
            # drawn by the browser in the key's own event, before any server answer
            seen = page.evaluate("() => window.__recorded")
            mine, theirs = seen[name[0]], seen["b" if name[0] == "a" else "a"]
            assert mine == {"drawn": drawing or want, "stale": "true"}, seen
            assert theirs == {"drawn": before, "stale": "false"}, seen
            assert seen["difference"]["stale"] == "true", seen
            attribute_becomes(page, f"{DIFFERENCE} .body", "data-stale", "false")
            wait_idle(page)
            assert figure.get_attribute("data-drawn") == want
            assert other.get_attribute("data-drawn") == before
            assert figure.locator(".server").get_attribute("data-stale") == "false"
        assert (url_value(page, "a_rank"), url_value(page, "b_band")) == ("9", "10")
        assert (url_value(page, "a_band"), url_value(page, "b_rank")) == ("9", "64")
        drawn_strip = page.locator(DIFFERENCE).get_attribute("data-drawn")
        assert re.search(r"a_rank=9&.*b_band=10&", drawn_strip), drawn_strip
        test_browser.assert_clean(page, "compare-after-moves")
    finally:
        page.close()
