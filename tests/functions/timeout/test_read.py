"""A Job's wall-clock bound on the real API server: resync's tick finds the Jobs whose time has run out
(`dev.crefn.job.deadline`), `timeout` fails them `JobTimedOut` (the whole exclusive set, a failure log
of the pod that ran, a Warning Event) and deletes the TrainJob; the delete never restarts them.
Timestamps are back-dated; no test sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from functions.runtime.client import send
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod, set_running
from tests.support.helpers import announced_once, job_events, waits_while_its_decider_may_be_at_work
from tests.support.world import World

LABELS = {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true",
          "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


def stamp(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def bounded(world: Callable[..., World], timeout: str = "1h", suspend: bool = False, launch: bool = True) -> World:
    w = world()
    w.create_job(max_restarts=2, suspend=suspend)
    w.gw.patch(w.jobs, w.ns, "llm", {"metadata": {"annotations": {"crefn.dev/timeout-per-job": timeout}}})
    w.checkpoint_evidence()  # a restart would be possible: a timeout must still never restart
    if launch:
        w.settle()
    return w


def deadline_record(ns: str, job: str = "llm") -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": "d1", "source": "/crefn/resync",
                           "type": "dev.crefn.job.deadline", "subject": f"{ns}/{job}", "namespace": ns,
                           "job": job, "partitionkey": f"{ns}/{job}"},
            "data": {"job": {"name": job, "namespace": ns}, "attempt": 0, "elapsedSeconds": 3700.0,
                     "timeoutSeconds": 3600.0, "blocked": False}}


def exclusive(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]
            if c["type"] in ("InProgress", "Succeeded", "Failed")}


def test_a_running_job_past_its_bound_times_out_and_is_never_restarted(world: Callable[..., World],
                                                                        cluster: LocalCluster) -> None:
    w = bounded(world)
    cluster.kubelet.register_node(w.gw, "gpu-node-3")
    create_pod(w.gw, w.ns, "llm-workload-node-0-0", LABELS, node="gpu-node-3")
    set_running(w.gw, w.ns, "llm-workload-node-0-0")
    cluster.kubelet.set_log(w.ns, "llm-workload-node-0-0", "node", "step 41 loss 1.9\nstep 42 loss 1.8 (NCCL wait)\n")
    w.settle()
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": stamp(-timedelta(minutes=61))}}, status=True)
    w.tick(rounds=1)
    w.settle()
    status = w.job()["status"]
    assert exclusive(status) == {"Failed": ("True", "JobTimedOut", "Job exceeded timeoutPerJob"),
                                 "InProgress": ("False", "NotApplicable", ""),
                                 "Succeeded": ("False", "NotApplicable", "")}
    log = status["failureLog"]
    assert (log["podName"], log["nodeName"], log["exitCode"], log["reason"], log["tail"]) == (
        "llm-workload-node-0-0", "gpu-node-3", 0, "Timeout", "step 41 loss 1.9\nstep 42 loss 1.8 (NCCL wait)\n")
    assert w.trainjob() is None  # deleted; the Job is kept
    assert status.get("restartCount", 0) == 0  # the delete reached restart as a failure of a terminal Job
    restart = [o for o in w.answers("restart") if o.final]
    assert restart and all(o.status == 202 and o.reply is None for o in restart)  # no job.restarted
    warnings = [(e["reason"], e["type"], e["message"]) for e in job_events(w.gw, w.ns) if e["type"] == "Warning"]
    assert warnings == [("JobTimedOut", "Warning", "Job exceeded timeoutPerJob")]
    changed = [o.reply for o in w.answers("timeout") if o.reply]
    assert len(changed) == 1 and changed[0]["data"]["new"]["reason"] == "JobTimedOut"
    assert changed[0]["data"]["failure"] == {"podName": "llm-workload-node-0-0", "nodeName": "gpu-node-3",
                                             "exitCode": 0, "reason": "Timeout"}
    w.tick(rounds=1)  # terminal: nothing more
    assert len([r for r in w.resynced if r["attributes"]["type"] == "dev.crefn.job.deadline"]) == 1


def test_a_blocked_episode_alone_times_out_the_job(world: Callable[..., World]) -> None:
    w = bounded(world)
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": None,
                                                "schedulingBlockedSince": stamp(-timedelta(minutes=61))}}, status=True)
    w.tick(rounds=1)
    w.settle()
    status = w.job()["status"]
    assert exclusive(status)["Failed"] == ("True", "JobTimedOut",
                                           "Job exceeded timeoutPerJob while its pods were unschedulable")
    assert "failureLog" not in status  # no pod ever ran: nothing to record


def test_a_job_blocked_when_its_time_runs_out_says_so(world: Callable[..., World]) -> None:
    """Ran 61 minutes before its pods became unschedulable 2 minutes ago: the run, not the episode, used up
    the bound, and CRE's `failTimedOutJob` still says `… while its pods were unschedulable` (the marker is
    set when the time runs out)."""
    w = bounded(world)
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": stamp(-timedelta(minutes=63)),
                                                "schedulingBlockedSince": stamp(-timedelta(minutes=2))}},
               status=True)
    w.tick(rounds=1)
    w.settle()
    assert exclusive(w.job()["status"])["Failed"] == ("True", "JobTimedOut",
                                                      "Job exceeded timeoutPerJob while its pods were unschedulable")
    warnings = [(e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["type"] == "Warning"]
    assert warnings == [("JobTimedOut", "Job exceeded timeoutPerJob while its pods were unschedulable")]


def test_no_workload_yet_counts_from_the_jobs_creation(world: Callable[..., World]) -> None:
    """A bound shorter than the time since creation: the tick times the Job out before launching it."""
    w = bounded(world, timeout="1ms", launch=False)
    w.tick(rounds=1)
    w.settle()
    status = w.job()["status"]
    assert exclusive(status)["Failed"][1] == "JobTimedOut"
    assert "workloadRef" not in status and w.trainjob() is None


def test_a_pending_workload_is_not_charged(world: Callable[..., World]) -> None:
    """Suspended (queued): never seen running, so no time passes, whatever the bound."""
    w = bounded(world, timeout="1ms", suspend=True)
    w.tick(rounds=1)
    w.settle()
    assert exclusive(w.job()["status"])["InProgress"][:2] == ("True", "WorkloadPending")
    assert not [r for r in w.resynced if r["attributes"]["type"] == "dev.crefn.job.deadline"]


def test_a_stale_deadline_does_nothing(world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    """A deadline event for a Job within its bound on a fresh read (restarted, recovered, or forged)."""
    w = bounded(world)
    answer = send(functions()["timeout"], deadline_record(w.ns))
    assert answer.status == 202
    assert exclusive(w.job()["status"])["InProgress"][0] == "True" and w.trainjob() is not None
    gone = send(functions()["timeout"], deadline_record(w.ns, "never-was"))
    assert gone.status == 202
    bad = deadline_record(w.ns)
    bad["data"]["attempt"] = "first"
    refused = send(functions()["timeout"], bad)
    assert refused.status == 400 and "attempt" in refused.text


def test_the_default_bound_applies_to_jobs_without_the_annotation(world: Callable[..., World],
                                                                  functions: Callable[..., dict[str, str]]) -> None:
    urls = functions(CREFN_DEFAULT_TIMEOUT_PER_JOB="30m")
    w = world(urls)
    w.create_job(max_restarts=0)
    w.settle()
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": stamp(-timedelta(minutes=31))}}, status=True)
    w.tick(rounds=1)
    w.settle()
    assert exclusive(w.job()["status"])["Failed"][1] == "JobTimedOut"


def test_a_timeout_delivered_again_after_a_crash_sends_its_event_its_delete_and_its_reply(
        world: Callable[..., World], functions: Callable[..., dict[str, str]], cluster: LocalCluster) -> None:
    """Killed after the JobTimedOut write, before its Event, the TrainJob delete and the reply: the same deadline
    event, delivered again, records the Event, deletes the TrainJob and answers `job.condition.changed`; delivered
    once more, it answers again and records nothing twice; another event, or the same one past the hour, restates
    nothing."""
    from functions.runtime.apply import apply
    from functions.runtime.codec import to_envelope
    from functions.runtime.context import Context
    from functions.runtime.effects import Delete, KubeEvent, WriteStatus
    from functions.runtime.plan import Plan
    from functions.runtime.settings import Settings
    from functions.timeout import read as timeout

    w = bounded(world)
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"workloadStartTime": stamp(-timedelta(minutes=61))}}, status=True)
    decided = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    record = deadline_record(w.ns)
    record["attributes"]["time"] = stamp(-timedelta(seconds=41))  # when the tick sent it
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), clock=lambda: decided)
    plan = timeout.decide(timeout.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    assert [type(e) for e in plan.effects] == [WriteStatus, KubeEvent, Delete]
    apply(Plan(plan.effects[:1]), ctx)  # the verdict written, then the process dies
    assert exclusive(w.job()["status"])["Failed"] == ("True", "JobTimedOut", "Job exceeded timeoutPerJob")
    assert not [e for e in job_events(w.gw, w.ns) if e["reason"] == "JobTimedOut"]
    assert w.trainjob() is not None
    waits_while_its_decider_may_be_at_work(timeout.handle, record, ctx.settings, decided)

    url = functions()["timeout"]
    answer = send(url, record)  # Knative delivers it again
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.job.condition.changed", answer.text
    reply = json.loads(answer.body)
    assert reply["new"] == {"type": "Failed", "reason": "JobTimedOut", "message": "Job exceeded timeoutPerJob"}
    assert reply["previous"] is None and reply["workload"]["name"] == "llm-workload"
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns)]
    assert events[-1] == ("Warning", "JobTimedOut", "Job exceeded timeoutPerJob")
    assert job_events(w.gw, w.ns)[-1]["metadata"]["annotations"]["crefn.dev/cause"] == "d1"
    assert w.trainjob() is None  # the delete the crash left undone

    old = announced_once(url, record, answer.body, timeout.handle, ctx.settings, lambda: job_events(w.gw, w.ns))
    assert old.reason == f"Job {w.ns}/llm is terminal"
