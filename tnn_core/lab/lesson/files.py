"""Lessons read from a folder (one TOML file each), where no file can take the others down,
and what a cache of them is keyed by.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from tnn_core.files import FileRefused, read_bounded
from tnn_core.lab.lesson.content import Lesson, LessonError, file_number, quoted
from tnn_core.lab.lesson.parse import parse_lesson

__all__ = ["LESSON_DIR", "MAX_FILE_BYTES", "MAX_LESSONS", "load_lesson", "load_lessons",
           "folder_listing"]

logger = logging.getLogger(__name__)

LESSON_DIR = Path(__file__).resolve().parents[1] / "lessons"
MAX_FILE_BYTES = 200_000
MAX_LESSONS = 100  # files read from one folder, in lesson order


def _file_name(path: Path) -> str:
    name = path.name
    if not name.isprintable():  # a newline, or bytes that are not UTF-8
        raise LessonError(f"{ascii(name)}: a lesson\'s file name must be printable UTF-8 text; "
                          f"rename the file")
    return name


def load_lesson(path: Path) -> Lesson:
    """The lesson in the file at ``path``: a regular file (links followed) of at most
    ``MAX_FILE_BYTES``, read with ``read_bounded`` so that a FIFO, a device or a file
    growing while read is refused rather than waited on or read without end."""
    path = Path(path)
    name = _file_name(path)
    try:
        data = read_bounded(path, MAX_FILE_BYTES, "lesson")
    except FileRefused as err:
        raise LessonError(str(err).replace(os.fspath(path), name)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LessonError(f"{name}: not UTF-8 text") from None
    return parse_lesson(text, name)


def _lesson_files(folder: Path) -> list[Path]:
    """The folder's ``*.toml`` entries, hidden ones left out (".#1-a.toml" is an editor's
    lock), in lesson order: by the number the name starts with, unnumbered ones last, then
    by name. Raises OSError if the folder cannot be listed."""
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries
                 if entry.name.endswith(".toml") and not entry.name.startswith(".")]
    numbers = {name: file_number(name) for name in names}
    names.sort(key=lambda name: (numbers[name] is None, numbers[name] or 0, name))
    return [folder / name for name in names]


def load_lessons(folder: Path | None = None) -> tuple[list[Lesson], list[str]]:
    """Every lesson in ``folder`` (default ``LESSON_DIR``) in lesson order, and one
    sentence per file refused. Never raises: whatever one file holds (or is), the others
    load. A title or number already taken by an earlier file is refused, naming both."""
    folder = Path(folder or LESSON_DIR)
    try:
        paths = _lesson_files(folder)
    except OSError as err:
        return [], [f"the lesson folder {folder} cannot be read: "
                    f"{err.strerror or type(err).__name__}"]
    lessons, errors = [], []
    if len(paths) > MAX_LESSONS:
        errors.append(f"{len(paths) - MAX_LESSONS} lesson files after {paths[MAX_LESSONS - 1].name}"
                      f" were not read; the limit is {MAX_LESSONS} in one folder")
        paths = paths[:MAX_LESSONS]
    titles: dict[str, str] = {}  # title -> the file that has it
    numbers: dict[int, str] = {}  # number -> the file that has it
    for path in paths:
        try:
            lesson = load_lesson(path)
        except LessonError as err:
            errors.append(str(err))
            continue
        except Exception as err:  # the last safety net: one file never takes the page down
            logger.warning("lesson file %s could not be loaded", path, exc_info=True)
            errors.append(f"{ascii(path.name)}: could not be loaded ({type(err).__name__}); "
                          f"the server log has the details")
            continue
        if lesson.title in titles:
            errors.append(f"{path.name}: its title {quoted(lesson.title)} is already the title "
                          f"of {titles[lesson.title]}, which is loaded; give each lesson its own "
                          f"title")
        elif lesson.number in numbers:
            errors.append(f"{path.name}: its number {quoted(lesson.number)} is already the "
                          f"number of {numbers[lesson.number]}, which is loaded; give each "
                          f"lesson its own number")
        else:
            titles[lesson.title] = path.name
            if lesson.number is not None:
                numbers[lesson.number] = path.name
            lessons.append(lesson)
    return lessons, errors


def _stamp(path: Path) -> tuple[int, int]:
    """Size and modification time of the file (a link's target, else the link itself)."""
    for follow in (True, False):
        try:
            info = os.stat(path, follow_symlinks=follow)
            return info.st_size, info.st_mtime_ns
        except OSError:
            pass
    return -1, -1


def folder_listing(folder: Path | None = None) -> tuple:
    """What ``load_lessons(folder)`` reads, as a cache key: the name, size and modification
    time of each lesson file it would read, and how many there are. A file added, removed,
    renamed or edited changes it. One ``stat`` per file; nothing is opened."""
    folder = Path(folder or LESSON_DIR)
    try:
        paths = _lesson_files(folder)
    except OSError as err:
        return (f"cannot list: {err.errno}",)
    return (len(paths), *((path.name, *_stamp(path)) for path in paths[:MAX_LESSONS]))
