"""Every lesson step in presenter mode, in Chromium at 1400 × 900, as a teacher walks it.

For each lesson: open step 1 from a link, then for every step predict (the first choice,
or the right number), Reveal, and press ArrowRight to go on, with the focus on a figure's
slider when the step has one (the arrow keys move the steps wherever the focus is). At
each step, scrolled to the top: every figure of the step has drawn (``data-drawn``) and
its bounding box lies inside the 1400 × 900 viewport, as does the question's Reveal
button; the answer shows after Reveal; no exception. One screenshot per step under
tests/screenshots/ (steps-LESSON-STEP.png).

The page's own clock times each Next (key press to the new step's figures drawn, or, for
a step without figures, to its heading on the screen with the run over) and each Reveal
(click to the answer on the screen); ``test_walk_every_step`` prints them.
"""

from __future__ import annotations

import statistics
import urllib.parse

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.test_browser import SHOTS, server  # noqa: F401 - server is a fixture
from tnn_core.lab.lesson import load_lessons

pytestmark = pytest.mark.browser

LESSONS = load_lessons()[0]
# How long a step may take to show before the walk fails: a guard against a hang, not a
# latency target (the walk prints those). Lesson 2's Table 10 step scores two models at up
# to 16x their length, about 9 s of one core, and several times that on a loaded machine.
STEP_TIMEOUT_MS = 180_000
WIDTH, HEIGHT = 1400, 900
PANELS = {name: f".st-key-lesson-{name}"  # a step's pictures or numbers drawn on the server
          for name in ("ablation", "conversion", "atlas", "table10", "modes_against_decay")}
PANELS["circulant"] = ".st-key-circulant-steps"
# every figure root of this step, inside the components' shadow roots too (those of the
# step before, remembered in window.previousFigures, left out): [name, top, bottom, left,
# right, data-drawn]
ROOTS = """() => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.dataset && e.dataset.testid === 'figure' &&
          !(window.previousFigures && window.previousFigures.has(e))) found.push(e);
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""
FIGURES = f"""() => ({ROOTS})().map((e) => {{ const r = e.getBoundingClientRect();
  return [e.dataset.figure, r.top, r.bottom, r.left, r.right, e.dataset.drawn || null]; }})"""
FORGET = f"() => {{ window.previousFigures = new WeakSet(({ROOTS})()); }}"
NEXT_FRAME = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
TO_TOP = """() => { for (const e of [document.scrollingElement,
  document.querySelector("[data-testid='stMain']"),
  document.querySelector("[data-testid='stAppViewContainer']")]) if (e) e.scrollTop = 0; }"""


@pytest.fixture(scope="module")
def chromium_page(server, chromium):  # noqa: F811 - the fixture imported above
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = follow_socket(chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT}))
    yield page
    page.close()


def figures_drawn(page, count: int, timeout: int = STEP_TIMEOUT_MS) -> float:
    """Wait until ``count`` figures have drawn; the page clock's time then."""
    return page.wait_for_function(
        f"() => {{ const f = ({FIGURES})(); return f.length >= {count} && "
        "f.every((x) => x[5]) ? performance.now() : false; }", timeout=timeout,
        polling="raf").json_value()


def expected_figures(step) -> int:
    """How many figure roots the step draws (Compare: its two sides; a sketch question its
    sketch)."""
    sketched = int(step.question is not None and bool(step.question.sketch))
    if not step.drawn:
        return sketched
    if step.view.path == "compare":
        return 2 + sketched
    names = set(step.drawn) - set(PANELS)  # drawn on the server, not figures
    if "factors" in names:  # the decomposition figure with W · A · Wᵀ open
        names = names - {"factors"} | {"decomposition"}
    return len(names) + sketched


def sketch_across(page) -> None:
    """Draw a falling line across the sketch figure's canvas with the mouse; the figure
    reports the points it kept."""
    canvas = page.locator("[data-figure='sketch'] canvas")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 0.2 * box["width"], box["y"] + 0.2 * box["height"])
    page.mouse.down()
    for step in range(1, 21):
        page.mouse.move(box["x"] + (0.2 + 0.035 * step) * box["width"],
                        box["y"] + (0.2 + 0.03 * step) * box["height"])
    page.mouse.up()
    wait_idle(page)
    drawn = page.locator("[data-figure='sketch']").get_attribute("data-drawn")
    assert drawn.startswith("points=") and int(drawn.split("&")[0][7:]) >= 10, drawn


# One walk through a lesson as a class sees it, step after step: its checks follow the walk.
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_walk_every_step(chromium_page, server, lesson):  # noqa: F811
    page = chromium_page
    query = urllib.parse.urlencode({"lesson": lesson.title, "step": 1, "present": "true"})
    page.goto(f"{server}/lessons?{query}")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    nexts, reveals = [], []
    for number, step in enumerate(lesson.steps, start=1):
        heading = main.locator("h2").first
        assert heading.inner_text().startswith(f"{number}. {step.title}")
        count = expected_figures(step)
        if count:
            figures_drawn(page, count)
        if step.question is not None:  # the question fits the screen with the figure
            page.evaluate(TO_TOP)
            reveal = main.get_by_role("button", name="Reveal").bounding_box()
            assert reveal["y"] + reveal["height"] <= HEIGHT, (
                f"step {number}: Reveal ends at y {reveal['y'] + reveal['height']:.0f}")
            group = main.get_by_test_id("stRadioGroup")
            if step.question.sketch:
                sketch_across(page)
            elif step.question.choices:
                group.first.get_by_text(step.question.choices[0], exact=True).click()
            else:
                main.get_by_placeholder("type a number").fill(f"{step.question.answer:g}")
                main.get_by_placeholder("type a number").press("Enter")
            wait_idle(page)
            start = page.evaluate("() => performance.now()")
            main.get_by_role("button", name="Reveal").click()
            shown = page.wait_for_function(
                "() => [...document.querySelectorAll(\"[data-testid='stAlert']\")].some("
                "(a) => /the answer is/i.test(a.innerText)) ? performance.now() : false",
                timeout=STEP_TIMEOUT_MS, polling="raf").json_value()
            reveals.append(shown - start)
            wait_idle(page)
        page.evaluate(TO_TOP)
        page.evaluate(NEXT_FRAME)
        page.screenshot(path=str(SHOTS / f"steps-{lesson.slug}-{number}.png"))
        boxes = page.evaluate(FIGURES)
        assert len(boxes) == count, (number, boxes)
        for name in set(step.drawn) & set(PANELS):  # drawn on the server: on screen too
            box = page.locator(PANELS[name]).bounding_box()
            boxes.append([name, box["y"], box["y"] + box["height"], box["x"],
                          box["x"] + box["width"], "server"])
        for name, top, bottom, left, right, drawn in boxes:
            assert drawn, (number, name)
            assert 0 <= top and bottom <= HEIGHT and 0 <= left and right <= WIDTH, (
                f"step {number}: figure {name} spans y {top:.0f}..{bottom:.0f}, x "
                f"{left:.0f}..{right:.0f}, outside {WIDTH} × {HEIGHT}")
        assert page.locator("[data-testid='stException']").count() == 0
        if number == len(lesson.steps):
            break
        slider = main.locator("input[type='range']")  # inside a figure, if any
        if slider.count():
            slider.first.focus()
        else:
            heading.click()
        page.evaluate(FORGET)
        start = page.evaluate("() => performance.now()")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => /[?&]step={number + 1}(&|$)/.test(location.search)",
                               timeout=STEP_TIMEOUT_MS)
        following = lesson.steps[number]
        if expected_figures(following):
            nexts.append(figures_drawn(page, expected_figures(following)) - start)
        else:  # the new step's heading on the screen and its run over
            nexts.append(page.wait_for_function(
                f"() => [...document.querySelectorAll('h2')].some((h) => h.innerText"
                f".startsWith('{number + 1}. ')) && document.querySelector(\"[data-testid="
                f"'stApp'][data-test-script-state='notRunning']\") ? performance.now() : false",
                timeout=STEP_TIMEOUT_MS, polling="raf").json_value() - start)
            wait_idle(page)
    print(f"\n{lesson.slug}: Next → drawn median "
          f"{statistics.median(nexts) if nexts else float('nan'):.0f} ms over {len(nexts)} "
          f"({', '.join(f'{t:.0f}' for t in nexts)}), Reveal median "
          f"{statistics.median(reveals) if reveals else float('nan'):.0f} ms over "
          f"{len(reveals)} ({', '.join(f'{t:.0f}' for t in reveals)})")


def test_a_step_link_opens_that_step_with_its_figure(chromium_page, server):  # noqa: F811
    """The link a step shows, opened in a fresh browser: the same step, its figure drawn."""
    import re

    lesson = LESSONS[2]
    number = 3
    page = chromium_page
    query = urllib.parse.urlencode({"lesson": lesson.title, "step": number})
    page.goto(f"{server}/lessons?{query}")
    wait_idle(page)
    link = re.search(r"Link to this step: (\S+)",
                     page.locator("[data-testid='stMain']").inner_text()).group(1)
    fresh = page.context.browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        other = follow_socket(fresh.new_page())
        other.goto(link)
        wait_idle(other)
        heading = other.locator("[data-testid='stMain'] h2").first.inner_text()
        assert heading.startswith(f"{number}. {lesson.steps[number - 1].title}")
        figures_drawn(other, expected_figures(lesson.steps[number - 1]))
        assert other.locator("[data-testid='stException']").count() == 0
    finally:
        fresh.close()
