"""A served function's start (`functions.main.start`): the settings are checked in a child of gunicorn's arbiter
before it listens. Settings that cannot be used: one CRITICAL line, exit 1, the port never listened on (a
Knative revision whose Secret is wrong never passes its TCP readiness probe, and the last one keeps the traffic)
and no process of the tree remains. The worker builds its target with the collector paused, then frozen."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
from localstack.serving import MAIN
from tests.support.helpers import unreachable_kubeconfig
from tests.support.lineage import MARK, left_after
from tests.support.paths import REPO

pytestmark = [pytest.mark.process, pytest.mark.own_process]


def test_settings_that_cannot_be_used_leave_one_line_exit_1_and_no_process(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "CREFN_KUBECONFIG": str(unreachable_kubeconfig(tmp_path / "kubeconfig")), "CREFN_MODE": "steer",
           MARK: token}
    port = free_port()
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", "phase",
            "--host", "127.0.0.1", "--port", str(port)]
    proc = spawn(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # a process group of its own
    try:
        listened = False
        while proc.poll() is None and not listened:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                listened = True
            time.sleep(0.002)
        assert not listened
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out) == (1, b"")
        (line,) = [json.loads(text) for text in err.decode().splitlines()]
        assert (line["severity"], line["function"]) == ("CRITICAL", "phase")
        assert line["message"].startswith("invalid settings: CREFN_MODE:")
        assert left_after(token, 10) == {}
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
