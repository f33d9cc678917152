"""Browser latency of the app: key press on a slider to the app reporting ``notRunning``.

A benchmark, not a test (nothing here asserts a time). It starts ``streamlit run app.py``
on a free port, drives Debian's Chromium with Playwright, and prints one JSON line per
measurement plus a table: median and worst per page and n, every move a new slider value
(no cache hit), the bytes a move sends, and the machine's load average. A move is timed
in the browser, from its key press to the end of the script run it started.

    .venv/bin/python tests/ui_latency.py            # all pages, 12 moves each
    .venv/bin/python tests/ui_latency.py --moves 20 --pages "decomposition n=1024"
    .venv/bin/python tests/ui_latency.py --pages inspect --checkpoints   # open, switch
    .venv/bin/python tests/ui_latency.py --cold     # each page first on a fresh server
    .venv/bin/python tests/ui_latency.py --with-training --pages "decomposition n=1024"

Needs Chromium at /usr/bin/chromium (``.ci/run`` installs it) and playwright.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote_plus

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
STATE = "[data-testid='stApp'][data-test-script-state='{}']"

FRAMES: list[int] = []  # the size of every websocket message the browser received


# Runs in each page before Streamlit: the time of every key press and of every change of
# the app's script state (browser clock), so a move's wait is measured from its key press
# to the end of the run it started, not to a later run (a fragment polling for a timing).
RECORD_STATES = """
window.__keydown = null;
window.__states = [];
window.addEventListener("keydown", () => { window.__keydown = performance.now(); }, true);
new MutationObserver(() => {
  const app = document.querySelector("[data-testid='stApp']");
  const state = app && app.getAttribute("data-test-script-state");
  const last = window.__states[window.__states.length - 1];
  if (state && (!last || last[1] !== state)) window.__states.push([performance.now(), state]);
}).observe(document, {subtree: true, attributes: true, childList: true,
                      attributeFilter: ["data-test-script-state"]});
"""
# Seconds from the last key press to the first "notRunning" after a run it started.
MOVE_SECONDS = """() => {
  const t0 = window.__keydown;
  const after = window.__states.filter(([t]) => t >= t0);
  const started = after.findIndex(([, s]) => s === "running");
  if (started < 0) return null;
  const done = after.slice(started).find(([, s]) => s === "notRunning");
  return done ? (done[0] - t0) / 1000 : null;
}"""


def _record_frames(socket) -> None:
    socket.on("framereceived", lambda payload: FRAMES.append(len(payload)))


# page -> (URL, the (slider, key) moves made in turn); each move is a new value.
DECOMPOSITION_MOVES = [("Band m", "ArrowRight"), ("Inducing points r", "ArrowRight"),
                       ("Decay λ", "ArrowLeft")]  # λ starts at 0.99, its maximum is 1
CASES = {
    "decomposition n=1024": ("decomposition?n=1024", DECOMPOSITION_MOVES),
    "decomposition n=4096": ("decomposition?n=4096", DECOMPOSITION_MOVES),
    "basics": ("basics", [("Sequence length n", "ArrowRight")]),
    "frequency": ("frequency", [("MLP width", "ArrowRight")]),
    "inspect": ("inspect", [("Band m", "ArrowRight"), ("Rank r", "ArrowRight")]),
}
COLD_PAGES = ["", "basics", "decomposition", "frequency", "speed", "train", "inspect"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, STREAMLIT_SERVER_FILE_WATCHER_TYPE="none"))
    if not _answers(port, 60.0):
        proc.terminate()
        raise RuntimeError("the streamlit server did not answer within 60 s")
    return proc


def _answers(port: int, seconds: float) -> bool:
    """Whether the server on ``port`` reports healthy within ``seconds``."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                      timeout=1).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.25)
    return False


def _settle(page, timeout_ms: int = 180_000) -> None:
    """Until the script run that an action started has finished."""
    try:  # the rerun may start a little after the action
        page.wait_for_selector(STATE.format("running"), timeout=1500)
    except Exception:  # noqa: BLE001 - it may already be over
        pass
    page.wait_for_selector(STATE.format("notRunning"), timeout=timeout_ms)


def _open(page, url: str) -> float:
    """Seconds from navigation to the first finished script run."""
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("[data-testid='stMain']", timeout=180_000)
    _settle(page)
    return time.perf_counter() - start


def _moves(page, moves: list[tuple[str, str]], count: int) -> list[dict]:
    """Per move: the slider, seconds from the key press to the end of the run it started,
    and the bytes received meanwhile."""
    main = page.locator("[data-testid='stMain']")
    measured = []
    for i in range(count):
        name, key = moves[i % len(moves)]
        slider = main.get_by_role("slider", name=name)
        slider.focus()
        page.wait_for_timeout(300)  # let the browser go quiet before the measured move
        FRAMES.clear()
        slider.press(key)
        page.wait_for_function(MOVE_SECONDS, timeout=180_000)
        measured.append({"slider": name, "seconds": page.evaluate(MOVE_SECONDS),
                         "bytes": sum(FRAMES)})
    return measured


def _training_step(page) -> tuple[float, int]:
    """(now, the step the Train page shows) for the run going on in that page."""
    text = page.get_by_text(re.compile(r"running: step \d+ / ")).first.inner_text()
    return time.perf_counter(), int(re.search(r"step (\d+) /", text).group(1))


def _start_training(browser, url: str):
    """A second browser session starts the Train page's default run at 5000 steps."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    _open(page, f"{url}/train")
    steps = page.locator("[data-testid='stMain']").get_by_role("slider", name="Steps")
    steps.focus()
    steps.press("End")
    page.get_by_role("button", name="Start").click()
    page.get_by_text(re.compile(r"running: step [1-9]\d* / 5000")).wait_for(timeout=120_000)
    return page


def _freeze(page, frozen: bool) -> None:
    """Stop (or resume) the Train page's drawing: a second person's browser runs on their
    own computer, not on the server's cores as this benchmark's does."""
    session = page.context.new_cdp_session(page)
    session.send("Page.setWebLifecycleState", {"state": "frozen" if frozen else "active"})
    if not frozen:
        page.wait_for_timeout(1500)  # its progress fragment polls again and shows the step


def _steps_per_s(page, seconds: float) -> float:
    t0, s0 = _training_step(page)
    _freeze(page, True)
    time.sleep(seconds)
    _freeze(page, False)
    t1, s1 = _training_step(page)
    return (s1 - s0) / (t1 - t0)


def _shipped() -> list[tuple[str, str]]:
    """(name, the Checkpoint select box's label) of each shipped checkpoint."""
    sys.path.insert(0, str(ROOT))
    from tnn_core.lab.inspect import SHIPPED_ORDER

    return [(name, f"{name} · {hint}") for name, hint in SHIPPED_ORDER]


def _inspect_rows(page, url: str) -> list[dict]:
    """Inspect opened on each shipped checkpoint by its link (the first time each), then
    switched through them twice with the Checkpoint select box."""
    shipped = _shipped()
    opens = [_open(page, f"{url}/inspect?checkpoint={quote_plus(label)}")
             for _, label in shipped]
    main = page.locator("[data-testid='stMain']")
    switches = []
    for _, label in shipped[1:] * 2:
        page.wait_for_timeout(300)
        start = time.perf_counter()
        main.get_by_role("combobox", name="Checkpoint").click()
        page.locator("[role='option']").filter(has_text=label).first.click()
        _settle(page)
        switches.append(time.perf_counter() - start)
    return [{"case": "open Inspect on each shipped checkpoint", "seconds": opens},
            {"case": "switch Inspect's checkpoint", "seconds": switches}]


def _cold_rows(browser_args: dict) -> list[dict]:
    """Each page opened first on a freshly started server, in a fresh browser."""
    rows = []
    with sync_playwright() as pw:
        for path in COLD_PAGES:
            port = _free_port()
            server = _server(port)
            try:
                browser = pw.chromium.launch(**browser_args)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                rows.append({"case": f"cold open: /{path}",
                             "seconds": [_open(page, f"http://127.0.0.1:{port}/{path}")]})
                browser.close()
            finally:
                server.terminate()
                server.wait(timeout=30)
    return rows


def _row(case: str, moves: list[dict]) -> dict:
    return {"case": case, **{key: [m[key] for m in moves]
                             for key in ("seconds", "bytes")}}


def _print_table(rows: list[dict]) -> None:
    print(f"\nload average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print("| case | n | median | worst | received (median) |\n|---|---:|---:|---:|---:|")
    for row in rows:
        s = row["seconds"]
        received = (f" {statistics.median(row['bytes']) / 1e3:.0f} kB |" if "bytes" in row
                    else " |")
        print(f"| {row['case']} | {len(s)} | {statistics.median(s):.2f} s | {max(s):.2f} s |"
              + received)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--moves", type=int, default=12, help="slider moves per page")
    p.add_argument("--pages", nargs="*", default=list(CASES), choices=list(CASES),
                   metavar="PAGE", help=f"any of: {', '.join(CASES)}")
    p.add_argument("--cold", action="store_true",
                   help="only the cold opens: each page first on a fresh server")
    p.add_argument("--checkpoints", action="store_true",
                   help="also open Inspect on every shipped checkpoint and switch between them")
    p.add_argument("--with-training", action="store_true",
                   help="start a training run in a second browser session first; print its "
                        "steps/s alone (the pages idle) and while the moves are made; that "
                        "session's page is frozen meanwhile, as if on another computer")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    browser_args = dict(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
    if args.cold:
        _print_table(_cold_rows(browser_args))
        return 0
    port = _free_port()
    server = _server(port)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(**browser_args)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("websocket", _record_frames)
            page.add_init_script(RECORD_STATES)
            cold = _open(page, f"{url}/{CASES[args.pages[0]][0]}")
            rows.append({"case": f"cold open: {args.pages[0]}", "seconds": [cold]})
            if args.with_training:
                training = _start_training(browser, url)
                alone = _steps_per_s(training, 20)
                t0, s0 = _training_step(training)
                _freeze(training, True)
            for name in args.pages:
                path, moves = CASES[name]
                first = _open(page, f"{url}/{path}")
                rows.append({"case": f"open: {name}", "seconds": [first]})
                measured = _moves(page, moves, args.moves)
                rows.append(_row(f"move: {name}", measured))
                print(json.dumps(rows[-1]), flush=True)
                if len(moves) > 1:
                    rows += [_row(f"move: {name}, {slider} only",
                                  [m for m in measured if m["slider"] == slider])
                             for slider, _ in moves]
            if args.checkpoints:
                rows += _inspect_rows(page, url)
            if args.with_training:
                _freeze(training, False)
                t1, s1 = _training_step(training)
                during = (s1 - s0) / (t1 - t0)
                print(f"training: {alone:.2f} steps/s alone, {during:.2f} steps/s during the "
                      f"moves ({during / alone:.0%})")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
