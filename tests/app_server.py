"""The app's Streamlit server for a test: ``streamlit run app.py`` on a free port, its
output in a log file, answered its health check before the test goes on, stopped after.

    with app_server({"TOEPLITZ_LAB_WARM_UP": "none"}, log_path) as (url, process):
        ...

conftest's shared ``streamlit_server`` and the tests that need a server of their own (a
fresh one, or one nobody else visits) start it the same way.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_S = 60  # a server answers its health check within this, or the test fails


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok"
    except OSError:
        return False


def stop(server: subprocess.Popen) -> None:
    """3 s to exit, then SIGKILL: its exit waits for a warm-up step under way."""
    server.terminate()
    try:
        server.wait(timeout=3)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=20)


@contextlib.contextmanager
def app_server(env: dict[str, str], log_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """(its URL, its process) for a server with ``env`` added to this process's environment
    (the file watcher always off), its output in ``log_path``; RuntimeError if it does not
    answer within START_S. Stopped when the block ends, unless stopped before."""
    url = f"http://127.0.0.1:{(port := free_port())}"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env={**os.environ, "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none", **env},
            stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + START_S
            while not healthy(url):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"streamlit did not answer /_stcore/health within "
                                       f"{START_S} s (its log: {log_path})")
                time.sleep(0.25)
            yield url, server
        finally:
            if server.poll() is None:
                stop(server)
