"""The `alert` function with real sinks: a real Prometheus Alertmanager (with a webhook receiver), and
local HTTP receivers checking the Slack and PagerDuty payloads against their documented shapes. Every
alert says what the Job stored in the API server says (written by the test, standing for the project's
functions or CRE), whatever the event says: each event here is about a Job the test stored. Its `read`
without an API server: an update that says nothing is answered without a GET, other events are refused."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.alert.read import read
from functions.domain.jobs import Skipped
from functions.runtime.client import Answer, send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_jobs
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster, free_port
from localstack.cluster.pods import create_pod
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import service_account_user
from localstack.observability.alertmanager import LocalAlertmanager
from localstack.serving import ServedFunction
from localstack.trainer import wait_until
from tests.support import alertjobs
from tests.support.alerts import NOW
from tests.support.helpers import Receiver, closed_port, job, record_failure, unreachable_kubeconfig

JOBS = cre_jobs("nvcre.nvidia.com")


@pytest.fixture(scope="module")
def webhook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory: pytest.TempPathFactory, webhook: Receiver) -> Iterator[LocalAlertmanager]:
    am = LocalAlertmanager(tmp_path_factory.mktemp("alertmanager"), webhook.url).start()
    yield am
    am.stop()


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    slack, pagerduty = Receiver(200, b"ok"), Receiver(202, b'{"status":"success"}')
    yield slack, pagerduty
    slack.close()
    pagerduty.close()


def alert_fn(serve: Callable[..., ServedFunction], cluster: LocalCluster, **settings: str) -> str:
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-alert")))
    return serve("alert", CREFN_KUBECONFIG=kubeconfig, CREFN_LOG_LEVEL="WARNING", **settings).url


def event(type_: str, data: dict[str, Any], ns: str, job: str = "llm", **ext: str) -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": "a1", "source": "/crefn/restart", "type": type_,
                           "subject": f"{ns}/{job}", "namespace": ns, "job": job, **ext}, "data": data}


def failed(ns: str, restarts: int = 0, job: str = "llm") -> dict[str, Any]:
    return event("dev.crefn.job.condition.changed", {
        "job": {"name": job, "namespace": ns},
        "previous": {"type": "InProgress", "reason": "WorkloadRunning", "message": ""},
        "new": {"type": "Failed", "reason": "WorkloadFailed",
                "message": "Workload TrainJob/llm-workload failed: exit code 137"},
        "restartCount": restarts, "failedNodes": [{"name": "gpu-node-07", "reason": "WorkloadFailed"}]},
        ns, job, jobcondition="Failed")


def job_deleted(gateway: Gateway, ns: str, job: dict[str, Any]) -> dict[str, Any]:
    from localstack.eventing.apisource import apiserver_record

    return apiserver_record("delete", job, JOBS, gateway.host)


def job_updated(gateway: Gateway, job: dict[str, Any]) -> dict[str, Any]:
    from localstack.eventing.apisource import apiserver_record

    return apiserver_record("update", job, JOBS, gateway.host)


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def cre_writes(gateway: Gateway, ns: str, name: str, conditions: list[tuple[str, str, str]],
               since: datetime | None = None, **status: Any) -> dict[str, Any]:
    """A managed Job whose status another writer (CRE) sets: (type, status, reason) since `since`."""
    if gateway.get(JOBS, ns, name) is None:
        gateway.create(JOBS, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                  "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                                  "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    at = rfc3339(since or datetime.now(UTC))
    return gateway.patch(JOBS, ns, name, {"status": {**status, "conditions": [
        {"type": t, "status": s, "reason": r, "message": f"{r} (CRE)", "observedGeneration": 1,
         "lastTransitionTime": at} for t, s, r in conditions]}}, status=True)


def listed(alertmanager: LocalAlertmanager, ns: str, alertname: str) -> list[dict[str, Any]]:
    return [a for a in alertmanager.alerts() if a["labels"].get("namespace") == ns
            and a["labels"]["alertname"] == alertname]


FAILED_MESSAGE = "Workload TrainJob/llm-workload failed: exit code 137"


def create_failed_job(gateway: Gateway, ns: str, restarts: int = 0, max_restarts: int = 0, job: str = "llm",
                      message: str = FAILED_MESSAGE) -> dict[str, Any]:
    """A Job failed as `restart` leaves it: the verdict `failed(...)` announces, stored."""
    gateway.create(JOBS, ns, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": job},
                              "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}},
                                       "checkpoint": {"pvcName": "p", "maxRestarts": max_restarts}}})
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return gateway.patch(JOBS, ns, job, {"status": {
        "restartCount": restarts, "failedNodes": [{"name": "gpu-node-07", "reason": "WorkloadFailed"}],
        "conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed", "message": message,
                        "observedGeneration": 1, "lastTransitionTime": now}]}}, status=True)


def ours(alerts: list[dict[str, Any]], ns: str) -> dict[str, dict[str, Any]]:
    return {a["labels"]["alertname"]: a for a in alerts if a["labels"].get("namespace") == ns}


def notified(webhook: Receiver, ns: str, status: str) -> list[str]:
    return [a["labels"]["alertname"] for body in webhook.bodies for a in body["alerts"]
            if a["labels"].get("namespace") == ns and a["status"] == status]


def test_failed_job_alert_in_alertmanager_then_resolved_by_the_delete(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        alertmanager: LocalAlertmanager, webhook: Receiver) -> None:
    url = alert_fn(serve, cluster, CREFN_ALERTMANAGER_URL=alertmanager.url)
    job = create_failed_job(gateway, namespace, restarts=2, max_restarts=2)
    answer = send(url, failed(namespace, restarts=2))
    assert answer.status == 202, answer.text
    listed = ours(alertmanager.alerts(), namespace)
    assert set(listed) == {"CREJobFailed", "CREJobRestartsExhausted"}
    failed_alert = listed["CREJobFailed"]
    assert failed_alert["labels"] == {"alertname": "CREJobFailed", "severity": "critical", "namespace": namespace,
                                      "job": "llm", "reason": "WorkloadFailed"}
    assert "gpu-node-07" in failed_alert["annotations"]["description"]
    assert "Restarts used: 2/2" in failed_alert["annotations"]["description"]
    assert failed_alert["status"]["state"] == "active"
    ends = datetime.fromisoformat(failed_alert["endsAt"].replace("Z", "+00:00"))
    assert (ends - datetime.now(UTC)).days >= 89  # not auto-resolved after Alertmanager's resolve_timeout
    assert wait_until(lambda: {"CREJobFailed", "CREJobRestartsExhausted"} <= set(notified(webhook, namespace,
                                                                                          "firing")), 15)
    # the delete event of a Job still there (stale or forged) sends nothing: Alertmanager's alerts stay as they were
    before = ours(alertmanager.alerts(), namespace)
    assert send(url, job_deleted(gateway, namespace, job)).status == 202
    assert ours(alertmanager.alerts(), namespace) == before
    # the Job is deleted: the ApiServerSource's delete event resolves what it raised
    gateway.delete(JOBS, namespace, "llm")
    answer = send(url, job_deleted(gateway, namespace, job))
    assert answer.status == 202, answer.text
    assert wait_until(lambda: not ours(alertmanager.alerts(active="true"), namespace), 10)
    assert wait_until(lambda: {"CREJobFailed", "CREJobRestartsExhausted"} <= set(notified(webhook, namespace,
                                                                                          "resolved")), 15)


def test_restart_warning(serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway,
                         namespace: str, alertmanager: LocalAlertmanager) -> None:
    url = alert_fn(serve, cluster, CREFN_ALERTMANAGER_URL=alertmanager.url)
    grace_end = datetime.now(UTC)
    gateway.create(JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "annotations": {"crefn.dev/restart-not-before": rfc3339(grace_end)}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}, "checkpoint": {"pvcName": "p",
                                                                                        "maxRestarts": 3}}})
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 1, "conditions": [
        {"type": "InProgress", "status": "True", "reason": "WorkloadRestarting", "observedGeneration": 1,
         "message": "Restarting workload from checkpoint (restart 1/3)", "lastTransitionTime": rfc3339(grace_end)}]}},
        status=True)
    data = {"job": {"name": "llm", "namespace": namespace}, "attempt": 1, "maxRestarts": 3,
            "notBefore": datetime.now(UTC).isoformat(),
            "previousWorkload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                 "name": "llm-workload", "namespace": namespace, "attempt": 0}}
    assert send(url, event("dev.crefn.job.restarted", data, namespace)).status == 202
    alert = ours(alertmanager.alerts(), namespace)["CREJobRestarted"]
    assert alert["labels"]["severity"] == "warning" and "restart 1/3" in alert["annotations"]["description"]
    ends = datetime.fromisoformat(alert["endsAt"].replace("Z", "+00:00"))
    assert 3000 < (ends - datetime.now(UTC)).total_seconds() <= 3600  # an hour after the restart's grace
    # replayed once the Job has moved on to its next restart: nothing sent (a re-sent alert gets a new updatedAt)
    gateway.patch(JOBS, namespace, "llm", {"status": {"restartCount": 2}}, status=True)
    assert send(url, event("dev.crefn.job.restarted", data, namespace)).status == 202
    assert ours(alertmanager.alerts(), namespace)["CREJobRestarted"] == alert


def test_slack_and_pagerduty_payloads(serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway,
                                      namespace: str, receivers: tuple[Receiver, Receiver]) -> None:
    slack, pagerduty = receivers
    url = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=slack.url, CREFN_PAGERDUTY_URL=pagerduty.url,
                   CREFN_PAGERDUTY_ROUTING_KEY="R0UT1NGKEY")
    job = create_failed_job(gateway, namespace, restarts=0, max_restarts=0)
    assert send(url, failed(namespace)).status == 202
    (message,) = slack.bodies
    assert message["text"] == f"CRITICAL: CRE Job {namespace}/llm failed (WorkloadFailed)"
    attachment = message["attachments"][0]
    assert attachment["color"] == "danger" and attachment["title"] == "CREJobFailed"
    assert {f["title"]: f["value"] for f in attachment["fields"]} == {
        "namespace": namespace, "job": "llm", "reason": "WorkloadFailed", "severity": "critical"}
    (trigger,) = pagerduty.bodies
    assert trigger["routing_key"] == "R0UT1NGKEY" and trigger["event_action"] == "trigger"
    assert trigger["dedup_key"] == f"{namespace}/llm/CREJobFailed"
    payload = trigger["payload"]
    assert (payload["severity"], payload["source"], payload["class"], payload["group"]) == (
        "critical", f"{namespace}/llm", "CREJobFailed", namespace)
    assert payload["summary"] and "exit code 137" in payload["custom_details"]["description"]
    record_failure(gateway, namespace, job, FAILED_MESSAGE)
    gateway.delete(JOBS, namespace, "llm")
    assert send(url, job_deleted(gateway, namespace, job)).status == 202
    assert pagerduty.bodies[1] == {"routing_key": "R0UT1NGKEY", "dedup_key": f"{namespace}/llm/CREJobFailed",
                                   "event_action": "resolve"}
    assert slack.bodies[1]["text"].startswith("RESOLVED: ") and slack.bodies[1]["attachments"][0]["color"] == "good"


def test_a_forged_delete_of_a_job_that_never_existed_posts_nothing_in_chat(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        receivers: tuple[Receiver, Receiver]) -> None:
    """Any pod can post to the Broker: a delete event of a failed Job that never existed finds it gone, as a
    deleted one. No Event of its uid says it existed, so Slack gets no `RESOLVED:` line; PagerDuty gets the
    resolve, which changes nothing for an incident never opened. A Job that did exist but whose Events are all
    gone (older than the API server keeps them) is resolved the same way."""
    slack, pagerduty = receivers
    url = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=slack.url, CREFN_PAGERDUTY_URL=pagerduty.url,
                   CREFN_PAGERDUTY_ROUTING_KEY="R0UT1NGKEY")
    never = create_failed_job(gateway, namespace, job="never")
    gateway.delete(JOBS, namespace, "never")  # what a forger can claim: any name, any uid, any status
    forged = {**never, "metadata": {**never["metadata"], "uid": str(uuid.uuid4())}}
    assert send(url, job_deleted(gateway, namespace, forged)).status == 202
    # the uid of another object the namespace holds Events about (a pod of its own), or a uid made to widen
    # the field selector: not this Job's
    pod = create_pod(gateway, namespace, "never", {})
    record_failure(gateway, namespace, {**pod, "apiVersion": "v1", "kind": "Pod"}, FAILED_MESSAGE)
    for uid in (pod["metadata"]["uid"], "=", ""):
        borrowed = {**never, "metadata": {**never["metadata"], "uid": uid}}
        assert send(url, job_deleted(gateway, namespace, borrowed)).status == 202
    assert slack.bodies == []
    resolve = {"routing_key": "R0UT1NGKEY", "dedup_key": f"{namespace}/never/CREJobFailed", "event_action": "resolve"}
    assert pagerduty.bodies == [resolve] * 4


HOSTILE = "<!channel> see <https://example.com|click> & <@U123>"


def test_text_users_control_pings_nobody_and_links_nowhere(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        receivers: tuple[Receiver, Receiver]) -> None:
    slack, pagerduty = receivers
    url = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=slack.url, CREFN_PAGERDUTY_URL=pagerduty.url,
                   CREFN_PAGERDUTY_ROUTING_KEY="R0UT1NGKEY")
    create_failed_job(gateway, namespace, message=f"Workload failed: {HOSTILE}")  # e.g. a TrainJob's message
    assert send(url, failed(namespace)).status == 202
    (message,) = slack.bodies
    rendered = json.dumps(message)
    assert "<" not in rendered and ">" not in rendered, rendered  # no mention, no link, no markup at all
    attachment = message["attachments"][0]
    assert "&lt;!channel&gt; see &lt;https://example.com|click&gt; &amp; &lt;@U123&gt;" in attachment["text"]
    (trigger,) = pagerduty.bodies  # plain text in PagerDuty: kept as written, shown as written
    assert HOSTILE in trigger["payload"]["custom_details"]["description"]


@pytest.mark.parametrize(("text", "shown"), [
    ("a < b & c > d", "a &lt; b &amp; c &gt; d"), ("<!here>", "&lt;!here&gt;"), ("&amp;", "&amp;amp;"),
    ("plain", "plain"), ("", "")])
def test_slack_text_escapes_what_slack_reads_as_markup(text: str, shown: str) -> None:
    from functions.runtime.alertsinks import slack_text

    assert slack_text(text) == shown


def test_throttled_sink_is_503_and_the_others_are_delivered(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        receivers: tuple[Receiver, Receiver], alertmanager: LocalAlertmanager) -> None:
    slack, pagerduty = receivers
    create_failed_job(gateway, namespace, job="throttled")
    slack.script = [(429, {"Retry-After": "3"})]
    url = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=slack.url, CREFN_PAGERDUTY_URL=pagerduty.url,
                   CREFN_PAGERDUTY_ROUTING_KEY="k", CREFN_ALERTMANAGER_URL=alertmanager.url)
    answer: Answer = send(url, failed(namespace, job="throttled"))
    assert answer.status == 503
    assert "slack: throttled (429, retry after 3s)" in answer.text and "\n" not in answer.text
    assert len(pagerduty.bodies) == 1 and "CREJobFailed" in ours(alertmanager.alerts(), namespace)
    # the Broker retries: Slack takes it now; PagerDuty dedups by key, Alertmanager by labels
    assert send(url, failed(namespace, job="throttled")).status == 202
    keys = {b["dedup_key"] for b in pagerduty.bodies}
    assert len(slack.bodies) == 2 and keys == {f"{namespace}/throttled/CREJobFailed"}


def test_sink_down_is_503_naming_it(serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway,
                                    namespace: str, receivers: tuple[Receiver, Receiver]) -> None:
    slack, pagerduty = receivers
    create_failed_job(gateway, namespace, job="down")
    url = alert_fn(serve, cluster, CREFN_ALERTMANAGER_URL=f"http://127.0.0.1:{closed_port()}",
                   CREFN_SLACK_WEBHOOK_URL=slack.url, CREFN_PAGERDUTY_URL=pagerduty.url,
                   CREFN_PAGERDUTY_ROUTING_KEY="k")
    answer = send(url, failed(namespace, job="down"))
    assert answer.status == 503 and answer.text.startswith("alert sinks failed: alertmanager: unreachable")
    assert len(slack.bodies) == 1 and len(pagerduty.bodies) == 1


def test_a_sink_refusing_the_payload_is_400(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                            gateway: Gateway, namespace: str) -> None:
    refusing = Receiver(403, b"invalid_token")
    create_failed_job(gateway, namespace, job="refused")
    try:
        url = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=refusing.url + "refuse")
        answer = send(url, failed(namespace, job="refused"))
        assert answer.status == 400 and "slack: answered 403: invalid_token" in answer.text
    finally:
        refusing.close()


def test_cloudevents_sink_gets_alert_events(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                            gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    create_failed_job(gateway, namespace, job="ce")

    out = (tmp_path / "alerts.jsonl").open("w")
    from functions.runtime.deadletters import JsonlWriter, event_server

    server = event_server(free_port(), JsonlWriter(out), "127.0.0.1")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = alert_fn(serve, cluster, CREFN_ALERT_SINK_URL=f"http://127.0.0.1:{server.server_address[1]}/")
        assert send(url, failed(namespace, job="ce")).status == 202
    finally:
        server.shutdown()
        server.server_close()
        out.close()
    (record,) = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    attrs = record["attributes"]
    assert (attrs["type"], attrs["alertname"], attrs["alertstatus"], attrs["severity"], attrs["partitionkey"]) == (
        "dev.crefn.alert", "CREJobFailed", "firing", "critical", f"{namespace}/ce")
    assert record["data"]["job"] == {"name": "ce", "namespace": namespace} and record["data"]["status"] == "firing"


def test_no_sink_configured_is_202_and_bad_data_400(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                                     gateway: Gateway, namespace: str) -> None:
    url = alert_fn(serve, cluster)
    create_failed_job(gateway, namespace, job="nosink")
    assert send(url, failed(namespace, job="nosink")).status == 202
    bad = failed(namespace)
    bad["data"]["new"] = "Failed"
    answer = send(url, bad)
    assert answer.status == 400 and "invalid dev.crefn.job.condition.changed data: new" in answer.text


def test_api_away_pages_nothing_and_asks_for_a_retry(serve: Callable[..., ServedFunction], namespace: str,
                                                      tmp_path: Path, alertmanager: LocalAlertmanager) -> None:
    """What the event says cannot be checked against the stored Job: nothing is sent until it can."""
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    url = serve("alert", CREFN_KUBECONFIG=str(kubeconfig), CREFN_ALERTMANAGER_URL=alertmanager.url,
                CREFN_KUBE_TIMEOUT_SECONDS="2").url
    answer = send(url, failed(namespace, restarts=2, job="away"))
    assert answer.status == 503 and "unreachable" in answer.text, answer.text
    assert ours(alertmanager.alerts(), namespace) == {}


EXCLUSIVE_FAILED = [("InProgress", "False", "NotApplicable"), ("Succeeded", "False", "NotApplicable")]
RUNNING = [("InProgress", "True", "WorkloadRunning"), ("Succeeded", "False", "NotApplicable"),
           ("Failed", "False", "NotApplicable")]


def test_in_observe_mode_cre_verdicts_page_from_the_job_and_both_paths_make_one_alert(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        alertmanager: LocalAlertmanager, webhook: Receiver) -> None:
    url = alert_fn(serve, cluster, CREFN_MODE="observe", CREFN_ALERTMANAGER_URL=alertmanager.url)
    timed_out = cre_writes(gateway, namespace, "llm", [*EXCLUSIVE_FAILED, ("Failed", "True", "JobTimedOut")])
    assert send(url, job_updated(gateway, timed_out)).status == 202
    (alert,) = listed(alertmanager, namespace, "CREJobFailed")
    assert alert["labels"] == {"alertname": "CREJobFailed", "severity": "critical", "namespace": namespace,
                               "job": "llm", "reason": "JobTimedOut"}
    assert "JobTimedOut (CRE)" in alert["annotations"]["description"]
    assert wait_until(lambda: "CREJobFailed" in notified(webhook, namespace, "firing"), 15)
    # the project's own decision (its timeout, computed in observe mode) and a later update: the same alert
    decided = failed(namespace)
    decided["data"]["new"] = {"type": "Failed", "reason": "JobTimedOut", "message": "Job exceeded timeoutPerJob"}
    assert send(url, decided).status == 202
    assert send(url, job_updated(gateway, timed_out)).status == 202
    assert len(listed(alertmanager, namespace, "CREJobFailed")) == 1

    hardware = cre_writes(gateway, namespace, "gpu", [*RUNNING, ("HardwareFailed", "True", "HardwareFailureDetected")],
                          failedNodes=[{"name": "gpu-3", "reason": "HardwareFailureDetected", "message": "unhealthy"}])
    assert send(url, job_updated(gateway, hardware)).status == 202
    (alert,) = listed(alertmanager, namespace, "CREJobHardwareFailed")
    assert alert["labels"] == {"alertname": "CREJobHardwareFailed", "severity": "warning", "namespace": namespace,
                               "job": "gpu", "reason": "HardwareFailureDetected"}
    assert "gpu-3" in alert["annotations"]["summary"]
    decided = event("dev.crefn.job.hardware.failed", {
        "job": {"name": "gpu", "namespace": namespace}, "nodes": ["gpu-3"],
        "message": "Hardware failure detected on node(s): [gpu-3]"}, namespace, "gpu")
    assert send(url, decided).status == 202
    assert len(listed(alertmanager, namespace, "CREJobHardwareFailed")) == 1
    assert wait_until(lambda: "CREJobHardwareFailed" in notified(webhook, namespace, "firing"), 15)


def test_chat_gets_a_fresh_cre_verdict_once_and_an_old_one_never(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        receivers: tuple[Receiver, Receiver]) -> None:
    slack, pagerduty = receivers
    url = alert_fn(serve, cluster, CREFN_MODE="observe", CREFN_SLACK_WEBHOOK_URL=slack.url,
                   CREFN_PAGERDUTY_URL=pagerduty.url, CREFN_PAGERDUTY_ROUTING_KEY="k")
    fresh = cre_writes(gateway, namespace, "fresh", [*EXCLUSIVE_FAILED, ("Failed", "True", "WorkloadStalled")])
    assert send(url, job_updated(gateway, fresh)).status == 202
    (message,) = slack.bodies
    assert message["text"] == f"CRITICAL: CRE Job {namespace}/fresh failed (WorkloadStalled)"
    (trigger,) = pagerduty.bodies
    assert (trigger["event_action"], trigger["dedup_key"]) == ("trigger", f"{namespace}/fresh/CREJobFailed")
    old = cre_writes(gateway, namespace, "old", [*EXCLUSIVE_FAILED, ("Failed", "True", "WorkloadStalled")],
                     since=datetime.now(UTC) - timedelta(minutes=10))
    assert send(url, job_updated(gateway, old)).status == 202
    # a running Job has nothing to say
    assert send(url, job_updated(gateway, cre_writes(gateway, namespace, "quiet", RUNNING))).status == 202
    assert len(slack.bodies) == 1 and len(pagerduty.bodies) == 1
    # manage mode: the project wrote the verdict and its decision event announced it; the update adds nothing
    managed = alert_fn(serve, cluster, CREFN_SLACK_WEBHOOK_URL=slack.url)
    assert send(managed, job_updated(gateway, fresh)).status == 202
    assert len(slack.bodies) == 1


def test_a_verdict_dated_at_the_end_of_time_is_announced_not_a_500(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        alertmanager: LocalAlertmanager) -> None:
    """A Failed condition whose lastTransitionTime is 9999-12-31T23:59:59Z (written by hand): the alert held
    from then ends at the last second a timestamp holds, instead of past it (an overflow, answered 500)."""
    slack = Receiver(200, b"ok")
    try:
        url = alert_fn(serve, cluster, CREFN_MODE="observe", CREFN_SLACK_WEBHOOK_URL=slack.url,
                       CREFN_ALERTMANAGER_URL=alertmanager.url)
        late = cre_writes(gateway, namespace, "late", [*EXCLUSIVE_FAILED, ("Failed", "True", "WorkloadFailed")],
                          since=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
        answer = send(url, job_updated(gateway, late))
    finally:
        slack.close()
    assert (answer.status, answer.text) == (202, "")
    assert [body["text"] for body in slack.bodies] == [f"CRITICAL: CRE Job {namespace}/late failed (WorkloadFailed)"]
    (alert,) = listed(alertmanager, namespace, "CREJobFailed")
    assert (alert["startsAt"], alert["endsAt"]) == ("9999-12-31T23:59:59.000Z", "9999-12-31T23:59:59.000Z")


SLACK_SECRET, PAGERDUTY_SECRET = "T0SECRET/B0SECRET/xoxSECRETSLACKPATH", "PDSECRETROUTINGKEY0"


@pytest.mark.own_process
def test_no_secret_reaches_a_log_line_or_an_answer(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                                  gateway: Gateway, namespace: str) -> None:
    refusing = Receiver(403, b"invalid_token")
    closed = f"http://127.0.0.1:{closed_port()}/services/{SLACK_SECRET}"  # refused: unreachable
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-alert")))
    answers: list[str] = []
    create_failed_job(gateway, namespace, restarts=0, max_restarts=0)
    try:
        for slack, pagerduty in ((f"{refusing.url}services/{SLACK_SECRET}", refusing.url), (closed, closed)):
            served = serve("alert", CREFN_KUBECONFIG=kubeconfig, CREFN_LOG_LEVEL="INFO", CREFN_SLACK_WEBHOOK_URL=slack,
                           CREFN_PAGERDUTY_URL=pagerduty, CREFN_PAGERDUTY_ROUTING_KEY=PAGERDUTY_SECRET)
            answer = send(served.url, failed(namespace))
            assert answer.status in (400, 503), answer.text
            answers.append(answer.text)
            assert served.log_path is not None
            logged = served.log_path.read_text()
            assert "slack" in logged.lower()  # the failure is logged, with what failed
            for secret in (SLACK_SECRET, PAGERDUTY_SECRET, "xoxSECRET"):
                assert secret not in logged and secret not in answer.text
    finally:
        refusing.close()
    assert any("403" in a for a in answers) and any("unreachable" in a for a in answers), answers


def test_an_update_of_a_job_that_says_nothing_is_answered_without_a_read() -> None:
    """A running Job's update: nothing to alert on whatever is stored, so no GET (this Context has no API
    server to reach: a read would raise)."""
    record = apiserver_record("update", job(alertjobs.RUNNING).raw, cre_jobs("nvcre.nvidia.com"), "https://127.0.0.1")
    settings = Settings.model_validate({"alertmanager_url": "http://am"})
    observed = read(to_envelope(record), Context(settings, clock=lambda: NOW))
    assert observed == Skipped("Job ns/llm: its update says nothing to alert on")


def test_an_api_server_event_other_than_update_or_delete_is_refused() -> None:
    record = apiserver_record("add", {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                      "metadata": {"name": "llm", "namespace": "ml"}},
                              cre_jobs("nvcre.nvidia.com"), "https://127.0.0.1")
    envelope = to_envelope(record)
    with pytest.raises(PermanentError) as refused:
        read(envelope, Context(Settings()))
    assert str(refused.value) == f"unknown event type {envelope.type!r} for this function"
