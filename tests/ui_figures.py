"""Browser latency of the figures: a drag frame, a release, a class of students.

A benchmark, not a test (nothing here asserts a time). It starts ``streamlit run app.py``
on a free port and drives Debian's Chromium with Playwright, timing everything in the
page's own clock (RECIPES): an init script records every ``input`` and ``change`` event of
a figure's sliders (inside its shadow root) and every change of a figure's ``data-drawn``
and of a panel's ``data-stale`` (the figure contract, ``pages/figures``).

    .venv/bin/python tests/ui_figures.py                       # Decomposition, n = 1024
    .venv/bin/python tests/ui_figures.py --n 4096 --control band
    .venv/bin/python tests/ui_figures.py --class 6             # six sessions at once
    .venv/bin/python tests/ui_figures.py --cold                # first open after a start

- **frame**: a real mouse drag across the slider; from each ``input`` event to the figure's
  ``data-drawn`` holding that value. No server work may happen meanwhile: the server's CPU
  time over the drag is printed.
- **release**: from the ``change`` event (mouse up) to the last panel of the figure
  turning ``data-stale="false"``; and the server's CPU seconds per settled move (its
  procfs user + system time, once its start-up work has gone quiet).
- **class**: K sessions, each settling a move every 2 s, their release times together.
- **cold**: a fresh server started by ``make run`` (its imports paid at start), the time
  from navigation to the figure's first ``data-drawn``.

Needs Chromium at /usr/bin/chromium (``.ci/run`` installs it) and playwright.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_latency import CHROMIUM, ROOT, _answers, _free_port, _server, _settle  # noqa: E402

# Before the app: every figure's shadow root observed, every slider event and every
# data-drawn / data-stale change recorded with performance.now().
RECORD = """
window.__events = [];  // [t, kind, name or attribute, value]
const record = (kind, name, value) => window.__events.push([performance.now(), kind, name, value]);
const slider = (kind) => (event) => {
  const target = event.composedPath()[0];
  if (target && target.type === "range") record(kind, target.name, target.value);
};
const observe = (root) => {
  // `change` is not composed: it never leaves the shadow root, so listen inside it
  for (const kind of ["input", "change"]) root.addEventListener(kind, slider(kind), true);
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      record("attr", m.attributeName, m.target.getAttribute(m.attributeName));
    }
  }).observe(root, {subtree: true, attributes: true,
                    attributeFilter: ["data-drawn", "data-stale"]});
};
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  const root = attach.call(this, init);
  observe(root);
  return root;
};
"""
FIGURE = "[data-testid='figure'][data-figure='{}']"


def _make_run(port: int) -> subprocess.Popen:
    """The server as ``make run`` starts it (its imports paid before the first visitor)."""
    proc = subprocess.Popen(["make", "run", f"PORT={port}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    if not _answers(port, 120.0):
        os.killpg(proc.pid, signal.SIGTERM)
        raise RuntimeError("make run did not answer within 120 s")
    return proc


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _quiet(pid: int, seconds: float = 1.0, limit_s: float = 60.0) -> None:
    """Wait until the server uses under 5 % of a core for ``seconds``."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        before = _server_cpu(pid)
        time.sleep(seconds)
        if _server_cpu(pid) - before < 0.05 * seconds:
            return


def _events(page) -> list:
    return page.evaluate("() => window.__events.splice(0)")


def _drag(page, figure: str, control: str, steps: int, target: float) -> None:
    """Press on the slider's thumb, move to ``target`` (a fraction of its track) in
    ``steps`` pointer moves about a frame apart, release."""
    slider = page.locator(f"{FIGURE.format(figure)} input[name='{control}']")
    box = slider.bounding_box()
    low, high = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    track = lambda fraction: box["x"] + 8 + (box["width"] - 16) * fraction  # noqa: E731
    y = box["y"] + box["height"] / 2
    start = track((float(slider.input_value()) - low) / (high - low))
    page.mouse.move(start, y)
    page.mouse.down()
    for k in range(1, steps + 1):
        page.mouse.move(start + (track(target) - start) * k / steps, y)
        page.wait_for_timeout(16)
    page.mouse.up()


def _targets(count: int) -> list[float]:
    """``count`` different places on a track, spread over it (every move a new value)."""
    return [0.05 + 0.9 * ((0.618034 * (k + 1)) % 1.0) for k in range(count)]


def _frames(events: list, control: str) -> list[float]:
    """ms from each input event to the first data-drawn holding its value afterwards."""
    out = []
    for i, (t, kind, name, value) in enumerate(events):
        if kind != "input" or name != control:
            continue
        wanted = f"{control}={value}"
        for t2, kind2, name2, value2 in events[i:]:
            if kind2 == "attr" and name2 == "data-drawn" and wanted in (value2 or "").split("&"):
                out.append(t2 - t)
                break
    return out


def _release(events: list) -> float | None:
    """ms from the last change event to the last data-stale="false" after it."""
    changes = [t for t, kind, *_ in events if kind == "change"]
    if not changes:
        return None
    fresh = [t for t, kind, name, value in events
             if kind == "attr" and name == "data-stale" and value == "false" and t >= changes[-1]]
    return (fresh[-1] - changes[-1]) if fresh else None


def _open(page, url: str, figure: str) -> None:
    page.goto(url)
    page.wait_for_selector(f"{FIGURE.format(figure)}[data-drawn]", timeout=180_000)
    _settle(page)


def _summary(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    values = sorted(values)
    return {"count": len(values), "median_ms": round(statistics.median(values), 1),
            "p90_ms": round(values[int(0.9 * (len(values) - 1))], 1),
            "p95_ms": round(values[int(0.95 * (len(values) - 1))], 1),
            "max_ms": round(values[-1], 1)}


def moves(url: str, figure: str, control: str, count: int, pid: int, page) -> dict:
    """``count`` drags with release; frames, releases and the server's CPU per move."""
    _open(page, url, figure)
    _quiet(pid)
    frames, releases, cpu = [], [], 0.0
    for target in _targets(count):
        _events(page)
        start = _server_cpu(pid)
        _drag(page, figure, control, 12, target)
        page.wait_for_timeout(1500)  # the release's rerun and its numbers
        events = _events(page)
        frames += _frames(events, control)
        release = _release(events)
        if release is not None:
            releases.append(release)
        _quiet(pid, 0.5)
        cpu += _server_cpu(pid) - start
    return {"frame": _summary(frames), "release": _summary(releases),
            "server_cpu_ms_per_move": round(1000 * cpu / count, 1)}


def drag_cpu(url: str, figure: str, control: str, pid: int, page) -> float:
    """Server CPU seconds during a drag, the release's rerun excluded (pointer held)."""
    _open(page, url, figure)
    _quiet(pid)
    box = page.locator(f"{FIGURE.format(figure)} input[name='{control}']").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 10, y)
    page.mouse.down()
    start = _server_cpu(pid)
    for k in range(40):
        page.mouse.move(box["x"] + 10 + (box["width"] - 20) * k / 40, y)
        page.wait_for_timeout(16)
    used = _server_cpu(pid) - start
    page.mouse.up()
    return used


def classroom(url: str, figure: str, control: str, sessions: int, seconds: float,
              browser) -> dict:
    """``sessions`` pages, each settling a move every 2 s (or as often as one Playwright
    thread can drag them all in turn) for ``seconds``: the releases' times, the moves
    whose exact numbers had not arrived by the end of their round (``unsettled``), and
    the pages showing an exception or a page error."""
    pages, errors = [], []
    for _ in range(sessions):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.add_init_script(RECORD)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        _open(page, url, figure)
        pages.append(page)
    releases: list[float] = []
    moved = unsettled = 0
    start = time.time()
    end, targets = time.time() + seconds, iter(_targets(10_000))
    while time.time() < end:  # the pages share Playwright's one thread: take turns
        round_start = time.time()
        for page in pages:
            _events(page)
            _drag(page, figure, control, 4, next(targets))
        time.sleep(max(0.0, 2.0 - (time.time() - round_start)))
        for page in pages:
            release = _release(_events(page))
            moved += 1
            if release is None:
                unsettled += 1
            else:
                releases.append(release)
    shown = sum(page.locator("[data-testid='stException']").count() for page in pages)
    return {"sessions": sessions, "moves": moved, "seconds": round(time.time() - start, 1),
            "release": _summary(releases), "unsettled": unsettled,
            "page_errors": len(errors), "exceptions_shown": shown}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--page", default="decomposition")
    p.add_argument("--figure", default="decomposition")
    p.add_argument("--control", default="rank")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--moves", type=int, default=20)
    p.add_argument("--class", dest="sessions", type=int, default=0,
                   help="sessions moving at once (0: one session)")
    p.add_argument("--seconds", type=float, default=40.0, help="--class: how long")
    p.add_argument("--cold", action="store_true", help="time the first open after a start")
    args = p.parse_args(argv)
    # The server's warm-up (Inspect's views of every shipped checkpoint, minutes of scoring
    # after the first visit) would be counted in every move's CPU here; a class's server
    # has finished it before the class. Off unless the caller sets it.
    os.environ.setdefault("TOEPLITZ_LAB_WARM_UP", "none")
    port = _free_port()
    server = _make_run(port) if args.cold else _server(port)
    url = f"http://127.0.0.1:{port}/{args.page}?n={args.n}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                 args=["--no-sandbox",
                                                       "--disable-dev-shm-usage"])
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(RECORD)
            page = context.new_page()
            if args.cold:
                start = time.perf_counter()
                _open(page, url, args.figure)
                result = {"cold_open_s": round(time.perf_counter() - start, 2)}
            elif args.sessions:
                result = classroom(url, args.figure, args.control, args.sessions,
                                   args.seconds, browser)
            else:
                result = moves(url, args.figure, args.control, args.moves, server.pid, page)
                result["server_cpu_s_while_dragging"] = round(
                    drag_cpu(url, args.figure, args.control, server.pid, page), 3)
            result.update(page=args.page, figure=args.figure, control=args.control, n=args.n,
                          load=os.getloadavg()[0])
            print(json.dumps(result))
            browser.close()
    finally:
        if args.cold:
            os.killpg(server.pid, signal.SIGTERM)  # make and the server it started
        else:
            server.terminate()
        server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
