"""A model from the authors' code in Inspect, in a real browser (issue 36): Playwright drives
Debian's Chromium against a server of its own whose checkpoint folder holds a tnn-pytorch
stack imported by ``tnn_core.convert``, and imports another through the page's expander.

Each view must draw with no exception element: the header, the atlas (a figure drawn
between its heading and the channel's), the drill-down's matrix and kernel. The kernels
download, fetched as a person's click fetches it, is compared with ``authors_layout``'s
float64 evaluation of the authors' formulas (1e-5 of the largest coefficient). Full-page
screenshots go to the folder printed at the start (tests/screenshots/inspect-kernels-only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.app_idle import follow_socket, wait_idle
from tests.app_server import app_server
from tests.authors_layout import tnn_stack_state, tno_kernel
from tnn_core.convert.importer import import_foreign, save_imported
from tnn_core.convert.reader import read_foreign

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots" / "inspect-kernels-only"
SAVED_NAME = "tnn-import"  # the converted file in the server's checkpoint folder
DRAWN = "[data-testid='figure'][data-drawn], .js-plotly-plot .main-svg"
N = 64  # the training length the import records

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict:
    """Two tnn-pytorch stacks saved with torch.save: "saved" (causal, converted into the
    server's folder) and "uploaded" (bidirectional, 3 RPE layers, for the page's import)."""
    folder = tmp_path_factory.mktemp("authors")
    made = {"saved": tnn_stack_state(seed=5, layers=2, dim=8, rpe_layers=1, gamma=0.99),
            "uploaded": tnn_stack_state(seed=6, layers=2, dim=4, rpe_layers=3, gamma=None)}
    for name, state in made.items():
        torch.save(state, folder / f"{name}.pt")
    checkpoints = folder / "checkpoints"
    checkpoints.mkdir()
    imported = import_foreign(read_foreign(folder / "saved.pt", "tnn_stack.pt"),
                              {"causal": True, "length": N}, "tnn_stack.pt")
    save_imported(imported, checkpoints / f"{SAVED_NAME}.safetensors")
    return {"folder": folder, "checkpoints": checkpoints, **made}


@pytest.fixture(scope="module")
def server(sources):
    SHOTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots in {SHOTS}")
    env = {"TOEPLITZ_LAB_USER_CHECKPOINTS": str(sources["checkpoints"]),
           "TOEPLITZ_LAB_WARM_UP": "none"}
    with app_server(env, SHOTS / "server.log") as (url, _):
        yield url


@pytest.fixture
def page(chromium, server):
    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 5000},
                                           accept_downloads=True))
    page.set_default_timeout(120_000)
    page.goto(f"{server}/inspect")
    wait_idle(page)
    yield page
    page.close()


def shot(page, name: str) -> None:
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    exceptions = page.locator("[data-testid='stException']")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def choose(page, label: str, option: str) -> None:
    page.locator("[data-testid='stMain']").get_by_role("combobox", name=label).click()
    page.locator("[role='option']").filter(has_text=option).first.click()
    wait_idle(page)


def figures_between(page, first: str, second: str) -> int:
    """Drawn figures after the heading ``first`` and before the heading ``second``."""
    return page.evaluate("""([first, second, drawn]) => {
        const heading = text => [...document.querySelectorAll('h1, h2, h3')]
            .find(h => h.innerText.trim() === text);
        const [a, b] = [heading(first), heading(second)];
        if (!a || !b) return -1;
        return [...document.querySelectorAll(drawn)].filter(f =>
            (a.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING) &&
            (b.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_PRECEDING)).length;
    }""", [first, second, DRAWN])


def assert_views_drawn(page, name: str, header: tuple[str, ...]) -> None:
    """The header says ``header``; the atlas and the channel's matrix and kernel draw; the
    page's screenshot is ``name``."""
    page.locator(".st-key-chart-channel-matrix .main-svg").first.wait_for()
    page.locator(".st-key-chart-channel-kernel .main-svg").first.wait_for()
    wait_idle(page)
    shot(page, name)
    text = page.locator("[data-testid='stMain']").inner_text()
    for words in header:
        assert words in text, words
    assert figures_between(page, "Kernel atlas", "Layer 0, channel 0") >= 1, "the atlas drew"


def test_an_imported_model_opens_with_its_atlas_drill_down_and_kernels(page, sources,
                                                                         tmp_path):
    choose(page, "Checkpoint", f"{SAVED_NAME} (saved by you)")
    assert_views_drawn(page, "saved-import", ("holds token mixers only", "tnn_stack.pt",
                                              "Operator, causal", "has no task to score"))
    assert_authors_kernels(page, tmp_path, sources["saved"], N, causal=True)


def assert_authors_kernels(page, folder: Path, state: dict, n: int, causal: bool) -> None:
    """The kernels download, clicked, holds the authors' kernels of ``state`` at n.

    A click that lands while the app reruns (the atlas's fragment can rerun the page once
    after its first draw) is dropped by the browser's Streamlit client, as it would be for a
    person, who clicks again: so does this, once the app is idle, up to three times."""
    for attempt in range(3):
        wait_idle(page)
        try:
            with page.expect_download(timeout=40_000) as info:
                page.locator(".st-key-kernels_npz button:visible").first.click()
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    path = folder / "kernels.npz"
    info.value.save_as(path)
    arrays = np.load(path)
    assert sorted(arrays.files) == ["layer0", "layer1"]
    for i in range(2):
        theirs = tno_kernel(state, f"{i}.token_mixer.toep.", n, causal=causal)
        ours = arrays[f"layer{i}"].astype(np.float64)
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(theirs).max()


def test_a_file_imported_through_the_page_opens(page, sources, tmp_path):
    page.get_by_text("Import a model from the authors' code").click()
    page.locator(".st-key-foreign_upload input[type='file']").set_input_files(
        str(sources["folder"] / "uploaded.pt"))
    wait_idle(page)
    page.get_by_role("button", name="Import", exact=True).click()
    wait_idle(page)
    assert_views_drawn(page, "page-import", ("holds token mixers only", "uploaded.pt",
                                             "Operator, bidirectional",
                                             "Settings of the import"))
    chosen = page.locator("[data-testid='stMain']").get_by_role("combobox", name="Checkpoint")
    assert chosen.input_value() == "uploaded.pt, imported (uploaded)", chosen.input_value()
    assert_authors_kernels(page, tmp_path, sources["uploaded"], 512, causal=False)  # README n
