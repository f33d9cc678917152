"""The figures readable from the back of a room, by keyboard, on both themes (issue 38), in
Chromium, each figure mounted with a made-up component into a shadow root that holds
figure.css, as Streamlit's components v2 mounts it (no server).

1. Arrow keys on a focused figure slider move the slider, not the lesson: the page carries
   the lessons page's own key handler (its script in pages/lessons.py, read from the file) and
   its Back / Next buttons; ArrowRight on the focused slider moves it one step and clicks
   neither button, while ArrowRight with the focus elsewhere still clicks Next.
2. One text size: with ``--figure-font`` set on the page, every text of the figure (HTML in
   the shadow root, and every canvas ``fillText``) is drawn at that size, and every canvas
   label lies inside its canvas (margins measured from the text, nothing cut).
3. The round-off residual: at r = n, T = band + W A Wᵀ up to round-off. tnn_core's
   residual and the figure's are both below ROUNDOFF_SHARE × max|t_k|, and the residual's
   picture is drawn white (no pixel further than 2 levels from 255) with a sentence that
   says it is round-off; at r < n the residual keeps its own scale (a saturated pixel).
4. The theme: on Streamlit's dark background the figure takes the dark palette, and its
   legend text keeps a contrast of at least 4.5:1 there.

Screenshots under tests/screenshots/ (figure-access-*.png).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pages.figures import FOLDER, script
from tests.test_browser import SHOTS
from tests.test_figure_decomposition import figure_data
from tests.test_figure_fft import harmless
from tests.test_figure_palette import contrast
from tnn_core.analysis.decompose import decompose
from tnn_core.lab.common.decomposition_figures import synthetic_parts

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CSS = (FOLDER / "figure.css").read_text(encoding="utf-8")
# the lessons page's script that moves the steps on Left / Right
ARROW_KEYS = (ROOT / "pages" / "lessons" / "page.js").read_text(encoding="utf-8")
ROUNDOFF_SHARE = 1e-12  # decomposition.js

# Streamlit's main area with a lesson's Back / Next (counting their clicks) and a component
# host whose shadow root holds figure.css; every fillText recorded with its font and the box
# it covers on its canvas (transform applied: the rotated y label too).
PAGE = """<!doctype html><html><body style="margin: 0">
<div data-testid="stMain" style="padding: 8px">
  <button onclick="window.clicks.push('Back')">Back</button>
  <button onclick="window.clicks.push('Next')">Next</button>
  <div id="host"></div>
</div></body></html>"""
SPY = """window.clicks = []; window.texts = [];
const fill = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, x, y) {
  const m = this.measureText(text), w = m.width, align = this.textAlign;
  const x0 = align === 'right' || align === 'end' ? x - w : align === 'center' ? x - w / 2 : x;
  const t = this.getTransform();
  const corners = [[x0, y - m.actualBoundingBoxAscent], [x0 + w, y + m.actualBoundingBoxDescent]]
    .map(([a, b]) => [t.a * a + t.c * b + t.e, t.b * a + t.d * b + t.f]);
  window.texts.push({text: String(text), font: this.font, canvas: this.canvas.className ||
    this.canvas.dataset.picture || '', width: this.canvas.width, height: this.canvas.height,
    left: Math.min(corners[0][0], corners[1][0]), right: Math.max(corners[0][0], corners[1][0]),
    top: Math.min(corners[0][1], corners[1][1]), bottom: Math.max(corners[0][1], corners[1][1])});
  return fill.call(this, text, x, y);
};"""
MOUNT = """([data, css, font, background]) => {
  const host = document.getElementById('host');
  if (font) host.style.setProperty('--figure-font', font);
  if (background) host.style.setProperty('--st-background-color', background);
  document.body.style.background = background || '#ffffff';
  const shadow = host.attachShadow({mode: 'open'});
  shadow.innerHTML = `<style>${css}</style>`;
  const parent = document.createElement('div');
  shadow.appendChild(parent);
  window.sent = [];
  mountFigure({data, parentElement: parent,
               setStateValue: (name, value) => window.sent.push([name, value])});
  return shadow.querySelector('[data-testid="figure"]').getAttribute('data-drawn');
}"""
# every element of the shadow root with text of its own: [its text, computed font size]
HTML_TEXTS = """() => {
  const shadow = document.getElementById('host').shadowRoot, out = [];
  for (const e of shadow.querySelectorAll('*')) {
    const own = [...e.childNodes].filter((c) => c.nodeType === 3 && c.textContent.trim());
    if (own.length && e.getClientRects().length && e.tagName !== 'STYLE') {
      out.push([own.map((c) => c.textContent.trim()).join(' '),
                parseFloat(getComputedStyle(e).fontSize)]);
    }
  }
  return out;
}"""


def open_figure(chromium, name: str, data: dict, font: str | None = None,
                background: str | None = None, width: int = 1400):
    page = chromium.new_page(viewport={"width": width, "height": 900})
    page.set_content(PAGE)
    page.add_script_tag(content=SPY)
    page.add_script_tag(content=harmless(script(name)))
    page.add_script_tag(content=ARROW_KEYS)
    page.evaluate(MOUNT, [data, CSS, font, background])
    return page


def curve_data() -> dict:
    """error_curve's data: three curves against r, the mark at r = 16 (made-up errors)."""
    ranks = [2, 4, 8, 16, 32, 64, 128]
    return {"id": "c", "n": 256, "band": 9, "ranks": ranks, "rank": 16, "floor": 1e-7,
            "exact": [], "sample": [0.5 / r for r in ranks], "fit": [0.3 / r for r in ranks],
            "optimal": [0.1 / r ** 1.5 for r in ranks], "height": 240}


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"figure-access-{name}.png"), full_page=True)


def test_arrow_keys_on_a_focused_figure_slider_move_the_slider_not_the_lesson(chromium):
    page = open_figure(chromium, "decomposition", figure_data(100, 32, 9, 0.9))
    try:
        slider = page.locator("#host input[name='rank']")
        slider.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowLeft")
        assert slider.input_value() == "33"
        assert "rank=33" in page.locator("#host [data-testid='figure']").get_attribute(
            "data-drawn")
        assert page.evaluate("window.clicks") == []  # the step did not change
        assert page.evaluate("window.sent") == [["rank", 33], ["rank", 34], ["rank", 33]]
        page.locator("body").focus()  # elsewhere the arrow keys still move the steps
        page.evaluate("document.activeElement.blur()")
        page.keyboard.press("ArrowRight")
        assert page.evaluate("window.clicks") == ["Next"]
    finally:
        page.close()


@pytest.mark.parametrize("font", ["14.4px", "22px"])
def test_every_text_follows_the_figure_font_and_fits_its_canvas(chromium, font):
    size = float(font.removesuffix("px"))
    for name, data in (("error_curve", curve_data()),
                       ("decomposition", figure_data(100, 32, 9, 0.9))):
        page = open_figure(chromium, name, data, font=font)
        try:
            page.evaluate("() => new Promise((r) => requestAnimationFrame(() => r()))")
            shot(page, f"{name}-{font}")
            texts = page.evaluate(HTML_TEXTS)
            assert texts, name
            small = [(text, px) for text, px in texts if px < size - 0.01]
            assert not small, (name, small)
            drawn = page.evaluate("window.texts")
            if name == "error_curve":
                assert {"r = 16", "inducing points r", "relative Frobenius error"} <= {
                    t["text"] for t in drawn}
            for t in drawn:
                assert re.match(rf"{size:g}px ", t["font"]), (name, t)
                assert -1 <= t["left"] and t["right"] <= t["width"] + 1, (name, t)
                assert -1 <= t["top"] and t["bottom"] <= t["height"] + 1, (name, t)
        finally:
            page.close()


RESIDUAL = """() => {
  const shadow = document.getElementById('host').shadowRoot;
  const canvas = shadow.querySelector('[data-picture="R"]');
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let darkest = 255;
  for (let p = 0; p < data.length; p += 4) darkest = Math.min(darkest, data[p], data[p + 1],
                                                                data[p + 2]);
  return {darkest, title: shadow.querySelector('.title-R').textContent,
          scale: shadow.querySelector('.scale').textContent};
}"""


def test_a_round_off_residual_is_drawn_white_and_said_to_be_round_off(chromium):
    n, band = 64, 9
    base, extra = synthetic_parts("spike_smooth", n, False)
    t = base * 0.9 ** np.abs(np.arange(-(n - 1), n)) + extra
    exact = decompose(t, band, n)  # r = n: every lag an inducing point
    assert np.abs(exact.residual_matrix()).max() <= ROUNDOFF_SHARE * np.abs(t).max()
    page = open_figure(chromium, "decomposition", figure_data(n, n, band, 0.9))
    try:
        js = page.evaluate("([t, band, n]) => decompose(Float64Array.from(t), band, n, false, "
                           "null).residualLimit", [t.tolist(), band, n])
        assert js <= ROUNDOFF_SHARE * np.abs(t).max()
        drawn = page.evaluate(RESIDUAL)
        shot(page, "residual-round-off")
        assert drawn["darkest"] >= 253, drawn  # white: no saturated diagonal
        assert "round-off" in drawn["title"] and "the residual is round-off" in drawn["scale"]
        page.evaluate("""() => { const i = document.getElementById('host').shadowRoot
          .querySelector("input[name='rank']"); i.value = '8';
          i.dispatchEvent(new Event('input')); }""")
        drawn = page.evaluate(RESIDUAL)
        shot(page, "residual-rank-8")
        assert drawn["darkest"] < 60, drawn  # its own scale: the largest entry saturated
        assert "own scale" in drawn["title"] and "round-off" not in drawn["scale"]
    finally:
        page.close()


KEYS = """() => [...document.getElementById('host').shadowRoot.querySelectorAll('.key')]
  .map((e) => [e.textContent, getComputedStyle(e).color])"""


@pytest.mark.parametrize("theme,background", [("light", "#ffffff"), ("dark", "#0e1117")])
def test_the_legend_keeps_its_contrast_on_either_theme(chromium, theme, background):
    page = open_figure(chromium, "error_curve", curve_data(), background=background)
    try:
        root = page.locator("#host [data-testid='figure']")
        assert root.get_attribute("data-theme") == theme
        shot(page, f"legend-{theme}")
        keys = page.evaluate(KEYS)
        assert len(keys) == 3
        for text, colour in keys:
            rgb = [int(v) for v in re.findall(r"\d+", colour)[:3]]
            hex_colour = "#" + "".join(f"{v:02x}" for v in rgb)
            assert contrast(hex_colour, background) >= 4.5, (text, colour)
    finally:
        page.close()
