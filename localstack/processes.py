"""The programs the local stack and the test suite start, and how they end: none outlives its parent.

`spawn` starts a program as the leader of a process group of its own (a Ctrl-C at the terminal reaches only
the parent, which then stops its children in order) that is SIGKILLed by the kernel the moment its parent
dies, however the parent dies — SIGKILL and a crash included (`PR_SET_PDEATHSIG`). A program's own children
are its business: a served function's gunicorn worker leaves once its arbiter is gone (it checks its parent
every second), a CEL worker at the end of its input, a pod with its `unshare`. `stop_process` then stops a
child and everything left in its group.

The parent that the kernel watches is the *thread* that started the child: start children from a thread that
lives as long as they should (the main thread, or a supervisor's), never from a short-lived one.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child


def die_with_parent(parent: int) -> Callable[[], None]:
    """What a child runs between fork and exec: SIGKILL when `parent` dies; exits at once if it already has."""

    def arm() -> None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed: nobody is left to stop us
            os._exit(1)

    return arm


SIGNAL_POLL = 0.2
"""Seconds between the main thread's looks at the signals that arrived (`until_interrupted`)."""


def interruptible() -> None:
    """From now on SIGINT raises KeyboardInterrupt and SIGTERM exits (143), however this process was started. A
    shell without job control (a script, `nohup … &`, a CI runner's step) starts a background command with SIGINT
    ignored, and Python then installs no handler for it: a stack started that way never heard a Ctrl-C or a
    `kill -INT`, and every process it had started ran on."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def until_interrupted() -> None:
    """Wait for Ctrl-C (KeyboardInterrupt, raised) or SIGTERM (as its handler says), in short sleeps: Python runs a
    signal's handler in the main thread only, between two bytecodes, and the kernel may hand a process's signal
    to any of its threads (the stack has dozens), which a main thread in one long sleep would not see."""
    while True:
        time.sleep(SIGNAL_POLL)


def end_with_parent() -> None:
    """This process, from now on: SIGKILLed when its parent dies (an xdist worker with the pytest that started it)."""
    die_with_parent(os.getppid())()


def spawn(argv: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
    """Start `argv` in a process group of its own, to be killed with its parent (see the module's docstring).
    `popen` takes `subprocess.Popen`'s other arguments (env, stdout, stderr, stdin, cwd, text)."""
    proc: subprocess.Popen[bytes] = subprocess.Popen(list(argv), start_new_session=True,
                                                     preexec_fn=die_with_parent(os.getpid()), **popen)
    return proc


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10) -> None:
    """Stop a child by PID: SIGTERM, then SIGKILL if it has not exited within `timeout`. A child that
    leads its own process group (started by `spawn`) is stopped with its whole group, so that no
    grandchild (a gunicorn worker) outlives it."""
    if proc.poll() is None:
        signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait(timeout=5)
    if leads_group(proc):
        signal_group(proc, signal.SIGKILL)  # whatever of its group is left


def stop_together(procs: Iterable[subprocess.Popen[Any]], grace: float) -> None:
    """Stop children at once: SIGTERM to each one's group, then SIGKILL to every group still there after `grace`
    seconds in all (not each); returns once every child has exited."""
    procs = [p for p in procs if p.poll() is None]
    for proc in procs:
        signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for proc in procs:
        if leads_group(proc) or proc.poll() is None:
            kill_group(proc)
    for proc in procs:
        proc.wait()


def kill_group(proc: subprocess.Popen[Any]) -> None:
    signal_group(proc, signal.SIGKILL)


def leads_group(proc: subprocess.Popen[Any]) -> bool:
    try:
        return os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        return True  # exited: its group (same id) may still have members


def signal_group(proc: subprocess.Popen[Any], sig: signal.Signals) -> None:
    try:
        if leads_group(proc):
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str], timeout: float | None = None, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` for a program started by `spawn`: its output captured unless `popen` says otherwise, and
    on a timeout (`subprocess.TimeoutExpired`, raised) or any other exception its whole group is stopped."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    proc = spawn(argv, **popen)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        kill_group(proc)
        proc.communicate()
        raise
    if leads_group(proc):
        signal_group(proc, signal.SIGKILL)  # whatever of its group is left
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
