"""Reading a file a user named, bounded by the bytes actually read.

Every untrusted file the lab reads (a checkpoint, a compression plan, a lesson, a charlm
text given on the command line) goes through ``read_bounded``:

- the path is opened once, links followed, with ``O_NONBLOCK`` so that opening a FIFO
  returns at once instead of waiting for a writer;
- the opened file must be a regular file (``fstat`` of the descriptor, so what is checked
  is what is read): a FIFO, a socket, a device such as ``/dev/zero`` or a directory is
  refused before a byte is read;
- at most ``limit + 1`` bytes are read, whatever ``stat`` said before: a file that grows
  while it is read, or lies about its size, is refused once it passes ``limit``.

``FileRefused`` (a ValueError) says which file and why in one sentence. This module
imports nothing from tnn_core and no third-party package.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["FileRefused", "read_bounded"]

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
