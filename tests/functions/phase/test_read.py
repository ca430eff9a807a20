"""The `phase` function over real HTTP, served by functions-framework (SPEC §3, §4, §5); a goodput change
reaches `status` through it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.phase import read as phase_handler
from functions.runtime.client import Answer, post, send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS, cre_goodput, cre_jobs
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import service_account_user
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support import paths
from tests.support.helpers import unreachable_kubeconfig
from tests.support.stall import GOODPUT, STARTUP_MESSAGE, S, condition, create_job, hand_made_goodput, measure, now_at
from tests.support.world import World

GOLDEN = sorted((paths.GOLDEN / "phase").glob("*.json"))
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def phase(serve: Callable[..., ServedFunction]) -> ServedFunction:
    return serve("phase")


def check_reply(answer: Answer, golden: dict[str, Any]) -> None:
    assert answer.status == golden["status"], answer.text
    assert answer.headers["content-type"] == "application/json"
    for key, value in golden["attributes"].items():
        assert answer.ce[key] == value, key
    data = answer.json()
    observed = datetime.fromisoformat(data.pop("observedAt").replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - observed).total_seconds()) < 60
    assert data == golden["data"]


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
@pytest.mark.parametrize("golden_path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_resource_mode(phase: ServedFunction, golden_path: Path, structured: bool) -> None:
    golden = json.loads(golden_path.read_text())
    check_reply(send(phase.url, load_sample(golden_path.stem), structured=structured), golden)


def test_trace_context_is_carried_over(phase: ServedFunction) -> None:
    record = load_sample("trainjob-resource-update-running")
    record["attributes"] |= {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    answer = send(phase.url, record)
    assert answer.ce["tracestate"] == "vendor=1" and answer.headers["traceparent"] == answer.ce["traceparent"]
    assert child_of(answer.ce["traceparent"], TRACEPARENT)


def test_w3c_traceparent_header_is_carried_over(phase: ServedFunction) -> None:
    from functions.runtime.codec import encode

    headers, body = encode(load_sample("trainjob-resource-add"))
    answer = post(phase.url, {**headers, "traceparent": TRACEPARENT}, body)
    assert answer.status == 200 and child_of(answer.ce["traceparent"], TRACEPARENT)


def child_of(traceparent: str, parent: str) -> bool:
    """Same version, trace and flags as the parent; a span id of its own."""
    mine, theirs = traceparent.split("-"), parent.split("-")
    return mine[:2] + mine[3:] == theirs[:2] + theirs[3:] and mine[2] != theirs[2] and len(mine[2]) == 16


def test_reply_ids_are_fresh(phase: ServedFunction) -> None:
    record = load_sample("trainjob-resource-add")
    ids = {send(phase.url, record).ce["id"] for _ in range(3)}
    assert len(ids) == 3


def test_not_owned_by_a_cre_job_is_202(phase: ServedFunction) -> None:
    record = load_sample("trainjob-resource-add")
    meta = record["data"]["metadata"]
    meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "u", "controller": True}]
    meta["labels"] = {}
    answer = send(phase.url, record)
    assert answer.status == 202 and answer.body == b""


def test_owner_found_by_label(phase: ServedFunction) -> None:
    record = load_sample("trainjob-resource-update-failed")
    record["data"]["metadata"]["ownerReferences"] = []
    answer = send(phase.url, record)
    assert answer.status == 200 and answer.ce["job"] == "llama-pretrain"


def bad(record_attrs: dict[str, Any], data: Any) -> dict[str, Any]:
    return {"attributes": record_attrs, "data": data}


def sample_attrs(**changes: Any) -> dict[str, Any]:
    attrs = dict(load_sample("trainjob-resource-add")["attributes"])
    for key, value in changes.items():
        if value is None:
            attrs.pop(key, None)
        else:
            attrs[key] = value
    return attrs


TRAINJOB = load_sample("trainjob-resource-add")["data"]
BAD_INPUT = [
    ("no-ce-headers", {"content-type": "application/json"}, b"{}", "not a CloudEvent"),
    ("batch", {"content-type": "application/cloudevents-batch+json"}, b"[]", "batch mode is not supported"),
    ("structured-not-json", {"content-type": "application/cloudevents+json"}, b"{nope", "not a CloudEvent"),
    ("structured-array", {"content-type": "application/cloudevents+json"}, b"[1]", "not a CloudEvent"),
]
BAD_RECORDS = [
    ("missing-source", bad(sample_attrs(source=None), TRAINJOB), "not a CloudEvent"),
    ("missing-type", bad(sample_attrs(type=None), TRAINJOB), "not a CloudEvent"),
    ("missing-specversion", bad(sample_attrs(specversion=None), TRAINJOB), "not a CloudEvent"),
    ("unknown-type", bad(sample_attrs(type="com.example.thing"), TRAINJOB), "unknown event type"),
    ("ping-to-phase", bad(sample_attrs(type="dev.knative.sources.ping"), {}), "unknown event type"),
    ("data-not-json", bad(sample_attrs(), b"<html>"), "not JSON"),
    ("data-array", bad(sample_attrs(), [TRAINJOB]), "must be a JSON object"),
    ("batch-job", bad(sample_attrs(), {**TRAINJOB, "apiVersion": "batch/v1", "kind": "Job"}),
     "expected TrainJob, got batch/v1/Job"),
    ("cre-job", bad(sample_attrs(), {**TRAINJOB, "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job"}),
     "expected TrainJob, got nvcre.nvidia.com/v1alpha1/Job"),
    ("conditions-not-a-list", bad(sample_attrs(), {**TRAINJOB, "status": {"conditions": "Failed"}}),
     "invalid TrainJob: status.conditions"),
    ("ref-wrong-kind", bad(sample_attrs(type="dev.knative.apiserver.ref.add"),
                           {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "namespace": "y"}),
     "expected TrainJob, got batch/v1/Job"),
    ("ref-core-kind-not-a-pod", bad(sample_attrs(type="dev.knative.apiserver.ref.add"),
                                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": "y"}),
     "expected TrainJob, got v1/ConfigMap"),
    ("ref-without-name", bad(sample_attrs(type="dev.knative.apiserver.ref.add"),
                             {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": ""}),
     "invalid object reference: name"),
]


@pytest.mark.parametrize(("headers", "body", "reason"), [r[1:] for r in BAD_INPUT], ids=[r[0] for r in BAD_INPUT])
def test_bad_requests_get_400_with_one_line(phase: ServedFunction, headers: dict[str, str], body: bytes,
                                            reason: str) -> None:
    answer = post(phase.url, headers, body)
    assert answer.status == 400 and reason in answer.text and "\n" not in answer.text


@pytest.mark.parametrize(("record", "reason"), [r[1:] for r in BAD_RECORDS], ids=[r[0] for r in BAD_RECORDS])
@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
def test_bad_events_get_400_with_one_line(phase: ServedFunction, record: dict[str, Any], reason: str,
                                          structured: bool) -> None:
    if structured and isinstance(record["data"], bytes):
        record = {**record, "data": record["data"].decode()}
    answer = send(phase.url, record, structured=structured)
    assert answer.status == 400, answer.text
    assert reason in answer.text and "\n" not in answer.text


def test_get_is_400(phase: ServedFunction) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(phase.url, timeout=10)
    with err.value:
        assert err.value.code == 400


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def mutate(obj: Any, path: list[str], value: Any) -> Any:
    if not path or not isinstance(obj, dict):
        return value
    key = path[0]
    return {**obj, key: mutate(obj.get(key), path[1:], value)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    type_=st.sampled_from(["dev.knative.apiserver.resource.add", "dev.knative.apiserver.resource.update",
                           "dev.knative.apiserver.resource.delete", "dev.knative.apiserver.ref.update",
                           "dev.crefn.workload.phase", "x"]),
    path=st.lists(st.sampled_from(["metadata", "spec", "status", "conditions", "name", "ownerReferences",
                                   "labels", "suspend", "managedBy", "apiVersion", "kind", "0"]), max_size=3),
    value=json_values,
    structured=st.booleans(),
    drop=st.sampled_from([None, "id", "source", "type", "specversion"]),
)
def test_random_and_mutated_events_never_crash(phase: ServedFunction, type_: str, path: list[str], value: Any,
                                               structured: bool, drop: str | None) -> None:
    attrs = sample_attrs(type=type_)
    if drop:
        attrs.pop(drop)
    answer = send(phase.url, {"attributes": attrs, "data": mutate(TRAINJOB, path, value)}, structured=structured)
    assert answer.status in (200, 202, 400), (answer.status, answer.text)
    if answer.status == 400:
        assert answer.text and "\n" not in answer.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=200), content_type=st.sampled_from(
    ["application/json", "application/cloudevents+json", "text/plain", "application/cloudevents-batch+json"]))
def test_random_bytes_never_crash(phase: ServedFunction, body: bytes, content_type: str) -> None:
    headers = {"content-type": content_type}
    if content_type == "application/json":
        headers |= {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "s",
                    "ce-type": "dev.knative.apiserver.resource.add"}
    answer = post(phase.url, headers, body)
    assert answer.status in (200, 202, 400), (answer.status, answer.text)


# -- Reference mode: the function reads the TrainJob from the real API server --------------------------


def seed_job(gw: Gateway, ns: str, job: str = "llama") -> tuple[dict[str, Any], dict[str, Any]]:
    created_job = gw.create(cre_jobs("nvcre.nvidia.com"), ns, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": job},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch"}}}}})
    trainjob = gw.create(TRAINJOBS, ns, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": f"{job}-workload", "labels": {"crefn.dev/attempt": "2"}, "ownerReferences": [{
            "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job,
            "uid": created_job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch"}}})
    return created_job, trainjob


def ref_event(verb: str, ns: str, name: str) -> dict[str, Any]:
    attrs = sample_attrs(type=f"dev.knative.apiserver.ref.{verb}", namespace=ns, name=name,
                         subject=f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}")
    return {"attributes": attrs,
            "data": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name, "namespace": ns}}


@pytest.fixture
def phase_kube(serve: Callable[..., ServedFunction], cluster: LocalCluster) -> ServedFunction:
    """phase authenticated as its ServiceAccount, with the RBAC of knative/."""
    return serve("phase", CREFN_KUBECONFIG=str(cluster.kubeconfig_for(service_account_user("crefn-phase"))))


def test_reference_mode_reads_the_object(phase_kube: ServedFunction, gateway: Gateway, namespace: str) -> None:
    _, trainjob = seed_job(gateway, namespace)
    name = trainjob["metadata"]["name"]
    answer = send(phase_kube.url, ref_event("add", namespace, name))
    assert answer.status == 200 and answer.ce["workloadphase"] == "Running"
    data = answer.json()
    assert data["workload"]["uid"] == trainjob["metadata"]["uid"] and data["workload"]["attempt"] == 2
    # the server defaults spec.managedBy: suspend shows it in the message
    gateway.patch(TRAINJOBS, namespace, name, {"spec": {"suspend": True}})
    answer = send(phase_kube.url, ref_event("update", namespace, name), structured=True)
    assert answer.ce["workloadphase"] == "Pending"
    assert answer.json()["message"].endswith("; managed by trainer.kubeflow.org/trainjob-controller")
    gateway.patch(TRAINJOBS, namespace, name, {"status": {"conditions": [{
        "type": "Failed", "status": "True", "reason": "JobsFailed", "message": "exit 1",
        "lastTransitionTime": "2026-11-02T09:00:00Z"}]}}, status=True)
    answer = send(phase_kube.url, ref_event("update", namespace, name))
    assert (answer.ce["workloadphase"], answer.json()["reason"]) == ("Failed", "JobsFailed")


def test_reference_mode_missing_object_is_a_delete(phase_kube: ServedFunction, gateway: Gateway,
                                                   namespace: str) -> None:
    _, trainjob = seed_job(gateway, namespace)
    name = trainjob["metadata"]["name"]
    gateway.patch(cre_jobs("nvcre.nvidia.com"), namespace, "llama", {"status": {"restartCount": 2, "workloadRef": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name,
        "namespace": namespace}}}, status=True)
    gateway.delete(TRAINJOBS, namespace, name)
    answer = send(phase_kube.url, ref_event("delete", namespace, name))
    assert answer.status == 200, answer.text
    data = answer.json()
    assert (data["phase"], data["reason"], data["message"]) == (
        "Failed", "WorkloadDeleted", f"Workload TrainJob/{name} was deleted")
    assert data["job"] == {"name": "llama", "namespace": namespace} and data["workload"]["attempt"] == 2


def test_reference_mode_gone_and_unknown_is_202(phase_kube: ServedFunction, namespace: str) -> None:
    answer = send(phase_kube.url, ref_event("delete", namespace, "never-existed"))
    assert answer.status == 202


def test_reference_mode_api_unreachable_is_503(serve: Callable[..., ServedFunction], tmp_path: Path) -> None:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    served = serve("phase", CREFN_KUBECONFIG=str(kubeconfig), CREFN_KUBE_TIMEOUT_SECONDS="2")
    answer = send(served.url, ref_event("update", "ns", "tj"))
    assert answer.status == 503 and "unreachable" in answer.text
    # Resource mode needs no API server at all
    assert send(served.url, load_sample("trainjob-resource-add")).status == 200


# -- GoodputMeasurement changes (Resource mode, the crefn-goodput source) ----------------------------


def goodput_record(ns: str, job: str, name: str = "", labels: dict[str, str] | None = None,
                   job_ref: dict[str, str] | None = None) -> dict[str, Any]:
    gm = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
          "metadata": {"name": name or f"{job}-goodput", "namespace": ns, "labels": labels or {}},
          "spec": {"jobRef": {"kind": "Job", "name": job} if job_ref is None else job_ref, "logProfileRef": "p"},
          "status": {"lastStepTimestamp": "2026-11-30T10:00:00Z", "avgStepTimeSec": "2.5"}}
    return apiserver_record("update", gm, cre_goodput("nvcre.nvidia.com"), "https://127.0.0.1")


def test_a_goodput_change_resends_its_jobs_trainjob_phase(phase_kube: ServedFunction, gateway: Gateway,
                                                          namespace: str) -> None:
    _, trainjob = seed_job(gateway, namespace)
    for record in (goodput_record(namespace, "llama"),  # by spec.jobRef
                   goodput_record(namespace, "", "by-label", labels={"nvcre.nvidia.com/job": "llama"}, job_ref={})):
        answer = send(phase_kube.url, record)
        assert answer.status == 200 and answer.ce["type"] == "dev.crefn.workload.phase", answer.text
        assert answer.ce["workloadphase"] == "Running" and answer.ce["job"] == "llama"
        data = answer.json()
        assert data["workload"]["uid"] == trainjob["metadata"]["uid"] and data["workload"]["attempt"] == 2


def goodput_outcome(gateway: Gateway, record: dict[str, Any]) -> tuple[int, str, str]:
    """What `phase` does with a GoodputMeasurement change: its answer, its reason (logged), the Job it names."""
    outcome = phase_handler.handle(to_envelope(record), Context(Settings(), gateway=gateway))
    reply = outcome.reply
    return (202, outcome.reason, "") if reply is None else (200, "", reply.extensions["job"])


def test_a_goodput_of_a_job_without_a_trainjob_or_job_is_202(phase_kube: ServedFunction, gateway: Gateway,
                                                              namespace: str) -> None:
    assert send(phase_kube.url, goodput_record(namespace, "never-launched")).status == 202
    assert send(phase_kube.url, goodput_record(namespace, "", "orphan", job_ref={})).status == 202
    assert goodput_outcome(gateway, goodput_record(namespace, "never-launched")) == (
        202, f"GoodputMeasurement {namespace}/never-launched-goodput: Job never-launched has no TrainJob", "")
    assert goodput_outcome(gateway, goodput_record(namespace, "", "orphan", job_ref={})) == (
        202, f"GoodputMeasurement {namespace}/orphan names no Job", "")


@pytest.mark.parametrize("labels", [{}, {"nvcre.nvidia.com/job": "llm"}, {"crefn.dev/attempt": "0"}],
                         ids=["none", "no-attempt", "no-job"])
def test_a_pod_without_its_job_and_attempt_labels_is_skipped_by_name(labels: dict[str, str]) -> None:
    """A workload pod's change names the Job and attempt it is of by its labels; without them, nothing is read
    and the answer names the pod."""
    from events.envelope import Envelope
    from functions.domain.jobs import Skipped

    pod = {"metadata": {"name": "llm-workload-node-0-0", "namespace": "ml", "labels": labels}}
    env = Envelope(id="p1", type="dev.knative.apiserver.resource.update", source="https://127.0.0.1")
    assert phase_handler.read_for_pod(env, Context(Settings()), pod, "gone") == Skipped(
        "pod ml/llm-workload-node-0-0 carries no Job and attempt labels")


@pytest.mark.parametrize(("job_ref", "labels", "job"), [
    ({"name": "llama"}, {}, "llama"),  # jobRef's kind defaults to Job
    ({"kind": "Job", "name": "llama"}, {"nvcre.nvidia.com/job": "other"}, "llama"),  # jobRef before the label
    ({"kind": "TrainJob", "name": "llama"}, {}, ""),  # a reference to something else names no Job
    ({"kind": "TrainJob", "name": "llama-workload"}, {"nvcre.nvidia.com/job": "llama"}, "llama"),
], ids=["kind-defaults-to-job", "job-ref-before-label", "other-kind", "other-kind-then-label"])
def test_which_job_a_goodput_names(gateway: Gateway, namespace: str, job_ref: dict[str, str], labels: dict[str, str],
                                   job: str) -> None:
    seed_job(gateway, namespace)
    expected = (200, "", job) if job else (202, f"GoodputMeasurement {namespace}/gm names no Job", "")
    assert goodput_outcome(gateway, goodput_record(namespace, "", "gm", labels=labels, job_ref=job_ref)) == expected


def test_a_goodput_change_reaches_status_through_phase(world: Callable[..., World]) -> None:
    """Startup mode: the application started, no step for longer than 1200 s + 120 s since the workload
    started (its back-dated workloadStartTime is later than the measurement's anchors)."""
    w = world()
    create_job(w)
    hand_made_goodput(w)
    w.settle()
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": now_at(-1500 * S)}}, status=True)
    w.settle()
    measure(w, startTime=now_at(-7200 * S), applicationStartTime=now_at(-3600 * S))
    gm = w.gw.get(GOODPUT, w.ns, "llm-goodput")
    assert gm is not None
    w.broker.publish(apiserver_record("update", gm, GOODPUT, w.gw.host))  # the crefn-goodput source
    w.settle()
    assert ("crefn-phase-goodput", "dev.crefn.workload.phase") in w.replies()
    assert w.final() == ("Failed", "WorkloadStalled", 0)
    assert condition(w, "Failed")["message"] == STARTUP_MESSAGE
