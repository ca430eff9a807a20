"""The alert sinks' secrets: their URLs (a Slack webhook's path, a token in a query, a user and password),
the PagerDuty routing key and Alertmanager's credentials. A value that cannot be used stops the start-up
with one line naming the variable, never the value; no secret shows in an answer, a log line or a dead
letter, even when a sink is down or its answer quotes it. Alertmanager is reached with basic auth over
TLS verified by a CA file (the real Alertmanager, behind its own `--web.config.file`), or with a bearer
token read from its file at each send (a receiver on loopback stands for the proxy that checks it:
Alertmanager itself takes no bearer token). A sink's redirect is not followed. The alert function shows
how many sinks it has (`crefn_alert_sinks_configured`). Every secret here contains `SECRET`, so a leak
of any part of one is found by that word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from functions.alertsinks import configured_sinks
from functions.client import Answer, Peer, post_json, send
from functions.errors import PermanentError
from functions.gateway import Gateway
from functions.resources import cre_jobs
from functions.settings import DEFAULT_PAGERDUTY_URL, InvalidSettings, load_settings
from localstack.cluster.apiserver import LocalCluster, free_port
from localstack.eventing.apisource import apiserver_record
from localstack.eventing.broker import Delivery, LocalBroker, Trigger
from localstack.manifests import service_account_user
from localstack.observability.alertmanager import Guard, LocalAlertmanager
from localstack.serving import MAIN, ServedFunction
from tests.support.helpers import Receiver, closed_port, self_signed

JOBS = cre_jobs("nvcre.nvidia.com")
SLACK_PATH = "/services/T0SECRET/B0SECRET/sl4ckSECRETpath"
ROUTING_KEY = "pdR0UT1NGkeySECRET"
TOKEN = "ce-t0ken-SECRET"
PASSWORD = "am-pa55-t0pSECRET"
PASSWORD_HASH = "$2b$04$tatJPtaB0TGq6aDjZFz0O.8CSghO9HcAwu/aJT71gStpb7g6weNCq"
"""bcrypt (cost 4: checked fast) of PASSWORD, as Alertmanager's `basic_auth_users` takes it."""
NO_SCHEME = "not a URL: it has no scheme (it must begin with https:// or http://)"


# -- start-up: checked, and named without the value ------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    work = tmp_path_factory.mktemp("files")
    cert, _ = self_signed(work, "ca")
    (work / "empty").write_text("\n")
    (work / "token").write_text("t0kenSECRET\n")
    return {"cert": str(cert), "not_pem": str(work / "token"), "empty": str(work / "empty"),
            "token": str(work / "token"), "missing": str(work / "missing")}


AM = {"CREFN_ALERTMANAGER_URL": "http://am.monitoring:9093"}
REFUSED = {
    "slack URL without its scheme": (
        {"CREFN_SLACK_WEBHOOK_URL": "hooks.slack.com" + SLACK_PATH}, f"CREFN_SLACK_WEBHOOK_URL: {NO_SCHEME}"),
    "host and port only": ({"CREFN_ALERTMANAGER_URL": "amSECRET:9093"}, f"CREFN_ALERTMANAGER_URL: {NO_SCHEME}"),
    "another scheme": ({"CREFN_ALERT_SINK_URL": f"ftp://sink/?token={TOKEN}"},
                       "CREFN_ALERT_SINK_URL: not an http or https URL"),
    "no host": ({"CREFN_PAGERDUTY_URL": f"https:///v2/enqueue?{TOKEN}"},
                "CREFN_PAGERDUTY_URL: not a URL: it has no host"),
    "a password where the port goes": (
        {"CREFN_ALERTMANAGER_URL": f"http://am:{PASSWORD}"},
        "CREFN_ALERTMANAGER_URL: not a URL: its port is not a number from 0 to 65535"),
    "a space inside": ({"CREFN_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0 SECRET"},
                       "CREFN_SLACK_WEBHOOK_URL: not a URL: it holds spaces or control characters"),
    "routing key with punctuation": (
        {"CREFN_PAGERDUTY_ROUTING_KEY": "pd-R0UT1NG-SECRET"},
        "CREFN_PAGERDUTY_ROUTING_KEY: not a PagerDuty routing key: letters and digits only"),
    "bearer token with its scheme": (
        {**AM, "CREFN_ALERTMANAGER_BEARER_TOKEN": "Bearer t0kenSECRET"},
        "CREFN_ALERTMANAGER_BEARER_TOKEN: not a bearer token: visible ASCII only, no spaces"),
    "username with a colon": (
        {**AM, "CREFN_ALERTMANAGER_USERNAME": f"crefn:{PASSWORD}", "CREFN_ALERTMANAGER_PASSWORD": PASSWORD},
        "CREFN_ALERTMANAGER_USERNAME: holds a character basic auth cannot carry (a control character, or `:` in "
        "the name)"),
    "token and token file": (
        {**AM, "CREFN_ALERTMANAGER_BEARER_TOKEN": "t0kenSECRET", "CREFN_ALERTMANAGER_BEARER_TOKEN_FILE": "{token}"},
        "set CREFN_ALERTMANAGER_BEARER_TOKEN or CREFN_ALERTMANAGER_BEARER_TOKEN_FILE, not both"),
    "username without a password": ({**AM, "CREFN_ALERTMANAGER_USERNAME": "crefn"},
                                    "CREFN_ALERTMANAGER_USERNAME needs CREFN_ALERTMANAGER_PASSWORD or "
                                    "CREFN_ALERTMANAGER_PASSWORD_FILE"),
    "password without a username": ({**AM, "CREFN_ALERTMANAGER_PASSWORD": PASSWORD},
                                    "CREFN_ALERTMANAGER_PASSWORD needs CREFN_ALERTMANAGER_USERNAME"),
    "bearer token and basic auth": (
        {**AM, "CREFN_ALERTMANAGER_BEARER_TOKEN": "t0kenSECRET", "CREFN_ALERTMANAGER_USERNAME": "crefn",
         "CREFN_ALERTMANAGER_PASSWORD": PASSWORD},
        "Alertmanager takes a bearer token or a username and password, not both"),
    "credentials in the URL and a token": (
        {"CREFN_ALERTMANAGER_URL": f"http://crefn:{PASSWORD}@am", "CREFN_ALERTMANAGER_BEARER_TOKEN": "t0kenSECRET"},
        "CREFN_ALERTMANAGER_URL holds credentials (user:password@) and CREFN_ALERTMANAGER_BEARER_TOKEN is set too: "
        "use one"),
    "credentials without an Alertmanager": (
        {"CREFN_ALERTMANAGER_USERNAME": "crefn", "CREFN_ALERTMANAGER_PASSWORD": PASSWORD},
        "CREFN_ALERTMANAGER_PASSWORD is set but CREFN_ALERTMANAGER_URL is not"),
    "a CA for plain http": ({**AM, "CREFN_ALERTMANAGER_CA_FILE": "{cert}"},
                            "CREFN_ALERTMANAGER_CA_FILE is set but CREFN_ALERTMANAGER_URL is not https"),
    "a CA file that is not one": ({"CREFN_ALERTMANAGER_URL": "https://am", "CREFN_ALERTMANAGER_CA_FILE": "{not_pem}"},
                                  "CREFN_ALERTMANAGER_CA_FILE: {not_pem} holds no PEM certificate"),
    "a token file missing": (
        {**AM, "CREFN_ALERTMANAGER_BEARER_TOKEN_FILE": "{missing}"},
        "CREFN_ALERTMANAGER_BEARER_TOKEN_FILE: {missing} cannot be read (No such file or directory)"),
    "an empty password file": (
        {**AM, "CREFN_ALERTMANAGER_USERNAME": "crefn", "CREFN_ALERTMANAGER_PASSWORD_FILE": "{empty}"},
        "CREFN_ALERTMANAGER_PASSWORD_FILE: {empty} holds no credential (one line of visible ASCII, got 1 bytes)"),
}


@pytest.mark.parametrize(("env", "why"), REFUSED.values(), ids=REFUSED.keys())
def test_a_sink_setting_that_cannot_be_used_is_named_and_never_shown(
        monkeypatch: pytest.MonkeyPatch, files: dict[str, str], env: dict[str, str], why: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(**files))
    with pytest.raises(InvalidSettings) as refused:
        load_settings()
    assert str(refused.value) == f"invalid settings: {why.format(**files)}"
    assert "SECRET" not in str(refused.value) and refused.value.__cause__ is None


def test_sink_secrets_are_trimmed_and_shown_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREFN_SLACK_WEBHOOK_URL", f" https://hooks.slack.com{SLACK_PATH}\n")
    monkeypatch.setenv("CREFN_PAGERDUTY_ROUTING_KEY", f"{ROUTING_KEY}\n")
    monkeypatch.setenv("CREFN_PAGERDUTY_URL", "")
    monkeypatch.setenv("CREFN_ALERTMANAGER_URL", "")
    monkeypatch.setenv("CREFN_ALERT_SINK_URL", "  ")
    settings = load_settings()
    assert settings.slack_webhook_url is not None and settings.pagerduty_routing_key is not None
    assert settings.slack_webhook_url.get_secret_value() == f"https://hooks.slack.com{SLACK_PATH}"
    assert settings.pagerduty_routing_key.get_secret_value() == ROUTING_KEY
    assert settings.pagerduty_url.get_secret_value() == DEFAULT_PAGERDUTY_URL
    assert (settings.alertmanager_url, settings.alert_sink_url) == (None, None)
    sinks = configured_sinks(settings)
    assert [sink.name for sink in sinks] == ["slack", "pagerduty"]
    shown = f"{settings!r} {settings} {settings.model_dump_json()} {sinks!r}"
    assert "SECRET" not in shown and "hooks.slack.com" not in shown and "events.pagerduty.com" not in shown


@pytest.mark.process
@pytest.mark.own_process
def test_the_alert_function_refuses_to_start_on_a_slack_url_without_its_scheme() -> None:
    env = {**os.environ, "CREFN_SLACK_WEBHOOK_URL": "hooks.slack.com" + SLACK_PATH}
    started = subprocess.run([sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", "alert",
                              "--host", "127.0.0.1", "--port", str(free_port())],
                             env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (started.returncode, started.stdout) == (1, "")
    assert started.stderr == f"crefn alert: invalid settings: CREFN_SLACK_WEBHOOK_URL: {NO_SCHEME}\n"


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
    }.items():
        answers[job] = send(alert_fn(serve, cluster, **settings).url, failed(gateway, namespace, job))
    assert {job: a.status for job, a in answers.items()} == {"basic": 202, "in-url": 202, "wrong-password": 400,
                                                             "no-ca": 503}
    assert answers["wrong-password"].text == "alert sinks refused: alertmanager: answered 401: Unauthorized"
    assert answers["no-ca"].text.startswith("alert sinks failed: alertmanager: unreachable ([SSL: "
                                            "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed "
                                            "certificate")
    assert not any("SECRET" in a.text for a in answers.values())
    listed = {a["labels"]["job"] for a in guarded.alerts() if a["labels"].get("namespace") == namespace}
    assert listed == {"basic", "in-url"}


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
