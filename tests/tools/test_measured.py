"""Whether a managed Job's measurement still moves (`cre-fn doctor`'s last check), decided on objects as CRE's
controllers leave them: a running Job's GoodputMeasurement by `applicationStopTime`, `lastStepTimestamp` and
`startTime`, an ended Job's measurements by `completionTime`; ten samples, at least 10 minutes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.tools.measured import Looked, Still, judge, look, still_after, summary

NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)


def at(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name: str = "train", *, verdict: tuple[str, str] = ("InProgress", "WorkloadRunning"), since: float = 60,
        managed: bool = True, namespace: str = "team-a") -> dict[str, Any]:
    conditions = [{"type": t, "status": "True" if t == verdict[0] else "False",
                   "reason": verdict[1] if t == verdict[0] else "NotApplicable", "lastTransitionTime": at(since)}
                  for t in ("InProgress", "Succeeded", "Failed")]
    labels = {"crefn.dev/managed": "true"} if managed else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "status": {"conditions": conditions}}


def goodput(job_name: str = "train", *, interval: str = "", namespace: str = "team-a",
            **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": job_name}}
    if interval:
        spec["sampleInterval"] = interval
    return {"kind": "GoodputMeasurement", "metadata": {"name": f"{job_name}-goodput", "namespace": namespace},
            "spec": spec, "status": status}


def bandwidth(job_name: str = "train", **status: Any) -> dict[str, Any]:
    return {"kind": "BandwidthMeasurement", "metadata": {"name": f"{job_name}-bandwidth", "namespace": "team-a"},
            "spec": {"jobRef": {"kind": "Job", "name": job_name}}, "status": status}


@pytest.mark.parametrize(("interval", "minutes"), [
    ("", 10), ("30s", 10), ("1m", 10), ("1m30s", 15), ("2m", 20), ("1h", 600), ("bogus", 10), ("-5s", 10)])
def test_still_after_ten_samples_at_least_ten_minutes(interval: str, minutes: int) -> None:
    assert still_after(goodput(interval=interval)) == timedelta(minutes=minutes)


@pytest.mark.parametrize(("status", "why"), [
    ({"startTime": at(50), "applicationStopTime": at(9.9)}, ""),
    ({"startTime": at(50), "applicationStopTime": at(10)}, ""),
    ({"startTime": at(50), "applicationStopTime": at(10.05)}, "Job running, not updated for 10m3s"),
    ({"startTime": at(50), "applicationStopTime": at(30), "lastStepTimestamp": at(2)}, ""),
    ({"startTime": at(3)}, ""),
    ({"startTime": at(45)}, "Job running, not updated for 45m0s"),
    ({}, "Job running for 1h0m0s, never updated"),
])
def test_a_running_jobs_goodput_moves_by_its_latest_time(status: dict[str, Any], why: str) -> None:
    assert judge(job(), goodput(**status), NOW) == (True, why)


def test_a_job_that_just_started_running_is_not_still_before_it_was_ever_sampled() -> None:
    assert judge(job(since=9), goodput(), NOW) == (True, "")
    assert judge(job(since=11), goodput(), NOW) == (True, "Job running for 11m0s, never updated")


def test_the_bound_is_the_measurements_own_sample_interval() -> None:
    stopped = {"startTime": at(60), "applicationStopTime": at(15)}
    assert judge(job(), goodput(interval="2m", **stopped), NOW) == (True, "")
    assert judge(job(), goodput(interval="1m", **stopped), NOW) == (True, "Job running, not updated for 15m0s")


@pytest.mark.parametrize("measurement", [goodput, bandwidth])
@pytest.mark.parametrize("verdict", [("Succeeded", "WorkloadCompleted"), ("Failed", "WorkloadFailed")])
def test_an_ended_jobs_measurement_is_still_when_not_completed_after_the_bound(
        measurement: Any, verdict: tuple[str, str]) -> None:
    assert judge(job(verdict=verdict, since=11), measurement(completionTime=at(10.9)), NOW) == (True, "")
    assert judge(job(verdict=verdict, since=9), measurement(), NOW) == (True, "")
    assert judge(job(verdict=verdict, since=11), measurement(), NOW) == (True, "Job ended 11m0s ago, not completed")


def test_a_running_jobs_bandwidth_and_a_job_not_running_are_not_judged() -> None:
    assert judge(job(), bandwidth(), NOW) == (False, "")
    for verdict in (("InProgress", "WorkloadPending"), ("InProgress", "WorkloadRestarting"),
                    ("InProgress", "WorkloadSchedulingBlocked")):
        assert judge(job(verdict=verdict, since=300), goodput(), NOW) == (False, "")
    unwritten = {"metadata": {"name": "train", "namespace": "team-a"}, "status": {}}
    assert judge(unwritten, goodput(), NOW) == (False, "")


def test_only_managed_jobs_of_the_same_namespace_are_looked_at() -> None:
    jobs = [job("a"), job("b", managed=False), job("c", namespace="team-b")]
    measurements = [goodput("a"), goodput("b"), goodput("c"), goodput("c", namespace="team-b"), goodput("gone")]
    found = look(jobs, measurements, manage_all=False, now=NOW)
    assert found == Looked(2, (Still("GoodputMeasurement", "team-a", "a-goodput", "a",
                                     "Job running for 1h0m0s, never updated"),
                               Still("GoodputMeasurement", "team-b", "c-goodput", "c",
                                     "Job running for 1h0m0s, never updated")))
    assert look(jobs, measurements, manage_all=True, now=NOW).judged == 3


def test_the_summary_names_three_and_counts_the_rest() -> None:
    still = tuple(Still("GoodputMeasurement", "ns", f"j{i}-goodput", f"j{i}", "Job running, not updated for 11m0s")
                  for i in range(5))
    assert summary(Looked(7, still[:1])) == (
        "1 of 7 measurements of managed Jobs no longer move: GoodputMeasurement ns/j0-goodput (Job running, not "
        "updated for 11m0s)")
    assert summary(Looked(7, still)).endswith("GoodputMeasurement ns/j2-goodput (Job running, not updated for "
                                              "11m0s); and 2 more")
    assert summary(Looked(7, still[:3])).count("; ") == 2
