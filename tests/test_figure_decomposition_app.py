"""The band + W A Wᵀ figure driven on the running app in Chromium: a link opens it and
keyboard moves redraw it in the browser. (The figure against tnn_core:
test_figure_decomposition.py.)
"""

from __future__ import annotations

import re

import pytest
import test_browser
from test_figure_fft import attribute_becomes

from tests.app_idle import follow_socket, wait_idle

pytestmark = pytest.mark.browser


# -- the app ------------------------------------------------------------------------------
server = test_browser.server  # its fixture; the page comes from this module's Chromium
FIGURE = "[data-testid='figure'][data-figure='decomposition']"
CURVE = "[data-testid='figure'][data-figure='error_curve']"


def record_draws(page) -> None:
    """From now on, window.figureDraws lists [data-drawn, server numbers' data-stale] after
    every change to either, in order: the order survives a loaded machine, where reading the
    attributes after a key press can come after the server's answer."""
    page.evaluate(
        """(selector) => {
             const find = (root) => root.querySelector(selector) || [...root.querySelectorAll(
               '*')].filter((e) => e.shadowRoot).map((e) => find(e.shadowRoot)).find(Boolean);
             const figure = find(document);
             const snapshot = () => [figure.getAttribute('data-drawn'),
                                     figure.querySelector('.server').getAttribute('data-stale')];
             if (window.figureObserver) window.figureObserver.disconnect();
             window.figureDraws = [snapshot()];
             window.figureObserver = new MutationObserver(() => {
               const last = window.figureDraws[window.figureDraws.length - 1];
               const now = snapshot();
               if (now[0] !== last[0] || now[1] !== last[1]) window.figureDraws.push(now);
             });
             window.figureObserver.observe(figure, {subtree: true, attributes: true,
                                                    attributeFilter: ['data-drawn', 'data-stale']});
           }""", FIGURE)


def test_a_link_opens_the_figure_and_keyboard_moves_redraw_it_in_the_browser(chromium,
                                                                            server):
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 900}))
    try:
        page.goto(f"{server}/decomposition?n=1024&band=9&rank=33")
        wait_idle(page)
        figure = page.locator(FIGURE)
        expected = "n=1024&band=9&rank=33&decay=0.99&method=sample"
        attribute_becomes(page, FIGURE, "data-drawn", expected)
        attribute_becomes(page, f"{FIGURE} .server", "data-stale", "false")
        assert page.locator(CURVE).get_attribute("data-drawn") == "n=1024&band=9&rank=33"
        assert figure.bounding_box()["y"] < 400  # the figure opens the page
        pictures = page.locator(f"{FIGURE} .pictures canvas").all()
        assert len(pictures) == 4 and all(p.bounding_box()["y"] + p.bounding_box()["height"]
                                          < 900 for p in pictures)  # on the first screen
        test_browser.assert_clean(page, "decomposition-figure-first-screen")
        moves = [("rank", "ArrowRight", "n=1024&band=9&rank=34&decay=0.99&method=sample"),
                 ("band", "ArrowRight", "n=1024&band=10&rank=34&decay=0.99&method=sample"),
                 ("decay", "ArrowLeft", "n=1024&band=10&rank=34&decay=0.985&method=sample")]
        for name, key, want in moves:
            page.locator(f"{FIGURE} input[name='{name}']").focus()
            record_draws(page)
            page.keyboard.press(key)
            attribute_becomes(page, FIGURE, "data-drawn", want)
            attribute_becomes(page, f"{FIGURE} .server", "data-stale", "false")
            # drawn by the browser, its server numbers marked stale, before the answer came
            draws = page.evaluate("window.figureDraws")
            assert [want, "true"] in draws, draws
            assert draws.index([want, "true"]) < draws.index([want, "false"]), draws
            assert figure.get_attribute("data-drawn") == want
            wait_idle(page)
        assert re.search(r"[?&]rank=34(&|$)", page.url) and re.search(r"[?&]band=10(&|$)",
                                                                      page.url)
        assert re.search(r"[?&]decay=0.985(&|$)", page.url), page.url
        attribute_becomes(page, CURVE, "data-drawn", "n=1024&band=10&rank=34")
        test_browser.assert_clean(page, "decomposition-figure-after-moves")
        # fit: sampled A while waiting, the server's least-squares A after
        page.get_by_text("fit", exact=True).click()
        attribute_becomes(page, FIGURE, "data-drawn",
                          "n=1024&band=10&rank=34&decay=0.985&method=fit")
        attribute_becomes(page, f"{FIGURE} .live", "data-stale", "false")
        wait_idle(page)
        # the shared link opens exactly this view
        page.goto(page.url)
        wait_idle(page)
        attribute_becomes(page, FIGURE, "data-drawn",
                          "n=1024&band=10&rank=34&decay=0.985&method=fit")
        test_browser.assert_clean(page, "decomposition-figure-fit-link")
    finally:
        page.close()


RECURRENT = "[data-testid='figure'][data-figure='recurrent_fit']"


def test_the_recurrent_fit_follows_keys_in_the_browser(chromium, server):
    """A causal kernel's recurrent fit: keys move s, the browser redraws (data-drawn) and
    the settled s goes into the address; a screenshot of the figure for a person to read."""
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 2400}))
    try:
        page.goto(f"{server}/decomposition?source=Fresh+TNN+operator+%28tno%29&causal=true"
                  "&n=512&modes=3")
        wait_idle(page)
        attribute_becomes(page, RECURRENT, "data-drawn", "n=512&modes=3")
        slider = page.locator(f"{RECURRENT} input[name='modes']")
        for key, want in (("ArrowRight", "n=512&modes=4"), ("ArrowLeft", "n=512&modes=3"),
                          ("ArrowLeft", "n=512&modes=2")):
            slider.focus()
            page.keyboard.press(key)
            attribute_becomes(page, RECURRENT, "data-drawn", want, timeout=10_000)
            wait_idle(page)
        assert re.search(r"[?&]modes=2(&|$)", page.url), page.url
        page.locator(RECURRENT).scroll_into_view_if_needed()
        page.locator(RECURRENT).screenshot(path=str(test_browser.SHOTS /
                                                    "decomposition-recurrent-fit.png"))
        test_browser.assert_clean(page, "decomposition-recurrent-fit-page")
    finally:
        page.close()
