"""A served function's start (`functions.main.start`): gunicorn's arbiter binds the port and does not listen; its
worker builds the target, checks the settings and says what runs, and only then listens. Settings that cannot be
used, or a build that fails: one CRITICAL line, exit 1, the port never listened on (a Knative revision whose
Secret is wrong never passes its TCP readiness probe, and the last one keeps the traffic) and no process of the
tree remains. The worker builds its target with the collector paused, then frozen."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.client import send
from functions.runtime.version import version
from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
from localstack.samples import load_sample
from localstack.serving import MAIN
from tests.support.helpers import unreachable_kubeconfig
from tests.support.lineage import MARK, left_after
from tests.support.paths import REPO
from tests.support.pod import descendants

pytestmark = [pytest.mark.process, pytest.mark.own_process]


def served(tmp_path: Path, target: str, token: str, **settings: str) -> tuple[subprocess.Popen[bytes], int, Path]:
    """`target` served on a port of its own, its output in a file: the process, the port and the file."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig")), MARK: token, **settings}
    port, log = free_port(), tmp_path / "stderr"
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", target,
            "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as err:  # a process group of its own
        return spawn(argv, env=env, stdout=subprocess.DEVNULL, stderr=err), port, log


def first_listened(proc: subprocess.Popen[bytes], port: int, then: Callable[[], object] = lambda: None) -> object:
    """Whether the port was ever listened on while the process ran (asked every 2 ms; `then()`'s value at once
    when it first was, else None)."""
    while proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return then()
        time.sleep(0.002)
    return None


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in log.read_text().splitlines() if text.startswith("{")]


def maps_pydantic(pid: int) -> bool:
    """Whether the process has loaded pydantic's compiled core (mapped its shared object)."""
    try:
        return "pydantic_core" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_the_port_listens_once_the_worker_has_built_its_target_and_said_what_runs(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc, port, log = served(tmp_path, "phase", token, CREFN_LOG_LEVEL="ERROR", HOME=str(tmp_path))
    try:
        seen = first_listened(proc, port, lambda: ([line["message"] for line in lines(log)],
                                                   [maps_pydantic(w) for w in descendants(proc.pid)]))
        assert seen is not None, log.read_text()
        said, workers = seen
        assert len(said) == 1 and said[0].endswith("serving phase in manage mode")
        assert workers == [True]  # built by the worker,
        assert not maps_pydantic(proc.pid)  # which the arbiter never loads
        answer = send(f"http://127.0.0.1:{port}/", load_sample("trainjob-resource-update-failed"), timeout=10)
        assert answer.status == 200
        assert not (tmp_path / ".gunicorn").exists()  # no control socket (gunicorn's default place for it)
    finally:
        stop_process(proc)
    assert left_after(token, 10) == {}


def test_a_worker_started_again_builds_and_serves_without_saying_what_runs_again(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc, port, log = served(tmp_path, "phase", token, CREFN_LOG_LEVEL="ERROR")
    try:
        assert first_listened(proc, port, lambda: True)
        (worker,) = descendants(proc.pid)
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not [w for w in descendants(proc.pid)
                                                   if w != worker and maps_pydantic(w)]:
            time.sleep(0.01)
        answer = send(f"http://127.0.0.1:{port}/", load_sample("trainjob-resource-update-failed"), timeout=30)
        assert answer.status == 200
        assert [line["message"] for line in lines(log) if line["severity"] == "INFO"] == [
            f"cre-functions {version()} serving phase in manage mode"]
    finally:
        stop_process(proc)
    assert left_after(token, 10) == {}


@pytest.mark.parametrize(("target", "threads", "one_at_a_time"), [
    ("phase", None, True), ("phase", "8", False), ("status", None, False), ("status", "1", True)])
def test_phase_is_served_one_request_at_a_time_unless_threads_says_otherwise_and_connections_are_kept_alive(
        target: str, threads: str | None, one_at_a_time: bool, tmp_path: Path) -> None:
    """One request at a time (`phase`, or any target given `THREADS=1`): the worker serves it on its one thread and
    starts no pool of them; otherwise a pool thread serves it. Either way an HTTP/1.1 connection stays open for the
    next request (gunicorn's sync worker, which served one at a time before, closed each after its answer)."""
    token = uuid.uuid4().hex
    chosen = {"THREADS": threads} if threads else {}
    proc, port, log = served(tmp_path, target, token, CREFN_LOG_LEVEL="ERROR", **chosen)
    try:
        assert first_listened(proc, port, lambda: True), log.read_text()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        answers = [scrape(connection) for _ in range(3)]
        connection.close()
        assert [(status, kept) for status, kept, _ in answers] == [(200, "keep-alive")] * 3
        assert len({address for _, _, address in answers}) == 1  # all on the one connection
        (worker,) = descendants(proc.pid)
        assert (threads_of(worker) == 1) is one_at_a_time
    finally:
        stop_process(proc)
    assert left_after(token, 10) == {}


def test_an_idle_connection_is_kept_longer_than_knative_s_proxies_keep_theirs(tmp_path: Path) -> None:
    """Knative's queue-proxy and activator keep an idle connection to the container 90 s (Go's default transport):
    a Service that closed it first (gunicorn's default: after 2 s) could meet the request a proxy sends on it at
    that moment, which the proxy answers 502. Idle for longer than gunicorn's default, the connection still serves
    the next request, with one thread (`phase`) and with a pool (`status`)."""
    token = uuid.uuid4().hex
    connections = []
    for target in ("phase", "status"):
        (tmp_path / target).mkdir()
    procs = [served(tmp_path / target, target, token, CREFN_LOG_LEVEL="ERROR") for target in ("phase", "status")]
    try:
        for proc, port, log in procs:
            assert first_listened(proc, port, lambda: True), log.read_text()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            status, _, first = scrape(connection)
            assert status == 200
            connections.append((connection, first))
        time.sleep(2.5)  # gunicorn's own clock: idle past its default of 2 s
        for connection, first in connections:
            status, _, address = scrape(connection)
            assert (status, address) == (200, first)
            connection.close()
    finally:
        for proc, _, _ in procs:
            stop_process(proc)
    assert left_after(token, 10) == {}


def scrape(connection: http.client.HTTPConnection) -> tuple[int, str | None, tuple[str, int]]:
    """`GET /metrics` on `connection`: the answer's status and `Connection` header, and the connection's own address
    (a new one if the client had to connect again)."""
    connection.request("GET", "/metrics")
    answer = connection.getresponse()
    answer.read()
    return answer.status, answer.getheader("Connection"), connection.sock.getsockname()


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


@pytest.mark.parametrize("failing", ["settings", "build"])
def test_a_start_that_fails_says_why_in_one_line_exits_1_never_listens_and_leaves_no_process(
        failing: str, tmp_path: Path) -> None:
    """Settings that cannot be used (`CREFN_MODE=steer`), or a target that cannot be built (the recorder's stream
    in a folder that does not exist)."""
    token = uuid.uuid4().hex
    out = tmp_path / "no such folder" / "records.jsonl"
    target, setting = ("phase", {"CREFN_MODE": "steer"}) if failing == "settings" else (
        "record", {"CREFN_RECORD_OUT": str(out)})
    proc, port, log = served(tmp_path, target, token, **setting)
    try:
        assert first_listened(proc, port, lambda: True) is None
        assert proc.wait(timeout=60) == 1
        (line,) = [json.loads(text) for text in log.read_text().splitlines()]
        assert (line["severity"], line["function"]) == ("CRITICAL", target)
        if failing == "settings":
            assert line["message"].startswith("invalid settings: CREFN_MODE:")
            assert "trace" not in line
        else:
            assert line["message"] == (f"cannot serve record: FileNotFoundError: [Errno 2] No such file or "
                                       f"directory: '{out}'")
            assert "Traceback" in line["trace"]
        assert left_after(token, 10) == {}
    finally:
        stop_process(proc)


def test_a_stop_while_the_worker_builds_stops_the_tree_at_once(tmp_path: Path) -> None:
    """The worker holds the arbiter's signal handlers until gunicorn sets its own, after the build: one that kept
    them would swallow the arbiter's SIGTERM, and the arbiter would wait out its graceful timeout (30 s)."""
    token = uuid.uuid4().hex
    proc, port, _ = served(tmp_path, "phase", token)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(maps_pydantic(w) for w in descendants(proc.pid)):
            time.sleep(0.001)  # until the worker is building (it has imported pydantic)
        with pytest.raises(OSError):  # and not yet done
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert left_after(token, 5) == {}
    finally:
        stop_process(proc)


@pytest.mark.parametrize("collecting", [True, False])
def test_the_build_pauses_the_collector_then_freezes_what_it_made(collecting: bool, tmp_path: Path) -> None:
    code = ("import gc, sys; import functions.main as m\n"
            f"if not {collecting}: gc.disable()\n"
            "before = gc.get_freeze_count(); m.responder('phase')\n"
            "print(gc.isenabled(), before, gc.get_freeze_count())")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig"))}
    shown = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=60, check=True).stdout.split()
    assert shown[:2] == [str(collecting), "0"]
    assert int(shown[2]) > 10_000  # the modules, classes and schemas the build made, never walked again
