"""A loop in a daemon thread, started and stopped by its owner: the soak's driver and killer, the stand-in for
Knative's controllers. `stop` waits for the loop at most `join_timeout` seconds (a daemon left behind dies with
the process)."""

from __future__ import annotations

import threading
from typing import Self


class Background:
    join_timeout = 10.0

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)

    def start(self) -> Self:
        self._thread.start()
        return self

    def halt(self) -> None:
        """Stop the loop at its next turn, without waiting for it."""
        self._stop.set()

    def stop(self) -> None:
        self.halt()
        self._thread.join(timeout=self.join_timeout)

    def _run(self) -> None:
        raise NotImplementedError
