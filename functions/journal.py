"""A JSON-lines file that survives: durable appends and a reader that tolerates a crash mid-write.

Where it sits: `cre-fn record` (`functions.deadletters`) appends every dead letter with `append()`
before it answers 202, and `cre-fn replay` (`functions.replay`) reads the file back with `read_lines()`.

What it relies on (POSIX):
- One writer. `append()` serialises its own threads with a lock; a second process writing the same
  file is not supported (the deployed recorder is pinned to one pod on a ReadWriteOnce claim).
- The file is opened for each append (`O_APPEND`, created when missing, its directory fsynced then),
  so a file moved away by rotation is never written again: the next append creates a new one.
- A line is durable when `os.fsync` returns; only then does the caller answer 202.
- A failed write (disk full, read-only, I/O error) is cut back to where the file ended, so no
  partial line stays behind, and raises `Unavailable` (503: the sender retries, nothing is lost).
- A crash mid-write can still leave a torn last line (it was never acknowledged, so the sender
  sends it again). The next `append()` cuts it off before writing, and `read_lines()` skips it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from functions.errors import Unavailable

NEWLINE = b"\n"


@dataclass(frozen=True)
class Lines:
    """The complete lines of a journal, and the torn last line skipped (empty when none)."""

    lines: list[str]
    torn: str = ""


class Journal:
    """Appends JSON lines to `path`, each one on disk before `append` returns."""

    def __init__(self, path: Path, warn: Callable[[str], None] = lambda _: None) -> None:
        self.path = path
        self.warn = warn
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> int:
        """Write `record` as one line and fsync it; return the file's size in bytes afterwards."""
        line = json.dumps(record, separators=(",", ":")).encode() + NEWLINE
        with self._lock:
            try:
                created = not self.path.exists()
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as e:
                raise Unavailable(f"cannot open {self.path}: {e.strerror or e}") from e
            try:
                if created:
                    fsync_directory(self.path.parent)
                return self._append(fd, line)
            finally:
                os.close(fd)

    def size(self) -> int:
        """The file's size in bytes (0 when it does not exist yet)."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _append(self, fd: int, line: bytes) -> int:
        start = cut_torn_tail(fd, self.warn, self.path)
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        except OSError as e:
            undo(fd, start)
            raise Unavailable(f"cannot write {self.path}: {e.strerror or e}") from e
        return start + len(line)


def cut_torn_tail(fd: int, warn: Callable[[str], None], path: Path) -> int:
    """Cut a last line a crash left without its newline; return where the file now ends."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == NEWLINE:
        return size
    end = size
    while end > 0:
        chunk = os.pread(fd, min(4096, end), max(0, end - 4096))
        at = chunk.rfind(NEWLINE)
        if at >= 0:
            end = end - len(chunk) + at + 1
            break
        end -= len(chunk)
    try:
        os.ftruncate(fd, end)
        os.fsync(fd)
    except OSError as e:
        raise Unavailable(f"cannot cut the torn last line of {path}: {e.strerror or e}") from e
    warn(f"{path}: cut a torn last line of {size - end} bytes (a write that never finished)")
    return end


def undo(fd: int, size: int) -> None:
    """Cut the file back to `size` after a failed write (best effort: the write already failed)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)


def fsync_directory(directory: Path) -> None:
    """Make a new file's name durable too."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path) -> Lines:
    """The file's lines; a last line without its newline that is not JSON is torn, not a line."""
    text = path.read_text()
    lines = text.splitlines()
    if lines and not text.endswith("\n") and not is_json(lines[-1]):
        return Lines(lines[:-1], lines[-1])
    return Lines(lines)


def is_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True
