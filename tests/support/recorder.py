"""`cre-fn record` served on a free port, and a dead letter to send it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
from localstack.samples import load_sample
from localstack.serving import wait_for_port

DEAD = dict(load_sample("trainjob-resource-update-failed"))
DEAD["attributes"] = {**DEAD["attributes"], "knativeerrorcode": "400", "knativeerrordest": "http://crefn-phase/",
                      "knativeerrordata": "expected TrainJob, got v1/Pod"}


@dataclass
class Served:
    url: str
    stdout: Path
    stderr: Path
    port: int = 0
    pid: int = 0


@contextlib.contextmanager
def record(tmp_path: Path, *args: str) -> Iterator[Served]:
    """`cre-fn record` with `args` on a free port; its stdout and stderr go to files."""
    port = free_port()
    served = Served(f"http://127.0.0.1:{port}/", tmp_path / "stdout.jsonl", tmp_path / "stderr.txt", port)
    with served.stdout.open("w") as out, served.stderr.open("w") as err:
        proc = spawn([sys.executable, "-m", "functions.cli", "record", "--host", "127.0.0.1", "--port", str(port),
                      *args], stdout=out, stderr=err)
        served.pid = proc.pid
        try:
            assert wait_for_port(port)
            yield served
        finally:
            stop_process(proc)
