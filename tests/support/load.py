"""A machine with every core busy, as a newcomer's often is while the suite runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

from localstack.processes import spawn, stop_process


@contextlib.contextmanager
def busy_cores(count: int | None = None) -> Iterator[None]:
    """One process spinning on each core (or `count`) while the block runs; each dies with this process."""
    burners = [spawn([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
               for _ in range(count or os.cpu_count() or 1)]
    try:
        yield
    finally:
        for burner in burners:
            stop_process(burner, timeout=1)
