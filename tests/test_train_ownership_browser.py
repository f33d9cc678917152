"""A real browser (Playwright, Debian's Chromium) on a server of its own, which nobody else
visits: a Train run belongs to the tab that started it. Another browser with its link
watches without a Stop, and closing it stops nothing; the owner's reload still controls
the run; and closing the owner's tab stops the run, saved, within two minutes, with no
other visitor to make Streamlit let the closed session go (issue 35).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from pages._ui.session import GRACE_VARIABLE
from tests.app_idle import follow_socket, wait_idle
from tests.app_server import app_server
from tnn_core.training.checkpoint import read_info

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "screenshots"
STOPPED_WITHIN_S = 120  # the bound issue 35 asks for
# the server's grace for a disconnected session, shorter than its default 60 s so that the
# test takes a minute, not four; long enough for a reload under load to adopt the run
GRACE_S = 15
REAP_S = min(10.0, GRACE_S / 2)  # the reaper's look, as pages/_ui/session.py derives it

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lone_server(tmp_path_factory):
    """``streamlit run app.py`` (``app_server``) for this module alone (conftest's server has
    other visitors, whose visits would let closed sessions go): (its URL, its user folder)."""
    user_dir = tmp_path_factory.mktemp("user")
    env = {"TOEPLITZ_LAB_USER_CHECKPOINTS": str(user_dir), "TOEPLITZ_LAB_WARM_UP": "none",
           GRACE_VARIABLE: str(GRACE_S)}
    with app_server(env, user_dir.parent / "server.log") as (url, _):
        yield url, user_dir


def open_tab(chromium, url: str):
    """A page in a browser context of its own (another browser: no shared cookies)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 2000})
    page = follow_socket(context.new_page())
    page.goto(url)
    wait_idle(page)
    return context, page


def saved_status(user_dir: Path, run_id: str) -> str | None:
    path = user_dir / "autosave" / f"{run_id}.safetensors"
    try:
        return read_info(path).history["status"]
    except (OSError, ValueError):
        return None


def test_only_the_owner_tab_controls_its_run_and_closing_it_stops_the_run(lone_server,
                                                                         chromium):
    url, user_dir = lone_server
    SHOTS.mkdir(parents=True, exist_ok=True)
    owner, page = open_tab(chromium, f"{url}/train")
    main = page.locator("[data-testid='stMain']")
    main.get_by_text("medium", exact=True).click()  # slow enough to be running throughout
    steps = main.get_by_role("slider", name="Steps")
    steps.focus()
    steps.press("End")  # 5000 steps
    main.get_by_role("button", name="Start").click()
    main.get_by_role("button", name="Stop").wait_for(timeout=120_000)
    found = re.search(r"[?&]run=([^&]+)", page.url)
    assert found and re.search(r"[?&]owner=[\w-]{16,}", page.url), page.url
    run_id = found.group(1)

    watcher, seen = open_tab(chromium, f"{url}/train?run={run_id}")
    seen.get_by_text("belongs to another browser session").wait_for(timeout=60_000)
    wait_idle(seen)
    seen.screenshot(path=str(SHOTS / "train-watched-by-another.png"), full_page=True)
    assert seen.get_by_role("button", name="Stop").count() == 0
    watcher.close()  # the watcher's session ends (reaped like any other): nothing stops
    page.wait_for_timeout((GRACE_S + 2 * REAP_S) * 1000)
    assert saved_status(user_dir, run_id) in (None, "checkpoint")

    page.reload()  # a new session of the owner's browser, with the owner's address
    stop = page.locator("[data-testid='stMain']").get_by_role("button", name="Stop")
    stop.wait_for(timeout=60_000)
    assert page.get_by_text(re.compile(r"running: step \d+ / 5000")).count() == 1
    closed_at = time.monotonic()
    owner.close()  # the tab closes; nobody else visits the server
    while saved_status(user_dir, run_id) != "stopped":
        assert time.monotonic() - closed_at < STOPPED_WITHIN_S + 30, "still training"
        time.sleep(1)
    stopped_after = time.monotonic() - closed_at
    print(f"\nthe closed tab's run stopped, saved, {stopped_after:.0f} s after the close")
    assert stopped_after <= STOPPED_WITHIN_S
