"""`functions.runtime.apply`: a plan's writes with optimistic locking on the real API server — a conflict is
re-read and decided once more, a second conflict is the caller's 409."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from functions.domain.jobs import JobState, write_status
from functions.runtime.apply import apply, run
from functions.runtime.context import Context
from functions.runtime.effects import WriteStatus
from functions.runtime.errors import Conflict
from functions.runtime.gateway import Gateway
from functions.runtime.plan import Plan
from functions.runtime.reads import read_job
from functions.runtime.resources import cre_goodput
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from tests.support.answers import counted_here
from tests.support.world import JOBS, World, make_world


def test_status_write_on_a_stale_resource_version_retries_once_then_409(cluster: LocalCluster, gateway: Gateway,
                                                                         namespace: str) -> None:
    w = make_world(gateway, namespace, {})
    w.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    seen: list[str] = []

    def read() -> JobState:
        state = read_job(ctx, namespace, "llm")
        assert state is not None
        seen.append(state.job.metadata.resource_version)
        return state

    def decide_racing(state: JobState, settings: Settings, now: datetime) -> Plan:
        # another writer changes the Job between our read and our write, every time
        gateway.patch(JOBS, namespace, "llm", {"metadata": {"labels": {"n": str(len(seen))}}})
        return Plan((write_status(state, {"restartCount": 1}, settings.cre_group),))

    with pytest.raises(Conflict):
        run(ctx, read, decide_racing)
    assert len(seen) == 2 and seen[0] != seen[1]
    assert "restartCount" not in (w.job().get("status") or {})

    seen.clear()

    def decide_once(state: JobState, settings: Settings, now: datetime) -> Plan:
        if len(seen) == 1:
            gateway.patch(JOBS, namespace, "llm", {"metadata": {"labels": {"n": "x"}}})
        return Plan((write_status(state, {"restartCount": 1}, settings.cre_group),))

    run(ctx, read, decide_once)
    assert len(seen) == 2 and w.job()["status"]["restartCount"] == 1


def test_a_locked_annotation_then_a_locked_status_write_are_one_chain(cluster: LocalCluster, gateway: Gateway,
                                                                     world: Callable[..., World],
                                                                     namespace: str) -> None:
    """The status write carries the resourceVersion the annotation left, so both stay locked on the read."""
    from functions.runtime.effects import Annotate
    from functions.runtime.resources import cre_jobs

    w = world({})
    w.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    state = read_job(ctx, namespace, "llm")
    assert state is not None
    read_at = state.job.metadata.resource_version
    chain = Plan((Annotate(cre_jobs("nvcre.nvidia.com"), namespace, "llm", {"crefn.dev/x": "1"}, read_at),
                  write_status(state, {"restartCount": 1}, "nvcre.nvidia.com")))
    apply(chain, ctx)
    job = w.job()
    assert job["metadata"]["annotations"]["crefn.dev/x"] == "1" and job["status"]["restartCount"] == 1
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"labels": {"someone": "else"}}})  # the read is stale now
    with pytest.raises(Conflict):
        apply(Plan((Annotate(cre_jobs("nvcre.nvidia.com"), namespace, "llm", {"crefn.dev/x": "2"},
                             job["metadata"]["resourceVersion"]),)), ctx)
    assert w.job()["metadata"]["annotations"]["crefn.dev/x"] == "1"


def test_a_best_effort_write_that_fails_is_reported_and_the_plan_goes_on(cluster: LocalCluster, gateway: Gateway,
                                                                        namespace: str) -> None:
    w = make_world(gateway, namespace, {})
    w.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    state = read_job(ctx, namespace, "llm")
    assert state is not None
    missing = WriteStatus(cre_goodput("nvcre.nvidia.com"), namespace, "llm-goodput", "", {"startTime": None},
                          best_effort=True)
    outcome = apply(Plan((missing, write_status(state, {"restartCount": 3}, "nvcre.nvidia.com"))), ctx)
    assert "GoodputMeasurement " + namespace + "/llm-goodput not written" in outcome.reason
    assert (gateway.get(JOBS, namespace, "llm") or {})["status"]["restartCount"] == 3


# -- sends and the loop over several Jobs (no API server) ----------------------------------------

def test_a_send_posts_to_k_sink_and_is_told_in_the_outcome() -> None:
    from events.emitted import JobCheckData, JobRef
    from events.envelope import to_outbound
    from functions.runtime.effects import Send
    from tests.support.helpers import Receiver

    data = JobCheckData(job=JobRef(name="llm", namespace="ns"), attempt=0, checks=["validation"])
    event = to_outbound("dev.crefn.job.check", "resync", "ns", "llm", data, None)
    sink = Receiver(default=202)
    try:
        outcome = apply(Plan((Send(event),), reason="checked"), Context(Settings(k_sink=sink.url)))
        assert (outcome.reply, outcome.reason, outcome.sent) == (None, "checked", ("dev.crefn.job.check",))
        assert [body["checks"] for body in sink.bodies] == [["validation"]]
    finally:
        sink.close()


def test_a_follow_up_that_fails_is_told_in_the_answer_and_what_it_did_stands() -> None:
    """Its answer not sent (K_SINK answers 503): what follows its writes still follows; its decision failing
    (what the writes answered unreadable): told, the plan standing, no error escaping."""
    from dataclasses import dataclass as frozen_data
    from typing import Any

    from events.emitted import JobCheckData, JobRef
    from events.envelope import to_outbound
    from functions.runtime.errors import PermanentError
    from tests.support.helpers import Receiver

    event = to_outbound("dev.crefn.job.check", "resync", "ns", "llm",
                        JobCheckData(job=JobRef(name="llm", namespace="ns"), attempt=0, checks=[]), None)

    @frozen_data(frozen=True)
    class Then:
        plan: Plan | None

        def follow(self, created: Any, written: Any) -> Plan:
            if self.plan is None:
                raise PermanentError("unreadable Job nvcre.nvidia.com ns/llm")
            return self.plan

    sink = Receiver(default=503)
    try:
        ctx = Context(Settings(k_sink=sink.url))
        nested = Plan((), reason="its first phase decided")
        outcome = apply(Plan((), reason="restarted", then=Then(Plan((), reply=event, reason="created",
                                                                       then=Then(nested)))), ctx)
        assert outcome.reason.startswith("restarted; created; its event not sent: ")
        assert outcome.reason.endswith("; its first phase decided") and outcome.sent == ()
        failing = apply(Plan((), reason="restarted", then=Then(None)), ctx)
        assert failing.reason == "restarted; not followed up: unreadable Job nvcre.nvidia.com ns/llm"
    finally:
        sink.close()


def test_several_jobs_each_run_one_error_kept_with_its_job_and_one_reply_per_answer() -> None:
    from events.emitted import JobRef
    from events.envelope import to_outbound
    from functions.runtime.apply import run_each
    from functions.runtime.errors import Unavailable
    from functions.runtime.plan import nothing

    def reads(job: str) -> Callable[[], str]:
        if job == "broken":
            raise Unavailable("API server away")
        return lambda: job

    def decide(job: str, settings: Settings, now: datetime) -> Plan:
        reply = to_outbound("dev.crefn.job.hardware.failed", "nodehealth", "ns", job, JobRef(name=job, namespace="ns"),
                            None)
        return Plan(reply=reply, reason=f"{job} decided")

    def later(job: str, settings: Settings, now: datetime) -> Plan:
        return nothing(f"{job} left to its next check")

    each = run_each(Context(Settings()), ["a", "broken", "b"], reads, decide, then=later)
    assert [(e.key, e.outcome and e.outcome.reason, str(e.error or "")) for e in each] == [
        ("a", "a decided", ""), ("broken", None, "API server away"), ("b", "b left to its next check", "")]


def test_a_plan_that_refuses_a_restart_is_counted_by_why() -> None:
    def refused(why: str) -> float:
        return counted_here("crefn_restarts_refused_total", {"why": why})

    before, exhausted = refused("no-evidence"), refused("exhausted")  # the process's counters (functions served in it)
    outcome = apply(Plan(reason="Job ns/llm: restart refused: no checkpoint evidence", refused="no-evidence"),
                    Context(Settings()))
    assert outcome.reason == "Job ns/llm: restart refused: no checkpoint evidence"
    assert refused("no-evidence") == before + 1 and refused("exhausted") == exhausted


def test_observe_mode_says_a_plans_writes_were_left_out() -> None:
    """resync's orphan delete in observe mode read "… deleted" though nothing was written."""
    from functions.runtime.effects import Delete
    from functions.runtime.resources import TRAINJOBS

    plan = Plan((Delete(TRAINJOBS, "ns", "llm-workload", "uid"),),
                reason="Job ns/llm is terminal and records no workload: its TrainJob llm-workload, recorded nowhere, "
                       "deleted")
    observing = apply(plan, Context(Settings(mode="observe")))  # no API server: nothing may be called
    assert observing.reason == ("observe mode, nothing written: Job ns/llm is terminal and records no workload: its "
                                "TrainJob llm-workload, recorded nowhere, deleted")
    assert apply(Plan(reason="nothing to do"), Context(Settings(mode="observe"))).reason == "nothing to do"
