"""`validate` on the real API server with the GoodputMeasurement and BandwidthMeasurement CRDs: the
success path (`job.condition.changed`), the tick path (`job.check`), a back-dated success for the
measurement timeout, the Events, failedNodes from the group-nodes annotation (else the pods' nodes), and
the WorkloadRun that mirrors the verdict. No test sleeps. The decision, pure:
tests/functions/validate/test_decide.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import ConditionSummary, JobCheckData, JobConditionChangedData, JobRef
from events.envelope import Envelope, to_outbound
from events.types import EventType
from functions.domain.measurement_objects import bandwidth_measurements
from functions.runtime.client import send
from functions.runtime.resources import cre_goodput, cre_workloadruns
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod
from localstack.eventing.apisource import apiserver_record
from tests.support.helpers import announced_once, job_events, waits_while_its_decider_may_be_at_work
from tests.support.world import World

GROUP = "nvcre.nvidia.com"
VIOLATED = 'Threshold "busBandwidthGBps" violated: measured 350.0000, expression: value >= 400'
UNAVAILABLE = "Measurement data not available within"


# -- the decision --------------------------------------------------------------------------------


# -- on the real API server ----------------------------------------------------------------------

def stamp(delta: timedelta = timedelta(0)) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_thresholds(w: World, thresholds: dict[str, str], timeout: str | None = None, nodes: str = "") -> None:
    w.create_job(nodes=nodes)
    spec: dict[str, Any] = {"thresholds": thresholds}
    if timeout:
        spec["measurementTimeout"] = timeout
    w.gw.patch(w.jobs, w.ns, "llm", {"spec": spec})


def complete_condition(reason: str = "JobSucceeded") -> list[dict[str, str]]:
    return [{"type": "Complete", "status": "True", "reason": reason, "message": "measured",
             "lastTransitionTime": stamp()}]


def measure_bandwidth(w: World, bus: list[str], name: str = "llm-bandwidth", job_name: str = "llm",
                      reason: str = "JobSucceeded", job_uid: str | None = None) -> None:
    """`job_uid`: the measurement's `nvcre.nvidia.com/job-uid` annotation (none when None)."""
    res = bandwidth_measurements(GROUP)
    annotations = {} if job_uid is None else {f"{GROUP}/job-uid": job_uid}
    w.gw.create(res, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "BandwidthMeasurement",
                            "metadata": {"name": name, "annotations": annotations},
                            "spec": {"jobRef": {"apiGroup": GROUP, "kind": "Job", "name": job_name},
                                     "logProfileRef": "nccl-tests", "testType": "all_reduce"}})
    results = [{"sizeBytes": 1 << (20 + i), "busBW": b, "algBW": str(float(b) / 2), "samples": 5}
               for i, b in enumerate(bus)]
    w.gw.patch(res, w.ns, name, {"status": {"conditions": complete_condition(reason), "results": results}},
               status=True)


def measure_goodput(w: World, complete: bool = True, **status: str) -> None:
    res = cre_goodput(GROUP)
    w.gw.create(res, w.ns, {"apiVersion": f"{GROUP}/v1alpha1", "kind": "GoodputMeasurement",
                            "metadata": {"name": "llm-goodput"},
                            "spec": {"jobRef": {"apiGroup": GROUP, "kind": "Job", "name": "llm"},
                                     "logProfileRef": "megatron"}})
    conditions = complete_condition() if complete else []
    w.gw.patch(res, w.ns, "llm-goodput", {"status": {"conditions": conditions, **status}}, status=True)


def validation(w: World, name: str = "llm") -> tuple[str, str, str] | None:
    found = [c for c in w.job(name)["status"]["conditions"] if c["type"] == "ValidationFailed"]
    return (found[0]["status"], found[0]["reason"], found[0]["message"]) if found else None


def back_date_success(w: World, by: timedelta) -> None:
    conditions = w.job()["status"]["conditions"]
    for c in conditions:
        if c["type"] == "Succeeded":
            c["lastTransitionTime"] = stamp(-by)
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"conditions": conditions}}, status=True)


def verdicts(w: World) -> list[dict[str, Any]]:
    return [o.reply["data"] for o in w.answers("validate") if o.reply]


def checks_sent(w: World) -> list[list[str]]:
    return [r["data"]["checks"] for r in w.resynced if r["attributes"]["type"] == "dev.crefn.job.check"]


def test_on_success_a_violation_fails_validation_and_the_job_stays_succeeded(world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value >= 400", "goodputRatio": "value >= 0.9"}, nodes="gpu-2,gpu-1")
    measure_bandwidth(w, ["120.5", "350", "349.99"])
    measure_goodput(w, result="0.95", avgTFLOPSPerGPU="410", avgStepTimeSec="2.5")
    w.succeed()
    assert validation(w) == ("True", "ThresholdViolated", VIOLATED)
    assert w.final()[:2] == ("Succeeded", "WorkloadCompleted")
    assert w.job()["status"]["failedNodes"] == [{"name": n, "reason": "ThresholdViolation", "message": VIOLATED}
                                                for n in ("gpu-1", "gpu-2")]
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns)]
    assert [e for e in events if e[1] not in ("WorkloadCreated", "WorkloadCompleted")] == [
        ("Warning", "ThresholdViolated", VIOLATED)]
    assert [v["reason"] for v in verdicts(w)] == ["ThresholdViolated"]
    assert all(o.status in (200, 202) for o in w.answers("validate"))
    w.tick(rounds=1)  # validated: no check any more, nothing written twice
    assert checks_sent(w) == [] and len(verdicts(w)) == 1


PODS_OF_LLM = {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}


def test_a_violation_without_group_nodes_attributes_the_nodes_the_pods_ran_on(world: Callable[..., World]) -> None:
    """CRE's `setJobValidationStatus` fills an empty failedNodes from `groupNodeNames`: with no group-nodes
    annotation, every node the Job's pods were bound to (any phase, de-duplicated, sorted; a pod never placed
    names none)."""
    w = world(kubelet=None)  # the Trainer makes no pods: these are the Job's
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"})
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", PODS_OF_LLM, node="gpu-node-9")
    create_pod(w.gw, w.ns, "llm-workload-node-1-0", PODS_OF_LLM, node="gpu-node-3")
    create_pod(w.gw, w.ns, "llm-workload-node-2-0", PODS_OF_LLM, node="gpu-node-9")
    create_pod(w.gw, w.ns, "llm-workload-node-3-0", PODS_OF_LLM)
    create_pod(w.gw, w.ns, "other-workload-node-0-0", {**PODS_OF_LLM, "nvcre.nvidia.com/job": "other"},
               node="gpu-node-1")
    measure_bandwidth(w, ["350"])
    w.succeed()
    assert validation(w) == ("True", "ThresholdViolated", VIOLATED)
    assert w.job()["status"]["failedNodes"] == [
        {"name": "gpu-node-3", "reason": "ThresholdViolation", "message": VIOLATED},
        {"name": "gpu-node-9", "reason": "ThresholdViolation", "message": VIOLATED}]
    assert [v["failedNodes"] for v in verdicts(w)] == [[
        {"name": "gpu-node-3", "reason": "ThresholdViolation", "message": VIOLATED},
        {"name": "gpu-node-9", "reason": "ThresholdViolation", "message": VIOLATED}]]


@pytest.mark.parametrize(("bus", "nodes", "calls"), [
    ("450", "", ["GET jobs/llm", "GET bandwidthmeasurements", "PATCH jobs/llm/status", "POST events"]),
    ("350", "gpu-node-2", ["GET jobs/llm", "GET bandwidthmeasurements", "PATCH jobs/llm/status", "POST events"]),
    ("350", "", ["GET jobs/llm", "GET bandwidthmeasurements", "GET pods", "PATCH jobs/llm/status", "POST events"]),
], ids=["met", "violated-with-group-nodes", "violated-without-group-nodes"])
def test_the_pods_are_read_only_for_a_violation_without_group_nodes(bus: str, nodes: str, calls: list[str],
                                                                    world: Callable[..., World],
                                                                    cluster: LocalCluster) -> None:
    """The usual verdicts make the requests they made before; only a failed one with no group-nodes
    annotation lists the Job's pods."""
    from functions.runtime.context import Context
    from functions.runtime.settings import Settings
    from functions.validate import read as validate
    from tests.support.helpers import CountingGateway

    w = world(poll=False)
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"}, nodes=nodes)
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted", "message": "done",
         "lastTransitionTime": stamp()}]}}, status=True)
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", PODS_OF_LLM, node="gpu-node-5")
    measure_bandwidth(w, [bus])
    counting = CountingGateway(cluster.gateway())
    check = JobCheckData(job=JobRef(name="llm", namespace=w.ns), attempt=0, checks=["validation"])
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), gateway=counting)
    try:
        outcome = validate.handle(Envelope(id="1", type=EventType.JOB_CHECK, source="/crefn/resync",
                                           data=check.model_dump(by_alias=True)), ctx)
    finally:
        ctx.cel.close()
    assert outcome.reply is not None
    assert [f"{method} {path.split(f'/namespaces/{w.ns}/')[1]}" for method, path in counting.calls] == calls


def test_measurements_arriving_later_are_validated_on_the_tick(world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value >= 300", "avgTFLOPsPerGPU": "value > 400"})
    w.succeed()
    assert validation(w) is None  # waiting: the success event found no measurements
    assert [(o.status, o.reply) for o in w.answers("validate") if o.final] == [(202, None)]
    measure_goodput(w, complete=False, avgTFLOPSPerGPU="410")  # provisional: not used
    measure_bandwidth(w, ["310"])
    w.tick(rounds=1)
    assert checks_sent(w) == [["validation"]] and validation(w) is None
    w.gw.patch(cre_goodput(GROUP), w.ns, "llm-goodput", {"status": {"conditions": complete_condition()}},
               status=True)
    w.tick(rounds=1)
    assert validation(w) == ("False", "ThresholdsMet", "All performance thresholds satisfied")
    assert "failedNodes" not in w.job()["status"]
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["reason"] == "ThresholdsMet"] \
        == [("Normal", "ThresholdsMet", "All performance thresholds satisfied")]
    assert [(v["failed"], v["reason"]) for v in verdicts(w)] == [(False, "ThresholdsMet")]


@pytest.mark.parametrize(("timeout", "waited", "message"), [
    (None, timedelta(minutes=6), f"{UNAVAILABLE} 5m0s for keys: [avgStepTimeSec goodputRatio]"),
    ("90s", timedelta(minutes=2), f"{UNAVAILABLE} 1m30s for keys: [avgStepTimeSec goodputRatio]"),
    ("1h", timedelta(minutes=30), None),
], ids=["default-5m", "spec-90s", "spec-1h-not-yet"])
def test_missing_measurements_time_out(timeout: str | None, waited: timedelta, message: str | None,
                                       world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"goodputRatio": "value >= 0.9", "avgStepTimeSec": "value < 3", "algBandwidthGBps": "value > 1"},
                    timeout=timeout, nodes="gpu-1")
    measure_bandwidth(w, ["10"])
    measure_goodput(w, result="0", avgStepTimeSec="")  # complete, but no values above 0
    w.succeed()
    assert validation(w) is None
    back_date_success(w, waited)
    w.tick(rounds=1)
    if message is None:
        assert validation(w) is None and checks_sent(w) == [["validation"]]
        return
    assert validation(w) == ("True", "MeasurementTimeout", message)
    assert w.job()["status"]["failedNodes"] == [{"name": "gpu-1", "reason": "ThresholdViolation", "message": message}]
    assert [(e["type"], e["reason"]) for e in job_events(w.gw, w.ns) if e["reason"] == "MeasurementTimeout"] == [
        ("Warning", "MeasurementTimeout")]


@pytest.mark.parametrize("reason", ["LogsUnavailable", "JobFailed"])
def test_bandwidth_results_that_are_not_final_count_as_unmeasured(reason: str, world: Callable[..., World]) -> None:
    """CRE's `bandwidthFinal` (`job_threshold_helpers.go`, testdata `collect-job-measured-values/
    bandwidth-without-final-results-skipped`): a BandwidthMeasurement completed with any reason but
    `JobSucceeded` holds provisional results; its keys stay unmeasured and end in `MeasurementTimeout`."""
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value > 1"})
    measure_bandwidth(w, ["980.1"], reason=reason)
    w.succeed()
    assert validation(w) is None  # waiting, not validated on the provisional 980.1
    back_date_success(w, timedelta(minutes=6))
    w.tick(rounds=1)
    assert validation(w) == ("True", "MeasurementTimeout",
                             "Measurement data not available within 5m0s for keys: [busBandwidthGBps]")


def test_an_earlier_jobs_bandwidth_measurement_counts_for_nothing(world: Callable[..., World]) -> None:
    """CRE's `measuresJob` / `findJobBandwidthMeasurement` (`job_threshold_helpers.go`): a
    BandwidthMeasurement whose `nvcre.nvidia.com/job-uid` annotation names another uid was left by an
    earlier Job of the same name; its final results are not this Job's, so the key stays unmeasured
    and ends in `MeasurementTimeout`. One annotated with this Job's uid counts."""
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"})
    measure_bandwidth(w, ["980.1"], job_uid="uid-of-an-earlier-llm")
    w.succeed()
    assert validation(w) is None  # waiting, not validated on the earlier Job's 980.1
    back_date_success(w, timedelta(minutes=6))
    w.tick(rounds=1)
    assert validation(w) == ("True", "MeasurementTimeout",
                             "Measurement data not available within 5m0s for keys: [busBandwidthGBps]")
    assert [(e["type"], e["reason"]) for e in job_events(w.gw, w.ns) if e["reason"] == "MeasurementTimeout"] == [
        ("Warning", "MeasurementTimeout")]


def test_a_bandwidth_measurement_of_this_jobs_uid_counts(world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"})
    measure_bandwidth(w, ["10"], name="llm-0-earlier", job_uid="uid-of-an-earlier-llm")  # listed first
    measure_bandwidth(w, ["980.1"], job_uid=w.job()["metadata"]["uid"])
    w.succeed()
    assert validation(w) == ("False", "ThresholdsMet", "All performance thresholds satisfied")


def test_an_unknown_key_fails_at_once(world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"busBandwidth": "value > 1", "goodputRatio": "value > 0.5"})
    w.succeed()
    assert validation(w) == ("True", "UnknownThresholdKey", "unknown threshold key(s) [busBandwidth]; valid keys: "
                             "[busBandwidthGBps, algBandwidthGBps, goodputRatio, avgTFLOPsPerGPU, avgStepTimeSec]")


def test_an_invalid_expression_is_reported(world: Callable[..., World]) -> None:
    w = world()
    with_thresholds(w, {"algBandwidthGBps": "value + 1.0"})
    measure_bandwidth(w, ["400"])
    w.succeed()
    assert validation(w) == ("True", "InvalidThresholdExpression", 'Threshold "algBandwidthGBps": compile threshold '
                             'expression "value + 1.0": expression must return bool, got double')


ZEROS = "[" + ",".join(["0"] * 90) + "]"
SLOW = f"{ZEROS}.all(y, [{ZEROS}].all(x, {ZEROS}.all(i, {ZEROS}.all(j, size({' + '.join(['x'] * 16)}) > 0))))"
"""8100 iterations, each concatenating a list 16 times: about 10 s in-process."""


@pytest.mark.parametrize(("expression", "message"), [
    (SLOW, f'Threshold "algBandwidthGBps": evaluate threshold expression "{SLOW}" with value=400.000000: '
           "operation interrupted: took longer than 1s"),
    ("value >= 1.0" + " " * 2037, 'Threshold "algBandwidthGBps": compile threshold expression (2049 characters): '
                                  "spec.thresholds.algBandwidthGBps should be at most 2048 chars long"),
], ids=["past-its-budget", "too-long"])
def test_an_expression_past_its_budget_or_too_long_is_invalid(world: Callable[..., World], expression: str,
                                                              message: str) -> None:
    w = world()
    with_thresholds(w, {"algBandwidthGBps": expression})
    measure_bandwidth(w, ["800"])
    w.succeed()
    assert validation(w) == ("True", "InvalidThresholdExpression", message)
    warnings = [(e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["type"] == "Warning"]
    assert warnings == [("InvalidThresholdExpression", message)]


def test_events_of_other_jobs_and_kinds_write_nothing(world: Callable[..., World],
                                                      functions: Callable[..., dict[str, str]]) -> None:
    w = world()
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"})
    w.settle()
    url, ref = functions()["validate"], JobRef(name="llm", namespace=w.ns)
    running = JobConditionChangedData(job=ref, new=ConditionSummary(type="InProgress", reason="WorkloadRunning"))
    nodehealth = JobCheckData(job=ref, attempt=0, checks=["nodehealth"])
    for data, kind in ((running, EventType.JOB_CONDITION_CHANGED), (nodehealth, EventType.JOB_CHECK)):
        answer = send(url, to_outbound(kind, "test", w.ns, "llm", data, None))
        assert answer.status == 202, answer.text
    early = JobCheckData(job=ref, attempt=0, checks=["validation"])  # not Succeeded yet (a stale or forged check)
    assert send(url, to_outbound(EventType.JOB_CHECK, "test", w.ns, "llm", early, None)).status == 202
    assert validation(w) is None
    garbage = send(url, to_outbound(EventType.JOB_CHECK, "test", w.ns, "llm", running, None))
    assert garbage.status == 400


# -- the WorkloadRun mirror ----------------------------------------------------------------------

def run_condition(w: World) -> tuple[str, str, str]:
    """The run's True exclusive condition (exactly one)."""
    run = w.gw.get(cre_workloadruns(GROUP), w.ns, "wr") or {}
    true = [c for c in run["status"]["conditions"] if c["status"] == "True" and c["type"] != "ValidationFailed"]
    assert len(true) == 1, run["status"]
    return true[0]["type"], true[0]["reason"], true[0]["message"]


def run_validation(w: World) -> tuple[str, str, str] | None:
    """The run's own `ValidationFailed` condition, if any."""
    run = w.gw.get(cre_workloadruns(GROUP), w.ns, "wr") or {}
    found = [c for c in run["status"]["conditions"] if c["type"] == "ValidationFailed"]
    return (found[0]["status"], found[0]["reason"], found[0]["message"]) if found else None


@pytest.mark.parametrize(("bus", "expected", "own"), [
    ("350", ("Failed", "WorkflowValidationFailed", "1 groups failed across 1 iterations"),
     ("True", "ThresholdViolation", "One or more Jobs failed performance threshold validation")),
    ("450", ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully"), None),
], ids=["violated", "met"])
def test_a_workloadrun_waits_for_the_verdict_and_mirrors_it(bus: str, expected: tuple[str, str, str],
                                                            own: tuple[str, str, str] | None,
                                                            world: Callable[..., World],
                                                            functions: Callable[..., dict[str, str]]) -> None:
    """CRE's WorkloadRun controller: `Workflow wr created` while the Job runs and awaits its verdict, then
    the verdict; a violation also as the run's own `ValidationFailed` / `ThresholdViolation`."""
    w = world()
    runs = cre_workloadruns(GROUP)
    run = w.gw.create(runs, w.ns, {
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "WorkloadRun",
        "metadata": {"name": "wr", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2, "gpusPerNode": 4,
                 "framework": {"exec": {"command": ["true"]}}, "thresholds": {"busBandwidthGBps": "value >= 400"}}})
    assert send(functions()["workloadrun"], apiserver_record("add", run, runs, w.gw.host)).status == 202
    w.settle()
    w.trainer("complete", job="wr-job")
    w.settle()
    assert w.final("wr-job")[0] == "Succeeded"
    assert run_condition(w) == ("InProgress", "WorkflowCreated", "Workflow wr created")
    measure_bandwidth(w, [bus], name="wr-bandwidth", job_name="wr-job")
    w.tick(rounds=1)
    assert validation(w, "wr-job") is not None
    assert run_condition(w) == expected
    assert run_validation(w) == own
    mirrors = [o for o in w.broker.outcomes if o.trigger == "crefn-workloadrun-validations"]
    assert mirrors and all(o.status == 202 for o in mirrors if o.final)


def test_a_validation_delivered_again_after_a_crash_sends_its_event_and_its_reply(
        world: Callable[..., World], functions: Callable[..., dict[str, str]], cluster: LocalCluster) -> None:
    """Killed after the ValidationFailed write, before its Event and its reply: the same check, delivered again
    (the Job no longer awaits validation), records the Event and answers `dev.crefn.job.validation`; delivered
    once more, it answers again and records nothing twice; another event, or the same one past the hour,
    restates nothing."""
    from functions.runtime.apply import apply
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.effects import KubeEvent, WriteStatus
    from functions.runtime.plan import Plan
    from functions.runtime.settings import Settings
    from functions.validate import read as validate

    w = world(poll=False)
    with_thresholds(w, {"busBandwidthGBps": "value >= 400"}, nodes="gpu-node-2")
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"conditions": [
        {"type": "Succeeded", "status": "True", "reason": "WorkloadCompleted", "message": "done",
         "lastTransitionTime": stamp()}]}}, status=True)
    measure_bandwidth(w, ["350"])
    check = {"attributes": {"specversion": "1.0", "id": "c1", "source": "/crefn/resync",
                            "type": "dev.crefn.job.check", "subject": f"{w.ns}/llm",
                            "time": stamp(-timedelta(seconds=41)), "namespace": w.ns, "job": "llm",
                            "partitionkey": f"{w.ns}/llm"},
             "data": {"job": {"name": "llm", "namespace": w.ns}, "attempt": 0, "checks": ["validation"]}}
    decided = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), clock=lambda: decided)
    try:
        plan = validate.decide(validate.read(to_envelope(check), ctx), ctx.settings, ctx.clock())
    finally:
        ctx.cel.close()
    assert [type(e) for e in plan.effects] == [WriteStatus, KubeEvent]
    apply(Plan(plan.effects[:1]), ctx)  # the verdict written, then the process dies
    assert validation(w) == ("True", "ThresholdViolated", VIOLATED)
    assert not [e for e in job_events(w.gw, w.ns) if e["reason"] == "ThresholdViolated"]
    waits_while_its_decider_may_be_at_work(validate.handle, check, ctx.settings, decided)

    url = functions()["validate"]
    answer = send(url, check)  # Knative delivers it again
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.job.validation", answer.text
    assert json.loads(answer.body) == {
        "job": {"name": "llm", "namespace": w.ns}, "failed": True, "reason": "ThresholdViolated", "message": VIOLATED,
        "failedNodes": [{"name": "gpu-node-2", "reason": "ThresholdViolation", "message": VIOLATED}]}
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns)]
    assert events == [("Warning", "ThresholdViolated", VIOLATED)]
    assert job_events(w.gw, w.ns)[-1]["metadata"]["annotations"]["crefn.dev/cause"] == "c1"

    old = announced_once(url, check, answer.body, validate.handle, ctx.settings, lambda: job_events(w.gw, w.ns))
    assert old.reason == f"Job {w.ns}/llm is not awaiting validation"
