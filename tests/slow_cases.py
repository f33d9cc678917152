"""``python -m tests.slow_cases``: time the quick tier alone (``pytest -m "not slow" -n 0
--durations=0``) and print, in tests/slow_cases.txt's format, every test over LIMIT_S of its
own (setup, call and teardown together) that the file does not list yet. Run it on a quiet
machine; add what it prints to the file."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 0.5  # a quick test's own time at most, alone on a quiet machine
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S.*)$", re.M)


def main() -> int:
    run = subprocess.run([sys.executable, "-m", "pytest", "-m", "not slow", "-n", "0", "-q",
                          "-p", "no:cacheprovider", "--durations=0"],
                         cwd=ROOT, capture_output=True, text=True)
    own: collections.Counter = collections.Counter()
    for seconds, node in DURATION.findall(run.stdout):
        own[node.strip()] += float(seconds)
    listed = {line.split("#", 1)[0].strip()
              for line in (ROOT / "tests" / "slow_cases.txt").read_text().splitlines()}
    for node, seconds in own.most_common():
        if seconds > LIMIT_S and node not in listed:
            print(f"{node}  # {seconds:.2f}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
