"""A served function's start (`functions.main.start`): the settings are checked in a child of gunicorn's arbiter
while the arbiter listens and its worker builds the target before it accepts (the imports are not left to the
first request). Settings that cannot be used: one CRITICAL line, exit 1, and no process of the tree remains; a
worker stopped while it builds stops at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localstack.processes import spawn, stop_process
from localstack.serving import MAIN, ServedFunction
from tests.support.helpers import unreachable_kubeconfig
from tests.support.paths import REPO

pytestmark = [pytest.mark.process, pytest.mark.own_process]


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def maps_pydantic(pid: int) -> bool:
    """Whether the process has loaded pydantic's compiled core (mapped its shared object)."""
    try:
        return "pydantic_core" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def in_group(group: int) -> list[int]:
    """The live processes of a process group (zombies left out)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":  # a zombie has exited
            found.append(int(stat.parent.name))
    return found


def test_the_worker_builds_its_target_before_its_first_request(tmp_path: Path) -> None:
    env = {"CREFN_LOG_LEVEL": "ERROR", "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig"))}
    with ServedFunction("phase", env) as served:
        assert served.pid is not None
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and not (workers and all(maps_pydantic(w) for w in workers)):
            workers = children(served.pid)
            time.sleep(0.05)
        assert workers and all(maps_pydantic(w) for w in workers), "no request sent: the worker built nothing"
        assert not maps_pydantic(served.pid)  # the arbiter still holds none of it


def test_settings_that_cannot_be_used_leave_one_line_exit_1_and_no_process(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig")), "CREFN_MODE": "steer"}
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", "phase",
            "--host", "127.0.0.1", "--port", "0"]
    proc = spawn(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # a process group of its own
    try:
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out) == (1, b"")
        (line,) = [json.loads(text) for text in err.decode().splitlines()]
        assert (line["severity"], line["function"]) == ("CRITICAL", "phase")
        assert line["message"].startswith("invalid settings: CREFN_MODE:")
        deadline = time.monotonic() + 10
        while in_group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert in_group(proc.pid) == []
    finally:
        stop_process(proc)


@pytest.mark.parametrize("settings", ["usable", "unusable"])
def test_a_worker_stopped_while_it_builds_stops_at_once(settings: str, tmp_path: Path) -> None:
    """As in gunicorn's worker before it sets its own handlers: the arbiter's handler for SIGTERM (here one that
    swallows it) is what the worker inherits; once the worker begins to build, SIGTERM stops it, during the build
    or after it (usable settings), or while it waits for the arbiter to go (unusable ones)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig")),
           "CREFN_MODE": "manage" if settings == "usable" else "steer"}
    code = ("import os, signal, sys, time; import functions.main as m; "
            "signal.signal(signal.SIGTERM, lambda *_: None); "
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    m.build_in_worker('phase', os.getppid()); time.sleep(600); os._exit(0)\n"
            "print(pid, flush=True); os.waitpid(pid, 0)")
    with subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as proc:
        try:
            assert proc.stdout is not None
            worker = int(proc.stdout.readline())
            deadline = time.monotonic() + 60
            while catches_sigterm(worker) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not catches_sigterm(worker), "the worker keeps the arbiter's handler"
            os.kill(worker, signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
        finally:
            proc.kill()


def catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler of its own for SIGTERM (/proc's SigCgt mask)."""
    (mask,) = [line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("SigCgt:")]
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


def test_a_worker_that_met_unusable_settings_exits_once_the_arbiter_has(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig")), "CREFN_MODE": "steer"}
    code = ("import os, sys, time; import functions.main as m\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    m.build_in_worker('phase', os.getppid()); os._exit(0)\n"
            "print(pid, flush=True); time.sleep(0.5); os._exit(0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    worker = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, exited and not yet reaped by whoever adopted it, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


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
