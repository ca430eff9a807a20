"""`launch` over HTTP on the real API server, as its ServiceAccount (SPEC §5): the TrainJob it creates
(labels, owner, workloadRef), adoption, stale attempts, name collisions, terminating objects, duplicates,
the API server going away (SPEC §4.3), the legacy CRE group, which Jobs it manages, and a Job older CRE
left InProgress and Failed read as Failed. The decision, pure: tests/functions/launch/test_decide.py."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.domain.trainjobs import replicated_jobs, with_pod_labels
from functions.runtime.client import send
from functions.runtime.errors import NotYet
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINING_RUNTIMES, TRAINJOBS
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import service_account_user
from tests.support.answers import moved
from tests.support.helpers import EARLIER, annotate_nodes, job_events, missing
from tests.support.inprocess import InProcessFunction
from tests.support.webhook import DenyingWebhook
from tests.support.world import JOBS, Relay, World, make_world, phase_record

# -- the decision (functions.launch.decide) --------------------------------------------------------


def trainjob(attempt: str | None = "0", owner_uid: str = "job-uid", terminating: bool = False) -> dict[str, Any]:
    """`llm-workload` of the Job `llm` (`owner_uid`), of an attempt of the functions (None: CRE's own, unlabelled)."""
    meta: dict[str, Any] = {"name": "llm-workload", "uid": "tj-uid", "resourceVersion": "7",
                            "labels": {"crefn.dev/attempt": attempt} if attempt is not None else {},
                            "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                                 "name": "llm", "uid": owner_uid, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = EARLIER
    return {"metadata": meta}


ADOPTED = "Workload TrainJob/llm-workload was already created by this Job and has been adopted"  # CRE's, verbatim
FOREIGN = "Workload TrainJob/llm-workload already exists and is not owned by this Job"  # CRE's, verbatim


POD_LABELS_RESERVED = ('spec.workloadMetadata.labels["crefn.dev/attempt"]: label key is reserved for the controller: '
                       '"crefn.dev/attempt" and "crefn.dev/managed" identify the workload\'s attempt and pods')


# -- the function on the real API server ----------------------------------------------------------


def test_launch_labels_owner_and_workload_ref(world: Callable[..., World], namespace: str) -> None:
    w = world()
    created = w.create_job()
    w.settle()
    tj = w.trainjob()
    assert tj is not None
    assert tj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm",
                                        "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
    owner = tj["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Job", "llm", created["metadata"]["uid"], True)
    assert tj["spec"]["trainer"]["numNodes"] == 2
    status = w.job()["status"]
    assert status["workloadRef"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                     "name": "llm-workload", "namespace": namespace}
    in_progress = next(c for c in status["conditions"] if c["type"] == "InProgress")
    assert in_progress["status"] == "True"
    assert "workloadStartTime" in status  # the TrainJob's first phase is Running


def test_a_long_job_names_its_trainjob_as_cre_does(world: Callable[..., World], namespace: str) -> None:
    """`<job>-workload` over 44 characters: CRE's `naming.Truncate` (`pkg/naming/naming.go`, hash printed
    `%05x`). `llama-pretrain-nightly-certification-4-workload` hashes to 0x098e2b8c: suffix `98e2b`."""
    w, name = world(), "llama-pretrain-nightly-certification-4"
    w.create_job(name)
    w.settle()
    assert w.job(name)["status"]["workloadRef"]["name"] == "llama-pretrain-nightly-certification-4-98e2b"
    tj = w.gw.get(TRAINJOBS, namespace, "llama-pretrain-nightly-certification-4-98e2b")
    assert tj is not None and tj["metadata"]["labels"]["nvcre.nvidia.com/job"] == name


def test_trainjob_held_by_a_finalizer_is_503_until_it_is_gone(functions: Callable[..., dict[str, str]],
                                                              world: Callable[..., World], gateway: Gateway,
                                                              namespace: str) -> None:
    urls = functions()
    w = world(urls)
    created = w.create_job()
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1}}, status=True)
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "llm-workload", "labels": {"crefn.dev/attempt": "0"}, "finalizers": ["example.com/x"],
                     "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                          "uid": created["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch"}}})
    gateway.delete(TRAINJOBS, namespace, "llm-workload")
    record = w.job_record()
    answer, counted = moved(urls["launch"], "launch", lambda: send(urls["launch"], record))
    assert answer.status == 503 and "terminating" in answer.text
    assert "retry-after" not in answer.headers  # when the finalizer goes is not known
    assert counted == {("503", "wait"): 1}  # a designed wait, not an error
    gateway.patch(TRAINJOBS, namespace, "llm-workload", {"metadata": {"finalizers": None}})
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created"
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


@pytest.mark.parametrize(("left", "retry_after"), [
    (timedelta(seconds=9, milliseconds=200), "10"), (timedelta(milliseconds=300), "1"), (timedelta(minutes=5), "300"),
], ids=["rounded-up", "under-a-second", "minutes"])
def test_a_launch_in_its_restart_grace_answers_when_to_come_back(world: Callable[..., World], gateway: Gateway,
                                                                cluster: LocalCluster, namespace: str,
                                                                left: timedelta, retry_after: str) -> None:
    """Over HTTP, against the API server, launch's clock fixed `left` before the grace's end: the 503
    carries `Retry-After` with the whole seconds left, rounded up (Knative's delivery can wait that long
    instead of retrying into the same 503)."""
    w = world()
    w.create_job()
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"annotations": {
        "crefn.dev/restart-not-before": "2026-11-30T12:00:10Z"}}})
    end = datetime(2026, 11, 30, 12, 0, 10, tzinfo=UTC)
    kubeconfig = cluster.kubeconfig_for(service_account_user("crefn-launch"))
    launch = InProcessFunction("launch", {"CREFN_KUBECONFIG": str(kubeconfig)}, clock=lambda: end - left).start()
    try:
        answer, counted = moved(launch.url, "launch", lambda: send(launch.url, w.job_record()))
    finally:
        launch.stop()
    assert answer.status == 503, answer.text
    assert counted == {("503", "wait"): 1}  # a designed wait, not an error
    assert answer.text == "restart grace not over: next TrainJob not before 2026-11-30T12:00:10+00:00"
    assert answer.headers["retry-after"] == retry_after
    assert w.trainjob() is None


def test_earlier_attempt_is_deleted_and_the_next_created_at_once(functions: Callable[..., dict[str, str]],
                                                                  world: Callable[..., World], gateway: Gateway,
                                                                  namespace: str) -> None:
    """The restart is committed but its delete not yet done: launch deletes the old attempt itself (by
    its uid) and creates the next one, no wait and no retry."""
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    old = w.trainjob()
    assert old is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "workloadRef": None}}, status=True)
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created", answer.text
    new = w.trainjob()
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    assert answer.json()["workload"]["uid"] == new["metadata"]["uid"] and not answer.json()["adopted"]
    job = w.job()
    assert job["status"]["workloadRef"]["name"] == "llm-workload"
    assert send(urls["launch"], w.job_record()).status == 202  # launched: nothing more to do


def test_an_event_of_a_job_holding_its_workload_costs_no_read(functions: Callable[..., dict[str, str]],
                                                             world: Callable[..., World], gateway: Gateway,
                                                             namespace: str) -> None:
    """The event's Job already has its workload: nothing to launch on its account, answered without a
    read; the same event without `workloadRef` reads the Job."""
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    record = w.job_record()
    before = job_reads(urls["launch"])
    assert send(urls["launch"], record).status == 202
    assert job_reads(urls["launch"]) == before
    record["data"]["status"]["workloadRef"] = None
    assert send(urls["launch"], record).status == 202  # the fresh Job has its workload
    assert job_reads(urls["launch"]) == before + 1


def job_reads(url: str) -> int:
    """The served function's GETs of CRE Jobs so far (its own metrics)."""
    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        found = re.findall(r'^crefn_kube_requests_total\{code="200",resource="jobs",verb="get"\} (\d+)\.0',
                           resp.read().decode(), re.M)
    return int(found[0]) if found else 0


def test_name_collision_fails_the_job(functions: Callable[..., dict[str, str]], world: Callable[..., World],
                                      gateway: Gateway, namespace: str) -> None:
    urls = functions()
    w = world(urls)
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "t"}}})
    w.create_job()
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert answer.json()["new"]["reason"] == "WorkloadCreationError"
    assert answer.json()["new"]["message"] == FOREIGN
    assert send(urls["launch"], w.job_record()).status == 202  # terminal now


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    urls = functions()
    batch_job = {"attributes": {**phase_record(namespace, "x", "Running")["attributes"],
                                "type": "dev.knative.apiserver.resource.update"},
                 "data": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": namespace}}}
    answer = send(urls["launch"], batch_job)
    assert answer.status == 400 and "expected nvcre.nvidia.com/v1alpha1 Job, got batch/v1/Job" in answer.text


@pytest.mark.own_process
def test_api_server_stopped_mid_test_is_503_then_recovers(functions: Callable[..., dict[str, str]],
                                                          world: Callable[..., World], cluster: LocalCluster,
                                                          namespace: str) -> None:
    """launch, and status with it (one stop of the API server for both); the 503 is counted as an error, not as
    a wait."""
    urls = functions(CREFN_KUBE_TIMEOUT_SECONDS="3")
    w = world(urls)
    w.create_job()
    record = w.job_record()
    cluster.stop_apiserver()
    try:
        answer, counted = moved(urls["launch"], "launch", lambda: send(urls["launch"], record))
        assert answer.status == 503 and "unreachable" in answer.text
        assert counted == {("503", "error"): 1}
        answer = send(urls["status"], phase_record(namespace, "llm", "Running"))
        assert answer.status == 503
    finally:
        cluster.start_apiserver()
    answer = send(urls["launch"], record)
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created"


def test_concurrent_duplicate_launches_create_one_trainjob(functions: Callable[..., dict[str, str]],
                                                           world: Callable[..., World], gateway: Gateway,
                                                           namespace: str) -> None:
    urls = functions()
    w = world(urls)
    w.create_job()
    record = w.job_record()
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(send(urls["launch"], record).status))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(answers) <= {200, 202, 409} and 200 in answers
    assert len(gateway.list_all(TRAINJOBS, namespace)) == 1


def test_adopt_after_a_lost_status_write(functions: Callable[..., dict[str, str]], world: Callable[..., World],
                                         gateway: Gateway, namespace: str) -> None:
    urls = functions()
    w = world(urls)
    w.create_job()
    w.settle()
    tj = w.trainjob()
    assert tj is not None
    gateway.patch(JOBS, namespace, "llm", {"status": {"workloadRef": None}}, status=True)  # as if never recorded
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.json()["adopted"] is True
    assert answer.json()["workload"]["uid"] == tj["metadata"]["uid"]
    status = w.job()["status"]
    assert status["workloadRef"]["name"] == "llm-workload"
    assert w.final()[:2] == ("InProgress", "WorkloadAdopted")
    in_progress = next(c for c in status["conditions"] if c["type"] == "InProgress")
    assert in_progress["message"] == ADOPTED  # CRE's adoption text


def test_cres_own_trainjob_is_adopted_labelled_and_kept_running(functions: Callable[..., dict[str, str]],
                                                                 world: Callable[..., World], gateway: Gateway,
                                                                 namespace: str) -> None:
    """CRE's TrainJob of the Job (labels as CRE puts them, no attempt label), its `workloadRef` write lost, or
    the switch between the two: adopted as CRE adopts, never deleted and replaced."""
    urls = functions()
    w = world(urls)
    job = w.create_job()
    cres = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm"},
                         "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                              "uid": job["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    held = gateway.create(TRAINJOBS, namespace, cres)
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.json()["adopted"] is True, answer.text
    tj = w.trainjob()
    assert tj is not None and tj["metadata"]["uid"] == held["metadata"]["uid"]  # the same object: kept running
    assert tj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm",
                                        "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}
    status = w.job()["status"]
    assert status["workloadRef"]["name"] == "llm-workload"
    in_progress = next(c for c in status["conditions"] if c["type"] == "InProgress")
    assert (in_progress["status"], in_progress["reason"], in_progress["message"]) == ("True", "WorkloadAdopted",
                                                                                      ADOPTED)


def test_the_real_crd_rejects_a_job_without_a_workload_variant(gateway: Gateway, namespace: str) -> None:
    """`launch`'s "no trainJob" path (in the table above) is for variants of newer CRE releases: today's
    CRD refuses a Job whose workload names none."""
    from functions.runtime.errors import PermanentError

    with pytest.raises(PermanentError, match=r"spec\.workload in body should have at least 1 properties"):
        gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                         "metadata": {"name": "llm"}, "spec": {"workload": {}}})


def test_legacy_cre_group(functions: Callable[..., dict[str, str]], world: Callable[..., World]) -> None:
    """CREFN_CRE_GROUP=cre.nvidia.com: early CRE releases, the same lifecycle, labels in that group."""
    w = world(functions(CREFN_CRE_GROUP="cre.nvidia.com"), group="cre.nvidia.com", install="installs/legacy-group")
    w.create_job()
    w.checkpoint_evidence()
    w.settle()
    tj = w.trainjob()
    assert tj is not None and tj["metadata"]["labels"]["cre.nvidia.com/job"] == "llm"
    assert tj["metadata"]["ownerReferences"][0]["apiVersion"] == "cre.nvidia.com/v1alpha1"
    for step in ("run", "fail", "run", "complete"):
        w.trainer(step)
        w.settle()
    assert w.final() == ("Succeeded", "WorkloadCompleted", 1)
    assert w.trainjobs_created() == 2


@pytest.mark.parametrize("manage_all", [False, True], ids=["labelled-only", "manage-all"])
def test_unlabelled_jobs_are_managed_only_with_manage_all(manage_all: bool, functions: Callable[..., dict[str, str]],
                                                          world: Callable[..., World]) -> None:
    w = world(functions(CREFN_MANAGE_ALL="true") if manage_all else functions())
    w.create_job(managed=False)
    w.settle()
    assert (w.trainjob() is not None) is manage_all
    if manage_all:
        assert "crefn.dev/managed" not in (w.trainjob() or {})["metadata"]["labels"]
    else:
        assert {d.status for d in w.answers("launch")} == {202}


ENV_ERRORS = "; ".join(f'spec.trainer.env[{i}].name: Invalid value: "BAD-{i}": a valid environment variable name '
                       f'must consist of alphabetic characters, digits, "_", "-", or "."' for i in range(4))


@pytest.mark.parametrize(("denial", "kept"), [
    (f"TrainingRuntime torch-distributed is not ready: {ENV_ERRORS}", None),
    (f"TrainingRuntime torch-distributed is not ready: {ENV_ERRORS}; {ENV_ERRORS}", 1009),
], ids=["whole", "over-the-1024-byte-cap"])
def test_a_refused_create_is_retried_with_a_warning_and_never_fails_the_job(
        denial: str, kept: int | None, functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str,
        relay: Any, tmp_path: Path) -> None:
    """CRE's Warning `WorkloadCreationError` quotes the API's message in full (`Failed to create TrainJob/<name>:
    <err>`), the note capped at 1024 bytes with `... [truncated]` (`kept`: the note's characters before it)."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = f"refused-{uuid.uuid4().hex[:6]}"
    world.create_job(name=job)
    probe = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": "probe", "labels": {"nvcre.nvidia.com/job": job}},
             "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    webhook = DenyingWebhook(gateway, tmp_path, f"deny-{job}", object_selector={
        "matchLabels": {"nvcre.nvidia.com/job": job}}, message=denial,
        rules=[{"operations": ["CREATE"], "apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                "resources": ["trainjobs"]}], probe=(TRAINJOBS, namespace, probe))
    try:
        probed = len(webhook.reviews)
        record = world.job_record(job)
        for _ in range(2):  # Knative's retries: the same answer, one Event
            answer = send(urls["launch"], record)
            assert answer.status == 503, answer.text
            assert answer.text.startswith(f'TrainJob {job}-workload refused: admission webhook "deny-{job}.crefn.test" '
                                          'denied the request: TrainingRuntime torch-distributed is not ready: ')
            assert len(answer.text.strip()) == 300 and "\n" not in answer.text.strip()  # one line, bounded
        assert len(webhook.reviews) == probed + 2
        events = job_events(gateway, namespace, job)
        assert [(e["type"], e["reason"]) for e in events] == [("Warning", "WorkloadCreationError")]
        whole = f'Failed to create TrainJob/{job}-workload: admission webhook "deny-{job}.crefn.test" denied the ' \
            f'request: {denial}'
        assert events[0]["message"] == (whole if kept is None else whole[:kept] + "... [truncated]")
        assert len(events[0]["message"].encode()) == (len(whole) if kept is None else 1024)
        status = world.job(job).get("status") or {}
        assert not status.get("conditions") and gateway.get(TRAINJOBS, namespace, f"{job}-workload") is None
    finally:
        webhook.remove()
    relay.attach(world)
    world.resync_url = urls["resync"]
    world.tick()  # the resync tick retries the create once the webhook is gone
    assert gateway.get(TRAINJOBS, namespace, f"{job}-workload") is not None
    assert world.final(job)[0] == "InProgress"
    assert [e["reason"] for e in job_events(gateway, namespace, job)] == ["WorkloadCreationError", "WorkloadCreated"]


def test_a_foreign_object_fails_the_job_with_its_event(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                       namespace: str) -> None:
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    world.create_job()
    annotate_nodes(gateway, namespace, "gpu-node-01")
    gateway.create(TRAINJOBS, namespace, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "metadata": {"name": "llm-workload"}, "spec": {"runtimeRef": {"name": "x"}}})
    answer = send(urls["launch"], world.job_record())
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    assert world.final()[:2] == ("Failed", "WorkloadCreationError")
    assert world.job()["status"]["failedNodes"] == [{  # the CRD's reasons: a creation error is a failed workload
        "name": "gpu-node-01", "reason": "WorkloadFailed",
        "message": FOREIGN}]
    failed = next(c for c in world.job()["status"]["conditions"] if c["type"] == "Failed")
    assert failed["message"] == FOREIGN
    # CRE's Job controller: the same words as the condition message and the Event note
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(gateway, namespace)] == [
        ("Warning", "WorkloadCreationError", FOREIGN)]


def test_workload_metadata_labels_reach_the_trainjob(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                    namespace: str) -> None:
    """The refreshed Job CRD has spec.workloadMetadata: the labels are stored and carried, not pruned."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = world.create_job()
    gateway.delete(JOBS, namespace, "llm")
    spec = {**job["spec"], "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}}
    gateway.create(JOBS, namespace, {"apiVersion": job["apiVersion"], "kind": "Job",
                                     "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                                     "spec": spec})
    assert world.job()["spec"]["workloadMetadata"] == {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}}
    assert send(urls["launch"], world.job_record()).status == 200
    trainjob = gateway.get(TRAINJOBS, namespace, "llm-workload") or {}
    assert trainjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"


def test_a_label_of_the_project_in_workload_metadata_fails_the_build(functions: Callable[..., dict[str, str]],
                                                                      gateway: Gateway, namespace: str) -> None:
    """`crefn.dev/attempt` in `workloadMetadata.labels` passes the CRD (CRE reserves only its own keys there) and
    is refused at build as CRE refuses its reserved keys (`ValidateLabels`, then `Failed to build workload: …`
    with `WorkloadCreationError`): never silently overwritten by the attempt label, no TrainJob made."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    job = world.create_job()
    gateway.delete(JOBS, namespace, "llm")
    spec = {**job["spec"], "workloadMetadata": {"labels": {"crefn.dev/attempt": "7", "team": "ml"}}}
    gateway.create(JOBS, namespace, {"apiVersion": job["apiVersion"], "kind": "Job",
                                     "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                                     "spec": spec})
    answer = send(urls["launch"], world.job_record())
    assert answer.status == 200 and answer.ce["jobcondition"] == "Failed"
    message = f"Failed to build workload: {POD_LABELS_RESERVED}"
    failed = next(c for c in world.job()["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == ("WorkloadCreationError", message)
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(gateway, namespace)] == [
        ("Warning", "WorkloadCreationError", message)]


def test_the_pod_label_patch_passes_the_real_trainer_crd(world: Callable[..., World]) -> None:
    """The runtime patch is stored whole (1.20 prunes unknown fields silently) and the admission rules
    of the real TrainJob CRD accept it."""
    w = world()
    w.create_job(max_restarts=0)
    w.settle()
    stored = w.trainjob()
    assert stored is not None
    (patch,) = stored["spec"]["runtimePatches"]
    sent = with_pod_labels({"runtimeRef": {"name": "torch-distributed"}}, "llm", 0, "nvcre.nvidia.com")
    assert missing(sent["runtimePatches"][0], patch) == []


def test_the_runtimes_replicated_jobs_win(world: Callable[..., World]) -> None:
    """A TrainingRuntime with an MPI launcher: its pods are labelled too (CRE labels only the workers)."""
    assert replicated_jobs({"runtimeRef": {"name": "x"}}, ("launcher", "node")) == ["launcher", "node"]
    w = world()
    container = {"template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}
    w.gw.create(TRAINING_RUNTIMES, w.ns, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": {"name": "mpi-rt"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "launcher", "replicas": 1, **container},
                                                          {"name": "node", "replicas": 1, **container}]}}}})
    w.gw.create(w.jobs, w.ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                               "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
                               "spec": {"workload": {"trainJob": {"runtimeRef": {
                                   "name": "mpi-rt", "kind": "TrainingRuntime"}}}}})
    w.settle()
    stored = w.trainjob()
    assert stored is not None
    (patch,) = stored["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "node"]


def test_a_dual_true_job_reads_failed(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                      namespace: str) -> None:
    """Older CRE wrote InProgress=True and Failed=True on a timeout: the functions read Failed."""
    urls = functions()
    world = make_world(gateway, namespace, urls, poll=False)
    world.create_job()
    stamp = "2026-11-30T10:00:00Z"
    gateway.patch(JOBS, namespace, "llm", {"status": {"conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadRunning", "message": "",
         "lastTransitionTime": stamp},
        {"type": "Failed", "status": "True", "reason": "JobTimedOut", "message": "Job exceeded timeoutPerJob",
         "lastTransitionTime": stamp}]}}, status=True)
    answer = send(urls["launch"], world.job_record())
    assert (answer.status, answer.text) == (202, "")  # terminal: Failed wins over InProgress
    assert gateway.get(TRAINJOBS, namespace, "llm-workload") is None


def test_the_creator_writes_the_first_phase_and_status_answers_the_creation_unread(
        functions: Callable[..., dict[str, str]], world: Callable[..., World], relay: Relay, namespace: str) -> None:
    """launch decides the first phase of the TrainJob it created on what its create and status write returned
    (CRE's next reconcile), and sends its `job.condition.changed`; the creation's `workload.phase`, through
    `phase`, is answered 202 by `status` without a read."""
    urls = functions()
    w = world(urls)
    w.create_job()
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.created", answer.text
    status = w.job()["status"]
    (running,) = [c for c in status["conditions"] if c["status"] == "True"]
    assert (running["type"], running["reason"], running["message"]) == (
        "InProgress", "WorkloadRunning", "Workload TrainJob/llm-workload is running")
    assert status["workloadStartTime"] and status["workloadRef"]["name"] == "llm-workload"
    (changed,) = [r for r in relay.received if r["attributes"]["type"] == "dev.crefn.job.condition.changed"]
    assert changed["attributes"]["source"].endswith("/launch")
    assert (changed["data"]["previous"]["reason"], changed["data"]["new"]["reason"]) == (
        "WorkloadCreated", "WorkloadRunning")
    tj = w.trainjob()
    assert tj is not None
    assert tj["metadata"]["annotations"] == {"crefn.dev/first-phase": "creator"}
    created = send(urls["phase"], apiserver_record("add", tj, TRAINJOBS, "https://127.0.0.1")).event()
    updated = send(urls["phase"], apiserver_record("update", tj, TRAINJOBS, "https://127.0.0.1")).event()
    assert created is not None and created["data"]["created"] is True
    assert updated is not None and updated["data"]["created"] is None
    # the Job put back as before the first phase: status would write it on a read, and does not for the creation
    created_text = "Workload TrainJob/llm-workload created and is starting"
    conditions = [{**c, "reason": "WorkloadCreated", "message": created_text} if c["type"] == "InProgress" else c
                  for c in status["conditions"]]
    w.gw.patch(JOBS, namespace, "llm", {"status": {"conditions": conditions, "workloadStartTime": None}}, status=True)
    before = w.job()["metadata"]["resourceVersion"]
    assert send(urls["status"], created).status == 202
    assert w.job()["metadata"]["resourceVersion"] == before
    assert send(urls["status"], updated).status == 200
    assert w.job()["status"]["workloadStartTime"]


def test_without_k_sink_the_first_phase_is_left_to_the_tick(world: Callable[..., World], cluster: LocalCluster,
                                                            namespace: str) -> None:
    """A first phase whose event cannot be sent is not written: the Job shows WorkloadCreated, the answer
    says why, and the tick (which does send) writes it."""
    from functions.launch import read as launch
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings

    w = world()
    w.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=0))
    assert not ctx.settings.k_sink
    outcome = launch.handle(to_envelope(w.job_record()), ctx)
    assert outcome.reply is not None and outcome.reply.type == "dev.crefn.workload.created"
    assert "not followed up: K_SINK is not set" in outcome.reason
    status = w.job()["status"]
    (true,) = [c for c in status["conditions"] if c["status"] == "True"]
    assert true["reason"] == "WorkloadCreated" and "workloadStartTime" not in status
    w.tick()
    (true,) = [c for c in w.job()["status"]["conditions"] if c["status"] == "True"]
    assert true["reason"] == "WorkloadRunning"


@pytest.mark.own_process  # served in the test process, every function would share one set of metrics
def test_a_follow_up_that_fails_is_logged_and_counted_though_the_answer_is_200(
        serve: Callable[..., Any], world: Callable[..., World], cluster: LocalCluster, namespace: str) -> None:
    """The TrainJob created, its first phase cannot be announced (K_SINK down): the answer is the 200 with
    the creation's event, and its log line and `crefn_decisions_total` say the follow-up failed."""
    from tests.support.helpers import closed_port

    w = world()
    w.create_job()
    served = serve("launch", CREFN_KUBECONFIG=str(cluster.kubeconfig_for(service_account_user("crefn-launch"))),
                   K_SINK=f"http://127.0.0.1:{closed_port()}/", CREFN_LOG_LEVEL="INFO",
                   CREFN_RESTART_GRACE_SECONDS="0")
    answer = send(served.url, w.job_record())
    assert answer.status == 200 and answer.headers["ce-type"] == "dev.crefn.workload.created"
    assert served.log_path is not None
    (line,) = [json.loads(text) for text in served.log_path.read_text().splitlines() if '"status": 200' in text]
    assert line["message"] == ("replied dev.crefn.workload.created: Workload TrainJob/llm-workload created and is "
                              "starting; its event not sent: K_SINK: unreachable ([Errno 111] Connection refused)")
    with urllib.request.urlopen(served.url + "metrics", timeout=10) as resp:
        counted = [text for text in resp.read().decode().splitlines() if text.startswith("crefn_decisions_total")]
    assert sorted(counted) == ['crefn_decisions_total{decision="followup:failed",function="launch"} 1.0',
                               'crefn_decisions_total{decision="reply:workload.created",function="launch"} 1.0']


def restarted_with_grace(w: World, namespace: str, ends: datetime, status: dict[str, Any] | None = None) -> Any:
    """A launched Job as a restart leaves it with a grace ending at `ends` (its annotation, `restartCount` 1, no
    workload, the TrainJob deleted, `status` added): the Job's update event."""
    w.create_job()
    w.settle()
    w.gw.patch(JOBS, namespace, "llm", {"metadata": {"annotations": {
        "crefn.dev/restart-not-before": ends.strftime("%Y-%m-%dT%H:%M:%SZ")}}})
    w.gw.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "workloadRef": None, **(status or {})}},
               status=True)
    w.gw.delete(TRAINJOBS, namespace, "llm-workload")  # as the restart does
    return w.job_record()


def test_a_restart_grace_the_event_shows_is_waited_for_without_a_read(world: Callable[..., World],
                                                                      cluster: LocalCluster, namespace: str) -> None:
    """Knative retries the 503 until the grace is over: no retry reads anything (the runtime neither); the
    one after it reads the Job fresh and launches."""
    from functions.launch import read as launch
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings
    from tests.support.helpers import CountingGateway

    w = world()
    ends = datetime.now(UTC) + timedelta(minutes=10)
    record = restarted_with_grace(w, namespace, ends)
    counting = CountingGateway(cluster.gateway())
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=30), gateway=counting)
    with pytest.raises(NotYet) as waited:
        launch.handle(to_envelope(record), ctx)
    assert "restart grace not over" in str(waited.value) and 540 < (waited.value.retry_after or 0) <= 600
    assert counting.calls == []
    later = Context(Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=30), gateway=counting,
                    clock=lambda: ends + timedelta(seconds=1))
    outcome = launch.handle(to_envelope(record), later)
    assert outcome.reply is not None and outcome.reply.type == "dev.crefn.workload.created"
    assert [m for m, path in counting.calls if path.endswith("/jobs/llm")] == ["GET"]


def test_a_grace_recorded_under_another_setting_is_launched_by_launch_once_over(
        world: Callable[..., World], cluster: LocalCluster, namespace: str) -> None:
    """The grace set to 0 while a restart waited: `restart` leaves the next attempt to `launch`
    (`functions.domain.grace.none_to_wait`), which waits for the recorded grace unread, then reads the Job and
    launches it, rather than answering "restart launches it" as for a Job with no grace at all."""
    from functions.launch import read as launch
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings
    from tests.support.helpers import CountingGateway

    w = world()
    ends = datetime.now(UTC) + timedelta(seconds=20)
    record = restarted_with_grace(w, namespace, ends, {"conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadRestarting",
         "message": "Restarting workload from checkpoint (restart 1/2)",
         "lastTransitionTime": "2026-11-30T10:00:00Z"}]})
    counting = CountingGateway(cluster.gateway())
    settings = Settings(kubeconfig=str(cluster.kubeconfig), restart_grace_seconds=0)
    with pytest.raises(NotYet) as waited:
        launch.handle(to_envelope(record), Context(settings, gateway=counting))
    assert "restart grace not over" in str(waited.value) and counting.calls == []
    later = Context(settings, gateway=counting, clock=lambda: ends + timedelta(seconds=1))
    outcome = launch.handle(to_envelope(record), later)
    assert outcome.reply is not None and outcome.reply.type == "dev.crefn.workload.created"
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"
