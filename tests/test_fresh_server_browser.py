"""A fresh server's first view, in a real browser: ``streamlit run app.py`` started for each
test, and a page other than the home page opened first thing.

Until app.py first calls st.navigation, Streamlit treats the `pages/` folder as "MPA v1"
and looks the address up among its file names; an address it did not find there ran the
main page under a "Page not found" dialog, which took every click until dismissed
(``_ui.frame.ensure_app_frame`` reruns a page it did find through app.py). The shared
server of the other browser tests has had its first view by then, so each test here starts
its own. Screenshots go to tests/screenshots/fresh-server-PAGE.png.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.app_idle import follow_socket, wait_idle
from tests.app_server import app_server

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"

pytestmark = pytest.mark.browser


@contextlib.contextmanager
def fresh_server():
    """``streamlit run app.py`` (``app_server``) for one test, nothing visited yet: its URL."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with app_server({"TOEPLITZ_LAB_WARM_UP": "digits-tno"}, SHOTS / "fresh-server.log") as (
            url, _):
        yield url


TITLES = {"inspect": "Inspect checkpoint", "lessons": "Lessons", "compress": "Compress"}


@pytest.mark.parametrize("path", TITLES)
def test_a_fresh_servers_first_view_of_a_page_is_that_page_with_no_dialog(chromium, path):
    with fresh_server() as server:
        page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 1600}))
        try:
            page.goto(f"{server}/{path}")
            wait_idle(page)
            page.wait_for_timeout(1000)  # a dialog sent with the run's last messages
            wait_idle(page)
            shot = SHOTS / f"fresh-server-{path}.png"
            page.screenshot(path=str(shot))
            print(f"\nscreenshot: {shot}")
            dialogs = page.locator("[role='dialog']")
            assert dialogs.count() == 0, dialogs.first.inner_text()
            exceptions = page.locator("[data-testid='stException']")
            assert exceptions.count() == 0, exceptions.first.inner_text()
            assert page.url.startswith(f"{server}/{path}"), page.url
            assert page.locator("[data-testid='stMain'] h1").first.inner_text() == TITLES[path]
            assert page.locator("[data-testid='stSidebar']").get_by_role(
                "spinbutton", name="Seed").count() == 1  # app.py's frame around the page
        finally:
            page.close()
