"""Peak memory of one run of a benchmark case.

* CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus what
  was allocated before the run (inputs and parameters).
* CPU, "profiler" (the default): torch's profiler with ``profile_memory=True`` records
  every allocation and free of torch's CPU allocator, attributed to the op that made it
  (``self_cpu_memory_usage``) or to a ``[memory]`` event; the running sum in time order
  peaks at the run's peak tensor memory above its inputs. ``tracemalloc`` cannot do this:
  it sees Python's allocator only, and torch allocates tensor storage in C++.
  Transients inside one op (an FFT's scratch) count only by their net.
* CPU, "rss": a fresh subprocess builds the case, resets the kernel's high-water mark
  (``/proc/self/clear_refs``, falling back to ``ru_maxrss``), runs once, and reports the
  growth of peak RSS. It includes MKL and oneDNN workspaces and allocator slack, and
  the first-call costs; it is slower (an interpreter per cell) and noisier.

``python -m tnn_core.bench.memory '<json spec>'`` is the subprocess entry point.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from typing import Literal

import torch
from torch.profiler import ProfilerActivity, profile

from tnn_core.allocator import keep_freed_memory
from tnn_core.bench.cases import make_case

__all__ = ["MemoryMethod", "MEMORY_METHODS", "peak_memory_mb", "profiler_peak_mb", "rss_peak_mb"]

MemoryMethod = Literal["auto", "profiler", "rss", "none"]
MEMORY_METHODS: tuple[str, ...] = ("auto", "profiler", "rss", "none")
_MB = 2**20


def profiler_peak_mb(fn: Callable[[], object]) -> float:
    """Peak of torch's CPU tensor allocations above the starting point during ``fn()``, MB."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    current = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        if event.name == "[memory]":
            current += event.cpu_memory_usage
        else:
            current += event.self_cpu_memory_usage
        peak = max(peak, current)
    return peak / _MB


def cuda_peak_mb(fn: Callable[[], object], device) -> float:
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    return (torch.cuda.max_memory_allocated(device) - base) / _MB


def _vm_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


def rss_peak_mb(spec: dict, timeout: float = 300.0) -> float | None:
    """Run ``spec`` (a harness case) once in a fresh interpreter; its peak RSS growth, MB."""
    cmd = [sys.executable, "-m", "tnn_core.bench.memory", json.dumps(spec)]
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"memory subprocess failed for {spec}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def peak_memory_mb(fn: Callable[[], object], device, method: MemoryMethod,
                   spec: dict | None = None) -> tuple[float | None, str]:
    """(peak MB, the method used) for one run of ``fn``; ``spec`` rebuilds it for "rss"."""
    if method == "none":
        return None, "none"
    if torch.device(device).type == "cuda":
        return cuda_peak_mb(fn, device), "cuda_max_allocated"
    if method == "rss":
        if spec is None:
            raise ValueError("method 'rss' needs the case spec to rebuild it in a subprocess")
        return rss_peak_mb(spec), "rss_subprocess"
    if method in ("auto", "profiler"):
        return profiler_peak_mb(fn), "torch_profiler"
    raise ValueError(f"memory method must be one of {MEMORY_METHODS}; got {method!r}")


def _main(argv: list[str]) -> None:
    keep_freed_memory()  # as the parent did (TOEPLITZ_LAB_MALLOC is inherited)
    spec = json.loads(argv[0])
    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    run, reset = make_case(spec)
    reset()
    before_kb = _vm_kb("VmRSS")
    if _reset_high_water_mark() and before_kb is not None:
        run()
        peak_kb = _vm_kb("VmHWM")
        growth = (peak_kb - before_kb) if peak_kb is not None else None
    else:  # no clear_refs: ru_maxrss is the high-water mark since start
        start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run()
        growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
    print(json.dumps({"peak_mb": None if growth is None else max(growth, 0) / 1024}))


if __name__ == "__main__":
    _main(sys.argv[1:])
