"""A JSON-lines file that survives: durable appends and a reader that tolerates a crash mid-write.

`cre-fn record` (`functions.runtime.deadletters`) appends every dead letter with `append()` before it answers 202, and
`cre-fn replay` (`functions.tools.replay`) reads the file back with `read_lines()`. Relied on (POSIX): one writer
(its threads serialised by a lock; the deployed recorder is one pod on a ReadWriteOnce claim); a line is
durable once `os.fsync` returns, a new name once its directory is fsynced; the file is opened for each append
(`O_APPEND`), so a file moved away by rotation is never written again. A failed write is cut back and raises
`Unavailable` (503); a torn last line a crash left is cut by the next append and skipped by `read_lines()`.
With `max_bytes`, a line that would pass the cap first rotates the file (`<file>.1` ... `<file>.<keep>`), the
oldest file past them dropped and reported (`dropped`); a line over the cap alone is `TooLarge`.
What an operator sees of it: docs/operating.md#dead-letters.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from functions.runtime.errors import TooLarge, Unavailable

NEWLINE = b"\n"


@dataclass(frozen=True)
class Lines:
    """The complete lines of a journal, and the torn last line skipped (empty when none)."""

    lines: list[str]
    torn: str = ""


class Journal:
    """Appends JSON lines to `path`, each one on disk before `append` returns; with `max_bytes`, rotated
    before it would pass that size, `keep` rotated files kept, and the lines and bytes of an older one
    reported to `dropped` as it goes."""

    def __init__(self, path: Path, warn: Callable[[str], None] = lambda _: None, max_bytes: int | None = None,
                 keep: int = 0, dropped: Callable[[int, int], None] = lambda lines, size: None) -> None:
        self.path = path
        self.warn = warn
        self.max_bytes = max_bytes
        self.keep = keep
        self.dropped = dropped
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> int:
        """Write `record` as one line and fsync it; return the file's size in bytes afterwards."""
        line = json.dumps(record, separators=(",", ":")).encode() + NEWLINE
        if self.max_bytes is not None and len(line) > self.max_bytes:
            raise TooLarge(f"a record of {len(line)} bytes is over the cap of {self.path} ({self.max_bytes} bytes)")
        with self._lock:
            if self.max_bytes is not None and (end := self._cut()) and end + len(line) > self.max_bytes:
                self._rotate()
            fd = self._open()
            try:
                return self._append(fd, line)
            finally:
                os.close(fd)

    def _open(self) -> int:
        try:
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise Unavailable(f"cannot open {self.path}: {e.strerror or e}") from e
        if created:
            fsync_directory(self.path.parent)
        return fd

    def _cut(self) -> int:
        """The file's size once a torn last line is cut (0 when there is no file)."""
        if not self.path.exists():
            return 0
        fd = self._open()
        try:
            return cut_torn_tail(fd, self.warn, self.path)
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        """`<file>` → `<file>.1` → ... → `<file>.<keep>`; the one past `keep` (with keep 0, the file
        itself) is dropped, its lines and bytes reported."""
        chain = [self.path, *rotated(self.path, self.keep)]
        try:
            if chain[-1].exists():
                lines, size = count_lines(chain[-1])
                chain[-1].unlink()
                self.warn(f"{self.path} reached its cap of {self.max_bytes} bytes: dropped {chain[-1]}, the oldest "
                          f"past the {self.keep} rotated files kept, with its {lines} lines ({size} bytes)")
                self.dropped(lines, size)
            for newer, older in reversed(list(itertools.pairwise(chain))):
                if newer.exists():
                    os.replace(newer, older)
        except OSError as e:
            raise Unavailable(f"cannot rotate {self.path}: {e.strerror or e}") from e
        fsync_directory(self.path.parent)

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


def rotated(path: Path, keep: int) -> list[Path]:
    """The rotated files of `path`, newest first: `<path>.1` ... `<path>.<keep>`."""
    return [path.with_name(f"{path.name}.{n}") for n in range(1, keep + 1)]


def count_lines(path: Path) -> tuple[int, int]:
    """The lines and bytes of a file, read a MiB at a time."""
    lines = size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(NEWLINE)
            size += len(chunk)
    return lines, size


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
