"""The alert sinks' secrets in service: no secret shows in an answer, a log line or a dead letter, even when a
sink is down or its answer quotes it. Alertmanager is reached with basic auth over TLS verified by a CA file
(the real Alertmanager, behind its own `--web.config.file`), or with a bearer token read from its file at each
send (a receiver on loopback stands for the proxy that checks it: Alertmanager itself takes no bearer token).
A sink's redirect is not followed. The alert function shows how many sinks it has
(`crefn_alert_sinks_configured`). The checks at start-up are in tests/runtime/test_settings.py."""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from functions.runtime.client import Answer, Peer, post_json, send
from functions.runtime.errors import PermanentError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_jobs
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import apiserver_record
from localstack.eventing.broker import Delivery, LocalBroker, Trigger
from localstack.manifests import service_account_user
from localstack.observability.alertmanager import Guard, LocalAlertmanager
from localstack.serving import ServedFunction
from tests.support.helpers import Receiver, closed_port, self_signed
from tests.support.secrets import PASSWORD, PASSWORD_HASH, ROUTING_KEY, SLACK_PATH, TOKEN

JOBS = cre_jobs("nvcre.nvidia.com")


# -- serving: nothing shown, whatever the sinks do ---------------------------------------------------


def alert_fn(serve: Callable[..., ServedFunction], cluster: LocalCluster, **settings: str) -> ServedFunction:
    """The alert function in observe mode (a fresh failure of any Job is announced to every sink)."""
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-alert")))
    return serve("alert", CREFN_KUBECONFIG=kubeconfig, CREFN_MODE="observe", **settings)


def failed(gateway: Gateway, namespace: str, name: str) -> dict[str, Any]:
    """The update event of a Job CRE failed a moment ago (its stored conditions say so)."""
    gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": name},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [("InProgress", "False", "NotApplicable"), ("Succeeded", "False", "NotApplicable"),
                  ("Failed", "True", "WorkloadFailed")]
    job = gateway.patch(JOBS, namespace, name, {"status": {"conditions": [
        {"type": t, "status": s, "reason": r, "message": f"{r} (CRE)", "observedGeneration": 1,
         "lastTransitionTime": now} for t, s, r in conditions]}}, status=True)
    return apiserver_record("update", job, JOBS, gateway.host)


@pytest.mark.own_process
def test_sinks_down_or_quoting_their_secrets_show_them_in_no_answer_log_line_or_dead_letter(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str,
        tmp_path: Path) -> None:
    slack = Receiver(404, f"no_service: {SLACK_PATH}".encode())  # answers that quote the secrets sent
    pagerduty = Receiver(400, json.dumps({"status": "invalid event",
                                          "errors": [f"routing_key {ROUTING_KEY} is unknown"]}).encode())
    down = closed_port()
    try:
        served = alert_fn(serve, cluster, CREFN_LOG_LEVEL="INFO",
                          CREFN_ALERTMANAGER_URL=f"http://crefn:{PASSWORD}@127.0.0.1:{down}/",
                          CREFN_SLACK_WEBHOOK_URL=slack.url.rstrip("/") + SLACK_PATH,
                          CREFN_PAGERDUTY_URL=pagerduty.url, CREFN_PAGERDUTY_ROUTING_KEY=ROUTING_KEY,
                          CREFN_ALERT_SINK_URL=f"http://127.0.0.1:{down}/events?token={TOKEN}")
        answer = send(served.url, failed(gateway, namespace, "direct"))
        broker = LocalBroker([Trigger("alert", ({"exact": {"type": "dev.knative.apiserver.resource.update"}},),
                                      served.url, Delivery(retry=1, backoff_delay=0.1, timeout=15))],
                             dead_letters=tmp_path / "dead-letters.jsonl")
        try:
            broker.publish(failed(gateway, namespace, "brokered"))
            assert broker.wait_idle(timeout=60)
            dead = broker.dead
        finally:
            broker.close()
    finally:
        slack.close()
        pagerduty.close()
    refused = "[Errno 111] Connection refused"
    assert (answer.status, answer.text) == (503, (  # one line of at most 300 characters
        f"alert sinks failed: alertmanager: unreachable ({refused}); slack: answered 404: no_service: [redacted]; "
        'pagerduty: answered 400: {"status": "invalid event", "errors": ["routing_key [redacted] is unknown"]}; '
        f"cloudevents: unreachable ({refused}) (delivered to…"))
    # each sink was sent the direct event, the brokered one and its retry: its own secret, and no other
    assert (len(slack.requests), len(pagerduty.requests)) == (3, 3)
    assert {h.get("authorization") for _, h, _ in slack.requests + pagerduty.requests} == {None}
    assert all(json.loads(body)["routing_key"] == ROUTING_KEY for _, _, body in pagerduty.requests)
    (letter,) = dead
    assert letter["attributes"]["knativeerrorcode"] == "503"
    assert letter["attributes"]["knativeerrordata"].startswith("alert sinks failed: alertmanager: unreachable (")
    assert served.log_path is not None
    logged = served.log_path.read_text()
    assert logged.count('"status": 503') == 3  # the direct event, and the brokered one and its retry
    for shown in (answer.text, logged, json.dumps(letter)):
        assert "SECRET" not in shown and "crefn:" not in shown and "hooks" not in shown


def test_a_sink_breaking_off_its_error_answer_is_a_503_and_the_others_are_still_sent(
        serve: Callable[..., ServedFunction], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """Alertmanager answers 503 and its body ends early (100 bytes announced, 5 sent): a one-line 503 naming
    it, and Slack is sent the alert all the same."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_short() -> None:
        conn, _ = listener.accept()
        with conn:
            received = b""
            while b"\r\n\r\n" not in received:
                received += conn.recv(65536)
            head, _, body = received.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?im)^content-length:\s*(\d+)", head)[1])  # type: ignore[index]
            while len(body) < length:  # the request read whole: a close with bytes unread would be a reset
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\n\r\nshort")

    threading.Thread(target=answer_short, daemon=True).start()
    slack = Receiver(200, b"ok")
    try:
        served = alert_fn(serve, cluster, CREFN_ALERTMANAGER_URL=f"http://127.0.0.1:{listener.getsockname()[1]}/",
                          CREFN_SLACK_WEBHOOK_URL=slack.url.rstrip("/") + SLACK_PATH)
        answer = send(served.url, failed(gateway, namespace, "broken"))
    finally:
        listener.close()
        slack.close()
    assert (answer.status, answer.text) == (503, "alert sinks failed: alertmanager: answered 503 incompletely: "
                                                 "IncompleteRead (delivered to the others: CREJobFailed firing)")
    assert [json.loads(body)["text"] for _, _, body in slack.requests] == [
        f"CRITICAL: CRE Job {namespace}/broken failed (WorkloadFailed)"]


# -- Alertmanager's credentials and CA ---------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAlertmanager]:
    """The real Alertmanager behind TLS (a self-signed certificate) and basic auth (user `crefn`)."""
    work = tmp_path_factory.mktemp("guarded")
    cert, key = self_signed(work, "alertmanager")
    notifications = Receiver()
    alertmanager = LocalAlertmanager(work, notifications.url, Guard(cert, key, "crefn", PASSWORD, PASSWORD_HASH))
    yield alertmanager.start()
    alertmanager.stop()
    notifications.close()


def test_alertmanager_behind_tls_and_basic_auth(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                                gateway: Gateway, namespace: str, guarded: LocalAlertmanager,
                                                tmp_path: Path) -> None:
    assert guarded.guard is not None
    ca = str(guarded.guard.cert)
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD + "\n")  # as a Secret mounted from `echo` holds it
    answers: dict[str, Answer] = {}
    for job, settings in {
        "basic": {"CREFN_ALERTMANAGER_URL": guarded.url, "CREFN_ALERTMANAGER_USERNAME": "crefn",
                  "CREFN_ALERTMANAGER_PASSWORD_FILE": str(password_file), "CREFN_ALERTMANAGER_CA_FILE": ca},
        "in-url": {"CREFN_ALERTMANAGER_URL": f"https://crefn:{quote(PASSWORD)}@127.0.0.1:{guarded.port}/",
                   "CREFN_ALERTMANAGER_CA_FILE": ca},
        "wrong-password": {"CREFN_ALERTMANAGER_URL": guarded.url, "CREFN_ALERTMANAGER_USERNAME": "crefn",
                           "CREFN_ALERTMANAGER_PASSWORD": "wr0ngSECRET", "CREFN_ALERTMANAGER_CA_FILE": ca},
        "no-ca": {"CREFN_ALERTMANAGER_URL": guarded.url, "CREFN_ALERTMANAGER_USERNAME": "crefn",
                  "CREFN_ALERTMANAGER_PASSWORD": PASSWORD},
        "system-ca": {"CREFN_ALERTMANAGER_URL": guarded.url, "CREFN_ALERTMANAGER_USERNAME": "crefn",
                      "CREFN_ALERTMANAGER_PASSWORD": PASSWORD, "SSL_CERT_FILE": ca},  # the system's CAs trust it
    }.items():
        answers[job] = send(alert_fn(serve, cluster, **settings).url, failed(gateway, namespace, job))
    assert {job: a.status for job, a in answers.items()} == {"basic": 202, "in-url": 202, "wrong-password": 400,
                                                             "no-ca": 503, "system-ca": 202}
    assert answers["wrong-password"].text == "alert sinks refused: alertmanager: answered 401: Unauthorized"
    assert answers["no-ca"].text.startswith("alert sinks failed: alertmanager: unreachable ([SSL: "
                                            "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed "
                                            "certificate")
    assert not any("SECRET" in a.text for a in answers.values())
    listed = {a["labels"]["job"] for a in guarded.alerts() if a["labels"].get("namespace") == namespace}
    assert listed == {"basic", "in-url", "system-ca"}


def test_a_bearer_token_file_is_read_at_each_send(serve: Callable[..., ServedFunction], cluster: LocalCluster,
                                                  gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    proxy = Receiver(200, b"")  # stands for the authenticating proxy in front of an Alertmanager
    token = tmp_path / "token"
    token.write_text("first-t0kenSECRET\n")
    try:
        url = alert_fn(serve, cluster, CREFN_ALERTMANAGER_URL=proxy.url + "alertmanager",
                       CREFN_ALERTMANAGER_BEARER_TOKEN_FILE=str(token)).url
        assert send(url, failed(gateway, namespace, "first")).status == 202
        token.write_text("second-t0kenSECRET")  # rotated
        assert send(url, failed(gateway, namespace, "second")).status == 202
        token.unlink()
        gone = send(url, failed(gateway, namespace, "third"))
    finally:
        proxy.close()
    assert [h["authorization"] for _, h, _ in proxy.requests] == ["Bearer first-t0kenSECRET",
                                                                  "Bearer second-t0kenSECRET"]
    assert (gone.status, gone.text) == (503, f"alert sinks failed: alertmanager: its bearer token file {token} cannot "
                                             "be read (No such file or directory) (delivered to the others: "
                                             "CREJobFailed firing)")


def test_a_sink_redirecting_elsewhere_is_refused_and_its_credentials_stay_home() -> None:
    elsewhere = Receiver(200)
    redirecting = Receiver(script=[(307, {"location": elsewhere.url})])
    try:
        with pytest.raises(PermanentError) as refused:
            post_json(Peer("alertmanager", redirecting.url, bearer_token="t0kenSECRET"), [], timeout=5)
    finally:
        elsewhere.close()
        redirecting.close()
    assert str(refused.value) == "alertmanager: answered 307: ok"
    assert [h["authorization"] for _, h, _ in redirecting.requests] == ["Bearer t0kenSECRET"]
    assert elsewhere.requests == []


# -- how many sinks -----------------------------------------------------------------------------------


@pytest.mark.own_process  # served in the test process, every function would share one set of metrics
def test_the_alert_function_shows_how_many_sinks_it_has_before_any_event(
        serve: Callable[..., ServedFunction]) -> None:
    def gauge(served: ServedFunction) -> list[str]:
        with urllib.request.urlopen(served.url + "metrics", timeout=10) as resp:
            text = resp.read().decode()
        return [line for line in text.splitlines() if line.startswith("crefn_alert_sinks_configured")]

    assert gauge(serve("alert", CREFN_LOG_LEVEL="ERROR")) == ['crefn_alert_sinks_configured{function="alert"} 0.0']
    assert gauge(serve("alert", CREFN_SLACK_WEBHOOK_URL="https://hooks.slack.com/services/T/B/x",
                       CREFN_PAGERDUTY_ROUTING_KEY="k")) == ['crefn_alert_sinks_configured{function="alert"} 2.0']
    assert gauge(serve("phase", CREFN_LOG_LEVEL="ERROR")) == []
