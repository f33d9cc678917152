"""tnn_core.allocator: glibc keeps freed memory in every entry point, and can be turned off.

Each case runs in a fresh interpreter: the setting is process-wide and one-way.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _run(code: str, env_value: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TOEPLITZ_LAB_MALLOC", None)
    if env_value is not None:
        env["TOEPLITZ_LAB_MALLOC"] = env_value
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)


_PROBE = """
import json, threading, torch
from tnn_core.allocator import allocator_state, keep_freed_memory
before = allocator_state()
first, second = keep_freed_memory(), keep_freed_memory()
sums = []
def work():  # a thread's arena; 96 MiB is larger than one arena heap (64 MiB)
    t = torch.ones(24 * 2**20); sums.append(float(t.sum())); del t
th = threading.Thread(target=work); th.start(); th.join()
t = torch.ones(24 * 2**20)
print(json.dumps(dict(before=before, first=first, second=second, after=allocator_state(),
                      sums=sums + [float(t.sum())])))
"""


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
@pytest.mark.slow  # a process importing torch: 2-3 s of CPU
def test_keep_is_applied_once_and_large_blocks_still_allocate():
    out = _run(_PROBE, None)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == "default"
    assert got["first"] == got["second"] == got["after"] == "keep"
    assert got["sums"] == [24 * 2**20] * 2  # blocks above any heap size, in a thread and not


@pytest.mark.slow  # a process importing torch: 2-3 s of CPU
def test_default_leaves_glibc_alone():
    out = _run(_PROBE, "default")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["first"] == got["after"] == "default"


def test_bad_setting_names_the_variable():
    out = _run("from tnn_core.allocator import keep_freed_memory; keep_freed_memory()", "always")
    assert out.returncode != 0
    assert "TOEPLITZ_LAB_MALLOC must be 'keep' or 'default'; got 'always'" in out.stderr


@pytest.mark.slow  # a process importing torch and timing a grid
def test_bench_records_the_allocator(tmp_path):
    path = tmp_path / "out.json"
    code = ("from tnn_core.bench.__main__ import main; main(['--quick', '--ops', 'tno', "
            "'--causal', 'causal', '--modes', 'forward', '--memory', 'none', "
            f"'--allocator', 'default', '--json', {str(path)!r}])")
    out = _run(code, None)
    assert out.returncode == 0, out.stderr
    records = json.loads(path.read_text())
    assert records and all(rec["allocator"] == "default" for rec in records)
    assert "allocator default" in out.stdout
