"""What an operator sees: the `metrics` target against the real API server (Jobs in every state, listed at
scrape time as its own ServiceAccount), every function's `GET /metrics` after real requests, the Kubernetes
API call counter, the alert deliveries, and the answers of a scrape that cannot be served. The exposition
is read with Prometheus' own parser."""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import functions_framework
import pytest
from prometheus_client.parser import text_string_to_metric_families

from events.emitted import AlertData, JobRef
from functions.runtime.alertsinks import Alertmanager, CloudEventsSink, PagerDuty, Slack, notify
from functions.runtime.client import Answer, Peer, post, send
from functions.runtime.errors import Forbidden, Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.metrics import expose_process
from functions.runtime.resources import PODS, cre_jobs, kube_call_of
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import NAMESPACE, service_account_user
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.helpers import Receiver, closed_port, released, unreachable_kubeconfig
from tests.support.paths import SUPPORT
from tests.support.world import cache_caught_up

JOBS = cre_jobs("nvcre.nvidia.com")
RAISING = SUPPORT / "raising.py"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def parse_help(text: str) -> dict[str, str]:
    return {family.name: family.documentation for family in text_string_to_metric_families(text)}


def of(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of `name` whose labels include `labels`, keyed by their labels."""
    return {k: v for (n, k), v in samples.items() if n == name and set(labels.items()) <= k}


def key(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def scrape(url: str, path: str = "metrics", method: str = "GET", accept: str = "") -> Answer:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + path, method=method, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


@contextlib.contextmanager
def served(target: str, tmp_path: Path, **env: str) -> Iterator[str]:
    """A process of its own, so its counters start at zero."""
    fn = ServedFunction(target, {"CREFN_LOG_LEVEL": "ERROR", **env}, tmp_path / f"{target}.log").start()
    try:
        yield fn.url
    finally:
        fn.stop()


# -- the Jobs' state: the metrics target ---------------------------------------------------------


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(type_: str, reason: str, status: str = "True") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "m", "observedGeneration": 1,
            "lastTransitionTime": now()}


def create_job(gateway: Gateway, ns: str, name: str, status: dict[str, Any] | None, managed: bool = True,
               workflow: str = "") -> None:
    labels = {"crefn.dev/managed": "true"} if managed else {}
    if workflow:
        labels["nvcre.nvidia.com/workflow"] = workflow
    gateway.create(JOBS, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                              "metadata": {"name": name, "labels": labels},
                              "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    if status is not None:
        gateway.patch(JOBS, ns, name, {"status": status}, status=True)


@pytest.fixture(scope="module")
def metrics_kubeconfig(cluster: LocalCluster) -> str:
    """A kubeconfig of the ServiceAccount crefn-metrics, bound as knative/base binds it."""
    return str(cluster.service_account_kubeconfig(NAMESPACE, "crefn-metrics"))


@pytest.fixture
def jobs(gateway: Gateway, namespace: str) -> str:
    """Jobs in every state: running (made by a Workflow), done, broken (2 nodes of a workload failure), hardware
    (a hardware failure recorded on 2 nodes, one of them listed twice), dual (Failed and InProgress True, as CRE
    wrote before ADR-086), fresh (no status yet), and stray (not managed)."""
    create_job(gateway, namespace, "running", {"conditions": [
        cond("InProgress", "WorkloadRunning"), cond("Succeeded", "NotApplicable", "False"),
        cond("Failed", "NotApplicable", "False")]}, workflow="nightly-cert")
    create_job(gateway, namespace, "done", {"restartCount": 1, "conditions": [
        cond("InProgress", "NotApplicable", "False"), cond("Succeeded", "WorkloadCompleted")]})
    create_job(gateway, namespace, "broken", {"restartCount": 2, "conditions": [cond("Failed", "WorkloadFailed")],
                                              "failedNodes": [{"name": "gpu-1", "reason": "WorkloadFailed"},
                                                              {"name": "gpu-2", "reason": "WorkloadFailed"}]})
    create_job(gateway, namespace, "hardware", {"conditions": [
        cond("InProgress", "WorkloadRunning"), cond("HardwareFailed", "HardwareFailureDetected")],
        "failedNodes": [{"name": "gpu-3", "reason": "ThresholdViolation"},
                        {"name": "gpu-3", "reason": "HardwareFailureDetected"},
                        {"name": "gpu-4", "reason": "HardwareFailureDetected"}]}, workflow="nightly-cert")
    create_job(gateway, namespace, "dual", {"restartCount": 3, "conditions": [
        cond("InProgress", "WorkloadRunning"), cond("Failed", "JobTimedOut")]})
    create_job(gateway, namespace, "fresh", None)
    create_job(gateway, namespace, "stray", {"conditions": [cond("InProgress", "WorkloadRunning")]}, managed=False)
    return namespace


def job_status(ns: str, job: str, state: str, workflow: str = "") -> dict[frozenset[tuple[str, str]], float]:
    return {key(namespace=ns, job=job, workflow=workflow, status=s): float(s == state)
            for s in ("in_progress", "succeeded", "failed")}


def test_job_state_as_cre_names_it(serve: Callable[..., ServedFunction], metrics_kubeconfig: str,
                                   jobs: str) -> None:
    ns = jobs
    answer = scrape(serve("metrics", CREFN_KUBECONFIG=metrics_kubeconfig, CREFN_LOG_LEVEL="ERROR").url)
    assert answer.status == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse(answer.body.decode())
    # CRE's series (`pkg/controller/metrics.go`, `metrics_status.go`): `workflow` from the Job's
    # nvcre.nvidia.com/workflow label ("" without one); a Job with no True phase condition has none (ADR-086)
    assert of(samples, "nvcre_job_status", namespace=ns) == {
        **job_status(ns, "running", "in_progress", "nightly-cert"), **job_status(ns, "done", "succeeded"),
        **job_status(ns, "broken", "failed"), **job_status(ns, "hardware", "in_progress", "nightly-cert"),
        **job_status(ns, "dual", "failed")}
    # only a recorded hardware failure sets it (CRE's `setJobHardwareFailed`): distinct nodes of failedNodes
    assert of(samples, "nvcre_job_failed_nodes", namespace=ns) == {
        key(namespace=ns, job="hardware", workflow="nightly-cert"): 2}
    assert of(samples, "crefn_job_restarts", namespace=ns) == {
        key(namespace=ns, job="running"): 0, key(namespace=ns, job="done"): 1, key(namespace=ns, job="broken"): 2,
        key(namespace=ns, job="hardware"): 0, key(namespace=ns, job="dual"): 3, key(namespace=ns, job="fresh"): 0}
    assert of(samples, "crefn_job_info", namespace=ns) == {
        key(namespace=ns, job="running", reason="WorkloadRunning", attempt="0"): 1,
        key(namespace=ns, job="done", reason="WorkloadCompleted", attempt="1"): 1,
        key(namespace=ns, job="broken", reason="WorkloadFailed", attempt="2"): 1,
        key(namespace=ns, job="hardware", reason="WorkloadRunning", attempt="0"): 1,
        key(namespace=ns, job="dual", reason="JobTimedOut", attempt="3"): 1,
        key(namespace=ns, job="fresh", reason="", attempt="0"): 1}
    assert parse_help(answer.body.decode()).items() >= {
        "nvcre_job_status": "Current status of NVCRE jobs (1 = current status, 0 = not current status)",
        "nvcre_job_failed_nodes": "Number of nodes with detected hardware failures per job"}.items()
    # the target's own counters follow: its LISTs, as its ServiceAccount (allowed: 200)
    assert of(samples, "crefn_kube_requests_total", verb="list", resource="jobs", code="200")


def test_manage_all_lists_every_job_and_nothing_is_kept_between_scrapes(
        serve: Callable[..., ServedFunction], metrics_kubeconfig: str, jobs: str, gateway: Gateway) -> None:
    ns = jobs
    url = serve("metrics", CREFN_KUBECONFIG=metrics_kubeconfig, CREFN_LOG_LEVEL="ERROR",
                CREFN_MANAGE_ALL="true").url
    first = parse(scrape(url).text)
    assert of(first, "nvcre_job_status", namespace=ns, job="stray") == job_status(ns, "stray", "in_progress")
    gateway.delete(JOBS, ns, "broken")
    gateway.patch(JOBS, ns, "running", {"status": {"conditions": [
        cond("InProgress", "NotApplicable", "False"), cond("Succeeded", "WorkloadCompleted")]}}, status=True)
    assert of(first, "nvcre_job_failed_nodes", namespace=ns, job="hardware")
    gateway.delete(JOBS, ns, "hardware")
    cache_caught_up(gateway, ns, [JOBS])  # the scrape lists from the API server's watch cache
    assert not of(second := parse(scrape(url).text), "nvcre_job_status", namespace=ns, job="broken")
    assert not of(second, "nvcre_job_failed_nodes", namespace=ns, job="hardware")
    assert of(second, "nvcre_job_status", namespace=ns, job="running") == job_status(
        ns, "running", "succeeded", "nightly-cert")
    assert len(of(second, "crefn_job_info", namespace=ns)) == 5


def test_the_metrics_identity_may_list_jobs_and_nothing_else(cluster: LocalCluster, metrics_kubeconfig: str,
                                                             jobs: str) -> None:
    identity = Gateway.connect(metrics_kubeconfig)
    try:
        assert {j["metadata"]["name"] for j in identity.list_all(JOBS, jobs)} >= {"running", "stray"}
        for refused in (lambda: identity.get(JOBS, jobs, "running"), lambda: identity.list_all(PODS, jobs),
                        lambda: identity.patch(JOBS, jobs, "running", {"status": {}}, status=True)):
            with pytest.raises(Forbidden, match="403 Forbidden"):
                refused()
    finally:
        identity.close()


def test_scrape_answers_when_it_cannot_serve(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                             tmp_path: Path) -> None:
    unreachable = unreachable_kubeconfig(tmp_path / "kubeconfig")
    url = serve("metrics", CREFN_KUBECONFIG=str(unreachable), CREFN_KUBE_TIMEOUT_SECONDS="1",
                CREFN_LOG_LEVEL="ERROR").url
    down = scrape(url)
    assert down.status == 503 and "Kubernetes API unreachable" in down.text and "\n" not in down.text
    refused = scrape(serve("metrics", CREFN_KUBECONFIG=str(cluster.kubeconfig_for("nobody")),
                           CREFN_LOG_LEVEL="ERROR").url)
    assert refused.status == 503 and "403 Forbidden" in refused.text and "\n" not in refused.text
    posted = scrape(url, method="POST")
    assert (posted.status, posted.headers["allow"]) == (405, "GET, HEAD")
    assert posted.text == "POST is not allowed: scrape with GET /metrics"
    assert scrape(url, path="").status == 404 and scrape(url, path="x/metrics").status == 404
    assert scrape(url).status == 503  # still serving


# -- the functions' own metrics -------------------------------------------------------------------


def test_every_scrape_says_which_release_runs_in_which_mode(tmp_path: Path, metrics_kubeconfig: str) -> None:
    """`crefn_build_info`: 1, the version (pyproject.toml's), the revision the image was built from and the
    effective CREFN_MODE, on a function's scrape (from the first, before any event) and on the metrics target's."""
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", released())
    with served("phase", tmp_path, CREFN_MODE="observe", CREFN_REVISION="0123abc") as url:
        phase = parse(scrape(url).text)
    with served("metrics", tmp_path, CREFN_KUBECONFIG=metrics_kubeconfig, CREFN_MODE="manage") as url:
        answer = scrape(url)
    assert answer.status == 200, answer.text
    assert of(phase, "crefn_build_info") == {key(version=released(), revision="0123abc", mode="observe"): 1}
    assert of(parse(answer.text), "crefn_build_info") == {key(version=released(), revision="unknown", mode="manage"): 1}


def trainjob_event(type_: str = "") -> dict[str, Any]:
    sample = load_sample("trainjob-resource-update-failed")
    return {**sample, "attributes": {**sample["attributes"], **({"type": type_} if type_ else {})}}


def test_a_function_counts_its_events_answers_and_durations(tmp_path: Path) -> None:
    with served("phase", tmp_path) as url:
        assert scrape(url).status == 200  # a scrape before any event: never counted as one
        assert [send(url, trainjob_event()).status for _ in range(2)] == [200, 200]
        assert send(url, trainjob_event("com.example.unknown")).status == 400
        assert post(url, {"content-type": "application/json"}, b"{}").status == 400  # not a CloudEvent
        answer = scrape(url)
        assert scrape(url, method="HEAD").status == 200
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain")
    samples = parse(answer.text)
    assert of(samples, "crefn_events_total") == {
        key(function="phase", type="dev.knative.apiserver.resource.update", answer="200", outcome="ok"): 2,
        key(function="phase", type="other", answer="400", outcome="refused"): 1,
        key(function="phase", type="none", answer="400", outcome="refused"): 1}
    assert of(samples, "crefn_decisions_total") == {
        key(function="phase", decision="reply:workload.phase"): 2,
        key(function="phase", decision="error:InvalidEvent"): 1}
    assert of(samples, "crefn_request_duration_seconds_count") == {key(function="phase"): 4}
    assert of(samples, "crefn_request_duration_seconds_bucket", le="+Inf") == {key(function="phase", le="+Inf"): 4}
    assert 0 < samples[("crefn_request_duration_seconds_sum", key(function="phase"))] < 30
    assert not of(samples, "crefn_kube_requests_total")  # the TrainJob came in the event: no API call
    assert not [n for n, _ in samples if n.endswith("_created")]


def phase_event(ns: str, job: str) -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": uuid.uuid4().hex, "source": "/crefn/phase",
                           "type": "dev.crefn.workload.phase", "subject": f"{ns}/{job}", "workloadphase": "Running",
                           "namespace": ns, "job": job},
            "data": {"job": {"name": job, "namespace": ns}, "phase": "Running", "observedAt": now(),
                     "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                  "name": f"{job}-workload", "namespace": ns, "attempt": 0}}}


def test_kube_requests_are_counted_by_verb_resource_and_code(cluster: LocalCluster, namespace: str,
                                                             tmp_path: Path) -> None:
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-status")))
    with served("status", tmp_path, CREFN_KUBECONFIG=kubeconfig) as url:
        before = parse(scrape(url).text)
        assert send(url, phase_event(namespace, "ghost")).status == 202  # the Job is gone: one GET, 404
        after = parse(scrape(url).text)
    assert not of(before, "crefn_kube_requests_total")
    assert of(after, "crefn_kube_requests_total") == {key(verb="get", resource="jobs", code="404"): 1}
    assert of(after, "crefn_decisions_total") == {key(function="status", decision="nothing"): 1}
    unreachable = str(unreachable_kubeconfig(tmp_path / "kubeconfig"))
    with served("status", tmp_path, CREFN_KUBECONFIG=unreachable, CREFN_KUBE_TIMEOUT_SECONDS="1") as url:
        assert send(url, phase_event(namespace, "ghost")).status == 503
        down = parse(scrape(url).text)
    assert of(down, "crefn_kube_requests_total") == {key(verb="get", resource="jobs", code="error"): 1}
    assert of(down, "crefn_events_total") == {
        key(function="status", type="dev.crefn.workload.phase", answer="503", outcome="error"): 1}
    assert of(down, "crefn_decisions_total") == {key(function="status", decision="error:Unavailable"): 1}


# -- the server's decisions and formats, in process -----------------------------------------------

DECISIONS = [
    ("reply", 200, "reply:workload.created", "ok"), ("none", 202, "nothing", "ok"), ("NotYet", 503, "wait", "wait"),
    ("Conflict", 409, "conflict", "retry"), ("AlreadyExists", 409, "conflict", "retry"),
    ("NotFound", 202, "gone", "ok"), ("PermanentError", 400, "error:PermanentError", "refused"),
    ("Throttled", 429, "error:Throttled", "retry"), ("Unavailable", 503, "error:Unavailable", "error"),
    ("Forbidden", 503, "error:Forbidden", "error"), ("TemporaryError", 503, "error:TemporaryError", "error"),
    ("KeyError", 500, "error:internal", "error"),
]


@pytest.fixture(scope="module")
def client() -> Any:
    return functions_framework.create_app("raising", str(RAISING), "http").test_client()


def counted(client: Any) -> Samples:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    return parse(resp.get_data(as_text=True))


@pytest.mark.parametrize(("kind", "status", "decision", "outcome"), DECISIONS, ids=[k for k, *_ in DECISIONS])
def test_every_outcome_is_one_decision(client: Any, kind: str, status: int, decision: str, outcome: str) -> None:
    """Each answer is one decision and one `outcome`: a designed wait (NotYet) apart from the 503s of a failure."""
    from functions.runtime.codec import encode

    before = counted(client)
    headers, body = encode({"attributes": {"specversion": "1.0", "id": "e1", "source": "/test", "type": "test.event",
                                           "raise": kind}, "data": {}})
    assert client.post("/", headers=headers, data=body).status_code == status
    after = counted(client)
    moved = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert moved[("crefn_decisions_total", key(function="raising", decision=decision))] == 1
    answered = key(function="raising", type="other", answer=str(status), outcome=outcome)
    assert moved[("crefn_events_total", answered)] == 1
    assert {n for n, _ in moved} == {"crefn_decisions_total", "crefn_events_total",
                                     "crefn_request_duration_seconds_count", "crefn_request_duration_seconds_sum",
                                     "crefn_request_duration_seconds_bucket"}


def test_openmetrics_when_the_scraper_asks_for_it(client: Any) -> None:
    resp = client.get("/metrics", headers={"Accept": "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/openmetrics-text")
    assert resp.get_data(as_text=True).endswith("# EOF\n")


KUBE_CALLS = [
    ("GET", "/apis/nvcre.nvidia.com/v1alpha1/jobs", [("limit", 500)], ("list", "jobs")),
    ("GET", "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ml/jobs/llm", [], ("get", "jobs")),
    ("PATCH", "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ml/jobs/llm/status", [], ("patch", "jobs/status")),
    ("GET", "/api/v1/namespaces/ml/pods/p/log", [("tailLines", 10)], ("get", "pods/log")),
    ("GET", "/api/v1/pods", [("watch", "true")], ("watch", "pods")),
    ("POST", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs", [], ("create", "trainjobs")),
    ("DELETE", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/t", [], ("delete", "trainjobs")),
    ("GET", "/api/v1/nodes/gpu-1", [], ("get", "nodes")),
    ("GET", "/api/v1/namespaces", [], ("list", "namespaces")),
    ("GET", "/api/v1/namespaces/ml", [], ("get", "namespaces")),
    ("POST", "/api/v1/namespaces/crefn-system/serviceaccounts/sa/token", [], ("create", "serviceaccounts/token")),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), KUBE_CALLS,
                         ids=[f"{m} {p}" for m, p, _, _ in KUBE_CALLS])
def test_kube_call_labels(method: str, path: str, query: list[tuple[str, Any]], expected: tuple[str, str]) -> None:
    assert kube_call_of(method, path, query) == expected


# -- alert deliveries ------------------------------------------------------------------------------


def test_alert_deliveries_by_sink_and_result() -> None:
    delivered, throttled, refused = Receiver(200), Receiver(429), Receiver(400, b"bad payload")
    alert = AlertData(alertname="CREJobFailed", status="firing", severity="critical",
                      job=JobRef(name="llm", namespace="ml"), reason="WorkloadFailed", summary="s", description="d",
                      starts_at=datetime.now(UTC), labels={"alertname": "CREJobFailed"})
    sinks = [Alertmanager(Peer("alertmanager", delivered.url)), Slack(Peer("slack", throttled.url)),
             PagerDuty(Peer("pagerduty", refused.url), "key"),
             CloudEventsSink(Peer("cloudevents", f"http://127.0.0.1:{closed_port()}/"))]
    try:
        before = parse(expose_process().body.decode())
        with pytest.raises(Unavailable):
            notify(sinks, [alert])
        after = parse(expose_process().body.decode())
    finally:
        for receiver in (delivered, throttled, refused):
            receiver.close()
    moved = {dict(k)["sink"]: dict(k)["result"] for (n, k), v in after.items()
             if n == "crefn_alert_deliveries_total" and v - before.get((n, k), 0) == 1}
    assert moved == {"alertmanager": "delivered", "slack": "throttled", "pagerduty": "refused",
                     "cloudevents": "unavailable"}
    assert json.loads(delivered.requests[0][2])[0]["labels"] == {"alertname": "CREJobFailed"}


def test_a_scrape_lists_the_jobs_from_the_watch_cache(cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """The scrape's LIST asks for `resourceVersion=0` (the API server's watch cache, no etcd read) and, a moment
    later at most, shows a Job just created."""
    from functions.main import scrape_jobs
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings
    from localstack.trainer import wait_until

    queries: list[list[tuple[str, Any]]] = []

    class Recording(Gateway):

        def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                    content_type: str = "application/json") -> dict[str, Any]:
            queries.append(list(query or []))
            return super().request(method, path, body=body, query=query, content_type=content_type)

    gateway.create(cre_jobs("nvcre.nvidia.com"), namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "cached", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch"}}}}})
    own = cluster.gateway()
    recording = Recording(own.transport)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), gateway=recording)

    def shown() -> bool:
        return bool(of(parse(scrape_jobs("", ctx).body.decode()), "crefn_job_restarts", namespace=namespace,
                       job="cached"))

    try:
        assert wait_until(shown, timeout=10)
    finally:
        own.close()
    assert queries and all(("resourceVersion", "0") in q for q in queries)
