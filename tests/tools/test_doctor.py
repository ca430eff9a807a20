"""`cre-fn doctor` against the real API server with the upstream CRDs (CRE, Trainer, Knative): the objects a
healthy install has (knative/base's ConfigMap, Services, Broker, Triggers, ApiServerSources and the recorder's
Deployment, in the test's namespace, with the conditions Knative's controllers and Kubernetes' would write) give every
check ✓ and exit 0; a CRD removed, a Trigger not Ready, the dead-letter sink not up, CRE's controller running beside
functions in manage mode each give their ✗ line and exit 1;
no cluster to ask, or a mistaken argument, one line and exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.gateway import Gateway
from functions.runtime.resources import CONFIGMAPS, CRDS, Resource, cre_goodput, cre_jobs
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import render
from tests.support.helpers import unreachable_kubeconfig

KINDS = {
    ("v1", "ConfigMap"): CONFIGMAPS,
    ("serving.knative.dev/v1", "Service"): Resource("serving.knative.dev", "v1", "services", "Service"),
    ("eventing.knative.dev/v1", "Broker"): Resource("eventing.knative.dev", "v1", "brokers", "Broker"),
    ("eventing.knative.dev/v1", "Trigger"): Resource("eventing.knative.dev", "v1", "triggers", "Trigger"),
    ("sources.knative.dev/v1", "ApiServerSource"): Resource("sources.knative.dev", "v1", "apiserversources",
                                                             "ApiServerSource"),
}
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
KINDS[("apps/v1", "Deployment")] = DEPLOYMENTS
TRIGGERS = KINDS[("eventing.knative.dev/v1", "Trigger")]
BROKERS = KINDS[("eventing.knative.dev/v1", "Broker")]
CRE_JOBS = cre_jobs("nvcre.nvidia.com")
GOODPUT = cre_goodput("nvcre.nvidia.com")
BANDWIDTH = Resource("nvcre.nvidia.com", "v1alpha1", "bandwidthmeasurements", "BandwidthMeasurement")
SERVICES = ("alert", "launch", "measure", "measurements", "metrics", "nodehealth", "parity", "phase", "restart",
            "resync", "status", "timeout", "validate", "workloadrun")


def ready(*types: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {"status": {"conditions": [{"type": t, "status": status, "reason": reason, "message": message,
                                       "lastTransitionTime": "2026-11-02T09:20:11Z"} for t in types]}}


@pytest.fixture
def installed(gateway: Gateway, namespace: str, upstream_crds: Path) -> dict[str, list[str]]:
    """knative/base's objects the doctor reads, created in the test's namespace and made Ready (the recorder's
    Deployment Available): kind → names."""
    made: dict[str, list[str]] = {}
    for doc in render("base"):
        res = KINDS.get((doc["apiVersion"], doc["kind"]))
        if res is None:
            continue
        name = doc["metadata"]["name"]
        gateway.create(res, namespace, {**doc, "metadata": {**doc["metadata"], "namespace": namespace}})
        if doc["kind"] != "ConfigMap":
            types = {"ApiServerSource": ("Ready", "SufficientPermissions"), "Deployment": ("Available",)}.get(
                doc["kind"], ("Ready",))
            gateway.patch(res, namespace, name, ready(*types), status=True)
        made.setdefault(doc["kind"], []).append(name)
    return made


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "functions.cli", "doctor", *args], capture_output=True, text=True,
                          check=False, timeout=120)


def checked(cluster: LocalCluster, namespace: str, *args: str) -> tuple[int, list[str]]:
    """The doctor's exit code and lines, its measurements looked at in the test's namespace only (the session's
    API server holds other tests' Jobs)."""
    result = doctor("--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "--jobs-namespace", namespace, *args)
    assert result.stderr == ""
    return result.returncode, result.stdout.splitlines()


@pytest.mark.process
def test_a_healthy_install_passes_every_check(cluster: LocalCluster, namespace: str,
                                              installed: dict[str, list[str]]) -> None:
    code, lines = checked(cluster, namespace)
    assert code == 0, "\n".join(lines)
    assert all(line.startswith("✓ ") for line in lines), lines
    assert lines[0].startswith(f"✓ API server: {cluster.url}, Kubernetes v1.")
    assert lines[1:5] == [
        "✓ CRE CRDs (nvcre.nvidia.com): 4 kinds in nvcre.nvidia.com",
        "✓ Trainer TrainJob CRD: trainjobs.trainer.kubeflow.org v1alpha1 has spec.runtimePatches (Trainer ≥ 2.2)",
        "✓ Knative Serving CRDs: services.serving.knative.dev",
        "✓ Knative Eventing CRDs: brokers.eventing.knative.dev, triggers.eventing.knative.dev, "
        "apiserversources.sources.knative.dev, pingsources.sources.knative.dev, sinkbindings.sources.knative.dev"]
    assert f"✓ Broker {namespace}/crefn: Ready" in lines
    assert lines[lines.index(f"✓ Broker {namespace}/crefn: Ready") + 1] == \
        "✓ Dead-letter sink: Deployment crefn-dead-letters Available"
    assert installed["Deployment"] == ["crefn-dead-letters"]
    assert [line for line in lines if line.startswith("✓ Trigger ")] == [
        f"✓ Trigger {name}: Ready" for name in sorted(installed["Trigger"])]
    assert len(installed["Trigger"]) > 10
    assert [line for line in lines if line.startswith("✓ ApiServerSource ")] == [
        f"✓ ApiServerSource {name}: SufficientPermissions" for name in sorted(installed["ApiServerSource"])]
    assert [line for line in lines if line.startswith("✓ Service ")] == [
        f"✓ Service crefn-{name}: Ready, mode manage" for name in SERVICES]
    assert lines[-2:] == [
        "✓ CRE's controller: none running (app.kubernetes.io/name=cluster-readiness-engine) beside 14 functions in "
        "manage mode",
        "✓ Measurements (nvcre.nvidia.com): no running or ended managed Job has a measurement to look at"]
    as_json = json.loads(doctor("--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "--jobs-namespace",
                                namespace, "-o", "json").stdout)
    assert as_json["ok"] is True and len(as_json["checks"]) == len(lines)
    assert as_json["checks"][1] == {"check": "CRE CRDs (nvcre.nvidia.com)", "ok": True,
                                    "detail": "4 kinds in nvcre.nvidia.com", "fix": "", "warning": False}


@pytest.mark.process
def test_a_trigger_not_ready_is_named_with_its_reason(cluster: LocalCluster, gateway: Gateway, namespace: str,
                                                      installed: dict[str, list[str]]) -> None:
    gateway.patch(TRIGGERS, namespace, "crefn-phase-pods", ready(
        "Ready", status="False", reason="SubscriberResolved", message="service crefn-phase not found"), status=True)
    code, lines = checked(cluster, namespace)
    assert code == 1
    assert [line for line in lines if line.startswith("✗")] == [
        "✗ Trigger crefn-phase-pods: not Ready (False: SubscriberResolved: service crefn-phase not found) — "
        f"kubectl -n {namespace} describe trigger crefn-phase-pods"]
    failed = [c for c in json.loads(doctor("--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "--jobs-namespace",
                                           namespace, "-o", "json").stdout)["checks"] if not c["ok"]]
    assert failed == [{"check": "Trigger crefn-phase-pods", "ok": False,
                       "detail": "not Ready (False: SubscriberResolved: service crefn-phase not found)",
                       "fix": f"kubectl -n {namespace} describe trigger crefn-phase-pods", "warning": False}]


@pytest.mark.process
def test_a_dead_letter_sink_not_up_is_named_with_where_to_look(
        cluster: LocalCluster, gateway: Gateway, namespace: str, installed: dict[str, list[str]]) -> None:
    gateway.patch(DEPLOYMENTS, namespace, "crefn-dead-letters", ready(
        "Available", status="False", reason="MinimumReplicasUnavailable",
        message="Deployment does not have minimum availability."), status=True)
    code, lines = checked(cluster, namespace)
    assert code == 1
    assert [line for line in lines if line.startswith("✗")] == [
        "✗ Dead-letter sink: Deployment crefn-dead-letters not Available (False: MinimumReplicasUnavailable: "
        f"Deployment does not have minimum availability.) — kubectl -n {namespace} describe deployment "
        f"crefn-dead-letters; kubectl -n {namespace} describe pvc crefn-dead-letters"]
    kafka = {"apiVersion": "eventing.knative.dev/v1alpha1", "kind": "KafkaSink", "name": "crefn-dead-letters"}
    gateway.patch(BROKERS, namespace, "crefn", {"spec": {"delivery": {"deadLetterSink": {"ref": kafka}}}})
    code, lines = checked(cluster, namespace)
    assert [line for line in lines if line.startswith("✗")] == [
        "✗ Dead-letter sink: KafkaSink crefn-dead-letters not found — apply the install (see "
        "docs/operating.md#deploy-to-a-cluster)"]
    gateway.patch(BROKERS, namespace, "crefn", {"spec": {"delivery": {"deadLetterSink": None}}})
    code, lines = checked(cluster, namespace)
    assert [line for line in lines if line.startswith("✗")] == [
        "✗ Dead-letter sink: Broker crefn has no deadLetterSink: what it gives up on is lost — apply the install "
        "(see docs/operating.md#deploy-to-a-cluster)"]


@pytest.fixture
def cre_manager(gateway: Gateway, namespace: str) -> Iterator[str]:
    """CRE's manager as its Helm chart deploys it (labels, one replica), in the test's namespace."""
    labels = {"app.kubernetes.io/name": "cluster-readiness-engine", "app.kubernetes.io/instance": "cre",
              "control-plane": "manager"}
    gateway.create(DEPLOYMENTS, namespace, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cre-cluster-readiness-engine-manager", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "manager", "image": "nvcr.io/nvidia/cre:0.6.0",
                                     "command": ["/manager"]}]}}}})
    try:
        yield "cre-cluster-readiness-engine-manager"
    finally:
        gateway.delete(DEPLOYMENTS, namespace, "cre-cluster-readiness-engine-manager")


@pytest.mark.process
def test_cre_s_controller_beside_functions_in_manage_mode_fails_and_in_observe_mode_passes(
        cluster: LocalCluster, gateway: Gateway, namespace: str, installed: dict[str, list[str]],
        cre_manager: str) -> None:
    code, lines = checked(cluster, namespace)
    assert code == 1
    assert [line for line in lines if line.startswith("✗")] == [
        f"✗ CRE's controller: {namespace}/{cre_manager} runs while 14 functions run in manage mode: both would write "
        f"the same Jobs — kubectl -n {namespace} scale deployment {cre_manager} --replicas=0, or set "
        "CREFN_MODE=observe"]
    settings = installed["ConfigMap"][0]
    gateway.patch(CONFIGMAPS, namespace, settings, {"data": {"CREFN_MODE": "observe"}})
    code, lines = checked(cluster, namespace)
    assert code == 0, "\n".join(lines)
    assert "✓ Service crefn-launch: Ready, mode observe" in lines
    assert lines[-2] == f"✓ CRE's controller: no function runs in manage mode (running: {namespace}/{cre_manager})"
    gateway.patch(DEPLOYMENTS, namespace, cre_manager, {"spec": {"replicas": 0}})
    gateway.patch(CONFIGMAPS, namespace, settings, {"data": {"CREFN_MODE": "manage"}})
    assert checked(cluster, namespace)[0] == 0  # scaled to 0: not running


def at(minutes_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def measured_job(gateway: Gateway, namespace: str, name: str, verdict: tuple[str, str], minutes: float,
                 managed: bool = True) -> None:
    """A Job whose exclusive condition `verdict` became True `minutes` ago, as CRE's controller writes it."""
    labels = {"crefn.dev/managed": "true"} if managed else {}
    gateway.create(CRE_JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": name, "labels": labels},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}})
    conditions = [{"type": t, "status": "True" if t == verdict[0] else "False",
                   "reason": verdict[1] if t == verdict[0] else "NotApplicable", "message": "",
                   "lastTransitionTime": at(minutes)} for t in ("InProgress", "Succeeded", "Failed")]
    gateway.patch(CRE_JOBS, namespace, name, {"status": {"conditions": conditions}}, status=True)


def measurement(gateway: Gateway, namespace: str, res: Resource, job: str, **status: Any) -> str:
    """A measurement of `job` (the name CRE gives it) with the status its controller wrote."""
    name = f"{job}-{'goodput' if res is GOODPUT else 'bandwidth'}"
    gateway.create(res, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": res.kind,
                                    "metadata": {"name": name},
                                    "spec": {"jobRef": {"kind": "Job", "name": job}, "logProfileRef": "nemo"}})
    if status:
        gateway.patch(res, namespace, name, {"status": status}, status=True)
    return name


@pytest.mark.process
def test_measurements_that_no_longer_move_are_a_warning_naming_who_should_move_them(
        cluster: LocalCluster, gateway: Gateway, namespace: str, installed: dict[str, list[str]]) -> None:
    running, ended = ("InProgress", "WorkloadRunning"), ("Succeeded", "WorkloadCompleted")
    for name, verdict, minutes in (("moving", running, 60), ("stopped", running, 60), ("ended", ended, 20)):
        measured_job(gateway, namespace, name, verdict, minutes)
    measured_job(gateway, namespace, "unmanaged", running, 60, managed=False)
    measurement(gateway, namespace, GOODPUT, "moving", startTime=at(60), applicationStopTime=at(1))
    measurement(gateway, namespace, GOODPUT, "stopped", startTime=at(60), applicationStopTime=at(25),
                lastStepTimestamp=at(26))
    measurement(gateway, namespace, GOODPUT, "ended", startTime=at(60), completionTime=at(19))
    measurement(gateway, namespace, BANDWIDTH, "ended", startTime=at(60))
    measurement(gateway, namespace, GOODPUT, "unmanaged", startTime=at(60), applicationStopTime=at(50))
    stopped = (rf"2 of 4 measurements of managed Jobs no longer move: BandwidthMeasurement {namespace}/ended-"
               rf"bandwidth \(Job ended 20m\d+s ago, not completed\); GoodputMeasurement {namespace}/stopped-goodput "
               r"\(Job running, not updated for 25m\d+s\)")

    # the functions in manage mode, their measure the producer: the fix says where to look
    code, lines = checked(cluster, namespace)
    assert code == 0, "\n".join(lines)
    assert re.fullmatch(
        rf"! Measurements \(nvcre.nvidia.com\): {stopped} — the functions' measure writes them: read its log "
        r"\(crefn-measure\), and the measured pods' \(a workload that logs nothing leaves its measurement still\)",
        lines[-1]), lines[-1]
    assert all(line.startswith("✓ ") for line in lines[:-1]), lines
    as_json = json.loads(doctor("--kubeconfig", str(cluster.kubeconfig), "-n", namespace, "--jobs-namespace",
                                namespace, "-o", "json").stdout)
    assert as_json["ok"] is True
    assert {k: as_json["checks"][-1][k] for k in ("check", "ok", "warning")} == {
        "check": "Measurements (nvcre.nvidia.com)", "ok": True, "warning": True}

    # CRE's manager running (beside the functions observing): the fix says where to look instead
    gateway.patch(CONFIGMAPS, namespace, installed["ConfigMap"][0], {"data": {"CREFN_MODE": "observe"}})
    labels = {"app.kubernetes.io/name": "cluster-readiness-engine"}
    gateway.create(DEPLOYMENTS, namespace, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cre-manager", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "manager", "image": "cre"}]}}}})
    try:
        code, lines = checked(cluster, namespace)
    finally:
        gateway.delete(DEPLOYMENTS, namespace, "cre-manager")
    assert code == 0, "\n".join(lines)
    assert re.fullmatch(
        rf"! Measurements \(nvcre.nvidia.com\): {stopped} — CRE's manager runs \({namespace}/cre-manager\): read "
        r"its log, and the measured pods' \(a workload that logs nothing leaves its measurement still\)",
        lines[-1]), lines[-1]

    # neither: the functions observe and CRE's manager is stopped
    code, lines = checked(cluster, namespace)
    assert re.fullmatch(
        rf"! Measurements \(nvcre.nvidia.com\): {stopped} — nothing writes them while CRE's manager is stopped: "
        r"restarts that need checkpoint evidence are refused, stalls and thresholds go quiet; scale CRE's manager "
        r"back up, or see docs/switching.md#what-stops-with-cres-manager", lines[-1]), lines[-1]

    # the producer writes again: the measurements move
    gateway.patch(GOODPUT, namespace, "stopped-goodput", {"status": {"applicationStopTime": at(0)}}, status=True)
    gateway.patch(BANDWIDTH, namespace, "ended-bandwidth", {"status": {"completionTime": at(0)}}, status=True)
    code, lines = checked(cluster, namespace)
    assert (code, lines[-1]) == (0, "✓ Measurements (nvcre.nvidia.com): 4 measurements of managed Jobs move")


@pytest.mark.process
def test_a_crd_removed_is_named_with_what_to_install(cluster: LocalCluster, gateway: Gateway, namespace: str,
                                                     installed: dict[str, list[str]]) -> None:
    name = "sinkbindings.sources.knative.dev"
    (crd,) = [c for c in cluster.load_crds() if c["metadata"]["name"] == name]
    gateway.delete(CRDS, None, name)
    try:
        deadline = time.monotonic() + 30
        while gateway.get(CRDS, None, name) is not None:
            assert time.monotonic() < deadline, f"{name} was not deleted"
            time.sleep(0.2)
        code, lines = checked(cluster, namespace)
    finally:
        cluster.install_crds([crd])
    assert code == 1
    assert [line for line in lines if line.startswith("✗")] == [
        f"✗ Knative Eventing CRDs: {name} not found — install Knative Eventing"]


@pytest.mark.process
def test_cre_crds_missing_from_the_group_asked_for_name_the_group_they_are_in(
        cluster: LocalCluster, namespace: str, installed: dict[str, list[str]]) -> None:
    code, lines = checked(cluster, namespace, "--cre-group", "cre.example.com")
    assert code == 1
    assert [line for line in lines if line.startswith("✗")] == [
        "✗ CRE CRDs (cre.example.com): jobs.cre.example.com not found; workloadruns.cre.example.com not found; "
        "goodputmeasurements.cre.example.com not found; bandwidthmeasurements.cre.example.com not found — CRE's "
        "CRDs are in nvcre.nvidia.com: set CREFN_CRE_GROUP=nvcre.nvidia.com in the functions' settings"]


@pytest.mark.process
def test_an_empty_namespace_names_what_is_missing(cluster: LocalCluster, namespace: str,
                                                  upstream_crds: Path) -> None:
    code, lines = checked(cluster, namespace)
    assert code == 1
    assert f"✗ Broker {namespace}/crefn: not found — apply the install (see docs/operating.md#deploy-to-a-cluster)" \
        in lines
    assert f"✗ Triggers on {namespace}/crefn: none found — apply the install (see " \
           "docs/operating.md#deploy-to-a-cluster)" in lines
    assert "✗ Service crefn-phase: not found — apply the install (see docs/operating.md#deploy-to-a-cluster)" in lines


@pytest.mark.process
def test_no_cluster_to_ask_is_one_line(tmp_path: Path) -> None:
    unreachable = doctor("--kubeconfig", str(unreachable_kubeconfig(tmp_path / "kubeconfig")), "--timeout", "2")
    assert unreachable.returncode == 1 and unreachable.stderr == ""
    (line,) = unreachable.stdout.splitlines()
    assert line.startswith("✗ API server: https://127.0.0.1:") and "unreachable" in line
    assert line.endswith(" — check the kubeconfig (--kubeconfig, KUBECONFIG) and that the API server is reachable")


@pytest.mark.process
@pytest.mark.parametrize(("args", "said"), [
    (("--kubeconfig", "/nowhere/kubeconfig"), "cre-fn doctor: --kubeconfig /nowhere/kubeconfig: no such file\n"),
    (("-o", "yaml"), "cre-fn doctor: argument -o/--output: invalid choice: 'yaml' (choose from 'text', 'json') "
                     "(see cre-fn doctor --help)\n"),
    (("--timeout", "0"), "cre-fn doctor: argument --timeout: must be above 0, got 0 (see cre-fn doctor --help)\n"),
    (("--bogus",), "cre-fn: unrecognized arguments: --bogus (see cre-fn --help)\n"),
], ids=["no-kubeconfig", "output", "timeout", "unknown-flag"])
def test_a_mistaken_argument_is_one_line_and_exit_2(args: tuple[str, ...], said: str) -> None:
    result = doctor(*args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", said)
