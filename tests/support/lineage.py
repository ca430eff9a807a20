"""Which processes a run started, found by walking /proc — even once their parent is gone and they were re-parented
to init, where a walk by parent id no longer finds them.

A run marks itself with `MARK=<token>` in its environment: every process it starts inherits the variable (the
local stack's children and the served functions keep the environment they are given, less `CREFN_*`), so every
process still alive with that token is one of the run's. A pod of the stand-in kubelet starts with the pod's own
environment (`env -i`) and is found through its `unshare`, which has the run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

MARK = "CRE_FUNCTIONS_LINEAGE"
"""The environment variable that names a run (not `CREFN_*`: what the stack hands its functions drops those)."""


def marked(token: str, exclude: frozenset[int] = frozenset()) -> dict[int, str]:
    """Every live process (no zombie) started with `MARK=token`: pid → its command line."""
    want = f"{MARK}={token}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to read
            if want not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":  # dead, waiting for its parent to collect it: holds nothing
                continue
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return found


def left_after(token: str, timeout: float, exclude: frozenset[int] = frozenset()) -> dict[int, str]:
    """The run's processes still alive once `timeout` seconds have passed (sooner if none is left)."""
    deadline = time.monotonic() + timeout
    while (alive := marked(token, exclude)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


def kill_all(pids: dict[int, str]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
