"""Files a user names: read only what is a regular file, within a bound; write an output
that no other run writes and that is not an input.

Every untrusted file the lab reads (a checkpoint, a compression plan, a lesson, a charlm
text given on the command line) goes through ``read_bounded``:

- the path is opened once, links followed, with ``O_NONBLOCK`` so that opening a FIFO
  returns at once instead of waiting for a writer;
- the opened file must be a regular file (``fstat`` of the descriptor, so what is checked
  is what is read): a FIFO, a socket, a device such as ``/dev/zero`` or a directory is
  refused before a byte is read;
- at most ``limit + 1`` bytes are read, whatever ``stat`` said before: a file that grows
  while it is read, or lies about its size, is refused once it passes ``limit``.

Every output a command writes (``--out``) goes through ``exclusive_output``:

- an output that is one of the command's inputs (the same file, through a link or
  another path) is refused, so a source is never replaced;
- a second writer of the same output is refused while the first runs: the lock is an
  ``flock`` on ``OUT.lock``, which the kernel releases on any exit, ``kill -9`` included;
  the lock file is removed when the holder ends normally.

``FileRefused`` (a ValueError) says which file and why in one sentence. This module
imports nothing from tnn_core and no third-party package.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FileRefused", "exclusive_output", "open_regular", "read_bounded"]

_CHUNK = 1 << 20  # bytes per read call
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class FileRefused(ValueError):
    """A file that cannot be read as asked: missing, not a regular file, or too large."""


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike, what: str = "file"):
    """The regular file at ``path`` opened for reading by seeking (links followed,
    ``O_NONBLOCK``, so a FIFO cannot block); FileRefused if it cannot be opened or is not
    a regular file. For a file read in parts, too large for ``read_bounded``."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise FileRefused(f"cannot read {what} {name}: {err.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileRefused(f"{what} {name} is {_kind(mode)}, not a regular file; give a file")
    return os.fdopen(fd, "rb")


def read_bounded(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    ``what`` names the file in messages ("checkpoint", "--plan", "lesson"). Raises
    FileRefused for a missing or unreadable path, anything but a regular file (links are
    followed and their target checked) and a file above ``limit`` bytes: at most
    ``limit + 1`` bytes are ever read."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative integer; got {limit!r}")
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        if err.errno == errno.ENOENT and os.path.islink(name):
            reason = "it is a link to a missing file"
        raise FileRefused(f"cannot read {what} {name}: {reason}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{what} {name} is {_kind(mode)}, not a regular file; give a "
                              f"file")
        chunks, total = [], 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            except OSError as err:
                raise FileRefused(f"cannot read {what} {name}: {err.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileRefused(f"{what} {name} is larger than the limit of {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


@contextlib.contextmanager
def exclusive_output(path: str | os.PathLike, inputs: tuple = (),
                     what: str = "--out") -> Iterator[Path]:
    """Hold ``path`` as this process's output while the block runs.

    Refuses (FileRefused) an output that is one of ``inputs`` (paths; None skipped) and one
    that another process holds. The lock is released on any exit of the process."""
    out = Path(path)
    for source in inputs:
        if source is not None and _same_file(out, Path(source)):
            raise FileRefused(f"{what} {out} is the input {source}; it would be replaced: "
                              f"write to another file")
    lock_path = out.with_name(out.name + ".lock")
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise FileRefused(f"cannot lock {what} {out}: {err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise FileRefused(f"{what} {out} is being written by another run"
                              f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it "
                              f"or write to another file") from None
        try:  # the lock file we hold must still be the one at lock_path (a holder that just
            same = os.path.samestat(os.fstat(fd), os.stat(lock_path))  # ended unlinks it)
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield out
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(fd)
