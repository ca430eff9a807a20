"""What a served function logs (`functions.runtime.logs`, `functions.main.start`), read from the real process's output:
every line one JSON object with `severity`, `time` (RFC 3339) and `message`; one start-up line with the version,
the target and the effective settings, secrets redacted, written whatever the log level; one line naming each
`CREFN_*` variable no setting reads; a request's line carries the Job it is about."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.runtime import logs, tracing
from functions.runtime.client import send
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.helpers import released
from tests.support.secrets import PASSWORD, SLACK_PATH, TOKEN

RFC3339_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def lines_of(path: Path) -> list[dict[str, Any]]:
    """Every line of a log file, each of which must be a JSON object with severity, time and message."""
    found = [json.loads(text) for text in path.read_text().splitlines()]
    for line in found:
        assert list(line)[:3] == ["severity", "time", "message"], line
        assert RFC3339_MS.fullmatch(line["time"]), line
        assert abs(datetime.fromisoformat(line["time"]) - datetime.now(UTC)) < timedelta(minutes=5)
    return found


@pytest.mark.process
@pytest.mark.own_process
def test_a_served_function_says_what_runs_and_logs_json_lines(tmp_path: Path) -> None:
    env = {"CREFN_MODE": "observe", "CREFN_LOG_LEVEL": "info", "CREFN_REVISION": "4f2a9c1",
           "CREFN_SLACK_WEBHOOK_URL": "https://hooks.slack.com" + SLACK_PATH,
           "K_SINK": f"http://crefn:{PASSWORD}@127.0.0.1:9/ns/crefn?token={TOKEN}",
           "CREFN_MODEE": "observe", "CREFN_FROM_A_NEWER_RELEASE": "1"}
    served = ServedFunction("phase", env, tmp_path / "phase.log").start()
    try:
        record = load_sample("trainjob-resource-update-running")
        record["attributes"] |= {"id": "logged-request", "traceparent": TRACEPARENT}
        assert send(served.url, record).status == 200
        bad = {**record, "attributes": {**record["attributes"], "id": "refused", "type": "com.example.unknown"}}
        assert send(served.url, bad).status == 400
    finally:
        served.stop()
    logged = lines_of(tmp_path / "phase.log")
    text = (tmp_path / "phase.log").read_text()
    assert "SECRET" not in text and "hooks.slack.com" not in text
    started, *warned = [line for line in logged if line.get("id") is None]
    assert started["severity"] == "INFO"
    assert started["message"] == f"cre-functions {released()} serving phase in observe mode"
    assert (started["function"], started["version"], started["revision"], started["mode"]) == (
        "phase", released(), "4f2a9c1", "observe")
    assert {k: started["settings"][k] for k in ("CREFN_MODE", "CREFN_LOG_LEVEL", "CREFN_SLACK_WEBHOOK_URL",
                                                "CREFN_K_SINK", "CREFN_RESTART_GRACE_SECONDS", "CREFN_CRE_GROUP")} == {
        "CREFN_MODE": "observe", "CREFN_LOG_LEVEL": "INFO", "CREFN_SLACK_WEBHOOK_URL": "[redacted]",
        "CREFN_K_SINK": "http://[redacted]@127.0.0.1:9/ns/crefn?[redacted]", "CREFN_RESTART_GRACE_SECONDS": 30,
        "CREFN_CRE_GROUP": "nvcre.nvidia.com"}
    assert [(w["severity"], w["variable"], w["message"]) for w in warned] == [
        ("WARNING", "CREFN_FROM_A_NEWER_RELEASE", "unknown variable CREFN_FROM_A_NEWER_RELEASE: no setting reads it, "
         "ignored"),
        ("WARNING", "CREFN_MODEE", "unknown variable CREFN_MODEE: no setting reads it, ignored (did you mean "
         "CREFN_MODE?)")]
    (answered,) = [line for line in logged if line.get("id") == "logged-request"]
    assert {k: answered[k] for k in ("severity", "function", "status", "outcome", "namespace", "job", "trace_id")} == {
        "severity": "INFO", "function": "phase", "status": 200, "outcome": "ok", "namespace": "ml-team",
        "job": "llama-pretrain", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
    assert answered["message"].startswith("replied dev.crefn.workload.phase")
    (refused,) = [line for line in logged if line.get("id") == "refused"]
    assert (refused["severity"], refused["status"], refused["outcome"], refused["job"]) == (
        "WARNING", 400, "refused", "llama-pretrain")


@pytest.mark.process
@pytest.mark.own_process
def test_the_start_up_line_is_written_whatever_the_level(tmp_path: Path) -> None:
    served = ServedFunction("metrics", {"CREFN_LOG_LEVEL": "error"}, tmp_path / "metrics.log").start()
    served.stop()
    (started,) = lines_of(tmp_path / "metrics.log")
    assert (started["severity"], started["message"], started["settings"]["CREFN_LOG_LEVEL"]) == (
        "INFO", f"cre-functions {released()} serving metrics in manage mode", "ERROR")


def formatted(message: str, **fields: Any) -> dict[str, Any]:
    record = logging.LogRecord("crefn", logging.WARNING, "", 0, message, (), None)
    record.fields = fields
    line: dict[str, Any] = json.loads(logs.JsonLines().format(record))
    return line


def test_a_line_carries_the_job_and_the_trace_of_the_request_being_served() -> None:
    assert {k: v for k, v in formatted("m", a=1).items() if k != "time"} == {
        "severity": "WARNING", "message": "m", "a": 1, "trace_id": ""}
    span = tracing.begin(TRACEPARENT, "", "phase")
    logs.concern("ml-team/llama-pretrain")
    try:
        inside = formatted("m")
        own = formatted("m", namespace="other", job="named")
    finally:
        logs.concern("")
        tracing.end(span, {})
    assert (inside["namespace"], inside["job"], inside["trace_id"]) == (
        "ml-team", "llama-pretrain", "4bf92f3577b34da6a3ce929d0e0e4736")
    assert (own["namespace"], own["job"]) == ("other", "named")  # a line naming its own Job keeps it
    after = formatted("m")
    assert "job" not in after and after["trace_id"] == ""


@pytest.mark.parametrize(("created", "expected"), [
    (0.0, "1970-01-01T00:00:00.000Z"), (1793611211.4029, "2026-11-02T09:20:11.402Z")])
def test_time_is_rfc3339_utc_with_milliseconds(created: float, expected: str) -> None:
    assert logs.rfc3339(created) == expected
