"""Forged events change nothing (SPEC §4.3: no input makes a handler write anything it was not asked
to; §6.4: destructive decisions use fresh reads): events naming another tenant's Job (one not labelled
`crefn.dev/managed`, whose TrainJob has failed and whose bound has run out), with a payload claiming
it is managed, and events naming objects that do not exist, sent to the functions served over HTTP as
their ServiceAccounts. Each is answered 202, and no write reaches the API server: the objects'
resourceVersions are unchanged and the function's `crefn_kube_requests_total` counts no create,
patch, update or delete."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from functions.gateway import Gateway
from functions.resources import TRAINJOBS
from functions.transport import send
from localstack.apisource import apiserver_record
from tests.support.world import JOBS, Record, phase_record

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
