"""The `status` function (SPEC §5) over HTTP on the real API server, as its ServiceAccount: a Job gone is
202, an invalid phase event 400, a success delivered again after a crash announced. Its conditions, pure:
tests/functions/status/test_decide.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.errors import NotYet
from localstack.cluster.apiserver import LocalCluster
from tests.support.helpers import job_events
from tests.support.world import World, phase_record


def test_object_gone_is_202(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    answer = send(functions()["status"], phase_record(namespace, "never-was", "Running"))
    assert answer.status == 202, answer.text


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    record = phase_record(namespace, "llm", "Running")
    record["data"]["phase"] = "Exploded"
    answer = send(functions()["status"], record)
    assert answer.status == 400 and "invalid dev.crefn.workload.phase data: phase" in answer.text


def test_a_success_delivered_again_after_a_crash_sends_its_event_and_its_reply(
        world: Callable[..., World], cluster: LocalCluster, functions: Callable[..., dict[str, str]]) -> None:
    """Killed after the Succeeded write, before its Event and its reply: the same event, delivered again, records
    the Event and answers `job.condition.changed`; an event seen after the write restates nothing."""
    from functions.runtime.apply import apply
    from functions.runtime.context import Context
    from functions.runtime.effects import KubeEvent, WriteStatus
    from functions.runtime.plan import Plan
    from functions.runtime.settings import Settings
    from functions.status import read as status

    w = world()
    w.create_job()
    w.settle()
    w.trainer("run")
    w.settle()
    w.trainer("complete")
    decided = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    done = phase_record(w.ns, "llm", "Succeeded")
    done["data"]["message"] = "all jobs completed"
    done["data"]["observedAt"] = decided.strftime("%Y-%m-%dT%H:%M:%SZ")
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), clock=lambda: decided)
    plan = status.decide(status.read(to_envelope(done), ctx), ctx.settings, ctx.clock())
    assert [type(e) for e in plan.effects] == [WriteStatus, KubeEvent]
    apply(Plan(plan.effects[:1]), ctx)  # the verdict written, then the process dies
    assert w.final() == ("Succeeded", "WorkloadCompleted", 0)
    assert job_events(w.gw, w.ns)[-1]["reason"] == "WorkloadCreated"
    with pytest.raises(NotYet) as waited:  # 10 s after the write, its decider may still be at work
        status.handle(to_envelope(done), Context(ctx.settings, clock=lambda: decided + timedelta(seconds=10)))
    assert waited.value.retry_after == 20
    observing = Context(Settings(kubeconfig=str(cluster.kubeconfig), mode="observe"))
    assert status.handle(to_envelope(done), observing).reply is None  # the functions wrote nothing to restate

    answer = send(functions()["status"], done)  # Knative delivers it again
    assert answer.status == 200 and answer.ce["jobcondition"] == "Succeeded", answer.text
    assert json.loads(answer.body)["new"] == {"type": "Succeeded", "reason": "WorkloadCompleted",
                                              "message": "Workload TrainJob/llm-workload completed: all jobs completed"}
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns)]
    assert events[-1] == ("Normal", "WorkloadCompleted", "Workload TrainJob/llm-workload completed: all jobs completed")
    assert send(functions()["status"], done).status == 200  # the answer refused: delivered once more
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns)] == events

    seen_later = {"attributes": {**done["attributes"], "id": "later"}, "data": {
        **done["data"], "observedAt": (datetime.now(UTC) + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}}
    assert send(functions()["status"], seen_later).status == 202  # seen after the write: not the deciding event
