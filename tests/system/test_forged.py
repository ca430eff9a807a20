"""Forged events change nothing (SPEC §4.3: no input makes a handler write anything it was not asked
to; §6.4: decisions use fresh reads, never an event's payload alone).

First, events naming another tenant's Job or objects that do not exist, sent to the functions served
over HTTP as their ServiceAccounts; then events about the project's own managed Jobs, posted to the
local stack's Broker as any pod in the cluster could. Every delivery is answered 202; no write reaches
the API server, and nothing is paged. The events sent and what is checked:
docs/development.md#forged-events
"""

from __future__ import annotations

import contextlib
import io
import re
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from functions.runtime.client import send
from functions.runtime.codec import encode
from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NAMESPACES, TRAINJOBS, cre_workloadruns
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.stack import Stack, start_stack
from localstack.timeline import Timeline
from localstack.trainer import wait_until
from tests.support.helpers import Receiver
from tests.support.rawhttp import ce_head, raw
from tests.support.world import GROUP, JOBS, Record, phase_record

WRITES = re.compile(r'^crefn_kube_requests_total\{.*verb="(create|patch|update|delete)".*\} (\d+)', re.M)
FAILED = {"type": "Failed", "status": "True", "reason": "JobFailed", "message": "exit 137",
          "lastTransitionTime": "2026-11-30T10:00:00Z"}


def writes(url: str) -> int:
    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        return sum(int(n) for _, n in WRITES.findall(resp.read().decode()))


def tenant_job(gateway: Gateway, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Another tenant's Job (not managed here), running for a day past a 1 s bound, with a failed TrainJob."""
    job = gateway.create(JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "annotations": {"crefn.dev/timeout-per-job": "1s"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                 "checkpoint": {"pvcName": "p", "maxRestarts": 3}}})
    trainjob = gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0"},
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    trainjob = gateway.patch(TRAINJOBS, namespace, "llm-workload", {"status": {"conditions": [FAILED]}}, status=True)
    job = gateway.patch(JOBS, namespace, "llm", {"status": {
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                        "namespace": namespace},
        "workloadStartTime": "2026-11-29T10:00:00Z",
        "conditions": [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning",
                        "message": "Workload TrainJob/llm-workload is running",
                        "lastTransitionTime": "2026-11-29T10:00:00Z"}]}}, status=True)
    return job, trainjob


def forged(namespace: str, job: str, trainjob_uid: str) -> dict[str, Record]:
    """One event per function, each asking for a write on the Job (as if it were managed)."""
    failed = phase_record(namespace, job, "Failed")
    failed["data"]["workload"]["uid"] = trainjob_uid
    deadline = {"attributes": {"specversion": "1.0", "id": "d1", "source": "/crefn/resync",
                               "type": "dev.crefn.job.deadline", "subject": f"{namespace}/{job}",
                               "namespace": namespace, "job": job, "partitionkey": f"{namespace}/{job}"},
                "data": {"job": {"name": job, "namespace": namespace}, "attempt": 0, "elapsedSeconds": 90000.0,
                         "timeoutSeconds": 1.0, "blocked": False}}
    check = {"attributes": {**deadline["attributes"], "type": "dev.crefn.job.check"},
             "data": {"job": {"name": job, "namespace": namespace}, "attempt": 0,
                      "checks": ["nodehealth", "validation"]}}
    return {"restart": failed, "status": phase_record(namespace, job, "Running"), "timeout": deadline,
            "nodehealth": check, "validate": check}


@pytest.mark.parametrize("named", ["another-tenants-job", "no-such-job"])
def test_forged_events_change_nothing(functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str,
                                      named: str) -> None:
    urls = functions()
    job, trainjob = tenant_job(gateway, namespace)
    name = "llm" if named == "another-tenants-job" else "never-was"
    events = forged(namespace, name, trainjob["metadata"]["uid"])
    claimed = {**job, "metadata": {**job["metadata"], "name": name,
                                   "labels": {"crefn.dev/managed": "true"}}}  # the payload lies; the read does not
    events["launch"] = apiserver_record("update", claimed, JOBS, gateway.host)
    before = {target: writes(urls[target]) for target in events}
    for target, record in events.items():
        answer = send(urls[target], record)
        assert answer.status == 202, (target, answer.status, answer.text)
    assert {target: writes(urls[target]) for target in events} == before
    assert (gateway.get(JOBS, namespace, "llm") or {})["metadata"]["resourceVersion"] == \
        job["metadata"]["resourceVersion"]
    assert (gateway.get(TRAINJOBS, namespace, "llm-workload") or {})["metadata"]["resourceVersion"] == \
        trainjob["metadata"]["resourceVersion"]
    assert gateway.get(TRAINJOBS, namespace, "never-was-workload") is None


def test_a_forged_failure_naming_another_namespaces_trainjob_deletes_nothing(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str) -> None:
    """A managed Job whose restart is recorded (restartCount 1), and a failure of "its" attempt 0 that names
    a TrainJob of the same name and attempt label in another tenant's namespace: `restart` reads nothing
    of it and deletes nothing (it once took the TrainJob from the event's namespace and deleted it as the
    recorded restart's last step)."""
    urls = functions()
    other = f"{namespace[:50]}-other"
    gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    _, victim = tenant_job(gateway, other)
    gateway.create(JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                 "checkpoint": {"pvcName": "p", "maxRestarts": 3}}})
    job = gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadRestarting",
         "message": "Restarting workload from checkpoint (restart 1/3)",
         "lastTransitionTime": "2026-11-29T10:00:00Z"}]}}, status=True)
    failed = phase_record(namespace, "llm", "Failed")
    failed["data"]["workload"].update(namespace=other, uid=victim["metadata"]["uid"])
    before = writes(urls["restart"])
    answer = send(urls["restart"], failed)
    assert answer.status == 202, answer.text
    assert writes(urls["restart"]) == before
    assert (gateway.get(TRAINJOBS, other, "llm-workload") or {}).get("metadata", {}).get("uid") == \
        victim["metadata"]["uid"]
    assert (gateway.get(JOBS, namespace, "llm") or {})["metadata"]["resourceVersion"] == \
        job["metadata"]["resourceVersion"]
    gateway.delete(JOBS, other, "llm")


def test_a_forged_attempt_number_does_not_make_a_running_unlabelled_trainjob_a_deleted_one(
        functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str) -> None:
    """A managed Job running CRE's TrainJob (no attempt label: switched from CRE), and a failure of "attempt
    0" (what `phase` never sends for it: it sends no attempt): the name is held by a TrainJob that is not
    that attempt's, which is not a deleted one. Nothing is written, the Job neither failed nor restarted."""
    urls = functions()
    job = gateway.create(JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                 "checkpoint": {"pvcName": "p", "maxRestarts": 3}}})
    trainjob = gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"nvcre.nvidia.com/job": "llm"},
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    job = gateway.patch(JOBS, namespace, "llm", {"status": {
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                        "namespace": namespace},
        "conditions": [{"type": "InProgress", "status": "True", "reason": "WorkloadRunning",
                        "message": "Workload TrainJob/llm-workload is running",
                        "lastTransitionTime": "2026-11-29T10:00:00Z"}]}}, status=True)
    before = writes(urls["restart"])
    answer = send(urls["restart"], phase_record(namespace, "llm", "Failed", attempt=0))
    assert answer.status == 202, answer.text
    assert writes(urls["restart"]) == before
    assert (gateway.get(JOBS, namespace, "llm") or {})["metadata"]["resourceVersion"] == \
        job["metadata"]["resourceVersion"]
    assert (gateway.get(TRAINJOBS, namespace, "llm-workload") or {})["metadata"]["uid"] == trainjob["metadata"]["uid"]


# -- through the local stack's Broker, about the project's own Jobs ---------------------------

RUNS = cre_workloadruns(GROUP)
MANAGED = "crefn.dev/managed"


@dataclass
class Local:
    stack: Stack
    gw: Gateway
    ns: str
    slack: Receiver
    pagerduty: Receiver


@pytest.fixture(scope="module")
def local(cluster: LocalCluster, gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    """The local stack on the session's API server, its sources confined to a namespace of its own, with
    Slack and PagerDuty stand-ins configured beside its Alertmanager, and resync ticking every 2 s (as deployed, it
    repairs a Job whose events raced, e.g. a phase seen before launch recorded its attempt)."""
    ns = f"forged-{uuid.uuid4().hex[:6]}"
    gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    slack, pagerduty = Receiver(200, b"ok"), Receiver(202, b'{"status":"success"}')
    settings = {"CREFN_SLACK_WEBHOOK_URL": slack.url, "CREFN_PAGERDUTY_URL": pagerduty.url,
                "CREFN_PAGERDUTY_ROUTING_KEY": "k", "CREFN_LOG_LEVEL": "WARNING"}
    out = tmp_path_factory.mktemp("stack")
    try:
        with start_stack(out, Timeline(io.StringIO()), settings, 2, out / "work", GROUP, cluster, ns) as stack:
            assert stack.alertmanager is not None, "the local stack runs an Alertmanager"
            yield Local(stack, gateway, ns, slack, pagerduty)
    finally:
        with contextlib.suppress(CrefnError):
            for job in gateway.list_all(JOBS, ns):
                gateway.delete(JOBS, ns, job["metadata"]["name"])
        slack.close()
        pagerduty.close()


def settle(local: Local) -> None:
    assert local.stack.broker.wait_idle(timeout=60, quiet=1.0), local.stack.broker.summary()[-10:]


def running_job(local: Local, name: str) -> dict[str, Any]:
    """A managed Job the stack has launched, its TrainJob running (no Trainer moves it), as stored."""
    local.gw.create(JOBS, local.ns, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "Job", "metadata": {"name": name, "labels": {MANAGED: "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"},
                                           "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3"}}},
                 "checkpoint": {"pvcName": "p", "maxRestarts": 2}}})

    def running() -> bool:
        status = (local.gw.get(JOBS, local.ns, name) or {}).get("status") or {}
        return bool(status.get("workloadStartTime")) and any(
            c["type"] == "InProgress" and c["status"] == "True" and c["reason"] == "WorkloadRunning"
            for c in status.get("conditions") or [])

    assert wait_until(running, 60), local.stack.broker.summary()[-10:]
    settle(local)
    return local.gw.get(JOBS, local.ns, name) or {}


def decision(type_: str, ns: str, job: str, data: dict[str, Any], **ext: str) -> Record:
    return {"attributes": {"specversion": "1.0", "id": str(uuid.uuid4()), "source": "/crefn/restart", "type": type_,
                           "subject": f"{ns}/{job}", "namespace": ns, "job": job, "partitionkey": f"{ns}/{job}",
                           **ext}, "data": {"job": {"name": job, "namespace": ns}, **data}}


def forged_failure(ns: str, job: str) -> Record:
    return decision("dev.crefn.job.condition.changed", ns, job, {
        "previous": {"type": "InProgress", "reason": "WorkloadRunning", "message": ""},
        "new": {"type": "Failed", "reason": "WorkloadFailed", "message": "Workload failed: made up <!channel>"},
        "restartCount": 2, "failedNodes": [{"name": "gpu-node-66", "reason": "WorkloadFailed"}]},
        jobcondition="Failed")


def forged_decisions(ns: str, job: str) -> list[Record]:
    """Every decision event `alert` takes, each saying something the Job does not."""
    return [
        forged_failure(ns, job),
        decision("dev.crefn.job.restarted", ns, job, {
            "attempt": 1, "maxRestarts": 2, "notBefore": datetime.now(UTC).isoformat(),
            "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                 "name": f"{job}-workload", "namespace": ns, "attempt": 0}}),
        decision("dev.crefn.job.hardware.failed", ns, job, {
            "nodes": ["gpu-node-66"], "message": "Hardware failure detected on node(s): [gpu-node-66]"}),
        decision("dev.crefn.job.validation", ns, job, {
            "failed": True, "reason": "ThresholdViolated", "message": "made up"}),
    ]


@dataclass(frozen=True)
class Snapshot:
    versions: dict[str, str]
    writes: dict[str, int]
    alerts: list[dict[str, Any]]
    slack: int
    pagerduty: int


def snapshot(local: Local, objects: dict[str, tuple[Any, str]]) -> Snapshot:
    versions = {what: str(((local.gw.get(res, local.ns, name) or {}).get("metadata") or {}).get("resourceVersion"))
                for what, (res, name) in objects.items()}
    assert local.stack.alertmanager is not None
    alerts = sorted((a for a in local.stack.alertmanager.alerts() if a["labels"].get("namespace") == local.ns),
                    key=lambda a: (a["labels"]["job"], a["labels"]["alertname"]))
    # `measure` hears only its PingSource, whose ticks sample every measurement on their own clock (a Warning a minute
    # for a missing LogProfile): no forged event reaches it, and its writes say nothing of them
    return Snapshot(versions, {t: writes(f.url) for t, f in local.stack.functions.items() if t != "measure"}, alerts,
                    len(local.slack.requests), len(local.pagerduty.requests))


def post(local: Local, records: list[Record]) -> list[tuple[str, str, int]]:
    """Post each record to the Broker as any pod could, let it deliver, and give every delivery's
    (event type, Trigger, answer)."""
    for record in records:
        assert send(local.stack.broker.url, record).status == 202
    settle(local)
    ids = {r["attributes"]["id"] for r in records}
    return [(o.record["attributes"]["type"], o.trigger, o.status) for o in local.stack.broker.outcomes
            if o.record["attributes"]["id"] in ids]


@pytest.mark.stack
def test_forged_events_about_a_running_managed_job_change_nothing_and_page_no_one(local: Local) -> None:
    job = running_job(local, "llm")
    trainjob = local.gw.get(TRAINJOBS, local.ns, "llm-workload") or {}
    success = phase_record(local.ns, "llm", "Succeeded", reason="Completed")
    success["data"]["workload"]["uid"] = trainjob["metadata"]["uid"]  # the current attempt, named exactly
    success["attributes"]["id"] = str(uuid.uuid4())
    before = snapshot(local, {"job": (JOBS, "llm"), "trainjob": (TRAINJOBS, "llm-workload")})
    answers = post(local, [success, *forged_decisions(local.ns, "llm"),
                           apiserver_record("delete", job, JOBS, local.gw.host)])
    assert {(t, trigger) for t, trigger, _ in answers} >= {
        ("dev.crefn.workload.phase", "crefn-status-phases"),
        ("dev.crefn.job.condition.changed", "crefn-alert-conditions"),
        ("dev.crefn.job.restarted", "crefn-alert-restarts"),
        ("dev.crefn.job.hardware.failed", "crefn-alert-hardware"),
        ("dev.crefn.job.validation", "crefn-alert-validations"),
        ("dev.knative.apiserver.resource.delete", "crefn-alert-job-deletes"),
        ("dev.knative.apiserver.resource.delete", "crefn-workloadrun-job-deletes")}, answers
    assert {status for _, _, status in answers} == {202}, answers
    after = snapshot(local, {"job": (JOBS, "llm"), "trainjob": (TRAINJOBS, "llm-workload")})
    assert after == before
    true = [(c["type"], c["reason"]) for c in (local.gw.get(JOBS, local.ns, "llm") or {})["status"]["conditions"]
            if c["status"] == "True"]
    assert true == [("InProgress", "WorkloadRunning")]


@pytest.mark.stack
def test_forged_resolves_of_a_real_incident_resolve_nothing(local: Local) -> None:
    running_job(local, "eval")
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [("InProgress", "False", "NotApplicable"), ("Succeeded", "True", "WorkloadCompleted"),
                  ("Failed", "False", "NotApplicable"), ("HardwareFailed", "True", "HardwareFailureDetected"),
                  ("ValidationFailed", "True", "ThresholdViolated")]
    job = local.gw.patch(JOBS, local.ns, "eval", {"status": {"conditions": [
        {"type": t, "status": s, "reason": r, "message": f"{r} (as validate and nodehealth write it)",
         "observedGeneration": 1, "lastTransitionTime": now} for t, s, r in conditions]}}, status=True)
    assert local.stack.alertmanager is not None
    am = local.stack.alertmanager

    def raised() -> set[str]:
        return {a["labels"]["alertname"] for a in am.alerts(active="true") if a["labels"].get("job") == "eval"
                and a["labels"].get("namespace") == local.ns}

    assert wait_until(lambda: raised() == {"CREJobHardwareFailed", "CREJobValidationFailed"}, 30), raised()

    def finished() -> bool:  # the tick's last write for a finished Job: at rest from then on
        labels = ((local.gw.get(JOBS, local.ns, "eval") or {}).get("metadata") or {}).get("labels") or {}
        return labels.get("crefn.dev/finished") == "true"

    assert wait_until(finished, 30)
    settle(local)
    passed = decision("dev.crefn.job.validation", local.ns, "eval", {
        "failed": False, "reason": "ThresholdsMet", "message": "All performance thresholds satisfied"})
    replaced = {**job, "metadata": {**job["metadata"], "uid": str(uuid.uuid4())}}  # "another uid": made up
    before = snapshot(local, {"job": (JOBS, "eval")})
    answers = post(local, [passed, apiserver_record("delete", job, JOBS, local.gw.host),
                           apiserver_record("delete", replaced, JOBS, local.gw.host)])
    assert {status for _, _, status in answers} == {202}, answers
    assert ("dev.crefn.job.validation", "crefn-alert-validations", 202) in answers
    assert snapshot(local, {"job": (JOBS, "eval")}) == before
    assert raised() == {"CREJobHardwareFailed", "CREJobValidationFailed"}


def workloadrun(ns: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "WorkloadRun",
            "metadata": {"name": "wr", "namespace": ns, "labels": {MANAGED: "true"}},
            "spec": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 1, "gpusPerNode": 1,
                     "framework": {"exec": {"command": ["true"]}}}}


@pytest.mark.stack
def test_forged_deletes_of_a_workloadruns_job_fail_nothing(local: Local) -> None:
    local.gw.create(RUNS, local.ns, workloadrun(local.ns))

    def started() -> bool:
        return (local.gw.get(JOBS, local.ns, "wr-job") or {}).get("status", {}).get("workloadStartTime") is not None

    assert wait_until(started, 60), local.stack.broker.summary()[-10:]
    settle(local)
    job = local.gw.get(JOBS, local.ns, "wr-job") or {}
    replaced = {**job, "metadata": {**job["metadata"], "uid": str(uuid.uuid4())}}  # still the run's, made-up uid
    stranger = {**job, "metadata": {**job["metadata"], "name": "never-was", "uid": str(uuid.uuid4())}}
    before = snapshot(local, {"run": (RUNS, "wr"), "job": (JOBS, "wr-job")})
    answers = post(local, [apiserver_record("delete", obj, JOBS, local.gw.host) for obj in (job, replaced, stranger)])
    assert [(trigger, status) for _, trigger, status in answers if trigger == "crefn-workloadrun-job-deletes"] == \
        [("crefn-workloadrun-job-deletes", 202)] * 3, answers
    assert snapshot(local, {"run": (RUNS, "wr"), "job": (JOBS, "wr-job")}) == before
    run = local.gw.get(RUNS, local.ns, "wr") or {}
    (true,) = [(c["type"], c["reason"]) for c in run["status"]["conditions"] if c["status"] == "True"]
    assert true == ("InProgress", "WorkflowCreated")


@pytest.mark.stack
def test_an_oversized_event_is_refused_by_the_broker_unread_and_changes_nothing(local: Local) -> None:
    """A forged failure padded past the 4 MiB body limit: the Broker answers 413 before reading it,
    delivers it to no function and keeps it as no dead letter; nothing is written and no one paged."""
    running_job(local, "big")
    record = forged_failure(local.ns, "big")
    record["data"]["new"]["message"] = "x" * (4 * 1024 * 1024)
    headers, body = encode(record)
    before = snapshot(local, {"job": (JOBS, "big")})
    port = int(local.stack.broker.url.rstrip("/").rsplit(":", 1)[1])
    status, text = raw(port, ce_head(len(body), headers=headers),
                       [body[i:i + 65536] for i in range(0, len(body), 65536)])
    assert (status, text) == (413, f"request body of {len(body)} bytes is over the limit of 4194304 bytes\n".encode())
    settle(local)
    assert [o for o in local.stack.broker.outcomes if o.record["attributes"]["id"] == record["attributes"]["id"]] == []
    assert snapshot(local, {"job": (JOBS, "big")}) == before
