"""`make bench BENCH_PROFILE=FILE`: where the API server's CPU goes during the burst.

The local API server serves Go's profiler to its admin (`/debug/pprof`). From the burst's first failure, a
CPU profile of `BENCH_PROFILE_SECONDS` (default 30) is taken and written to FILE (read it with `go tool
pprof <kube-apiserver> FILE`), and summarised by what the API server was serving: the share of its samples
under each request path of its registry (status writes, other writes, creates, deletes, GETs, LISTs), its
watches, and Go's garbage collector. The shares overlap nowhere except where said (updates include status
writes); the rest is HTTP, TLS, authentication, audit and the like. The bench's own TrainJob failures
(a status write each, while the functions work) are among the status writes.
"""

from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

WATCHES = r"handlers\.serveWatch$"
SERVED = (
    ("status writes (…/status)", r"customresource\.\(\*StatusREST\)\.Update$", ""),
    ("updates and patches, status writes included", r"registry\.\(\*Store\)\.Update$", ""),
    ("creates", r"registry\.\(\*Store\)\.Create$", ""),
    ("deletes", r"registry\.\(\*Store\)\.Delete$", ""),
    ("GETs", r"registry\.\(\*Store\)\.Get$", ""),
    ("LISTs", r"handlers\.ListResource\.func1$", WATCHES),
    ("watches: etcd's events decoded", r"etcd3\.\(\*watchChan\)\.processEvent$", ""),
    ("watches: events sent", WATCHES, ""),
    ("admission webhooks called", r"webhook/generic\.\(\*Webhook\)\.Dispatch$", ""),
    ("garbage collection", r"^runtime\.gcBgMarkWorker$", ""),
)
"""What the API server served: a label, the function whose cumulative samples count for it, and one whose
samples are taken off (a LIST's handler also serves watches)."""


class Capture:
    """A CPU profile of the cluster's API server taken in the background (`start`, then `finish`)."""

    def __init__(self, cluster: Any, seconds: int) -> None:
        self.cluster, self.seconds = cluster, seconds
        self.data = b""
        self.error = ""
        self._thread = threading.Thread(target=self._take, daemon=True)

    def start(self) -> Capture:
        self._thread.start()
        return self

    def _take(self) -> None:
        url = f"{self.cluster.url}/debug/pprof/profile?seconds={self.seconds}"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.cluster.token_for('admin')}"})
        context = ssl.create_default_context(cafile=str(self.cluster.ca_file))
        try:
            with urllib.request.urlopen(request, timeout=self.seconds + 30, context=context) as resp:
                self.data = resp.read()
        except OSError as e:
            self.error = str(e)

    def finish(self, path: Path) -> str:
        """Wait for the profile, write it to `path`, and say what it shows (or why there is none)."""
        self._thread.join()
        if not self.data:
            return f"no profile of the API server: {self.error or 'empty answer'}"
        path.write_bytes(self.data)
        return summary(self.cluster.apiserver_binary, path)


def shares(top: str) -> list[tuple[str, float]]:
    """Each of `SERVED`'s share (%) of the samples, from `go tool pprof -top -cum`'s text."""
    found: list[tuple[str, float]] = []
    rows = [line.split() for line in top.splitlines()]
    rows = [r for r in rows if len(r) >= 6 and r[4].endswith("%")]

    def cum(pattern: str) -> float:
        return max((float(r[4].rstrip("%")) for r in rows if re.search(pattern, " ".join(r[5:]))), default=0.0)

    for label, pattern, minus in SERVED:
        found.append((label, max(cum(pattern) - (cum(minus) if minus else 0.0), 0.0)))
    return found


def summary(binary: str, path: Path) -> str:
    go = shutil.which("go")
    if go is None:
        return f"API server profile written to {path} (no Go toolchain here to read it)"
    argv = [go, "tool", "pprof", "-top", "-cum", "-nodefraction=0", "-nodecount=100000", binary, str(path)]
    top = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    total = re.search(r"Total samples = ([\d.]+m?s)", top)
    lines = [f"API server CPU during the burst, by what it served ({total.group(1) if total else '?'} sampled, "
             f"the bench's own TrainJob failures among the status writes; the profile: {path}):"]
    lines += [f"  {label:<48} {share:5.1f} %" for label, share in shares(top)]
    return "\n".join(lines)
