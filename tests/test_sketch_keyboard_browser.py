"""A lesson's sketch question answered without a mouse, in Chromium at 1400 × 900 on a
server of its own (pages/lessons/sketch.js):

- by keyboard only: Tab reaches the drawing area (a visible focus ring), the arrow keys
  move its cursor without changing the lesson's step, Enter places a point, Backspace
  removes the last one, and Tab then Enter on Reveal draws the lab's curve over the sketch;
- by touch, in a context with a touchscreen: a finger's drag (Chromium's own touch events,
  which it turns into pointer events with pointerType "touch") draws like the mouse, and a
  tap on Reveal answers.

Screenshots: tests/screenshots/sketch-keyboard.png, sketch-touch.png.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.app_server import app_server
from tnn_core.lab.lesson import load_lessons

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"
WIDTH, HEIGHT = 1400, 900
SKETCH = "[data-figure='sketch']"
# the element that has the focus, inside shadow roots too: [tag, figure, outline style,
# outline width in px]
FOCUSED = """() => {
  let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  if (!e) return null;
  const style = getComputedStyle(e);
  const figure = e.closest('[data-testid="figure"]');
  return [e.tagName, figure ? figure.dataset.figure : null, style.outlineStyle,
          parseFloat(style.outlineWidth), (e.innerText || '').trim()];
}"""
ANSWERED = ("() => [...document.querySelectorAll(\"[data-testid='stAlert']\")].some((a) => "
            "/the answer is the lab's curve/i.test(a.innerText))")


def sketch_steps() -> list[tuple[str, int]]:
    """(lesson title, step number) of every sketch question of the shipped lessons."""
    return [(lesson.title, number) for lesson in load_lessons()[0]
            for number, step in enumerate(lesson.steps, start=1)
            if step.question is not None and step.question.sketch]


@pytest.fixture(scope="module")
def server():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with app_server({"TOEPLITZ_LAB_WARM_UP": "none"}, SHOTS / "sketch-server.log") as (url, _):
        yield url


def open_step(page, server: str, title: str, number: int) -> None:
    query = urllib.parse.urlencode({"lesson": title, "step": number, "present": "true"})
    page.goto(f"{server}/lessons?{query}")
    wait_idle(page)
    page.wait_for_selector(f"{SKETCH}[data-drawn]")


def drawn(page) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(page.locator(SKETCH).get_attribute("data-drawn"),
                                       keep_blank_values=True))


def press(page, key: str, times: int = 1) -> None:
    for _ in range(times):
        page.keyboard.press(key)


def test_a_sketch_is_answered_by_keyboard_alone(chromium, server):
    title, number = sketch_steps()[0]
    page = follow_socket(chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT}))
    try:
        open_step(page, server, title, number)
        for _ in range(80):  # Tab until the sketch has the focus
            page.keyboard.press("Tab")
            focused = page.evaluate(FOCUSED)
            if focused and focused[:2] == ["CANVAS", "sketch"]:
                break
        else:
            pytest.fail(f"Tab never reached the sketch; the focus ends on {focused}")
        assert focused[2] != "none" and focused[3] >= 2, f"no visible focus ring: {focused}"
        assert drawn(page)["points"] == "0"
        address = page.url
        press(page, "ArrowRight", 4)
        press(page, "ArrowUp", 6)
        start = drawn(page)["cursor"]
        assert start and page.url == address, "the arrow keys changed the lesson's step"
        placed = []
        for right, down in ((0, 0), (12, 3), (12, 3)):
            press(page, "ArrowRight", right)
            press(page, "ArrowDown", down)
            page.keyboard.press("Enter")
            placed.append(drawn(page)["cursor"])
            wait_idle(page)
        assert drawn(page)["points"] == "3" and len(set(placed)) == 3, (drawn(page), placed)
        xs = [float(cursor.split(",")[0]) for cursor in placed]
        ys = [float(cursor.split(",")[1]) for cursor in placed]
        assert xs == sorted(xs) and ys == sorted(ys, reverse=True), placed  # right and down
        page.keyboard.press("Backspace")
        wait_idle(page)
        assert drawn(page)["points"] == "2"
        page.keyboard.press("Enter")  # the same point again
        wait_idle(page)
        assert drawn(page)["points"] == "3"
        assert f"step={number}" in page.url and "sketch=" in page.url, page.url
        for _ in range(20):  # Tab on to Reveal, enabled by the placed points
            page.keyboard.press("Tab")
            focused = page.evaluate(FOCUSED)
            if focused and focused[0] == "BUTTON" and focused[4].endswith("Reveal"):
                break
        else:
            pytest.fail(f"Tab never reached an enabled Reveal; the focus ends on {focused}")
        page.keyboard.press("Enter")
        page.wait_for_function(ANSWERED, timeout=60_000)
        wait_idle(page)
        assert drawn(page)["truth"] == "1" and drawn(page)["points"] == "3"
        page.screenshot(path=str(SHOTS / "sketch-keyboard.png"))
        assert page.locator("[data-testid='stException']").count() == 0
    finally:
        page.close()


def touch_drag(page, box: dict, steps: int = 16) -> None:
    """One finger from the left fifth of ``box`` to its right, falling, in touch events."""
    cdp = page.context.new_cdp_session(page)

    def at(i: int) -> list[dict]:
        return [{"x": box["x"] + (0.2 + 0.6 * i / steps) * box["width"],
                 "y": box["y"] + (0.2 + 0.5 * i / steps) * box["height"]}]

    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": at(0)})
    for i in range(1, steps + 1):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": at(i)})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def test_a_sketch_is_drawn_and_answered_by_touch(chromium, server):
    title, number = sketch_steps()[-1]
    context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT}, has_touch=True)
    page = follow_socket(context.new_page())
    try:
        open_step(page, server, title, number)
        canvas = page.locator(f"{SKETCH} canvas")
        canvas.scroll_into_view_if_needed()
        scrolled = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\")"
                                 ".scrollTop")
        touch_drag(page, canvas.bounding_box())
        wait_idle(page)
        assert int(drawn(page)["points"]) >= 10, drawn(page)
        assert page.evaluate("() => document.querySelector(\"[data-testid='stMain']\")"
                             ".scrollTop") == scrolled, "the drag scrolled the page"
        reveal = page.locator("[data-testid='stMain']").get_by_role("button", name="Reveal")
        assert reveal.is_enabled()
        # a hand lifts the finger, then reaches for Reveal: in headless Chromium a tap
        # within a few hundred ms of the drag's release gave pointerdown and no click
        page.wait_for_function("() => /[?&]sketch=/.test(location.search)")  # sent, kept
        wait_idle(page)
        page.wait_for_timeout(1000)
        reveal.tap()
        wait_idle(page)
        page.screenshot(path=str(SHOTS / "sketch-touch.png"))
        page.wait_for_function(ANSWERED, timeout=30_000)
        assert drawn(page)["truth"] == "1"
        assert page.locator("[data-testid='stException']").count() == 0
    finally:
        context.close()
