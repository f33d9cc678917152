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
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app_idle import follow_socket, wait_idle

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"
START_S = 60  # the server answers its health check within this

pytestmark = pytest.mark.browser


@contextlib.contextmanager
def fresh_server():
    """``streamlit run app.py`` on a free port, as conftest's ``streamlit_server`` starts
    it, for one test: its URL. Stopped (3 s, then killed) when the test ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, STREAMLIT_SERVER_FILE_WATCHER_TYPE="none",
               TOEPLITZ_LAB_WARM_UP="digits-tno")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with open(SHOTS / "fresh-server.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_S
            while not _healthy(url):
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"streamlit did not answer /_stcore/health within {START_S} s")
                time.sleep(0.25)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=3)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=20)


def _healthy(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok"
    except OSError:
        return False


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
