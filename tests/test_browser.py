"""A real browser: Playwright drives Debian's Chromium against `streamlit run app.py`.

Opens every page listed in app.py, waits for each script run to finish, fails on
any exception element, and saves full-page screenshots under tests/screenshots/.
Skips when Chromium is missing, unless TOEPLITZ_LAB_REQUIRE_BROWSER=1 or CI=true
(as in .ci/run), where it fails instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.app_idle import follow_socket, wait_idle

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"
URL_PATHS = [""] + re.findall(r'url_path="([^"]+)"', (ROOT / "app.py").read_text())  # "": home

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(streamlit_server):
    """The app's URL: conftest's one server for SERVER_FILES."""
    return streamlit_server


@pytest.fixture(scope="module")
def browser_page(server, chromium):
    SHOTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots in {SHOTS}")
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 2600}))
    yield page
    page.close()


def inspect_checkpoint(page, server: str, name: str):
    """Inspect with checkpoint ``name`` picked in its select box; the page's main area."""
    page.goto(f"{server}/inspect")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    main.get_by_role("combobox", name="Checkpoint").click()
    page.locator("[role='option']").filter(has_text=name).first.click()
    wait_idle(page)
    return main


def checkpoint_box(main):
    """The page's "Checkpoint" select box (Inspect also has the import's select boxes)."""
    return main.locator("[data-testid='stSelectbox']").filter(
        has=main.page.get_by_text("Checkpoint", exact=True))


def assert_clean(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    exceptions = page.locator("[data-testid='stException']")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def test_shared_link_opens_exactly_that_view(browser_page, server):
    """A teacher's link with the sliders set opens with those values.

    First in this file on purpose: the server's first view is a deep link, which
    Streamlit would run without app.py's frame (see _ui.frame.ensure_app_frame)."""
    # Streamlit puts a bound selectbox's displayed label in the URL.
    browser_page.goto(f"{server}/basics?preset=Spike+plus+smooth&n=200&decay=0.95&causal=true"
                      "&seed=7")
    wait_idle(browser_page)
    assert_clean(browser_page, "basics-shared-link")
    sidebar = browser_page.locator("[data-testid='stSidebar']")
    # the sidebar takes the link's seed in the frame's rerun, which may follow the first
    # idle moment on a fresh server: wait for it rather than read the first value
    expect(sidebar.get_by_role("spinbutton", name="Seed")).to_have_value("7", timeout=30_000)
    main = browser_page.locator("[data-testid='stMain']")
    figure = main.locator("[data-testid='figure'][data-figure='toeplitz']")  # Basics' figure
    assert figure.locator("input[name='n']").input_value() == "200"
    assert figure.locator("input[name='decay']").input_value() == "0.95"
    assert "Spike plus smooth" in main.locator("[data-testid='stSelectbox']").first.inner_html()
    assert "n=200&decay=0.95&causal=true" in figure.get_attribute("data-drawn")
    # and the other way: moving a control writes it into the address
    slider = figure.locator("input[name='n']")
    slider.focus()
    slider.press("ArrowRight")
    wait_idle(browser_page)
    assert re.search(r"[?&]n=201(&|$)", browser_page.url), browser_page.url
    assert re.search(r"[?&]seed=7(&|$)", browser_page.url), browser_page.url
    # the timings are taken once the page is idle, then filled in
    browser_page.wait_for_function("""() => [...document.querySelectorAll(
        "[data-testid='stMain'] [data-testid='stMetric']")].some(m =>
        m.innerText.includes("FFT product") && /\\d/.test(m.querySelector(
        "[data-testid='stMetricValue']").innerText))""", timeout=120_000)
    wait_idle(browser_page)
    assert main.get_by_text("Timing both products").count() == 0
    assert main.get_by_text(re.compile(r"Measured here")).count() == 1
    assert_clean(browser_page, "basics-timed")


def test_app_lists_pages():
    assert {"", "basics", "inspect"} <= set(URL_PATHS)


@pytest.mark.parametrize("url_path", URL_PATHS)
def test_every_page_renders_without_exception(browser_page, server, url_path):
    browser_page.goto(f"{server}/{url_path}")
    wait_idle(browser_page)
    assert browser_page.locator("h1").count() >= 1
    assert browser_page.locator("[role='dialog']").count() == 0  # e.g. "Page not found"
    assert_clean(browser_page, url_path or "home")


def test_speed_page_runs_and_stops_a_benchmark(browser_page, server):
    """Run the default grid in the browser, let a few cells finish, stop: the partial
    results are plotted and the page says how many cells were timed."""
    page = browser_page
    page.goto(f"{server}/speed")
    wait_idle(page)
    page.get_by_role("button", name="Run benchmark").click()
    cancel = page.get_by_role("button", name="Stop")
    cancel.wait_for(timeout=60_000)
    page.get_by_text(re.compile(r"timed [3-9]\d* cells")).wait_for(timeout=120_000)
    cancel.click()
    page.get_by_text("only what was measured is shown").wait_for(timeout=180_000)
    page.locator("[data-testid='stPlotlyChart']").nth(1).wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 2
    assert page.get_by_text("Crossovers").count() >= 1
    assert_clean(page, "speed-run-cancelled")
    # SKI against TNO over the band m (n = 1024 and 4096): one more chart and its verdicts
    charts = page.locator("[data-testid='stPlotlyChart']").count()
    page.get_by_role("button", name="Measure").nth(1).click()
    # a background job: the page is idle between its polls, so wait for the chart it draws
    page.locator(".st-key-chart-band-crossover .js-plotly-plot").wait_for(timeout=300_000)
    wait_idle(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() == charts + 1
    assert_clean(page, "speed-band-crossover")


# A chart's fingerprint in the browser: per trace its type and a digest of its x, y and z
# (plain arrays or Plotly's base64 typed arrays), plus the layout's title and annotations.
CHART_FINGERPRINT = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!plot) return null;
  const digest = v => [...JSON.stringify(v ?? null)].reduce(
    (h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);
  return JSON.stringify({
    traces: plot.data.map(t => [t.type, digest(t.x), digest(t.y), digest(t.z)]),
    title: plot.layout.title?.text ?? "",
    notes: (plot.layout.annotations ?? []).map(a => a.text)});
}"""
DECOMPOSITION_CHARTS = ("chart-kernel", "chart-singular-values")
PROFILES_FIGURE = "[data-testid='figure'][data-figure='profiles']"
DECOMPOSITION_FIGURE = "[data-testid='figure'][data-figure='decomposition']"
DECOMPOSITION_SECTIONS = ("One cell of T, followed everywhere", "Speed at this setting",
                          "The kernel's decay and frequency response")


def decomposition_state(page) -> dict:
    """The charts' fingerprints, the figure's four pictures (their pixels), what it drew,
    its error, and the error-against-r figure's mark."""
    values = {key: page.evaluate(CHART_FINGERPRINT, key) for key in DECOMPOSITION_CHARTS}
    figure = page.locator(DECOMPOSITION_FIGURE)
    values["pictures"] = figure.locator(".pictures canvas").evaluate_all(
        "canvases => canvases.map(c => c.toDataURL()).join(' ')")
    values["drawn"] = figure.get_attribute("data-drawn")
    values["error"] = figure.locator(".live b").first.inner_text()
    values["curve"] = page.locator("[data-figure='error_curve']").get_attribute("data-drawn")
    profiles = page.locator(PROFILES_FIGURE)
    values["profiles"] = (profiles.get_attribute("data-drawn"),
                          profiles.locator("canvas").evaluate_all(
                              "canvases => canvases.map(c => c.toDataURL()).join(' ')"))
    return values


def speed_filled_in(page) -> None:
    """Until the background timing of the current setting is on the page."""
    page.wait_for_function("""() => [...document.querySelectorAll(
        "[data-testid='stMain'] [data-testid='stMetric']")].some(m =>
        m.innerText.includes("SKI: band") && m.querySelector(
        "[data-testid='stMetricValue']").innerText.trim().endsWith(" ms"))""",
                           timeout=120_000)
    wait_idle(page)


def test_decomposition_moves_at_n_1024_update_what_they_should(browser_page, server):
    """m and r are the band + W A Wᵀ figure's: a settled move reruns only the page's
    fragment. What depends on them changes (the figure's pictures and error, the curve's
    mark, the kernel and singular-value charts), the kernel's decay and frequency response
    do not, and the speed readout of the new setting is filled in once the page is idle."""
    page = browser_page
    page.goto(f"{server}/decomposition?n=1024")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    for section in DECOMPOSITION_SECTIONS:  # computed only when open
        main.locator("[data-testid='stExpander'] summary").filter(has_text=section).click()
        wait_idle(page)
    speed_filled_in(page)
    before = decomposition_state(page)
    assert all(before[key] for key in DECOMPOSITION_CHARTS), before
    assert before["drawn"] == "n=1024&band=9&rank=32&decay=0.99&method=sample"
    assert before["pictures"].count("data:image/png") == 4
    rank = page.locator(f"{DECOMPOSITION_FIGURE} input[name='rank']")
    rank.focus()
    rank.press("ArrowRight")  # r = 33
    wait_idle(page)
    after_r = decomposition_state(page)
    for key in ("pictures", "chart-kernel", "chart-singular-values", "error", "drawn",
                "curve"):
        assert after_r[key] != before[key], key
    assert after_r["profiles"] == before["profiles"]  # the decay figure: the kernel alone
    assert before["profiles"][0] == "n=1024&decay=0.99"
    assert after_r["curve"] == "n=1024&band=9&rank=33"
    assert re.search(r"[?&]rank=33(&|$)", page.url), page.url
    band = page.locator(f"{DECOMPOSITION_FIGURE} input[name='band']")
    band.focus()
    band.press("ArrowRight")  # m = 10
    wait_idle(page)
    after_m = decomposition_state(page)
    assert after_m["curve"] == "n=1024&band=10&rank=33"
    for key in ("pictures", "chart-kernel", "error"):
        assert after_m[key] != after_r[key], key
    speed_filled_in(page)
    assert main.get_by_text(re.compile(r"Timing n = ")).count() == 0
    assert_clean(page, "decomposition-n1024-after-moves")


def test_inspect_opens_a_channel_in_decomposition(browser_page, server):
    """Inspect's button carries checkpoint, layer, channel and n to the Decomposition page."""
    page = browser_page
    page.goto(f"{server}/inspect")
    wait_idle(page)
    page.get_by_role("button", name="Open this kernel in Decomposition").click()
    page.wait_for_url(re.compile(r"/decomposition"), timeout=60_000)
    wait_idle(page)
    assert_clean(page, "inspect-to-decomposition")
    main = page.locator("[data-testid='stMain']")
    assert "Learned kernel from a checkpoint" in main.locator(
        "[data-testid='stSelectbox']").first.inner_html()
    assert main.get_by_text(re.compile(r"Source: checkpoint")).count() >= 1


def test_train_save_and_inspect_opens_the_saved_model(browser_page, server):
    """A ten-step run, saved under a name: Inspect opens that model, not a shipped one."""
    page = browser_page
    page.goto(f"{server}/train")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("tiny", exact=True).click()
    steps = main.get_by_role("slider", name="Steps")
    steps.focus()
    steps.press("Home")  # the fewest steps, 10
    main.get_by_role("button", name="Start").click()
    save = main.get_by_role("button", name="Save and inspect")
    save.wait_for(timeout=240_000)
    wait_idle(page)
    assert_clean(page, "train-finished")
    main.get_by_role("textbox", name="Save as").fill("browser-run")
    save.click()
    page.wait_for_url(re.compile(r"/inspect"), timeout=60_000)
    wait_idle(page)
    assert_clean(page, "train-save-and-inspect")
    assert "browser-run (saved by you)" in checkpoint_box(
        main).inner_html()


def test_compress_converts_searches_and_loads_a_clicked_plan(browser_page, server):
    """Convert digits-tno (m = 9, r = 16, no fine-tuning); then a two-point search with a δ
    every plan meets, and a click on its fastest point (or one tied for it) loads that plan
    into the controls."""
    page = browser_page
    page.goto(f"{server}/compress")
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    rank = main.get_by_role("spinbutton", name="Inducing points r")
    rank.fill("16")
    rank.press("Enter")
    wait_idle(page)
    page.locator(".st-key-convert button").first.click()
    main.get_by_text("Speed-up at n = 256 (4× n0)").wait_for(timeout=300_000)
    wait_idle(page)
    for label in ("Source accuracy", "Converted accuracy", "Chance accuracy",
                  "Speed-up at n = 64 (1× n0)", "Parameters"):
        assert main.locator("[data-testid='stMetric']").filter(has_text=label).count() == 1
    assert_clean(page, "compress")
    for name, removed in (("Bands m to try", ("1", "5", "17")), ("Ranks r to try", ("8", "64"))):
        box = main.locator("[data-testid='stMultiSelect']").filter(has_text=name)
        for value in removed:
            box.get_by_role("button", name=f"Remove {value}", exact=True).click()
            wait_idle(page)
    delta = main.get_by_role("spinbutton", name=re.compile("^Allowed drop δ"))
    delta.fill("50")
    delta.press("Enter")
    wait_idle(page)
    page.locator(".st-key-search button").first.click()
    page.locator(".st-key-chart-pareto .js-plotly-plot").wait_for(timeout=300_000)
    wait_idle(page)
    page.set_viewport_size({"width": 1400, "height": 4400})  # the page and both searches' charts
    try:
        wait_idle(page)
        assert_clean(page, "compress-search")
    finally:
        page.set_viewport_size({"width": 1400, "height": 2600})
    trace, best = page.evaluate("""() => {
        const plot = document.querySelector('.st-key-chart-pareto .js-plotly-plot');
        for (const name of ['fastest within δ', 'tied for the fastest within δ']) {
            const i = plot.data.findIndex(t => t.name === name);
            if (i >= 0) return [i, plot.data[i].text[0]];
        }
        return [null, null]; }""")
    assert best is not None, "no plan is within a δ of 50 points"
    rank.fill("8")
    rank.press("Enter")
    wait_idle(page)
    page.locator(".st-key-chart-pareto .scatterlayer .trace").nth(trace).locator(
        "path.point").first.click(force=True)
    # a toast shows for seconds only: looked for at once, not after the app is idle
    page.locator("[data-testid='stToast']").filter(has_text=best).wait_for(timeout=60_000)
    wait_idle(page)
    layers = re.findall(r"layer \d+: m = (\d+), r = (\d+)", best)
    if len(set(layers)) == 1:  # the same (m, r) everywhere: the shared controls show it
        assert (main.get_by_role("spinbutton", name="Band m").input_value(),
                rank.input_value()) == layers[0]


def test_inspect_to_compress_to_inspect_carries_the_checkpoint(browser_page, server):
    """Inspect a checkpoint other than the first, open it on Compress, convert it and save it:
    each switch carries its checkpoint although the page left has values in its address."""
    page = browser_page
    main = inspect_checkpoint(page, server, "digits-fd")
    main.get_by_role("button", name="Compress this model").click()
    page.wait_for_function("() => location.pathname.endsWith('/compress')", timeout=60_000)
    wait_idle(page)
    assert_clean(page, "inspect-to-compress")
    assert "digits-fd" in main.locator("[data-testid='stSelectbox']").first.inner_html()
    rank = main.get_by_role("spinbutton", name="Inducing points r")
    rank.fill("16")
    rank.press("Enter")
    wait_idle(page)
    page.locator(".st-key-convert button").first.click()
    save = main.get_by_role("button", name="Save and inspect")
    save.wait_for(timeout=300_000)
    wait_idle(page)
    main.get_by_role("textbox", name="Save as").fill("digits-fd-m9r16")
    save.click()
    page.wait_for_function("() => location.pathname.endsWith('/inspect')", timeout=60_000)
    wait_idle(page)
    assert_clean(page, "compress-save-and-inspect")
    assert "digits-fd-m9r16 (saved by you)" in checkpoint_box(
        main).inner_html()


def test_inspect_writes_text_with_its_time_and_state(browser_page, server):
    """charlm-tno writes 300 characters after "def ": the text, what writes it, the median
    time per character and the Toeplitz history it holds (4 + 299 characters read × 192
    channels × 2 layers × 4 bytes); the section's screenshot is inspect-write-text.png."""
    page = browser_page
    main = inspect_checkpoint(page, server, "charlm-tno")
    page.locator(".st-key-write_generate button").first.click()
    main.get_by_text("Wrote 300 characters.").wait_for(timeout=120_000)
    wait_idle(page)
    assert_clean(page, "inspect-write-text-page")
    text = main.locator("[data-testid='stCode']").first.inner_text()
    assert text.startswith("def ") and len(text) == 304, text
    metrics = main.locator("[data-testid='stMetric']")
    assert re.fullmatch(r"\d+\.\d{3} ms", metrics.filter(has_text="Time per character").locator(
        "[data-testid='stMetricValue']").inner_text().strip())
    assert metrics.filter(has_text="State per sequence").locator(
        "[data-testid='stMetricValue']").inner_text().strip() == "454.5 KiB"
    heading = main.get_by_role("heading", name="Write text")
    heading.scroll_into_view_if_needed()
    top = heading.bounding_box()
    bottom = main.get_by_text(re.compile(r"held after reading 303 characters;")).bounding_box()
    page.screenshot(path=str(SHOTS / "inspect-write-text.png"), clip={
        "x": 0, "y": top["y"] - 10, "width": 1400,
        "height": bottom["y"] + bottom["height"] - top["y"] + 20})
