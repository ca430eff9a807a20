"""The settings: defaults, the environment, and the checks at start-up. A sink setting that cannot be used
(its URL, the PagerDuty routing key, Alertmanager's credentials) stops the start-up with one line naming the
variable, never the value; the sinks' secrets are trimmed and shown in no repr, str or dump."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from functions.runtime.alertsinks import configured_sinks
from functions.runtime.settings import DEFAULT_PAGERDUTY_URL, InvalidSettings, Settings, load_settings
from localstack.cluster.apiserver import free_port
from localstack.serving import MAIN
from tests.support.helpers import self_signed
from tests.support.secrets import PASSWORD, ROUTING_KEY, SLACK_PATH, TOKEN

NO_SCHEME = "not a URL: it has no scheme (it must begin with https:// or http://)"


def test_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert (s.mode, s.manage_all, s.cre_group, s.restart_grace_seconds, s.require_checkpoint_evidence) == (
        "manage", False, "nvcre.nvidia.com", 30, True)
    assert s.pagerduty_url.get_secret_value() == "https://events.pagerduty.com/v2/enqueue" and s.log_level == "INFO"
    monkeypatch.setenv("CREFN_MODE", "observe")
    monkeypatch.setenv("CREFN_CRE_GROUP", "cre.nvidia.com")
    monkeypatch.setenv("CREFN_RESTART_GRACE_SECONDS", "0")
    monkeypatch.setenv("KUBECONFIG", "/tmp/kc")
    s = Settings()
    assert (s.observe, s.cre_group, s.restart_grace_seconds, s.kubeconfig) == (True, "cre.nvidia.com", 0, "/tmp/kc")


def test_the_environment_is_read_in_any_case_the_first_name_first_and_given_values_win(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("crefn_mode", "observe")
    monkeypatch.setenv("KUBECONFIG", "/tmp/second")
    monkeypatch.setenv("CREFN_KUBECONFIG", "/tmp/first")
    monkeypatch.setenv("K_SINK", "http://sink")
    s = Settings()
    assert (s.mode, s.kubeconfig, s.k_sink) == ("observe", "/tmp/first", "http://sink")
    s = Settings(mode="manage", kubeconfig="/tmp/given")
    assert (s.mode, s.kubeconfig, s.k_sink) == ("manage", "/tmp/given", "http://sink")


@pytest.mark.parametrize(("var", "value"), [("CREFN_MODE", "sometimes"), ("CREFN_RESTART_GRACE_SECONDS", "-1")])
def test_settings_reject_bad_values(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValidationError):
        Settings()


@pytest.mark.parametrize("value", ["debug", "Warning", " error ", "INFO"])
def test_a_log_level_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CREFN_LOG_LEVEL", value)
    assert Settings().log_level == value.strip().upper()


def test_the_revision_is_unknown_unless_the_build_says() -> None:
    assert Settings().revision == "unknown"
    assert Settings(revision=" ").revision == "unknown"
    assert Settings(revision="4f2a9c1").revision == "4f2a9c1"


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
    "a full-width @ in the password": (
        {"CREFN_ALERTMANAGER_URL": "https://crefn:am-pa55\uff20t0pSECRET@am.example.com/"},
        "CREFN_ALERTMANAGER_URL: not a URL: its host or userinfo holds characters that turn into `@`, `:`, `/`, "
        "`?` or `#` once normalized (NFKC)"),
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
    (line,) = [json.loads(text) for text in started.stderr.splitlines()]
    assert {k: v for k, v in line.items() if k != "time"} == {
        "severity": "CRITICAL", "message": f"invalid settings: CREFN_SLACK_WEBHOOK_URL: {NO_SCHEME}",
        "function": "alert", "trace_id": ""}


@pytest.mark.parametrize(("value", "why"), [
    ("99999999999999h", "not a duration: '99999999999999h' is longer than Go's longest (2562047h47m16.854775807s)"),
    ("1d", "not a duration: '1d' (e.g. 90s, 1m30s, 24h)"),
], ids=["past-go-s-range", "not-go"])
def test_a_default_timeout_that_is_no_go_duration_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str,
                                                               why: str) -> None:
    monkeypatch.setenv("CREFN_DEFAULT_TIMEOUT_PER_JOB", value)
    with pytest.raises(InvalidSettings) as refused:
        load_settings()
    assert str(refused.value) == f"invalid settings: CREFN_DEFAULT_TIMEOUT_PER_JOB: {why}"
