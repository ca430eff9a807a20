"""`functions.measure.decide.decide` as a truth table: what the `measure` function writes on a GoodputMeasurement
from what it read (no API server): CRE's conditions, reasons and messages, the sample's status, the freeze."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from functions.domain.goodput_logs import Checkpoint, Step, Window
from functions.domain.gotime import RFC3339_NANO, parse
from functions.domain.jobs import Skipped
from functions.domain.kubeevents import digest_name
from functions.domain.logprofile import goodput_profile
from functions.measure.decide import Sample, capped, decide, ns_of, warning
from functions.runtime.effects import KubeEvent, WriteStatus
from functions.runtime.settings import Settings
from tests.support.helpers import cond, job
from tests.support.logprofiles import nemo_4_training

NOW = datetime(2026, 1, 22, 18, 1, 0, tzinfo=UTC)
SETTINGS = Settings()
PROFILE = goodput_profile(nemo_4_training())
RUNNING = [cond("InProgress", "True", "WorkloadRunning")]


def gm(status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
            "metadata": {"name": "llm-goodput", "namespace": "ns", "uid": "gm-uid", "resourceVersion": "41",
                         "generation": 1},
            "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "nemo-4-training"},
            "status": status or {}}


def at(text: str) -> int:
    return parse(RFC3339_NANO, text)


def window() -> Window:
    first = Step(global_step=100, timestamp=at("2026-01-22T18:00:05.123456789Z"), step_timing=1.234, tflops=36.27)
    return Window(steps=[first], first_step=first, last_step=first, application_start=at("2026-01-22T18:00:00Z"),
                  last_log_timestamp=first.timestamp)


def only_write(plan: Any) -> WriteStatus:
    (write,) = plan.effects
    assert isinstance(write, WriteStatus)
    assert (write.res.plural, write.namespace, write.name, write.resource_version) == (
        "goodputmeasurements", "ns", "llm-goodput", "41")
    return write


def test_a_running_jobs_sample_is_written_locked_with_measuring_true() -> None:
    observed = Sample(gm(), job(RUNNING, workload_ref=True), "InProgress", profile=PROFILE, window=window())
    plan = decide(observed, SETTINGS, NOW)
    status = only_write(plan).status
    assert (status["currentStep"], status["resumeTimeSec"], status["result"]) == (100, "5.123457", "0.906637")
    assert plan.reason == "GoodputMeasurement ns/llm-goodput: sampled, step 100"
    (measuring,) = status["conditions"]
    assert measuring == {"type": "Measuring", "status": "True", "reason": "JobRunning",
                         "message": "Referenced Job is running, measurement in progress",
                         "lastTransitionTime": "2026-01-22T18:01:00Z", "observedGeneration": 1}


def test_measuring_keeps_its_transition_time_while_it_stays_true() -> None:
    before = {"type": "Measuring", "status": "True", "reason": "JobRunning", "message": "m",
              "lastTransitionTime": "2026-01-22T17:00:00Z"}
    observed = Sample(gm({"conditions": [before]}), job(RUNNING, workload_ref=True), "InProgress", profile=PROFILE,
                      window=window())
    (measuring,) = only_write(decide(observed, SETTINGS, NOW)).status["conditions"]
    assert measuring["lastTransitionTime"] == "2026-01-22T17:00:00Z"


def test_a_profile_that_cannot_be_resolved_is_cre_s_condition_and_a_warning() -> None:
    cause = 'failed to get LogProfile nemo-4-training: logprofiles.nvcre.nvidia.com "nemo-4-training" not found'
    plan = decide(Sample(gm(), job(RUNNING), "InProgress", profile_error=cause), SETTINGS, NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    message = f'LogProfile "nemo-4-training" could not be resolved: {cause}'
    assert write.status == {"conditions": [{"type": "Measuring", "status": "False", "reason": "LogProfileNotFound",
                                            "message": message, "lastTransitionTime": "2026-01-22T18:01:00Z",
                                            "observedGeneration": 1}]}
    assert (event.body["type"], event.body["reason"], event.body["note"], event.body["regarding"]["kind"]) == (
        "Warning", "LogProfileNotFound", message, "GoodputMeasurement")
    assert plan.reason == f"GoodputMeasurement ns/llm-goodput: {message}"


def test_the_warning_regards_the_measurement_and_is_named_for_it_the_reason_and_the_minute() -> None:
    event = warning(gm(), "LogProfileNotFound", "text", NOW)
    assert event.namespace == "ns" and event.body["regarding"] == {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement", "name": "llm-goodput",
        "namespace": "ns", "uid": "gm-uid"}
    assert event.body["metadata"]["name"] == digest_name("llm-goodput", "gm-uid", "LogProfileNotFound",
                                                         "2026-01-22 18:01:00+00:00")
    again = warning(gm(), "LogProfileNotFound", "text", NOW.replace(second=59, microsecond=500000))
    assert again.body["metadata"]["name"] == event.body["metadata"]["name"]  # a tick delivered again: one Event


def test_a_job_whose_workload_is_gone_after_training_is_an_interruption_written_at_once() -> None:
    status = {"startTime": "2026-01-22T17:00:00Z", "warmupBaseStep": 1, "currentStep": 90,
              "applicationStopTime": "2026-01-22T18:00:30Z", "lastCheckpointTime": "2026-01-22T17:50:00Z",
              "lastCheckpointStep": 80}
    written = only_write(decide(Sample(gm(status), job(RUNNING), "InProgress", profile=PROFILE), SETTINGS, NOW))
    assert written.status["interruptionCount"] == 1 and written.status["lostWorkTimeSec"] == "630.000000"
    assert written.status["pendingInterruption"]["reason"] == "WorkloadRestarted"
    assert "conditions" not in written.status
    plan = decide(Sample(gm(status), job(RUNNING), "InProgress", profile=PROFILE), SETTINGS, NOW)
    assert plan.reason == "GoodputMeasurement ns/llm-goodput: its Job restarted"


def test_no_running_worker_no_write() -> None:
    plan = decide(Sample(gm(), job(RUNNING, workload_ref=True), "InProgress", profile=PROFILE), SETTINGS, NOW)
    assert plan.effects == () and plan.reason == "GoodputMeasurement ns/llm-goodput: no running worker to read"


def test_the_freeze_of_a_succeeded_job() -> None:
    status = {"startTime": "2026-01-22T17:00:00Z", "warmupBaseStep": 1, "currentStep": 90, "result": "0.9"}
    observed = Sample(gm(status), job([cond("Succeeded", "True", "WorkloadCompleted")]), "Succeeded",
                      anchor=at("2026-01-22T18:00:00Z"), profile=PROFILE)
    status = only_write(decide(observed, SETTINGS, NOW)).status
    assert (status["trainingTimeSec"], status["result"], status["completionTime"]) == (
        "3600.000000", "1.000000", "2026-01-22T18:00:00Z")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Complete", "True", "JobSucceeded", "Referenced Job completed successfully"),
        ("Measuring", "False", "JobSucceeded", "Measurement completed")]


def test_the_freeze_of_a_job_that_succeeded_unmeasured_is_no_data_collected() -> None:
    observed = Sample(gm(), job([cond("Succeeded", "True", "WorkloadCompleted")]), "Succeeded",
                      anchor=at("2026-01-22T18:00:00Z"), profile=PROFILE)
    conditions = only_write(decide(observed, SETTINGS, NOW)).status["conditions"]
    assert (conditions[0]["reason"], conditions[0]["message"]) == (
        "NoDataCollected", "Job succeeded but no goodput was computed; check spec.logProfileRef")


def test_the_freeze_of_a_failed_job() -> None:
    status = {"startTime": "2026-01-22T17:00:00Z", "warmupBaseStep": 1, "applicationStopTime": "2026-01-22T17:30:00Z"}
    observed = Sample(gm(status), job([cond("Failed", "True", "WorkloadFailed")]), "Failed",
                      anchor=at("2026-01-22T18:00:00Z"), profile=PROFILE)
    status = only_write(decide(observed, SETTINGS, NOW)).status
    assert (status["trainingTimeSec"], status["interruptionCount"], status["completionTime"]) == (
        "1800.000000", 1, "2026-01-22T18:00:00Z")
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Complete", "JobFailed", "Referenced Job failed"), ("Measuring", "JobFailed", "Measurement completed")]


def test_a_complete_measurement_is_frozen() -> None:
    done = gm({"conditions": [{"type": "Complete", "status": "True", "reason": "JobSucceeded", "message": "m"}]})
    plan = decide(Sample(done, job(RUNNING), "InProgress", profile=PROFILE, window=window()), SETTINGS, NOW)
    assert plan.effects == () and plan.reason == "GoodputMeasurement ns/llm-goodput is complete"


def test_nothing_for_a_job_not_running_or_skipped() -> None:
    assert decide(Sample(gm(), job([]), ""), SETTINGS, NOW).reason == (
        "GoodputMeasurement ns/llm-goodput: its Job is not running")
    assert decide(Skipped("why"), SETTINGS, NOW).reason == "why"


def test_the_final_sample_drops_what_was_logged_after_the_terminal_condition() -> None:
    """CRE's `goodput-final-sample/terminal-cap-drops-post-anchor-entries`."""
    anchor = at("2026-01-22T10:05:00Z")
    steps = [Step(global_step=30, timestamp=at("2026-01-22T10:00:05Z")),
             Step(global_step=40, timestamp=at("2026-01-22T10:06:00Z"))]
    seen = Window(steps=steps, first_step=steps[0], last_step=steps[1], last_log_timestamp=steps[1].timestamp)
    status = {"startTime": "2026-01-22T10:00:00Z", "warmupBaseStep": 1}
    observed = Sample(gm(status), job([cond("Failed", "True", "WorkloadFailed")]), "Failed", anchor=anchor,
                      profile=PROFILE, window=seen)
    written = only_write(decide(observed, SETTINGS, NOW)).status
    assert (written["currentStep"], written["applicationStopTime"]) == (30, "2026-01-22T10:05:00Z")


def test_the_final_sample_never_moves_persisted_progress_back() -> None:
    """CRE's `goodput-final-sample/terminal-merge-never-regresses-persisted-progress`."""
    status = {"startTime": "2026-01-22T10:00:00Z", "warmupBaseStep": 1, "currentStep": 90, "highestStep": 90,
              "lastStepTimestamp": "2026-01-22T10:04:00Z", "avgStepTimeSec": "2.000000"}
    step = Step(global_step=30, timestamp=at("2026-01-22T10:00:05Z"), step_timing=9.0)
    seen = Window(steps=[step], first_step=step, last_step=step, last_log_timestamp=step.timestamp)
    observed = Sample(gm(status), job([cond("Succeeded", "True", "WorkloadCompleted")]), "Succeeded",
                      anchor=at("2026-01-22T10:05:00Z"), profile=PROFILE, window=seen)
    written = only_write(decide(observed, SETTINGS, NOW)).status
    assert (written["currentStep"], written["highestStep"], written["lastStepTimestamp"],
            written["avgStepTimeSec"]) == (90, 90, "2026-01-22T10:04:00Z", "2.000000")


def test_the_final_window_is_capped_at_the_anchor_inclusive() -> None:
    """CRE's `capParseResultAtAnchor`: steps and checkpoints stamped after the anchor dropped, those at it kept,
    the last line time capped."""
    anchor = at("2026-01-22T10:05:00Z")
    steps = [Step(global_step=n, timestamp=at(t)) for n, t in
             ((30, "2026-01-22T10:00:05Z"), (40, "2026-01-22T10:05:00Z"), (50, "2026-01-22T10:06:00Z"))]
    checkpoints = [Checkpoint(30, at("2026-01-22T10:05:00Z")), Checkpoint(50, at("2026-01-22T10:07:00Z"))]
    seen = Window(steps=steps, first_step=steps[0], last_step=steps[2], checkpoints=checkpoints,
                  last_log_timestamp=at("2026-01-22T10:07:00Z"))
    assert capped(seen, anchor) == Window(steps=steps[:2], first_step=steps[0], last_step=steps[1],
                                          checkpoints=checkpoints[:1], last_log_timestamp=anchor)
    late = Window(steps=steps[2:], first_step=steps[2], last_step=steps[2])
    assert capped(late, anchor) == Window()


def test_the_wall_clock_to_the_microsecond_in_nanoseconds() -> None:
    assert ns_of(datetime(2026, 1, 22, 18, 1, 0, 123456, tzinfo=UTC)) == 1769104860123456000


def test_a_failed_job_without_a_sample_stops_when_worker_0_terminated() -> None:
    status = {"startTime": "2026-01-22T17:00:00Z", "warmupBaseStep": 1}
    observed = Sample(gm(status), job([cond("Failed", "True", "WorkloadFailed")]), "Failed",
                      anchor=at("2026-01-22T18:00:00Z"), profile=PROFILE, terminated=at("2026-01-22T17:45:00Z"))
    plan = decide(observed, SETTINGS, NOW)
    assert only_write(plan).status["trainingTimeSec"] == "2700.000000"
    assert plan.reason == "GoodputMeasurement ns/llm-goodput: JobFailed"


def test_the_final_sample_takes_the_last_step_only_past_the_persisted_one() -> None:
    status = {"startTime": "2026-01-22T10:00:00Z", "warmupBaseStep": 1, "currentStep": 90, "highestStep": 90,
              "lastStepTimestamp": "2026-01-22T10:04:00Z", "avgStepTimeSec": "2.000000"}
    for when, kept in (("2026-01-22T10:04:30Z", ("2026-01-22T10:04:30Z", "3.000000")),
                       ("2026-01-22T10:04:00Z", ("2026-01-22T10:04:00Z", "2.000000"))):
        step = Step(global_step=95, timestamp=at(when), step_timing=3.0)
        seen = Window(steps=[step], first_step=step, last_step=step, last_log_timestamp=step.timestamp)
        observed = Sample(gm(status), job([cond("Succeeded", "True", "WorkloadCompleted")]), "Succeeded",
                          anchor=at("2026-01-22T10:05:00Z"), profile=PROFILE, window=seen)
        written = only_write(decide(observed, SETTINGS, NOW)).status
        assert (written["lastStepTimestamp"], written["avgStepTimeSec"]) == kept
