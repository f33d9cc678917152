"""Browser latency of the app: key press on a slider to the app reporting ``notRunning``.

A benchmark, not a test (nothing here asserts a time). It starts ``streamlit run app.py``
on a free port, drives Debian's Chromium with Playwright, and prints one JSON line per
measurement plus a table: median and worst per page and n, every move a new slider value
(no cache hit), with the machine's load average.

    .venv/bin/python tests/ui_latency.py            # all pages, 12 moves each
    .venv/bin/python tests/ui_latency.py --moves 20 --pages decomposition

Needs Chromium at /usr/bin/chromium (``.ci/run`` installs it) and playwright.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
STATE = "[data-testid='stApp'][data-test-script-state='{}']"

# Every websocket message the browser receives, as the network sees it (arrival time here,
# size): a move's wait splits into the server's part (until its last message) and the
# browser's (drawing after it).
FRAMES: list[tuple[float, int]] = []


def _record_frames(socket) -> None:
    socket.on("framereceived", lambda payload: FRAMES.append((time.perf_counter(),
                                                              len(payload))))


# page -> (URL, the sliders moved in turn); each move is one ArrowRight: a new value.
CASES = {
    "decomposition n=1024": ("decomposition?n=1024", ["Band m", "Inducing points r"]),
    "decomposition n=4096": ("decomposition?n=4096", ["Band m", "Inducing points r"]),
    "basics": ("basics", ["Sequence length n"]),
    "frequency": ("frequency", ["MLP width"]),
    "inspect": ("inspect", ["Band m", "Rank r"]),
}


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
    for _ in range(240):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                      timeout=1).read() == b"ok":
                return proc
        except OSError:
            time.sleep(0.25)
    proc.terminate()
    raise RuntimeError("the streamlit server did not answer within 60 s")


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


def _moves(page, sliders: list[str], count: int) -> tuple[list[float], list[float], list[int]]:
    """Per move: seconds to notRunning, seconds to the last websocket message, bytes received."""
    main = page.locator("[data-testid='stMain']")
    times, last_message, received = [], [], []
    for i in range(count):
        slider = main.get_by_role("slider", name=sliders[i % len(sliders)])
        slider.focus()
        page.wait_for_timeout(300)  # let the browser go quiet before the measured move
        FRAMES.clear()
        start = time.perf_counter()
        slider.press("ArrowRight")
        _settle(page)
        times.append(time.perf_counter() - start)
        last_message.append(FRAMES[-1][0] - start if FRAMES else float("nan"))
        received.append(sum(size for _, size in FRAMES))
    return times, last_message, received


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--moves", type=int, default=12, help="slider moves per page")
    p.add_argument("--pages", nargs="*", default=list(CASES), choices=list(CASES),
                   metavar="PAGE", help=f"any of: {', '.join(CASES)}")
    args = p.parse_args(argv)
    port = _free_port()
    server = _server(port)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM,
                                         args=["--no-sandbox", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("websocket", _record_frames)
            cold = _open(page, f"{url}/{CASES[args.pages[0]][0]}")
            rows.append({"case": f"cold open: {args.pages[0]}", "seconds": [cold]})
            for name in args.pages:
                path, sliders = CASES[name]
                first = _open(page, f"{url}/{path}")
                rows.append({"case": f"open: {name}", "seconds": [first]})
                seconds, last_message, received = _moves(page, sliders, args.moves)
                rows.append({"case": f"move: {name}", "seconds": seconds,
                             "last_message_s": last_message, "bytes": received})
                print(json.dumps(rows[-1]), flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"\nload average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print("| case | n | median | worst | last message (median) | received (median) |\n"
          "|---|---:|---:|---:|---:|---:|")
    for row in rows:
        s = row["seconds"]
        tail = (f" {statistics.median(row['last_message_s']):.2f} s |"
                f" {statistics.median(row['bytes']) / 1e3:.0f} kB |" if "bytes" in row else " | |")
        print(f"| {row['case']} | {len(s)} | {statistics.median(s):.2f} s | {max(s):.2f} s |"
              + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
