"""`functions.measure.bandwidth.decide_bandwidth` as a truth table, on CRE's own cases
(`pkg/controller/testdata/bandwidth-terminal/<case>`: a Job terminal at 2026-09-30T10:05:00Z, launcher pod
`w-launcher-0-0`, the `nccl-bandwidth` profile) and its running samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from functions.domain.gotime import RFC3339_NANO, parse
from functions.domain.nccl import bandwidth_parser
from functions.measure.bandwidth import BandwidthSample, decide_bandwidth
from functions.runtime.effects import KubeEvent, WriteStatus
from tests.support.helpers import cond, job
from tests.support.logprofiles import nccl_bandwidth

GROUP = "nvcre.nvidia.com"
NOW = datetime(2026, 9, 30, 10, 8, 0, tzinfo=UTC)
ANCHOR = parse(RFC3339_NANO, "2026-09-30T10:05:00Z")
PARSER = bandwidth_parser(nccl_bandwidth())
LOG = ["2026-09-30T10:01:00.1Z host:1:1 [0] NCCL INFO Using network IB",
       "2026-09-30T10:02:00Z         8             2     float     sum      -1    58.31    0.00    0.00       0"
       "    58.40    0.00    0.00       0",
       "2026-09-30T10:02:01Z   1048576        262144     float     sum      -1    90.12   11.64   21.82       0"
       "    89.50   11.72   21.97       0",
       "2026-09-30T10:02:02Z 1073741824     268435456     float     sum      -1  1558.51  688.95  1291.78       0"
       "  1557.77  689.28  1292.40       0"]
FINAL = [{"sizeBytes": 8, "algBW": "0.00", "busBW": "0.00", "samples": 1},
         {"sizeBytes": 1048576, "algBW": "11.64", "busBW": "21.82", "samples": 1},
         {"sizeBytes": 1073741824, "algBW": "688.95", "busBW": "1291.78", "samples": 1}]


def bm(status: dict[str, Any] | None = None, uid: str | None = "job-uid") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "j-bandwidth", "namespace": "ns", "uid": "bm-uid", "resourceVersion": "7",
                            "generation": 1}
    if uid is not None:
        meta["annotations"] = {f"{GROUP}/job-uid": uid}
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "BandwidthMeasurement", "metadata": meta,
            "spec": {"jobRef": {"kind": "Job", "name": "j"}, "logProfileRef": "nccl-bandwidth"}, "status": status or {}}


def the_job(verdict: str = "Succeeded", reason: str = "WorkloadCompleted", timeout: str = "") -> Any:
    return job([cond(verdict, "True", reason)], spec={"measurementTimeout": timeout} if timeout else None)


def written(plan: Any) -> dict[str, Any]:
    write = plan.effects[0]
    assert isinstance(write, WriteStatus) and (write.res.plural, write.name, write.resource_version) == (
        "bandwidthmeasurements", "j-bandwidth", "7")
    return dict(write.status)


def outcome(status: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]


PROVISIONAL = {"results": [{"sizeBytes": 8, "algBW": "0.01", "busBW": "0.01", "samples": 4}]}


def test_the_final_read_replaces_the_provisional_results() -> None:
    observed = BandwidthSample(bm(PROVISIONAL), the_job(), "Succeeded", ANCHOR, PARSER, lines=LOG)
    status = written(decide_bandwidth(observed, GROUP, NOW))
    assert (status["results"], status["transport"], status["completionTime"]) == (
        FINAL, ["IB"], "2026-09-30T10:05:00Z")
    assert outcome(status) == [("Measuring", "False", "JobSucceeded", "Job succeeded"),
                               ("Complete", "True", "JobSucceeded", "Job succeeded")]


def test_a_complete_log_without_rows_is_no_data_collected_and_drops_the_provisional_ones() -> None:
    observed = BandwidthSample(bm(PROVISIONAL), the_job(), "Succeeded", ANCHOR, PARSER, lines=LOG[:1])
    status = written(decide_bandwidth(observed, GROUP, NOW))
    assert status["results"] == [] and status["transport"] == ["IB"]
    assert outcome(status)[1] == ("Complete", "True", "NoDataCollected",
                                  "Job succeeded but no bandwidth data was parsed; check spec.logProfileRef")


def test_succeeded_read_fails_after_grace_is_logs_unavailable_keeping_the_provisional_results() -> None:
    pending = {**PROVISIONAL, "conditions": [{"type": "Measuring", "status": "False", "reason": "FinalReadPending",
                                              "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    problem = "reading log of pod w-launcher-0-0: no log for pod w-launcher-0-0"
    status = written(decide_bandwidth(BandwidthSample(bm(pending), the_job(), "Succeeded", ANCHOR, PARSER, problem),
                                      GROUP, NOW))
    assert "results" not in status
    assert outcome(status)[1] == ("Complete", "True", "LogsUnavailable", f"Job succeeded but its log could not be "
                                  f"read in full ({problem}); results are provisional and are not used for threshold "
                                  "evaluation")


def test_a_failed_final_read_is_retried_within_the_grace_extended_to_the_measurement_timeout() -> None:
    since = (NOW - timedelta(seconds=180)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pending = {"conditions": [{"type": "Measuring", "status": "False", "reason": "FinalReadPending", "message": "m",
                               "lastTransitionTime": since}]}
    plan = decide_bandwidth(BandwidthSample(bm(pending), the_job(timeout="10m"), "Succeeded", ANCHOR, PARSER,
                                            "pod w-launcher-0-0 has not finished (Running)"), GROUP, NOW)
    status, event = written(plan), plan.effects[1]
    assert outcome(status) == [("Measuring", "False", "FinalReadPending",
                                "Job succeeded; waiting to read its complete log")]
    assert status["conditions"][0]["lastTransitionTime"] == since  # the wait's start is kept
    assert isinstance(event, KubeEvent) and (event.body["type"], event.body["reason"], event.body["note"]) == (
        "Warning", "FinalReadPending", "Final log read failed, retrying: pod w-launcher-0-0 has not finished (Running)")
    short = BandwidthSample(bm(pending), the_job(timeout="30s"), "Succeeded", ANCHOR, PARSER, "x")
    assert outcome(written(decide_bandwidth(short, GROUP, NOW)))[1][2] == "LogsUnavailable"  # past the 2-minute floor
    first = BandwidthSample(bm(), the_job(), "Succeeded", ANCHOR, PARSER, "x")
    assert written(decide_bandwidth(first, GROUP, NOW))["conditions"][0]["lastTransitionTime"] == "2026-09-30T10:08:00Z"


def test_an_unpageable_log_completes_at_once() -> None:
    problem = ("reading log of pod w-launcher-0-0: log cannot be read in full: line without a timestamp in a "
               "truncated page")
    status = written(decide_bandwidth(BandwidthSample(bm(), the_job(), "Succeeded", ANCHOR, PARSER, problem, True),
                                      GROUP, NOW))
    assert outcome(status)[1] == ("Complete", "True", "LogsUnavailable", f"Job succeeded but its log could not be "
                                  f"read in full ({problem}); no bandwidth data was parsed")


def test_a_failed_job_s_final_read_replaces_the_results() -> None:
    observed = BandwidthSample(bm(PROVISIONAL), the_job("Failed", "WorkloadFailed"), "Failed", ANCHOR, PARSER,
                               lines=LOG)
    status = written(decide_bandwidth(observed, GROUP, NOW))
    assert (status["results"], status["transport"]) == (FINAL, ["IB"])
    assert outcome(status)[1] == ("Complete", "True", "JobFailed", "Job failed")
    unread = BandwidthSample(bm(PROVISIONAL), the_job("Failed", "WorkloadFailed"), "Failed", ANCHOR, PARSER, "gone")
    assert "results" not in written(decide_bandwidth(unread, GROUP, NOW))


def test_a_replaced_or_deleted_job_completes_the_measurement_at_once() -> None:
    replaced = written(decide_bandwidth(BandwidthSample(bm(PROVISIONAL, uid="uid-earlier"), the_job("InProgress",
                                                                                                    "WorkloadRunning"),
                                                        "InProgress"), GROUP, NOW))
    assert outcome(replaced)[1] == ("Complete", "True", "LogsUnavailable", "Referenced Job no longer exists; results "
                                    "are provisional and are not used for threshold evaluation")
    assert replaced["completionTime"] == "2026-09-30T10:08:00Z"
    deleted = written(decide_bandwidth(BandwidthSample(bm(), None), GROUP, NOW))
    assert outcome(deleted)[1][3] == "Referenced Job no longer exists; no bandwidth data was parsed"
    assert decide_bandwidth(BandwidthSample(bm(uid=None), None), GROUP, NOW).effects == ()  # not created yet


def test_a_running_sample_writes_the_whole_logs_averages_provisionally() -> None:
    running = the_job("InProgress", "WorkloadRunning")
    status = written(decide_bandwidth(BandwidthSample(bm(), running, "InProgress", None, PARSER, lines=LOG),
                                      GROUP, NOW))
    assert (status["results"], status["transport"], status["startTime"]) == (FINAL, ["IB"], "2026-09-30T10:08:00Z")
    assert outcome(status) == [("Measuring", "True", "JobRunning",
                                "Referenced Job is running, measurement in progress")]
    assert decide_bandwidth(BandwidthSample(bm(), running, "InProgress", None, PARSER, lines=[]), GROUP,
                            NOW).effects == ()


def test_a_missing_profile_while_running_is_not_terminal() -> None:
    cause = 'getting LogProfile nccl-bandwidth: logprofiles.nvcre.nvidia.com "nccl-bandwidth" not found'
    plan = decide_bandwidth(BandwidthSample(bm(), the_job("InProgress", "WorkloadRunning"), "InProgress",
                                            problem=cause), GROUP, NOW)
    assert outcome(written(plan)) == [("Measuring", "False", "LogProfileNotFound",
                                       f'LogProfile "nccl-bandwidth" could not be resolved: {cause}')]


def test_a_complete_measurement_is_frozen() -> None:
    done = bm({"conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded", "message": "m"}]})
    assert decide_bandwidth(BandwidthSample(done, the_job(), "Succeeded", ANCHOR, PARSER, lines=LOG), GROUP,
                            NOW).effects == ()


def test_a_job_gone_completes_a_measurement_that_saw_it_and_waits_for_one_that_did_not() -> None:
    """CRE's `sawJob`: the Job's uid annotation, a startTime, results or a `Measuring` condition."""
    measuring = {"type": "Measuring", "status": "True", "reason": "JobRunning", "message": "m",
                 "lastTransitionTime": "2026-09-30T10:00:00Z"}
    for saw in ({"startTime": "2026-09-30T10:00:00Z"}, PROVISIONAL, {"conditions": [measuring]}):
        plan = decide_bandwidth(BandwidthSample(bm(saw, uid=None), None), GROUP, NOW)
        assert outcome(written(plan))[1][:3] == ("Complete", "True", "LogsUnavailable")
    other = {"type": "Complete", "status": "False", "reason": "r", "message": "m",
             "lastTransitionTime": "2026-09-30T10:00:00Z"}
    for unseen in ({}, {"conditions": [other]}):
        plan = decide_bandwidth(BandwidthSample(bm(unseen, uid=None), None), GROUP, NOW)
        assert plan.effects == () and plan.reason == "BandwidthMeasurement ns/j-bandwidth: waiting for its Job"


def test_a_missing_profile_flips_measuring_and_raises_a_warning() -> None:
    cause = "creating parser from LogProfile nccl-bandwidth: LogProfile nccl-bandwidth has no bandwidthResult pattern"
    text = f'LogProfile "nccl-bandwidth" could not be resolved: {cause}'
    measuring = {"type": "Measuring", "status": "True", "reason": "JobRunning", "message": "m",
                 "lastTransitionTime": "2026-09-30T10:00:00Z", "observedGeneration": 1}
    observed = BandwidthSample({**bm({"conditions": [measuring]}), "metadata": {**bm()["metadata"], "generation": 3}},
                               the_job("InProgress", "WorkloadRunning"), "InProgress", problem=cause)
    plan = decide_bandwidth(observed, GROUP, NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    assert write.status == {"conditions": [{"type": "Measuring", "status": "False", "reason": "LogProfileNotFound",
                                            "message": text, "lastTransitionTime": "2026-09-30T10:08:00Z",
                                            "observedGeneration": 3}]}
    assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", "LogProfileNotFound", text)
    assert plan.reason == f"BandwidthMeasurement ns/j-bandwidth: {text}"
    still = {**measuring, "status": "False", "reason": "LogProfileNotFound"}
    again = decide_bandwidth(BandwidthSample(bm({"conditions": [still]}), the_job("InProgress", "WorkloadRunning"),
                                             "InProgress", problem=cause), GROUP, NOW)
    assert written(again)["conditions"][0]["lastTransitionTime"] == "2026-09-30T10:00:00Z"  # still False: kept


def test_a_running_sample_keeps_its_start_and_unions_the_transports() -> None:
    measuring = {"type": "Measuring", "status": "True", "reason": "JobRunning", "message": "m",
                 "lastTransitionTime": "2026-09-30T10:00:00Z", "observedGeneration": 1}
    before = {"startTime": "2026-09-30T10:00:00Z", "transport": ["Socket"], "conditions": [measuring]}
    running = the_job("InProgress", "WorkloadRunning")
    plan = decide_bandwidth(BandwidthSample(bm(before), running, "InProgress", None, PARSER, lines=LOG), GROUP, NOW)
    status = written(plan)
    assert (status["startTime"], status["transport"]) == ("2026-09-30T10:00:00Z", ["IB", "Socket"])
    assert status["conditions"][0]["lastTransitionTime"] == "2026-09-30T10:00:00Z"  # still True: kept
    assert plan.reason == "BandwidthMeasurement ns/j-bandwidth: sampled, 3 rows"
    only_transport = written(decide_bandwidth(BandwidthSample(bm(), running, "InProgress", None, PARSER,
                                                              lines=LOG[:1]), GROUP, NOW))
    assert only_transport["transport"] == ["IB"] and "results" not in only_transport


def test_a_final_read_failing_after_another_measuring_state_starts_the_wait_now() -> None:
    """The FinalReadPending condition's lastTransitionTime marks the wait's start: a Measuring False of another
    reason does not carry its time over; a wait exactly as long as the grace (5m, the default measurement
    timeout) is over."""
    unresolved = {"type": "Measuring", "status": "False", "reason": "LogProfileNotFound", "message": "m",
                  "lastTransitionTime": "2026-09-30T10:00:00Z", "observedGeneration": 1}
    plan = decide_bandwidth(BandwidthSample(bm({"conditions": [unresolved]}), the_job(), "Succeeded", ANCHOR, PARSER,
                                            "no log for pod w-launcher-0-0"), GROUP, NOW)
    assert written(plan)["conditions"] == [{"type": "Measuring", "status": "False", "reason": "FinalReadPending",
                                            "message": "Job succeeded; waiting to read its complete log",
                                            "lastTransitionTime": "2026-09-30T10:08:00Z", "observedGeneration": 1}]
    assert plan.reason == "BandwidthMeasurement ns/j-bandwidth: final read pending: no log for pod w-launcher-0-0"
    waited = {**unresolved, "reason": "FinalReadPending", "lastTransitionTime": "2026-09-30T10:03:00Z"}
    over = decide_bandwidth(BandwidthSample(bm({"conditions": [waited]}), the_job(), "Succeeded", ANCHOR, PARSER, "x"),
                            GROUP, NOW)
    assert outcome(written(over))[1][:3] == ("Complete", "True", "LogsUnavailable")


def test_the_terminal_write_keeps_measuring_s_time_and_unions_the_transports() -> None:
    waited = {"type": "Measuring", "status": "False", "reason": "FinalReadPending", "message": "m",
              "lastTransitionTime": "2026-09-30T10:06:00Z", "observedGeneration": 1}
    before = {**PROVISIONAL, "transport": ["Socket"], "conditions": [waited]}
    plan = decide_bandwidth(BandwidthSample(bm(before), the_job(), "Succeeded", ANCHOR, PARSER, lines=LOG), GROUP, NOW)
    status = written(plan)
    assert status["transport"] == ["IB", "Socket"]
    assert plan.reason == "BandwidthMeasurement ns/j-bandwidth: JobSucceeded"
    assert status["conditions"] == [
        {"type": "Measuring", "status": "False", "reason": "JobSucceeded", "message": "Job succeeded",
         "lastTransitionTime": "2026-09-30T10:06:00Z", "observedGeneration": 1},
        {"type": "Complete", "status": "True", "reason": "JobSucceeded", "message": "Job succeeded",
         "lastTransitionTime": "2026-09-30T10:08:00Z", "observedGeneration": 1}]
