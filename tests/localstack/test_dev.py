"""`python -m localstack dev`, the main job: the demo ends as expected with a readable timeline and a replayable
event log; replaying that log into a fresh namespace reproduces the same final Job status; with
`--no-demo --keep` the stack serves users' Jobs and Ctrl-C stops everything it started."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from functions.runtime.client import send
from functions.runtime.errors import CrefnError, Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.resources import CRDS, DEPLOYMENTS, NAMESPACES, TRIGGERS, cre_jobs
from functions.tools.replay import read_recording
from localstack import dev
from localstack.cluster.apiserver import LocalCluster
from localstack.processes import run, spawn
from localstack.scenarios.demo import final_state
from tests.support import paths
from tests.support.lineage import MARK, kill_all, left_after, marked
from tests.support.load import busy_cores

JOBS = cre_jobs("nvcre.nvidia.com")
CTRL_C_WITHIN = 10.0
"""Seconds from Ctrl-C until every process of the stack is gone, with every core of the machine busy."""
DIE_WITH_PARENT_WITHIN = 35.0
"""Seconds a killed parent's descendants have to be gone: all but the gunicorn workers die with it; a worker sees its
arbiter gone within a second and then, as in any graceful stop, finishes the request it serves, for at most gunicorn's
graceful timeout (30 s). (On a machine that is not overloaded, all are gone within a few seconds.)"""


@pytest.mark.stack
def test_demo_then_replay_reproduces_the_final_status(cluster: LocalCluster, gateway: Gateway,
                                                      tmp_path: Path) -> None:
    ns = f"demo-{uuid.uuid4().hex[:6]}"
    out = io.StringIO()
    code = dev.run(tmp_path / "demo", cluster=cluster, namespace=ns, ping_interval=2, out=out)
    text = out.getvalue()
    assert code == 0, text[-3000:]
    assert "demo ended as expected" in text
    blocked = text.index(f"== Job {ns}/llama-pretrain: pods unschedulable since")
    said = text.index(f"== Job {ns}/llama-pretrain: InProgress/WorkloadSchedulingBlocked (restarts 0): Workload pods "
                      "are unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    resumed = text.index(f"== Job {ns}/llama-pretrain: pods scheduled again at")
    assert blocked < said < resumed
    assert "failureLog: OOMKilled (exit 137) in pod llama-eval-workload-node-0-0-a0" in text
    # no CRE here: the checkpoint evidence of the restart is the functions' measure reading the pods' Megatron log
    assert "GoodputMeasurement llama-pretrain-goodput (written by the functions' measure from the pods' logs):" in text
    assert "Complete=True/JobSucceeded: Referenced Job completed successfully" in text
    assert re.search(r"lastCheckpointStep [1-9]\d*, interruptionCount 1, .*result 0\.\d{6}", text)
    # CRE's groupNodeNames → DiscoverPlacedNodesForJob: no group-nodes annotation, the nodes its pods ran on
    assert "no group-nodes annotation: failedNodes are the nodes its pods were placed on (gpu-node-1)" in text
    assert ("failed node gpu-node-1 (WorkloadFailed): Workload TrainJob/llama-eval-workload failed: jobset node-0 "
            "failed: exit code 137 (OOMKilled)") in text
    assert "torch.OutOfMemoryError: CUDA out of memory" in text
    assert f"== Job {ns}/llama-pretrain: InProgress/WorkloadRestarting (restarts 1)" in text
    assert "→ restart-failures" in text and "job.restarted attempt 1/2" in text
    assert "restart grace not over" in text  # launch answered 503 and the Broker retried
    # ... a designed wait, counted apart from errors (which CREFnFunctionErrors counts): the demo has none
    answers = next(line for line in text.splitlines() if line.startswith("     crefn_events_total: "))
    assert re.search(r"\blaunch 503x[1-9]\d* \(wait\)", answers) and "(error)" not in answers, answers
    assert "CREFnFunctionErrors" not in text
    assert f"!! Alertmanager notifies: firing CREJobRestarted (warning) {ns}/llama-pretrain" in text
    assert f"!! Alertmanager notifies: resolved CREJobRestarted (warning) {ns}/llama-pretrain" in text
    assert "active alerts in Alertmanager: llama-eval: CREJobFailed (critical)" in text
    dashboard = text[text.index("   Grafana dashboard (components/monitoring/dashboards): "):]
    assert "13 panels" in dashboard.splitlines()[0] and "!!" not in dashboard.split("   event log:")[0], dashboard
    recording = read_recording(tmp_path / "demo" / "events.jsonl")
    types = {r["attributes"]["type"] for r in recording}
    assert {"dev.knative.apiserver.resource.add", "dev.crefn.workload.phase", "dev.crefn.job.restarted",
            "dev.crefn.workload.created", "dev.crefn.job.condition.changed"} <= types
    assert (tmp_path / "demo" / "dead-letters.jsonl").read_text() == ""

    into = f"replay-{uuid.uuid4().hex[:6]}"
    out = io.StringIO()
    code = dev.run(tmp_path / "replay", replay_file=tmp_path / "demo" / "events.jsonl", cluster=cluster,
                   namespace=into, ping_interval=3600, out=out)
    assert code == 0, out.getvalue()[-3000:]
    assert (f"replay of {into}/llama-pretrain: recorded ('Succeeded', 'WorkloadCompleted', 1), "
            "reproduced ('Succeeded', 'WorkloadCompleted', 1): same") in out.getvalue()
    assert final_state(gateway.get(JOBS, into, "llama-pretrain") or {}) == ("Succeeded", "WorkloadCompleted", 1)


@pytest.mark.stack
@pytest.mark.parametrize(("scenario", "verdict"), [
    ("node-failure", "HardwareFailed True  HardwareFailureDetected Hardware failure detected on node(s): [gpu-node-1]"),
    ("stall", "Failed      True  WorkloadStalled    Workload stalled: no training step within the configured "
              "threshold"),
    ("thresholds", 'ValidationFailed True  ThresholdViolated  Threshold "goodputRatio" violated: measured 0.7200, '
                   "expression: value >= 0.9"),
])
def test_each_verdict_scenario_ends_as_promised(cluster: LocalCluster, tmp_path: Path, scenario: str,
                                                verdict: str) -> None:
    out = io.StringIO()
    code = dev.run(tmp_path / scenario, cluster=cluster, namespace=f"{scenario}-{uuid.uuid4().hex[:6]}",
                   ping_interval=2, out=out, scenario=scenario)
    text = out.getvalue()
    assert code == 0, text[-3000:]
    assert f"scenario {scenario} ended as expected" in text and verdict in text
    assert (tmp_path / scenario / "dead-letters.jsonl").read_text() == ""


def test_an_unknown_scenario_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dev.run(tmp_path, scenario="meltdown") == 2
    err = capsys.readouterr().err
    assert "unknown scenario 'meltdown'; choose one of: demo, node-failure, stall, thresholds, shadow" in err


def test_script_recovered_from_the_demo_recording(tmp_path: Path) -> None:
    """What the Trainer did is read back from ApiServerSource events alone."""
    from localstack.trainer import script_from_recording

    def tj(verb: str, uid: str, attempt: int, suspend: bool = False, cond: str = "", active: int = 0) -> dict:
        conditions = [{"type": cond, "status": "True"}] if cond else []
        return {"attributes": {"type": f"dev.knative.apiserver.resource.{verb}", "kind": "TrainJob"},
                "data": {"metadata": {"uid": uid, "labels": {"nvcre.nvidia.com/job": "j",
                                                             "crefn.dev/attempt": str(attempt)}},
                         "spec": {"suspend": suspend},
                         "status": {"conditions": conditions, "jobsStatus": [{"name": "node", "active": active}]}}}

    restarted = {"attributes": {"type": "dev.crefn.job.restarted", "job": "j"},
                 "data": {"previousWorkload": {"uid": "a"}}}
    records = [tj("add", "a", 0, suspend=True), tj("update", "a", 0), tj("update", "a", 0, active=2),
               tj("update", "a", 0, cond="Failed"), restarted, tj("delete", "a", 0, cond="Failed"),
               tj("add", "b", 1), tj("update", "b", 1, active=2), tj("delete", "b", 1, active=2),
               tj("add", "c", 2), tj("update", "c", 2, cond="Complete")]
    assert script_from_recording(records, "j") == {0: ["resume", "run", "fail"], 1: ["run", "delete"],
                                                   2: ["complete"]}


@pytest.mark.kube  # `python -m localstack dev` starts an API server of its own
@pytest.mark.stack
def test_in_a_clone_without_upstream_crds_the_demo_ends_as_expected(tmp_path: Path) -> None:
    """`make run` where nothing is beside the checkout: the stack installs the project's fallback CRDs and
    the whole demo (scheduling marker, restart, failure log) ends as it does on the upstream ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREFN_")}
    env["CREFN_UPSTREAM_CRDS"] = str(tmp_path / "nothing-here")
    result = run([sys.executable, "-m", "localstack", "dev", "--out", str(tmp_path / "out"), "--ping-interval",
                  "2"], text=True, env=env, timeout=280)
    assert (f"installed 8 CRDs: the project's fallback CRDs (no CRD found in {tmp_path / 'nothing-here'})"
            in result.stdout), result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.rstrip().endswith("demo ended as expected")
    assert "failureLog: OOMKilled (exit 137) in pod llama-eval-workload-node-0-0-a0" in result.stdout
    assert "== Job ml-team/llama-pretrain: InProgress/WorkloadSchedulingBlocked (restarts 0)" in result.stdout
    assert "== Job ml-team/llama-pretrain: pods scheduled again at" in result.stdout


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`: pid → command line."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        out = subprocess.run(["pgrep", "-a", "-P", str(todo.pop())], capture_output=True, text=True).stdout
        for line in out.splitlines():
            child, _, command = line.partition(" ")
            found[int(child)] = command
            todo.append(int(child))
    return found


def launched(gw: Gateway, name: str, timeout: float = 60) -> str:
    """The Job's workloadRef name once launch has written it ("" if it did not within `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(CrefnError):
            ref = ((gw.get(JOBS, "team", name) or {}).get("status") or {}).get("workloadRef") or {}
            if ref.get("name"):
                return str(ref["name"])
        time.sleep(0.2)
    return ""


def create_job(gw: Gateway, name: str) -> None:
    for _ in range(60):  # the API server may be starting again
        with contextlib.suppress(Unavailable):
            gw.create(JOBS, "team", {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch"}}}}})
            return
        time.sleep(0.5)
    raise AssertionError(f"could not create Job {name}")


def start_dev(tmp_path: Path, token: str) -> tuple[subprocess.Popen[str], dict[str, str], list[str]]:
    """`python -m localstack dev --no-demo --keep` with its own lineage token, once it says where its API server
    and Broker are: the process, those two (KUBECONFIG, BROKER) and the lines it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREFN_")}
    env[MARK] = token
    env["TMPDIR"] = str(tmp_path / "tmp")  # a SIGKILLed stack cannot remove its own: the test's goes with the test
    (tmp_path / "tmp").mkdir()
    proc: subprocess.Popen[str] = spawn([sys.executable, "-m", "localstack", "dev", "--no-demo", "--keep",
                                         "--out", str(tmp_path), "--ping-interval", "2"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(x.startswith("BROKER=") for x in lines):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip())
    return proc, dict(x.split("=", 1) for x in lines if x.startswith(("KUBECONFIG=", "BROKER="))), lines


@pytest.mark.kube  # `python -m localstack dev` starts an API server of its own
@pytest.mark.stack
def test_no_demo_keep_serves_users_survives_kills_and_ctrl_c_stops_everything(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc, found, lines = start_dev(tmp_path, token)
    assert proc.stdout is not None
    rest = proc.stdout  # read all along: a full pipe would hold the stack's stop
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip() for line in rest), daemon=True)
    reader.start()
    stopped_in = 0.0
    try:
        assert set(found) == {"KUBECONFIG", "BROKER"}, "\n".join(lines)
        gw = Gateway.connect(found["KUBECONFIG"])
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        create_job(gw, "mine")
        assert launched(gw, "mine") == "mine-workload"
        assert send(found["BROKER"], {"attributes": {"specversion": "1.0", "id": "1", "source": "me",
                                                     "type": "my.own"}, "data": {}}).status == 202
        # a function killed: the stack starts it again on its port, and the Broker's retry reaches it
        (launch,) = [pid for pid, cmd in descendants(proc.pid).items() if "--target launch" in cmd
                     and os.getpgid(pid) == pid]
        os.killpg(launch, signal.SIGKILL)
        create_job(gw, "after-a-function-kill")
        assert launched(gw, "after-a-function-kill") == "after-a-function-kill-workload"
        # the API server killed: started again on the same etcd and port
        (apiserver,) = [pid for pid, cmd in descendants(proc.pid).items() if "kube-apiserver" in cmd]
        os.kill(apiserver, signal.SIGKILL)
        create_job(gw, "after-an-apiserver-kill")
        assert launched(gw, "after-an-apiserver-kill", timeout=120) == "after-an-apiserver-kill-workload"
        gw.close()
        tree = marked(token, exclude=frozenset({proc.pid}))
        assert sum("functions_framework" in cmd for cmd in tree.values()) >= 2 * 11  # arbiter and worker each
        assert any("kube-apiserver" in cmd for cmd in tree.values()) and any("etcd" in cmd for cmd in tree.values())
    finally:
        with busy_cores():  # Ctrl-C on a loaded machine: the whole stack is gone within 10 s
            began = time.monotonic()
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=CTRL_C_WITHIN)
            left = left_after(token, max(0.0, CTRL_C_WITHIN - (time.monotonic() - began)))
            stopped_in = time.monotonic() - began
            if proc.poll() is None:  # where each of its threads is, then gone
                proc.send_signal(signal.SIGUSR1)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2)
                proc.kill()
                proc.wait(timeout=10)
            kill_all(left)
            reader.join(timeout=10)
            rest.close()
    output = "\n".join(lines)
    assert not left, f"left after Ctrl-C: {left}\n{output[-6000:]}"
    assert stopped_in <= CTRL_C_WITHIN, f"the stack took {stopped_in:.1f}s to stop:\n{output[-6000:]}"
    assert "!! launch exited: starting it again (restart 1)" in output
    assert "!! kube-apiserver exited: starting it again (restart 1)" in output
    logged = [json.loads(x)["attributes"]["type"] for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert "my.own" in logged and "dev.crefn.workload.created" in logged


def doctor(kubeconfig: str) -> tuple[int, list[str]]:
    """`cre-fn doctor` against the stack: its exit code and its lines."""
    result = run([sys.executable, "-m", "functions.cli", "doctor", "--kubeconfig", kubeconfig], text=True,
                 timeout=120)
    assert result.stderr == "", result.stderr
    return result.returncode, result.stdout.splitlines()


def failed_checks(kubeconfig: str, want: list[str], timeout: float = 20) -> list[str]:
    """The ✗ lines of `cre-fn doctor`, once they are `want` (the stand-ins write status every second) or the time
    is up; exit 1 whenever one fails."""
    deadline = time.monotonic() + timeout
    while True:
        code, lines = doctor(kubeconfig)
        failed = [line for line in lines if not line.startswith(("✓ ", "! "))]  # a warning does not fail
        assert code == (1 if failed else 0), lines
        if failed == want or time.monotonic() > deadline:
            return failed
        time.sleep(1)


@pytest.mark.kube  # `python -m localstack dev` starts an API server of its own
@pytest.mark.stack
def test_doctor_passes_every_check_against_the_stack_and_names_each_fault(tmp_path: Path,
                                                                         upstream_crds: Path) -> None:
    """`make run`'s stack (`python -m localstack dev --no-demo --keep`, its own API server with the upstream
    CRDs): `cre-fn doctor` against its kubeconfig passes every check, the stand-ins giving the readiness Knative's
    controllers would; then a CRD removed, a Trigger whose subscriber is gone, and CRE's manager beside the functions in
    manage mode: each its ✗ line, exit 1."""
    token = uuid.uuid4().hex
    proc, found, lines = start_dev(tmp_path, token)
    try:
        assert set(found) == {"KUBECONFIG", "BROKER"}, "\n".join(lines)
        kubeconfig = found["KUBECONFIG"]
        assert failed_checks(kubeconfig, []) == []
        code, checks = doctor(kubeconfig)
        assert code == 0 and checks[0].startswith("✓ API server: https://127.0.0.1:")
        assert checks[1:5] == [
            "✓ CRE CRDs (nvcre.nvidia.com): 4 kinds in nvcre.nvidia.com",
            "✓ Trainer TrainJob CRD: trainjobs.trainer.kubeflow.org v1alpha1 has spec.runtimePatches (Trainer ≥ 2.2)",
            "✓ Knative Serving CRDs: services.serving.knative.dev",
            "✓ Knative Eventing CRDs: brokers.eventing.knative.dev, triggers.eventing.knative.dev, "
            "apiserversources.sources.knative.dev, pingsources.sources.knative.dev, sinkbindings.sources.knative.dev"]
        assert "✓ Broker crefn-system/crefn: Ready" in checks
        assert len([c for c in checks if c.startswith("✓ Trigger crefn-") and c.endswith(": Ready")]) == 24
        assert [c for c in checks if c.startswith("✓ ApiServerSource ")] == [
            f"✓ ApiServerSource crefn-{name}: SufficientPermissions"
            for name in ("goodput", "jobs", "nodes", "pods", "trainjobs", "workloadruns")]
        assert [c for c in checks if c.startswith("✓ Service ")] == [
            f"✓ Service crefn-{name}: Ready, mode manage" for name in (
                "alert", "launch", "measure", "measurements", "metrics", "nodehealth", "parity", "phase", "restart",
                "resync", "status", "timeout", "validate", "workloadrun")]
        assert checks[-2:] == [
            "✓ CRE's controller: none running (app.kubernetes.io/name=cluster-readiness-engine) beside 14 functions "
            "in manage mode",
            "✓ Measurements (nvcre.nvidia.com): no running or ended managed Job has a measurement to look at"]

        gw = Gateway.connect(kubeconfig)
        try:
            gw.delete(CRDS, None, "sinkbindings.sources.knative.dev")
            want = ["✗ Knative Eventing CRDs: sinkbindings.sources.knative.dev not found — install Knative Eventing"]
            assert failed_checks(kubeconfig, want) == want
            gw.patch(TRIGGERS, "crefn-system", "crefn-phase-trainjobs",
                     {"spec": {"subscriber": {"ref": {"name": "crefn-gone"}}}})
            want.append("✗ Trigger crefn-phase-trainjobs: not Ready (False: Unable to get the Subscriber's URI: "
                        "Service crefn-system/crefn-gone is not found or has no address) — kubectl -n crefn-system "
                        "describe trigger crefn-phase-trainjobs")
            assert failed_checks(kubeconfig, want) == want
            gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cre-system"}})
            labels = {"app.kubernetes.io/name": "cluster-readiness-engine", "control-plane": "manager"}
            gw.create(DEPLOYMENTS, "cre-system", {
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "cre-cluster-readiness-engine-manager", "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "manager", "image": "nvcr.io/nvidia/cre:0.6.0"}]}}}})
            want.append("✗ CRE's controller: cre-system/cre-cluster-readiness-engine-manager runs while 14 functions "
                        "run in manage mode: both would write the same Jobs — kubectl -n cre-system scale deployment "
                        "cre-cluster-readiness-engine-manager --replicas=0, or set CREFN_MODE=observe")
            assert failed_checks(kubeconfig, want) == want
        finally:
            gw.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            kill_all(left_after(token, 10))
            if proc.stdout:
                proc.stdout.close()


@pytest.mark.kube  # `python -m localstack dev` starts an API server of its own
@pytest.mark.stack
def test_a_killed_dev_stack_leaves_no_process(tmp_path: Path) -> None:
    """`python -m localstack dev --keep` SIGKILLed, so that it can stop nothing itself: every process it started
    (etcd, the kube-apiserver, the admission webhook, Alertmanager, Prometheus, every function's arbiter and
    worker) dies with it, though re-parented away from it — found by the lineage token each one carries."""
    token = uuid.uuid4().hex
    proc, found, lines = start_dev(tmp_path, token)
    try:
        assert set(found) == {"KUBECONFIG", "BROKER"}, "\n".join(lines)
        started = marked(token, exclude=frozenset({proc.pid}))
        assert sum("functions_framework" in cmd for cmd in started.values()) >= 2 * 11, started
        assert any("kube-apiserver" in cmd for cmd in started.values()), started
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
    left = left_after(token, DIE_WITH_PARENT_WITHIN)
    kill_all(left)
    assert not left, f"outlived a SIGKILLed python -m localstack dev: {left}"


@pytest.mark.kube  # the inner session starts an API server of its own
@pytest.mark.stack
def test_a_killed_test_session_leaves_no_process(tmp_path: Path) -> None:
    """A pytest session (two xdist workers, each with its API server and served functions) SIGKILLed mid-run:
    its workers die with it, and with them everything they started."""
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREFN_")}
    env[MARK] = token
    env["TMPDIR"] = str(tmp_path)
    proc = spawn([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--basetemp",
                  str(tmp_path / "inner"), str(paths.REPO / "tests" / "functions" / "restart" / "test_read.py"),
                  str(paths.REPO / "tests" / "functions" / "status" / "test_read.py")],
                 cwd=paths.REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:  # until both workers serve functions
            running = marked(token).values()
            if sum("functions_framework" in cmd for cmd in running) >= 4 \
                    and sum("kube-apiserver" in cmd for cmd in running) == 2:
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the session ended before it was killed"
        running = marked(token).values()
        assert sum("kube-apiserver" in cmd for cmd in running) == 2, running
    finally:
        proc.kill()
        proc.wait(timeout=10)
    left = left_after(token, DIE_WITH_PARENT_WITHIN)
    kill_all(left)
    assert not left, f"outlived a SIGKILLed pytest session: {left}"
