"""The settings as the environment names them: an unknown `CREFN_` variable named with the known one it is
closest to, and the effective settings shown with every secret redacted."""

from __future__ import annotations

import json

import pytest

from functions.runtime.environment import shown, unknown_variables
from functions.runtime.settings import load_settings
from tests.support.secrets import PASSWORD, ROUTING_KEY, SLACK_PATH, TOKEN


@pytest.mark.parametrize(("environ", "expected"), [
    ({"CREFN_MODEE": "observe", "CREFN_MODE": "observe"}, [("CREFN_MODEE", "CREFN_MODE")]),
    ({"crefn_log_levl": "info"}, [("crefn_log_levl", "CREFN_LOG_LEVEL")]),
    ({"CREFN_SOMETHING_NEW": "1"}, [("CREFN_SOMETHING_NEW", "")]),
    ({"CREFN_KUBECONFIG": "/k", "KUBECONFIG": "/k", "CREFN_K_SINK": "http://b", "CREFN_REVISION": "abc",
      "CREFNX": "1", "PATH": "/bin"}, []),
], ids=["typo", "lower-case-typo", "newer-release", "known-or-not-ours"])
def test_unknown_variables_are_named_with_the_nearest_known_one(environ: dict[str, str],
                                                                 expected: list[tuple[str, str]]) -> None:
    assert unknown_variables(environ) == expected


def test_the_settings_shown_hold_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"CREFN_SLACK_WEBHOOK_URL": "https://hooks.slack.com" + SLACK_PATH,
                        "CREFN_PAGERDUTY_ROUTING_KEY": ROUTING_KEY, "CREFN_ALERTMANAGER_URL": "http://am:9093",
                        "CREFN_ALERTMANAGER_USERNAME": "crefn", "CREFN_ALERTMANAGER_PASSWORD": PASSWORD,
                        "K_SINK": f"http://crefn:{PASSWORD}@broker.example/ns/crefn?token={TOKEN}",
                        "CREFN_DEFAULT_TIMEOUT_PER_JOB": "24h", "CREFN_MODE": "observe"}.items():
        monkeypatch.setenv(name, value)
    settings = shown(load_settings())
    assert "SECRET" not in json.dumps(settings)
    assert {k: settings[k] for k in ("CREFN_SLACK_WEBHOOK_URL", "CREFN_PAGERDUTY_ROUTING_KEY", "CREFN_ALERTMANAGER_URL",
                                     "CREFN_ALERTMANAGER_PASSWORD", "CREFN_ALERTMANAGER_USERNAME", "CREFN_K_SINK",
                                     "CREFN_DEFAULT_TIMEOUT_PER_JOB", "CREFN_MODE", "CREFN_ALERT_SINK_URL")} == {
        "CREFN_SLACK_WEBHOOK_URL": "[redacted]", "CREFN_PAGERDUTY_ROUTING_KEY": "[redacted]",
        "CREFN_ALERTMANAGER_URL": "[redacted]", "CREFN_ALERTMANAGER_PASSWORD": "[redacted]",
        "CREFN_ALERTMANAGER_USERNAME": "crefn", "CREFN_K_SINK": "http://[redacted]@broker.example/ns/crefn?[redacted]",
        "CREFN_DEFAULT_TIMEOUT_PER_JOB": 86400.0, "CREFN_MODE": "observe", "CREFN_ALERT_SINK_URL": None}
