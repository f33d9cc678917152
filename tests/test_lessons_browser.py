"""Every lesson step in presenter mode, in Chromium at 1400 × 900, as a teacher walks it.

For each lesson: open step 1 from a link, then for every step: its figures drawn (those the
step withholds until Reveal left out), no answer on the page yet, predict (the first
choice, the right number, or a line across the sketch), Reveal, the verdict on the screen
at once (the page scrolls to it), and ArrowRight to go on with the focus on no figure's
slider (a figure's slider keeps its arrow keys). At each step, scrolled to the top: every
figure of the step has drawn (``data-drawn``) and its bounding box lies inside the
viewport, as does the question's Reveal button; no text on the page is under 18 px
(projector type); no exception. ArrowRight on a lesson's last step opens the next
lesson's first step. Screenshots per step under tests/screenshots/
(steps-LESSON-STEP.png at the top; steps-LESSON-STEP-revealed.png as Reveal left it).

The page's own clock times each Next (key press to the new step's figures drawn, or, for
a step without figures, to its heading on the screen with the run over) and each Reveal
(click to the answer on the screen); ``test_walk_every_step`` prints them.
"""

from __future__ import annotations

import re
import statistics
import urllib.parse

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.test_browser import SHOTS, server  # noqa: F401 - server is a fixture
from tnn_core.lab.lesson import MEASUREMENTS, load_lessons

pytestmark = pytest.mark.browser

LESSONS = load_lessons()[0]
# How long a step may take to show before the walk fails: a guard against a hang, not a
# latency target (the walk prints those). Lesson 2's Table 10 step scores two models at up
# to 16x their length, about 9 s of one core, and several times that on a loaded machine.
STEP_TIMEOUT_MS = 180_000
WIDTH, HEIGHT = 1400, 900
SMALLEST_PX = 18  # projector type: no text under this in presenter mode at 1400 × 900
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
# Every text a person sees, shadow roots included, as [font-size px, text, where]: text
# nodes with a box (not KaTeX's MathML copy for screen readers, drawn 1 px wide; not a
# Material icon's ligature name; not the skip link, off screen until focused; when
# ``choices`` is false, not the question itself: the step's heading, its prompt and its
# choices, which name every choice), every figure canvas's font (the figures draw
# their canvas text in it: pages/figures/common.js canvasStyle), and a data grid's cells
# (st.dataframe draws them on a canvas at Streamlit's 0.875rem, whatever the page's CSS).
TEXTS = """(choices) => {
  const found = [];
  const skip = ".katex-mathml, style, script, [data-testid='stIconMaterial'], " +
    "[data-testid='stSkipToContent']" + (choices ? "" : ", [data-testid='stRadioGroup'], h2");
  const walk = (root) => {
    const nodes = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node; (node = nodes.nextNode());) {
      const element = node.parentElement, text = node.textContent.trim();
      if (!text || !element || element.closest(skip)) continue;
      if (!choices && element.closest('p')?.innerText.startsWith('Predict first.')) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const box = range.getBoundingClientRect(), style = getComputedStyle(element);
      if (box.width && box.height && style.visibility !== 'hidden') found.push(
        [parseFloat(style.fontSize), text, element.closest('[data-testid]')?.dataset.testid]);
    }
    for (const e of root.querySelectorAll('*')) {
      if (e.tagName === 'CANVAS' && e.closest("[data-testid='figure']") &&
          e.getBoundingClientRect().width) found.push(
        [parseFloat(getComputedStyle(e).fontSize), '(canvas text)', 'figure']);
      if (e.dataset && e.dataset.testid === 'stDataFrame' && e.getBoundingClientRect().width)
        found.push([0.875 * parseFloat(getComputedStyle(document.documentElement).fontSize),
                    '(a data grid: its canvas cells are 0.875rem)', 'stDataFrame']);
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  walk(document.body);
  return found;
}"""
BLUR = """() => { let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  if (e && e.blur) e.blur(); }"""
VERDICT = "[data-testid='stMain'] [data-testid='stAlert']:has-text('the answer is')"


@pytest.fixture(scope="module")
def chromium_page(server, chromium):  # noqa: F811 - the fixture imported above
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = follow_socket(chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT}))
    yield page
    page.close()


def open_step(page, server: str, lesson, number: int, present: bool) -> None:  # noqa: F811
    query = {"lesson": lesson.title, "step": number, **({"present": "true"} if present else {})}
    page.goto(f"{server}/lessons?{urllib.parse.urlencode(query)}")
    wait_idle(page)


def figures_drawn(page, count: int, timeout: int = STEP_TIMEOUT_MS) -> float:
    """Wait until ``count`` figures have drawn; the page clock's time then."""
    return page.wait_for_function(
        f"() => {{ const f = ({FIGURES})(); return f.length >= {count} && "
        "f.every((x) => x[5]) ? performance.now() : false; }", timeout=timeout,
        polling="raf").json_value()


def withheld(step, revealed: bool) -> set[str]:
    """What the step keeps back until its question is revealed: ``View.withheld``, and its
    measurements when it draws nothing else (the measurement is the answer)."""
    if step.view is None or revealed:
        return set()
    return set(step.drawn) if set(step.drawn) <= set(MEASUREMENTS) else set(step.view.withheld)


def expected_figures(step, revealed: bool = True) -> int:
    """How many figure roots the step draws (Compare: its two sides; a sketch question its
    sketch); before Reveal without those it withholds (``View.withheld``)."""
    sketched = int(step.question is not None and bool(step.question.sketch))
    drawn = set(step.drawn) - withheld(step, revealed)
    if not drawn:
        return sketched
    if step.view.path == "compare":
        return 2 + sketched
    names = drawn - set(PANELS)  # drawn on the server, not figures
    if "factors" in names:  # the decomposition figure with W · A · Wᵀ open
        names = names - {"factors"} | {"decomposition"}
    return len(names) + sketched


def figure_boxes(page, step, revealed: bool) -> list[list]:
    """[name, top, bottom, left, right, drawn] of the step's figures and server panels."""
    boxes = page.evaluate(FIGURES)
    shown = set(step.drawn) - withheld(step, revealed)
    for name in shown & set(PANELS):  # drawn on the server: on screen too
        box = page.locator(PANELS[name]).bounding_box()
        boxes.append([name, box["y"], box["y"] + box["height"], box["x"],
                      box["x"] + box["width"], "server"])
    return boxes


def assert_on_screen(page, step, number: int, revealed: bool, width: int, height: int) -> None:
    """Scrolled to the top: the step's figures drawn inside width × height, and its Reveal
    too while the question waits."""
    page.evaluate(TO_TOP)
    page.evaluate(NEXT_FRAME)
    boxes = figure_boxes(page, step, revealed)
    assert len([b for b in boxes if b[5] != "server"]) == expected_figures(step, revealed), (
        number, boxes)
    if step.question is not None and not revealed:
        box = page.locator("[data-testid='stMain']").get_by_role(
            "button", name="Reveal").bounding_box()
        boxes.append(["Reveal", box["y"], box["y"] + box["height"], box["x"],
                      box["x"] + box["width"], "button"])
    for name, top, bottom, left, right, drawn in boxes:
        assert drawn, (number, name)
        assert 0 <= top and bottom <= height and 0 <= left and right <= width, (
            f"step {number}: {name} spans y {top:.0f}..{bottom:.0f}, x {left:.0f}..{right:.0f}"
            f", outside {width} × {height}")


def sketch_across(page) -> None:
    """Draw a falling line across the sketch figure's canvas with the mouse, once the app is
    idle; the figure reports the points it kept. The step's run ends by taking the step
    before's elements off the page: on a phone, scrolled down to that step's figures, the
    shorter page then scrolls up under a drag begun earlier, which missed the canvas (the
    walk's 5.3 kept no point on a loaded machine). Each move goes through the canvas's
    locator: scrolled into view, still, and the element the pointer reaches there."""
    wait_idle(page)
    canvas = page.locator("[data-figure='sketch'] canvas")
    canvas.scroll_into_view_if_needed()
    size = canvas.bounding_box()
    along = [{"x": (0.2 + 0.035 * step) * size["width"],
              "y": (0.2 + 0.03 * step) * size["height"]} for step in range(21)]
    canvas.hover(position=along[0])
    page.mouse.down()
    for position in along[1:]:
        canvas.hover(position=position)
    page.mouse.up()
    wait_idle(page)
    drawn = page.locator("[data-figure='sketch']").get_attribute("data-drawn")
    assert drawn.startswith("points=") and int(drawn.split("&")[0][7:]) >= 10, drawn


def predict_and_reveal(page, step) -> float:
    """The first choice, the right number or a sketch, then Reveal: ms from the click to the
    verdict on the screen."""
    main = page.locator("[data-testid='stMain']")
    if step.question.sketch:
        sketch_across(page)
    elif step.question.choices:
        main.get_by_test_id("stRadioGroup").first.get_by_text(
            step.question.choices[0], exact=True).click()
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
    wait_idle(page)
    page.evaluate(NEXT_FRAME)
    return shown - start


def spoiled(answer: str, numeric: bool, before: str) -> str:
    """Where the page's text ``before`` Reveal gives away ``answer`` (the text around it;
    "" where it does not), for an answer specific enough to tell: a number of two
    significant digits or more (any number on the page equal to it, as the page formats
    it: "16.00" gives away 16), or a choice with a digit or of three words or more ("|k| ≤
    4", standing alone; not "fit", which the text names)."""
    if numeric or re.fullmatch(r"-?\d+(?:\.\d+)?", answer):  # a number, or a choice "15"
        value = float(answer)
        if len(f"{abs(value):g}".replace(".", "").strip("0")) < 2:
            return ""
        found = re.finditer(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", before)
        where = [m for m in found if abs(float(m.group()) - value) <= 1e-9 * abs(value)]
    elif re.search(r"\d", answer) or len(answer.split()) >= 3:
        where = list(re.finditer(rf"(?<!\w)(?<!\d\.){re.escape(answer)}(?!\w|\.\d)", before,
                                 re.IGNORECASE))
    else:
        return ""
    return " … ".join(before[max(m.start() - 40, 0):m.end() + 40] for m in where)


def next_step(page, number: int, following) -> float:
    """ArrowRight with the focus on the page itself (on no figure's slider, which keeps the
    key), once the page has a Next button to click (on a loaded machine a key pressed
    before it is drawn is lost): ms from the key to the new step's figures drawn (or its
    heading, run over)."""
    page.evaluate(BLUR)
    page.evaluate(FORGET)
    page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='stMain'] button\")].some("
        "(b) => b.innerText.trim().endsWith('Next') && !b.disabled)", timeout=STEP_TIMEOUT_MS)
    start = page.evaluate("() => performance.now()")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(  # the address leaves out a first step: the heading tells
        "(title) => [...document.querySelectorAll(\"[data-testid='stMain'] h2\")].some("
        "(h) => h.innerText.startsWith(title))", arg=f"{number}. {following.title}",
        timeout=STEP_TIMEOUT_MS)
    if expected_figures(following, revealed=False):
        return figures_drawn(page, expected_figures(following, revealed=False)) - start
    took = page.wait_for_function(
        f"() => [...document.querySelectorAll('h2')].some((h) => h.innerText"
        f".startsWith('{number}. ')) && document.querySelector(\"[data-testid="
        f"'stApp'][data-test-script-state='notRunning']\") ? performance.now() : false",
        timeout=STEP_TIMEOUT_MS, polling="raf").json_value() - start
    wait_idle(page)
    return took


def soft(problems: list[str], check, *args) -> None:
    """``check(*args)``; an assertion it fails is kept in ``problems`` and the walk goes
    on, so that one step's problem does not hide the next step's."""
    try:
        check(*args)
    except AssertionError as err:
        problems.append(str(err).split("\nassert ")[0])


def assert_verdict_on_screen(page, number: int, height: int) -> None:
    box = page.locator(VERDICT).bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= height + 0.5, (  # scrolled to its edge
        f"step {number}: the verdict spans y {box['y']:.0f}..{box['y'] + box['height']:.0f}"
        f" after Reveal, off the {height} px screen")


def assert_not_given_away(page, step, number: int, before: str) -> None:
    answer = page.locator(VERDICT).locator("strong").first.inner_text()
    where = spoiled(answer, not step.question.choices, before)
    assert not where, f"step {number}: the answer {answer!r} is on the page before Reveal: " \
                      f"{where!r}"


def check_question(page, step, number: int, problems: list[str], height: int = HEIGHT
                   ) -> float:
    """No answer on the page, Reveal, the verdict on the ``height`` px screen: the
    Reveal's ms."""
    before = " ".join(t[1] for t in page.evaluate(TEXTS, False))
    took = predict_and_reveal(page, step)
    soft(problems, assert_verdict_on_screen, page, number, height)
    if not step.question.sketch:
        soft(problems, assert_not_given_away, page, step, number, before)
    return took


def assert_type_at_least(page, number: int, smallest: float) -> None:
    small = [t for t in page.evaluate(TEXTS, True) if t[0] < smallest - 0.05]
    assert not small, f"step {number}: text under {smallest} px: {sorted(small)[:8]}"


# One walk through a lesson as a class sees it, step after step: its checks follow the walk.
@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_walk_every_step(chromium_page, server, lesson):  # noqa: F811
    page = chromium_page
    open_step(page, server, lesson, 1, present=True)
    nexts, reveals, problems = [], [], []
    for number, step in enumerate(lesson.steps, start=1):
        heading = page.locator("[data-testid='stMain'] h2").first
        assert heading.inner_text().startswith(f"{number}. {step.title}")
        if expected_figures(step, revealed=False):
            figures_drawn(page, expected_figures(step, revealed=False))
        if step.question is not None:  # the question fits the screen with the figure
            soft(problems, assert_on_screen, page, step, number, False, WIDTH, HEIGHT)
            reveals.append(check_question(page, step, number, problems))
            page.screenshot(path=str(SHOTS / f"steps-{lesson.slug}-{number}-revealed.png"))
            figures_drawn(page, expected_figures(step))
        soft(problems, assert_on_screen, page, step, number, True, WIDTH, HEIGHT)
        page.screenshot(path=str(SHOTS / f"steps-{lesson.slug}-{number}.png"))
        soft(problems, assert_type_at_least, page, number, SMALLEST_PX)
        assert page.locator("[data-testid='stException']").count() == 0
        if number < len(lesson.steps):
            nexts.append(next_step(page, number + 1, lesson.steps[number]))
    following = LESSONS.index(lesson) + 1
    if following < len(LESSONS):  # the last step's Next: the next lesson's first step
        next_step(page, 1, LESSONS[following].steps[0])
        heading = page.locator("[data-testid='stMain'] h2").first
        assert heading.inner_text().startswith(f"1. {LESSONS[following].steps[0].title}")
    print(f"\n{lesson.slug}: Next → drawn median "
          f"{statistics.median(nexts) if nexts else float('nan'):.0f} ms over {len(nexts)} "
          f"({', '.join(f'{t:.0f}' for t in nexts)}), Reveal median "
          f"{statistics.median(reveals) if reveals else float('nan'):.0f} ms over "
          f"{len(reveals)} ({', '.join(f'{t:.0f}' for t in reveals)})")
    assert not problems, "\n".join(problems)


def test_back_on_a_first_step_opens_the_previous_lessons_last(chromium_page, server):  # noqa: F811
    """Back (the button) on lesson 2's first step: lesson 1's last step; Next from there
    (the button): lesson 2's first again."""
    page, first, second = chromium_page, LESSONS[0], LESSONS[1]
    open_step(page, server, second, 1, present=False)
    main = page.locator("[data-testid='stMain']")
    main.get_by_role("button", name="Back").click()
    wait_idle(page)
    assert main.locator("h2").first.inner_text().startswith(
        f"{len(first.steps)}. {first.steps[-1].title}")
    query = urllib.parse.parse_qs(page.url.split("?", 1)[1])
    assert query["step"] == [str(len(first.steps))]
    assert "lesson" not in query  # the select box's default, which the address leaves out
    main.get_by_role("button", name="Next").click()
    wait_idle(page)
    assert main.locator("h2").first.inner_text().startswith(f"1. {second.steps[0].title}")


def test_a_step_link_opens_that_step_with_its_figure(chromium_page, server):  # noqa: F811
    """The link a step shows, opened in a fresh browser: the same step, its figure drawn."""
    lesson = LESSONS[2]
    number = 3
    page = chromium_page
    open_step(page, server, lesson, number, present=False)
    link = re.search(r"Link to this step: (\S+)",
                     page.locator("[data-testid='stMain']").inner_text()).group(1)
    fresh = page.context.browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        other = follow_socket(fresh.new_page())
        other.goto(link)
        wait_idle(other)
        heading = other.locator("[data-testid='stMain'] h2").first.inner_text()
        assert heading.startswith(f"{number}. {lesson.steps[number - 1].title}")
        figures_drawn(other, expected_figures(lesson.steps[number - 1], revealed=False))
        assert other.locator("[data-testid='stException']").count() == 0
    finally:
        fresh.close()
