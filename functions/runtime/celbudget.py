"""Tenant CEL under a time budget: a Job's `spec.nodeHealthMonitor.cel` and `spec.thresholds` expressions
are compiled and evaluated in worker processes (`functions.runtime.celworker`), each evaluation within
`CREFN_CEL_BUDGET_SECONDS` (1 s) of wall-clock time on the monotonic clock.

It relies on this: cel-expr-python evaluates holding the interpreter lock and cannot be interrupted, but a
process can be killed. Past the budget the worker is, and the expression gets the outcome `interrupted`
(`operation interrupted: took longer than 1s`, cel-go's words), which the decisions treat as an invalid
expression; a worker that ends by itself interrupts it alike, once a fresh worker has ended on it too. At
most `WORKERS` workers, started on first use and kept while they answer in time; a request is one
expression and its subjects, answered one outcome per subject, each within the whole budget.
Why processes, and what they cost: docs/architecture.md#tenant-cel-under-a-time-budget.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from functions.domain.cel import CelOutcome, Variable, too_long
from functions.domain.gotext import go_duration
from functions.runtime import celworker
from functions.runtime.celworker import HEADER, write_frame
from functions.runtime.errors import Unavailable

WORKERS = 2
"""Enough that one expression running out its budget does not hold up the others (an evaluation
otherwise takes microseconds), few enough for the functions' 256 MiB."""
STARTUP_SECONDS = 30.0
_ROOT = Path(__file__).resolve().parents[1]
"""Where `functions` is imported from, so that the worker runs the same code as its server."""

Answer = Literal["done", "over", "ended"]


class CelBudget:
    """Tenant expressions compiled and evaluated in worker processes, each evaluation within `budget`."""

    def __init__(self, budget: timedelta, workers: int = WORKERS) -> None:
        self.budget = budget
        self._pool = _Pool(workers)
        self._finalizer = weakref.finalize(self, self._pool.close)

    def close(self) -> None:
        """End the idle workers (done anyway when the evaluator is dropped, or the process ends)."""
        self._finalizer()

    def outcomes(self, variable: Variable, expression: str, subjects: Sequence[Any]) -> tuple[CelOutcome, ...]:
        """`functions.domain.cel.outcomes` within the budget: an evaluation past it, or on which the worker
        ended, gives the outcome `interrupted` and is the last one."""
        if reason := too_long(expression):  # never sent: a long expression is the costly kind to compile
            return (CelOutcome(failure="length", error=reason),)
        request = pickle.dumps((variable, expression, list(subjects)), protocol=pickle.HIGHEST_PROTOCOL)
        while True:
            worker, fresh = self._pool.take()
            try:
                got, answer = worker.ask(request, self.budget.total_seconds())
            except BaseException:
                self._pool.drop(worker)
                raise
            if answer == "done":
                self._pool.release(worker)
                return got
            ended = self._pool.drop(worker)
            if answer == "over":
                return (*got, CelOutcome(failure="interrupted",
                                         error=f"operation interrupted: took longer than {go_duration(self.budget)}"))
            if fresh or got:  # a fresh worker ended on this request too: the expression ends it
                return (*got, CelOutcome(failure="interrupted",
                                         error=f"operation interrupted: the process evaluating it ended ({ended})"))


class _Pool:
    """At most `size` workers, shared by the threads: an idle one is taken, or a new one started."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.idle: list[_Worker] = []
        self.started = 0
        self.free = threading.Condition()

    def take(self) -> tuple[_Worker, bool]:
        """An idle worker, or a new one (True) while fewer than `size` run; else wait for one."""
        with self.free:
            while not self.idle and self.started >= self.size:
                self.free.wait()
            if self.idle:
                return self.idle.pop(), False
            self.started += 1
        try:
            return _Worker.start(), True
        except BaseException:
            self._forget(1)
            raise

    def release(self, worker: _Worker) -> None:
        with self.free:
            self.idle.append(worker)
            self.free.notify()

    def drop(self, worker: _Worker) -> str:
        """Kill the worker and free its place; how it ended."""
        ended = worker.stop()
        self._forget(1)
        return ended

    def close(self) -> None:
        with self.free:
            idle, self.idle = self.idle, []
        self._forget(len(idle))
        for worker in idle:
            worker.end()

    def _forget(self, count: int) -> None:
        with self.free:
            self.started -= count
            self.free.notify(count)


class _Worker:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._in, self._out = proc.stdin.fileno(), proc.stdout.fileno()
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN)

    @classmethod
    def start(cls) -> _Worker:
        try:
            proc = subprocess.Popen([sys.executable, "-m", celworker.__name__], cwd=_ROOT, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, bufsize=0)
        except OSError as e:
            raise Unavailable(f"cannot start a CEL worker process: {e}") from e
        worker = cls(proc)
        try:
            ready = worker._receive(time.monotonic() + STARTUP_SECONDS)
        except EOFError:
            ready = None
        if ready != b"":
            ended = worker.stop()
            raise Unavailable(f"the CEL worker process did not start within {STARTUP_SECONDS:g}s ({ended})")
        return worker

    def ask(self, request: bytes, budget: float) -> tuple[tuple[CelOutcome, ...], Answer]:
        """The outcomes of one request, each within `budget` seconds of the one before (or of the request)."""
        got: list[CelOutcome] = []
        try:
            write_frame(self._in, request)
            while frame := self._receive(time.monotonic() + budget):
                got.append(pickle.loads(frame))
        except (OSError, EOFError):  # the worker ended: a broken pipe, or end of file
            return tuple(got), "ended"
        return tuple(got), "over" if frame is None else "done"

    def stop(self) -> str:
        """Kill the worker; how it ended (it may have ended already)."""
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"

    def end(self) -> None:
        """Tell the worker to end (end of file on its input), kill it if it does not at once."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.stop()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def _receive(self, deadline: float) -> bytes | None:
        """The next frame; None when the deadline passed first."""
        header = self._read(HEADER.size, deadline)
        return None if header is None else self._read(HEADER.unpack(header)[0], deadline)

    def _read(self, size: int, deadline: float) -> bytes | None:
        data = b""
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(left * 1000):
                return None
            if not (chunk := os.read(self._out, size - len(data))):
                raise EOFError("the CEL worker process ended")
            data += chunk
        return data
