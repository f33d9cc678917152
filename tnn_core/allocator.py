"""Keep freed memory in the process: the CPU allocator setting every tnn_core entry point uses.

Why. PyTorch's CPU tensors come from glibc's ``malloc``. glibc serves a block of 32 MiB
or more (the dynamic mmap threshold's ceiling) with a fresh ``mmap`` and gives it back
on ``free``; the next allocation of that size is fresh memory again, which the kernel
page-faults and zeroes while it is first written. At n = 16384, B = 8, D = 64 one
[B, n, D] float32 activation is exactly 32 MiB, so every forward and backward paid
page faults per activation, time that grows with the number of allocations above the
threshold, not with the work (docs/benchmarks.md, "The allocator").
Below the threshold the same memory is reused from the heap without faults. PyTorch's
CPU performance guide fixes this by preloading jemalloc or tcmalloc; neither ships
here, so this module gives glibc the same behaviour with ``mallopt``:

* ``M_MMAP_MAX = 0``: serve every block from the heap (arena), never a one-off mmap;
* ``M_TRIM_THRESHOLD`` = 2 GiB - 1: do not hand the heap's top back to the kernel.

The cost: the process keeps its peak heap (RSS stays at its high-water mark instead
of shrinking after a large step). Threads' arenas still grow by mmapped heaps, and a
request larger than an arena's heap falls back to mmap (glibc does that by itself).

``keep_freed_memory()`` is called by ``python -m tnn_core.bench``, ``tnn_core.training``,
``tnn_core.training.evaluate`` and ``app.py``, never at import. Set ``TOEPLITZ_LAB_MALLOC=default``
to leave glibc as it is (the benchmark's ``--allocator default`` does the same).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

__all__ = ["ENV_VAR", "keep_freed_memory", "allocator_state"]

ENV_VAR = "TOEPLITZ_LAB_MALLOC"
_M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
_M_MMAP_MAX = -4
_TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int

_state = "default"


def _libc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def keep_freed_memory() -> str:
    """Configure glibc malloc to keep freed memory (see the module doc); idempotent.

    Returns the resulting state: "keep" when the setting is in force, "default" when
    ``TOEPLITZ_LAB_MALLOC=default`` asks to leave the allocator alone, "unavailable"
    when the C library is not glibc (macOS, musl, Windows) or refuses the setting.
    """
    global _state
    if _state == "keep":
        return _state
    setting = os.environ.get(ENV_VAR, "keep").strip().lower()
    if setting not in ("keep", "default"):
        raise ValueError(f"{ENV_VAR} must be 'keep' or 'default'; got {setting!r}")
    if setting == "default":
        return _state
    libc = _libc()
    if libc is None:
        _state = "unavailable"
        return _state
    ok = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1
    _state = "keep" if ok else "unavailable"
    return _state


def allocator_state() -> str:
    """"keep" once ``keep_freed_memory`` took effect in this process, else "default" or
    "unavailable"."""
    return _state
