"""Which pods a measurement's log is read from and where its next window starts: the workload's pods of the Job's
attempt by completion index, the BandwidthMeasurement's pod in CRE's order (`GetReplicatedJobPod`), the read
position from the last sample less one interval, at most 30 minutes back, and a terminal Job's anchor."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.goodput_window import interval_ns, ordered, read_from, replicated_pod, terminated_at, verdict_of
from functions.domain.gotime import RFC3339_NANO, parse

NS = 1_000_000_000
NOW = parse(RFC3339_NANO, "2026-01-22T19:00:00Z")


def pod(name: str, index: str | None = "0", attempt: str | None = "0", phase: str = "Running", job: str = "node",
        restart: str = "", created: str = "2026-01-22T18:00:00Z") -> dict[str, Any]:
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": job}
    if index is not None:
        labels["batch.kubernetes.io/job-completion-index"] = index
    if attempt is not None:
        labels["crefn.dev/attempt"] = attempt
    if restart:
        labels["jobset.sigs.k8s.io/restart-attempt"] = restart
    return {"metadata": {"name": name, "labels": labels, "creationTimestamp": created}, "status": {"phase": phase}}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_the_attempts_pods_by_completion_index() -> None:
    pods = [pod("w-2", "2"), pod("w-0", "0"), pod("w-1", "1"), pod("old-0", "0", attempt="1"), pod("x", "bad")]
    assert names(ordered(pods, 0)) == ["w-0", "x", "w-1", "w-2"]
    assert names(ordered(pods, 1)) == ["old-0"]
    cres = [pod("c-1", "1", attempt=None), pod("c-0", None, attempt=None)]
    assert names(ordered(cres, 3)) == ["c-0", "c-1"]  # CRE's pods carry no attempt: all of them


def test_the_bandwidth_pod_in_cre_s_order() -> None:
    assert replicated_pod([pod("n", job="node")], "launcher") is None
    by_index = [pod("l-1", "1", job="launcher"), pod("l-0", "0", job="launcher")]
    assert names([replicated_pod(by_index, "launcher")]) == ["l-0"]  # type: ignore[list-item]
    by_phase = [pod("failed", phase="Failed", job="launcher"), pod("done", phase="Succeeded", job="launcher"),
                pod("pending", phase="Pending", job="launcher"), pod("running", phase="Running", job="launcher")]
    assert names([replicated_pod(by_phase, "launcher")]) == ["done"]  # type: ignore[list-item]
    assert names([replicated_pod(by_phase[2:], "launcher")]) == ["running"]  # type: ignore[list-item]
    assert names([replicated_pod([by_phase[0], by_phase[2]], "launcher")]) == ["failed"]  # type: ignore[list-item]
    retried = [pod("r1", job="launcher", restart="1"), pod("r2", job="launcher", restart="2")]
    assert names([replicated_pod(retried, "launcher")]) == ["r2"]  # type: ignore[list-item]
    newer = [pod("a", job="launcher", created="2026-01-22T18:00:00Z"),
             pod("b", job="launcher", created="2026-01-22T18:05:00Z")]
    assert names([replicated_pod(newer, "launcher")]) == ["b"]  # type: ignore[list-item]
    same = [pod("z", job="launcher"), pod("y", job="launcher")]
    assert names([replicated_pod(same, "launcher")]) == ["y"]  # type: ignore[list-item]


@pytest.mark.parametrize(("interval", "seconds"), [("", 60), ("10s", 10), ("1m30s", 90), ("1500ms", 1.5),
                                                   ("often", 60)])
def test_the_sample_interval(interval: str, seconds: float) -> None:
    spec = {"sampleInterval": interval} if interval else {}
    assert interval_ns({"spec": spec}) == seconds * NS


def measurement(**status: Any) -> dict[str, Any]:
    return {"spec": {"sampleInterval": "30s"}, "status": status}


def test_a_running_jobs_window_starts_one_interval_before_its_last_sample() -> None:
    worker = {"status": {"startTime": "2026-01-22T18:50:00Z"}}
    assert read_from(measurement(applicationStopTime="2026-01-22T18:59:00Z"), worker, "InProgress", None, NOW) == \
        parse(RFC3339_NANO, "2026-01-22T18:58:30Z")
    assert read_from(measurement(), worker, "InProgress", None, NOW) == parse(RFC3339_NANO, "2026-01-22T18:50:00Z")
    assert read_from(measurement(applicationStopTime="2026-01-22T18:40:00Z"), worker, "InProgress", None, NOW) == \
        parse(RFC3339_NANO, "2026-01-22T18:50:00Z")  # not before worker-0 started


def test_a_window_starts_at_most_30_minutes_back() -> None:
    early = {"status": {"startTime": "2026-01-22T10:00:00Z"}}
    assert read_from(measurement(), early, "InProgress", None, NOW) == parse(RFC3339_NANO, "2026-01-22T18:30:00Z")
    assert read_from(measurement(), None, "InProgress", None, NOW) == parse(RFC3339_NANO, "2026-01-22T18:30:00Z")


def test_a_terminal_jobs_window_starts_one_interval_before_its_last_step_within_30_minutes_of_its_end() -> None:
    anchor = parse(RFC3339_NANO, "2026-01-22T18:10:00Z")
    last = measurement(lastStepTimestamp="2026-01-22T18:09:00Z", applicationStopTime="2026-01-22T18:59:00Z")
    assert read_from(last, None, "Succeeded", anchor, NOW) == parse(RFC3339_NANO, "2026-01-22T18:08:30Z")
    assert read_from(measurement(), None, "Failed", anchor, NOW) == parse(RFC3339_NANO, "2026-01-22T17:40:00Z")


def cond(type_: str, status: str, at: str) -> dict[str, str]:
    return {"type": type_, "status": status, "lastTransitionTime": at}


def test_the_verdict_and_the_anchor_of_the_freeze() -> None:
    assert verdict_of([cond("InProgress", "True", "2026-01-22T18:00:00Z")]) == ("InProgress", None)
    assert verdict_of([cond("Failed", "True", "2026-01-22T10:07:30Z")]) == (
        "Failed", parse(RFC3339_NANO, "2026-01-22T10:07:30Z"))
    both = [cond("Succeeded", "True", "2026-01-22T10:05:00Z"), cond("InProgress", "False", "2026-01-22T10:06:00Z")]
    assert verdict_of(both) == ("Succeeded", parse(RFC3339_NANO, "2026-01-22T10:05:00Z"))
    assert verdict_of([cond("Succeeded", "False", "2026-01-22T10:05:00Z")]) == ("", None)


def test_worker_0s_termination_from_its_state_else_its_last_state() -> None:
    ended = {"status": {"containerStatuses": [
        {"name": "sidecar", "state": {"terminated": {"finishedAt": "2026-01-22T18:00:00Z"}}},
        {"name": "node", "state": {"running": {}},
         "lastState": {"terminated": {"finishedAt": "2026-01-22T18:05:00Z"}}}]}}
    assert terminated_at(ended, "node") == parse(RFC3339_NANO, "2026-01-22T18:05:00Z")
    assert terminated_at(ended, "sidecar") == parse(RFC3339_NANO, "2026-01-22T18:00:00Z")
    assert terminated_at(ended, "") is None and terminated_at(ended, "other") is None


def test_the_bandwidth_pods_whole_order_bad_labels_counting_as_0() -> None:
    """CRE's `GetReplicatedJobPod` order taken pod after pod: completion index (a missing, bad or non-ASCII one
    is 0), phase, latest restart attempt (none is 0), newest, name."""
    pods = [pod("a", "1", phase="Succeeded", job="launcher"), pod("b", "x", phase="Failed", job="launcher"),
            pod("c", None, job="launcher", created="2026-01-22T18:30:00Z"),
            pod("d", job="launcher", restart="2", created="2026-01-22T17:00:00Z"),
            pod("e", job="launcher", restart="2"), pod("f", job="launcher", restart="2"),
            pod("g", phase="Succeeded", job="node"), pod("h", "\u0661", phase="Pending", job="launcher"),
            pod("i", job="launcher", restart="1", created="2026-01-22T16:00:00Z")]
    order = []
    while (first := replicated_pod(pods, "launcher")) is not None:
        order.append(first["metadata"]["name"])
        pods.remove(first)
    assert order == ["e", "f", "d", "i", "c", "b", "h", "a"]
