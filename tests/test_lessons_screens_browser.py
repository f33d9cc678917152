"""Every lesson step on two more screens, in Chromium: a 1280 × 720 projector or laptop in
presenter mode, and a 390 × 844 phone in the page's own mode.

At 1280 × 720 (the type follows the screen's height: pages/lessons.py PRESENTER_STYLE),
scrolled to the top, every figure of the step and its Reveal lie inside the first screen,
before Reveal and after it; after Reveal the verdict is on the screen. At 390 × 844 (the
columns stacked), neither the document nor the app's scrolling main area is wider than the
screen, before Reveal and after, every visible slider (a figure's range input or a
Streamlit slider) is at least 280 px wide, thumb-sized steps for the whole range, and after
Reveal the verdict is on the screen (the page keeps it there while the figures above it
settle their height). Every step, with no exception listed.
The Decomposition page on the phone: the same width and slider checks. Screenshots:
tests/screenshots/steps-720-LESSON-STEP.png, steps-phone-LESSON-STEP.png (the top) and
steps-phone-LESSON-STEP-figures.png (scrolled to the figures), decomposition-phone.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.test_browser import SHOTS, server  # noqa: F401 - server is a fixture
from tests.test_lessons_browser import (
    LESSONS,
    TO_TOP,
    assert_on_screen,
    check_question,
    expected_figures,
    figures_drawn,
    next_step,
    open_step,
    soft,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
LAPTOP = (1280, 720)
PHONE = (390, 844)
SLIDER_PX = 280  # a phone's slider: at least this wide
MAIN_SCROLL = "() => document.querySelector(\"[data-testid='stMain']\").scrollTop"
# [document's scroll width, the main area's scroll width] and [name, width] of every visible
# slider, inside the figures' shadow roots too
WIDTHS = """() => [document.scrollingElement.scrollWidth,
  document.querySelector("[data-testid='stMain']").scrollWidth]"""
SLIDERS = """() => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll("input[type='range']")) {
      // a Streamlit slider's input is a hidden 1 px stand-in: its track is the slider's box
      const box = (e.closest("[data-testid='stSlider']") || e).getBoundingClientRect();
      if (box.width && box.height) found.push([e.name || e.getAttribute('aria-label') || '?',
                                               box.width]);
    }
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) walk(e.shadowRoot);
  };
  walk(document);
  return found;
}"""


def page_at(chromium, size: tuple[int, int]):
    SHOTS.mkdir(parents=True, exist_ok=True)
    return follow_socket(chromium.new_page(viewport={"width": size[0], "height": size[1]}))


@pytest.fixture(scope="module")
def laptop_page(server, chromium):  # noqa: F811 - the fixture imported above
    page = page_at(chromium, LAPTOP)
    yield page
    page.close()


@pytest.fixture(scope="module")
def phone_page(server, chromium):  # noqa: F811 - the fixture imported above
    page = page_at(chromium, PHONE)
    yield page
    page.close()


def walk(page, server: str, lesson, present: bool, check) -> None:  # noqa: F811
    """Every step of ``lesson`` from step 1, ArrowRight after ArrowRight: ``check(step,
    number, revealed)`` before a question is revealed and once the step is complete, and
    the verdict on the screen after Reveal; the problems of every step, then: none."""
    open_step(page, server, lesson, 1, present)
    problems = []
    for number, step in enumerate(lesson.steps, start=1):
        assert page.locator("[data-testid='stMain'] h2").first.inner_text().startswith(
            f"{number}. {step.title}")
        if expected_figures(step, revealed=False):
            figures_drawn(page, expected_figures(step, revealed=False))
        if step.question is not None:
            soft(problems, check, step, number, False)
            check_question(page, step, number, problems, page.viewport_size["height"])
            figures_drawn(page, expected_figures(step))
        soft(problems, check, step, number, True)
        assert page.locator("[data-testid='stException']").count() == 0
        if number < len(lesson.steps):
            next_step(page, number + 1, lesson.steps[number])
    assert not problems, "\n".join(problems)


def shot_at_top(page, name: str) -> None:
    """A screenshot of the page scrolled to its top, tests/screenshots/NAME.png."""
    page.evaluate(TO_TOP)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_step_fits_a_720_line_screen(laptop_page, server, lesson):  # noqa: F811
    def check(step, number: int, revealed: bool) -> None:
        if revealed:
            shot_at_top(laptop_page, f"steps-720-{lesson.slug}-{number}")
        assert_on_screen(laptop_page, step, number, revealed, *LAPTOP)

    walk(laptop_page, server, lesson, True, check)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_step_fits_a_phone(phone_page, server, lesson):  # noqa: F811
    def check(step, number: int, revealed: bool) -> None:
        if revealed:
            shot_at_top(phone_page, f"steps-phone-{lesson.slug}-{number}")
            figures = phone_page.locator(".st-key-step-figures")
            if figures.count():
                figures.scroll_into_view_if_needed()
                phone_page.screenshot(
                    path=str(SHOTS / f"steps-phone-{lesson.slug}-{number}-figures.png"))
        document, main = phone_page.evaluate(WIDTHS)
        assert document <= PHONE[0] and main <= PHONE[0], (
            f"step {number}: {max(document, main)} px wide on a {PHONE[0]} px screen")
        narrow = [s for s in phone_page.evaluate(SLIDERS) if s[1] < SLIDER_PX]
        assert not narrow, f"step {number}: sliders under {SLIDER_PX} px: {narrow}"

    walk(phone_page, server, lesson, False, check)


def test_decomposition_fits_a_phone(phone_page, server):  # noqa: F811
    """The Decomposition page's sliders, r's 2…1024 among them, and its width on a phone."""
    phone_page.goto(f"{server}/decomposition")
    wait_idle(phone_page)
    figures_drawn(phone_page, 1)
    document, main = phone_page.evaluate(WIDTHS)
    assert document <= PHONE[0] and main <= PHONE[0], (document, main)
    sliders = phone_page.evaluate(SLIDERS)
    assert len(sliders) >= 3 and all(s[1] >= SLIDER_PX for s in sliders), sliders
    phone_page.locator("[data-figure='decomposition']").scroll_into_view_if_needed()
    phone_page.screenshot(path=str(SHOTS / "decomposition-phone.png"))


# The lessons page's own script (pages/lessons/page.js), on a page shaped like Streamlit's: a
# scrolling main area whose column holds a figure, Reveal, and the verdict once it comes.
# The scroller does no scroll anchoring of its own, so the script alone keeps the verdict.
PAGE_SCRIPT = (ROOT / "pages" / "lessons" / "page.js").read_text(encoding="utf-8")
SETTLING_PAGE = """<!doctype html><html><body style="margin: 0">
<div data-testid="stApp" data-test-script-state="running">
<div data-testid="stMain" style="height: 400px; overflow: auto; overflow-anchor: none">
  <div data-testid="stMainBlockContainer"><div data-testid="stColumn">
    <div id="figure" style="height: 500px">a figure</div>
    <button>Reveal</button><div id="slot"></div><div style="height: 600px"></div>
  </div></div>
</div></div></body></html>"""
# In the page, with no round trip between: Reveal, the run that brings the verdict and ends,
# the verdict scrolled to the screen's bottom edge; then each of ``changes`` (JavaScript run
# in the page) and three frames after it: the verdict's bottom and the main area's scroll.
AFTER_REVEAL = """async (changes) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const frames = (k) => new Promise((done) => {
    const next = (i) => (i ? requestAnimationFrame(() => next(i - 1)) : done()); next(k); });
  const bottom = () => document.querySelector('[data-testid="stAlert"]')
    .getBoundingClientRect().bottom;
  document.querySelector('button').click();  // Reveal; the view stays put
  document.getElementById('slot').innerHTML =
    '<div data-testid="stAlert" style="height: 80px">Right: the answer is 16.</div>';
  document.querySelector('[data-testid="stApp"]').dataset.testScriptState = 'notRunning';
  for (let i = 0; i < 60 && Math.abs(bottom() - 400) > 0.5; i++) await frames(1);
  const seen = [[bottom(), main.scrollTop]];
  for (const change of changes) {
    new Function(change)();
    await frames(3);
    seen.push([bottom(), main.scrollTop]);
  }
  return seen;
}"""
GROW = "document.getElementById('figure').style.height = '{}px'"


def after_reveal(chromium, changes: list[str]) -> list[list[float]]:
    """[verdict's bottom, main area's scrollTop] once placed, then after each change."""
    page = chromium.new_page(viewport={"width": 390, "height": 400})
    try:
        page.set_content(SETTLING_PAGE)
        page.add_script_tag(content=PAGE_SCRIPT)
        return page.evaluate(AFTER_REVEAL, changes)
    finally:
        page.close()


def test_the_verdict_stays_on_screen_while_the_figure_above_it_settles(chromium):
    """The figure above the verdict grows after the run is over (a sketch gains the lab's
    line, as on a phone): the page scrolls the verdict back onto the screen."""
    grown = (503, 530, 560)  # three late settlings, 3 px first (5.3's on a phone)
    seen = after_reveal(chromium, [GROW.format(height) for height in grown])
    assert abs(seen[0][0] - 400) < 0.5 and seen[0][1] > 0, seen  # placed at the edge
    assert all(bottom <= 400.5 for bottom, _ in seen[1:]), seen


def test_the_reader_scrolling_away_ends_the_keeping(chromium):
    """Once the reader scrolls elsewhere, a later resize no longer pulls the view back."""
    seen = after_reveal(chromium, [
        "document.querySelector('[data-testid=\"stMain\"]').scrollTop = 0", GROW.format(540)])
    assert seen[1][1] == 0 and seen[2][1] == 0, seen


def reveal_step(page, server: str, lesson, number: int, present: bool):  # noqa: F811
    """Step ``number`` of ``lesson`` opened from its link, answered and revealed as the walk
    does (the verdict on the page's screen), every figure drawn: the step."""
    step = lesson.steps[number - 1]
    open_step(page, server, lesson, number, present)
    figures_drawn(page, expected_figures(step, revealed=False))
    problems = []
    check_question(page, step, number, problems, page.viewport_size["height"])
    assert not problems, problems
    figures_drawn(page, expected_figures(step))
    return step


def test_next_on_a_phone_opens_the_new_step_at_its_top(phone_page, server):  # noqa: F811
    """Scrolled down to 5.2's figures after its Reveal, Next: 5.3 opens at its top with its
    heading on the screen, and stays there while its figures load below. Before page.js
    scrolled a new step to its top, 5.3 opened 1,350 px down, its heading and its sketch
    far above the screen."""
    lesson = next(lesson for lesson in LESSONS if lesson.slug == "5-reading-a-trained-model")
    reveal_step(phone_page, server, lesson, 2, False)
    phone_page.locator(".st-key-step-figures").scroll_into_view_if_needed()
    assert phone_page.evaluate(MAIN_SCROLL) > 0  # the reader is down at the figures
    next_step(phone_page, 3, lesson.steps[2])
    wait_idle(phone_page)
    heading = phone_page.locator("[data-testid='stMain'] h2").first
    assert heading.inner_text().startswith(f"3. {lesson.steps[2].title}")
    assert phone_page.evaluate(MAIN_SCROLL) == 0
    box = heading.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= PHONE[1], box


STEPS_PAGE = """<!doctype html><html><body style="margin: 0">
<div data-testid="stApp" data-test-script-state="notRunning">
<div data-testid="stMain" style="height: 400px; overflow: auto">
  <h2>2. The band ablation</h2><div id="body" style="height: 2000px"></div>
  <div class="st-key-next"><button>Next</button></div>
</div></div></body></html>"""
# Scrolled down, then each of ``changes`` (JavaScript run in the page) and three frames
# after it: the main area's scroll.
SCROLL_AFTER = """async (changes) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const frames = (k) => new Promise((done) => {
    const next = (i) => (i ? requestAnimationFrame(() => next(i - 1)) : done()); next(k); });
  await frames(3);
  main.scrollTop = 900;
  const seen = [];
  for (const change of changes) { new Function(change)(); await frames(3);
                                  seen.push(main.scrollTop); }
  return seen;
}"""
HEADING = "document.querySelector('h2').innerText = '{}'"


def test_only_a_new_steps_heading_scrolls_to_the_top(chromium):
    """In the page's script alone: a change within a step (its Reveal, a figure) leaves the
    reader where they are; a new heading (Next, Back, another lesson) opens at the top. On
    another page (no Next of the lessons), which the script outlives, headings move nothing."""
    page = chromium.new_page(viewport={"width": 390, "height": 400})
    try:
        page.set_content(STEPS_PAGE)
        page.add_script_tag(content=PAGE_SCRIPT)
        seen = page.evaluate(SCROLL_AFTER, [
            "document.getElementById('body').append('the verdict')",
            HEADING.format("2. The band ablation"),
            HEADING.format("3. One channel up close"),
            "document.querySelector('[data-testid=\"stMain\"]').scrollTop = 700",
            HEADING.format("1. The kernel atlas"),
            "document.querySelector('.st-key-next').remove(); "
            "document.querySelector('[data-testid=\"stMain\"]').scrollTop = 500",
            HEADING.format("Another page")])
    finally:
        page.close()
    assert seen == [900, 900, 0, 700, 0, 500, 500], seen


# Every legend key on the page, in the figures' shadow roots: [text, colour, dashed].
LEGEND_KEYS = """() => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll('.key')) if (!e.hidden) found.push([
      e.textContent.trim(), getComputedStyle(e).color, e.classList.contains('dashed')]);
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) walk(e.shadowRoot);
  };
  walk(document);
  return found;
}"""


def test_a_revealed_sketch_draws_the_lab_s_curve_as_the_figure_beside_it(laptop_page,
                                                                          server):  # noqa: F811
    """3.5 asks for SKI's error with A fitted against r, beside the error curve that draws A
    sampled solid and A fitted dashed. Revealed, the sketch draws the lab's curve as that
    figure draws A fitted (it drew it in A sampled's colour), and the student's own line
    in a colour of neither."""
    lesson = next(lesson for lesson in LESSONS if lesson.slug == "3-ski-sparse-plus-low-rank")
    assert reveal_step(laptop_page, server, lesson, 5, True).question.sketch == (
        "fit_error_against_r")
    keys = {text: (colour, dashed) for text, colour, dashed in laptop_page.evaluate(
        LEGEND_KEYS)}
    assert keys["SKI's error, A fitted (the lab's)"] == keys["SKI, A fitted (least squares)"]
    assert keys["SKI's error, A fitted (the lab's)"][1] is True
    curve_colours = {keys[name][0] for name in ("SKI, A sampled",
                                                "SKI, A fitted (least squares)",
                                                "optimum, rank r (SVD)")}
    assert keys["your sketch"][0] not in curve_colours, keys
