"""Every lesson step on two more screens, in Chromium: a 1280 × 720 projector or laptop in
presenter mode, and a 390 × 844 phone in the page's own mode.

At 1280 × 720 (the type follows the screen's height: pages/lessons.py PRESENTER_STYLE),
scrolled to the top, every figure of the step and its Reveal lie inside the first screen,
before Reveal and after it; after Reveal the verdict is on the screen. At 390 × 844 (the
columns stacked), neither the document nor the app's scrolling main area is wider than the
screen, before Reveal and after, and every visible slider (a figure's range input or a
Streamlit slider) is at least 280 px wide, thumb-sized steps for the whole range.
The Decomposition page on the phone: the same width and slider checks. Screenshots:
tests/screenshots/steps-720-LESSON-STEP.png, steps-phone-LESSON-STEP.png (the top) and
steps-phone-LESSON-STEP-figures.png (scrolled to the figures), decomposition-phone.png.
"""

from __future__ import annotations

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.test_browser import SHOTS, server  # noqa: F401 - server is a fixture
from tests.test_lessons_browser import (
    LESSONS,
    TALLER_THAN_720,
    TO_TOP,
    assert_on_screen,
    assert_only_known,
    check_question,
    expected_figures,
    figures_drawn,
    next_step,
    open_step,
    soft,
)

pytestmark = pytest.mark.browser

LAPTOP = (1280, 720)
# On a phone, 5.3's verdict sometimes ends 3 px below the 844 px screen after Reveal (its
# scroll runs before the figure above it has settled; open, issue 38): tolerated there,
# not required
VERDICT_MAY_END_BELOW = frozenset({("5-reading-a-trained-model", 3)})
PHONE = (390, 844)
SLIDER_PX = 280  # a phone's slider: at least this wide
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


def walk(page, server: str, lesson, present: bool, check,  # noqa: F811
         known: frozenset = frozenset(), tolerated: frozenset = frozenset()) -> None:
    """Every step of ``lesson`` from step 1, ArrowRight after ArrowRight: ``check(step,
    number, revealed)`` before a question is revealed and once the step is complete; the
    problems of every step, then: none but a figure outside the screen in a ``known`` step
    (``assert_only_known``)."""
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
    problems = [problem for problem in problems if not any(
        slug == lesson.slug and problem.startswith(f"step {number}: the verdict")
        for slug, number in tolerated)]
    assert_only_known(problems, lesson.slug, known)


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

    walk(laptop_page, server, lesson, True, check, TALLER_THAN_720)


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

    walk(phone_page, server, lesson, False, check, tolerated=VERDICT_MAY_END_BELOW)


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
