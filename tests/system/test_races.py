"""Handlers under races, on the real API server: the world changes between a handler's read and its
write. The seam is the gateway the handler's context uses: `RacingGateway` is the function's own
gateway (its ServiceAccount), and right before the function's first write to a matching path the test
changes the cluster for real through another client (an admin, or a duplicate delivery of the same
event). What the functions must answer (SPEC §4.3, `functions.runtime.apply`): a write on a stale
resourceVersion is a 409 from the API server, read again and decided once more; an object gone
mid-way is 202; a Job turned terminal is never written again (202); a TrainJob replaced under its
name is never deleted (uid precondition).

Then the restart's own crash points: its plan cut after each step during a Job's second restart, and
the event redelivered, must never skip the grace period before the next TrainJob."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.envelope import InvalidEvent
from functions.launch import read as launch
from functions.restart import read as restart
from functions.runtime.apply import apply
from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.plan import Outcome, Plan
from functions.runtime.resources import TRAINJOBS
from functions.runtime.server import answer_for
from functions.runtime.settings import Settings
from functions.status import read as status
from functions.timeout import read as timeout
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import service_account_user
from tests.support.helpers import Receiver
from tests.support.world import Record, World, phase_record

Handle = Callable[[Any, Context], Outcome]
HOUR = timedelta(hours=1)


class RacingGateway(Gateway):
    """The function's real gateway; `race()` runs once, right before its first write (any method but
    GET, or only `method`) whose path contains `at`."""

    def __init__(self, inner: Gateway, race: Callable[[], None], at: str = "", method: str = "") -> None:
        super().__init__(inner.transport, 10.0)  # the same authenticated client
        self.race: Callable[[], None] | None = race
        self.at = at
        self.method = method
        self.writes: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        if method != "GET":
            if self.race is not None and self.at in path and self.method in ("", method):
                race, self.race = self.race, None
                race()
            self.writes.append((method, path))
        return super().request(method, path, body=body, query=query, content_type=content_type)


def racing(cluster: LocalCluster, function: str, race: Callable[[], None], at: str = "",
           clock: Callable[[], datetime] | None = None, method: str = "", **settings: Any) -> Context:
    """The context `function` runs with: its ServiceAccount's gateway, racing; grace 0 unless told. The gateway
    is closed after the test, as every Gateway a test makes (tests/conftest.py, `closes_its_gateways`)."""
    inner = Gateway.connect(str(cluster.kubeconfig_for(service_account_user(f"crefn-{function}"))))
    settings.setdefault("restart_grace_seconds", 0)
    options: dict[str, Any] = {"clock": clock} if clock else {}
    return Context(Settings(**settings), gateway=RacingGateway(inner, race, at, method), **options)


def answer(handle: Handle, record: Record, ctx: Context, raced: bool = True) -> tuple[int, str]:
    """The HTTP answer the server gives to what the handler did (its status and reason); `raced`:
    the race must have run (the handler came to write)."""
    try:
        outcome = handle(to_envelope(record), ctx)
    except (CrefnError, InvalidEvent) as e:
        result = answer_for(e) or 500, str(e)
    else:
        result = (202 if outcome.reply is None else 200), outcome.reason
    gateway = ctx.gateway
    assert not raced or (isinstance(gateway, RacingGateway) and gateway.race is None), "the handler wrote nothing"
    return result


def exclusive(job: dict[str, Any]) -> tuple[str, str]:
    true = [c for c in job.get("status", {}).get("conditions", []) if c["status"] == "True"
            and c["type"] in ("InProgress", "Succeeded", "Failed")]
    return (true[0]["type"], true[0]["reason"]) if true else ("", "")


def verdict(w: World, type_: str, reason: str) -> None:
    """Another writer's verdict on the Job (a whole exclusive set, as every function writes it)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"conditions": [
        {"type": t, "status": "True" if t == type_ else "False", "reason": reason if t == type_ else "NotApplicable",
         "message": f"{reason} by another writer" if t == type_ else "", "lastTransitionTime": now}
        for t in ("InProgress", "Succeeded", "Failed")]}}, status=True)


def touch(w: World) -> None:
    """Another writer changes the Job (a label): every resourceVersion read before is stale now."""
    w.gw.patch(w.jobs, w.ns, "llm", {"metadata": {"labels": {"team": "vision"}}})


def delete_job(w: World) -> None:
    w.gw.delete(w.jobs, w.ns, "llm")


def trainjob_record(w: World, attempt: int) -> dict[str, Any]:
    """The TrainJob of `attempt` as `launch` builds it, owned by the Job."""
    job = w.job()
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "labels": {
                "app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm",
                "crefn.dev/attempt": str(attempt), "crefn.dev/managed": "true"},
                "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                     "uid": job["metadata"]["uid"], "controller": True}]},
            "spec": {"runtimeRef": {"name": "torch-distributed"}}}


def replace_trainjob(w: World, attempt: int) -> Callable[[], dict[str, Any]]:
    """A race: the TrainJob under the workload's name is deleted and `attempt`'s created in its place
    (what a concurrent launch does); returns a getter of what was created."""
    created: dict[str, Any] = {}

    def race() -> None:
        w.gw.delete(TRAINJOBS, w.ns, "llm-workload")
        created.update(w.gw.create(TRAINJOBS, w.ns, trainjob_record(w, attempt)))

    race.created = lambda: created  # type: ignore[attr-defined]
    return race  # type: ignore[return-value]


def failed_record(w: World, attempt: int = 0) -> Record:
    """`workload.phase` Failed for the Job's TrainJob as it is now (its uid)."""
    record = phase_record(w.ns, "llm", "Failed", attempt=attempt)
    record["data"]["workload"]["uid"] = (w.trainjob() or {})["metadata"]["uid"]
    return record


def running_job(world: Callable[..., World], max_restarts: int = 1) -> World:
    """A Job whose attempt 0 runs (workloadStartTime set), with checkpoint evidence."""
    w = world()
    w.create_job(max_restarts=max_restarts)
    w.checkpoint_evidence()
    w.settle()
    w.trainer("run")
    w.settle()
    assert exclusive(w.job()) == ("InProgress", "WorkloadRunning") and w.job()["status"].get("workloadStartTime")
    return w


def pending_job(world: Callable[..., World]) -> World:
    """A Job whose TrainJob is suspended (`WorkloadPending`)."""
    w = world()
    w.create_job(suspend=True)
    w.settle()
    assert exclusive(w.job()) == ("InProgress", "WorkloadPending")
    return w


def resumed_job(world: Callable[..., World]) -> World:
    """A pending Job whose TrainJob has just been resumed (the event not yet delivered): its Running event
    is news to `status`, which reads the TrainJob running."""
    w = pending_job(world)
    w.trainer("resume")
    return w


def failed_job(world: Callable[..., World], max_restarts: int = 1) -> World:
    """A running Job whose TrainJob has just failed (the event not yet delivered)."""
    w = running_job(world, max_restarts)
    w.trainer("fail")
    return w


# -- launch ---------------------------------------------------------------------------------------


def test_launch_adopts_the_trainjob_another_launch_created_under_it(world: Callable[..., World],
                                                                    cluster: LocalCluster) -> None:
    """409 AlreadyExists on the create: read again, the TrainJob is this attempt's: adopted, not made twice."""
    w = world()
    w.create_job()
    record = w.job_record()
    other: dict[str, Any] = {}
    ctx = racing(cluster, "launch", lambda: other.update(w.gw.create(TRAINJOBS, w.ns, trainjob_record(w, 0))),
                 at="/trainjobs")
    status_, text = answer(launch.handle, record, ctx)
    assert status_ == 200, text
    assert (w.trainjob() or {})["metadata"]["uid"] == other["metadata"]["uid"]
    assert exclusive(w.job()) == ("InProgress", "WorkloadAdopted")


def test_launch_never_deletes_the_next_attempt_that_replaced_a_stale_one(world: Callable[..., World],
                                                                         cluster: LocalCluster) -> None:
    """The stale attempt's TrainJob is deleted with its uid: the one a concurrent launch created in its
    place in between stays, and is adopted (the create finds the name taken: read again)."""
    w = world()
    w.create_job()
    w.gw.create(TRAINJOBS, w.ns, trainjob_record(w, 0))
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"restartCount": 1}}, status=True)  # attempt 0 was restarted
    race = replace_trainjob(w, 1)
    ctx = racing(cluster, "launch", race, at="/trainjobs/llm-workload")
    status_, text = answer(launch.handle, w.job_record(), ctx)
    assert status_ == 200, text
    assert exclusive(w.job()) == ("InProgress", "WorkloadAdopted")
    survivor = w.trainjob()
    assert survivor is not None, "the TrainJob created in its place was deleted"
    assert survivor["metadata"]["uid"] == race.created()["metadata"]["uid"]  # type: ignore[attr-defined]
    assert survivor["metadata"].get("deletionTimestamp") is None


@pytest.mark.parametrize("change", ["gone", "terminal"])
def test_launch_when_the_job_changes_before_its_write(world: Callable[..., World], cluster: LocalCluster,
                                                      change: str) -> None:
    w = world()
    w.create_job()
    record = w.job_record()
    race = (lambda: delete_job(w)) if change == "gone" else (lambda: verdict(w, "Failed", "JobTimedOut"))
    ctx = racing(cluster, "launch", race, at="/jobs/llm/status")
    status_, text = answer(launch.handle, record, ctx)
    assert status_ == 202, text
    if change == "terminal":  # the TrainJob it created is recorded nowhere: deleted, not left running
        assert exclusive(w.job()) == ("Failed", "JobTimedOut") and "workloadRef" not in w.job()["status"]
        assert text == f"Job {w.ns}/llm is terminal: its TrainJob llm-workload, recorded nowhere, deleted"
        assert w.trainjob() is None


def test_launch_raced_by_a_timeout_leaves_no_trainjob(world: Callable[..., World], cluster: LocalCluster) -> None:
    """The resync tick's `job.deadline` reaches `timeout` between launch's create and its `workloadRef` write:
    the Job fails `JobTimedOut` with no workload to delete; launch's write is a 409, its re-read finds the Job
    terminal and deletes the TrainJob it created (its uid), which nothing else would ever delete."""
    w = world()
    w.create_job()
    w.gw.patch(w.jobs, w.ns, "llm", {"metadata": {"annotations": {"crefn.dev/timeout-per-job": "1m"}}})
    record = w.job_record()
    later = datetime.now(UTC) + HOUR
    timed_out: list[tuple[int, str]] = []
    created: list[str] = []

    def race() -> None:
        created.append(str(((w.trainjob() or {}).get("metadata") or {}).get("uid", "")))
        out_of_time = racing(cluster, "timeout", lambda: None, clock=lambda: later)
        timed_out.append(answer(timeout.handle, deadline_record(w.ns), out_of_time, raced=False))

    status_, text = answer(launch.handle, record, racing(cluster, "launch", race, at="/jobs/llm/status"))
    assert timed_out[0][0] == 200 and created[0] != "", timed_out
    assert (status_, text) == (202, f"Job {w.ns}/llm is terminal: its TrainJob llm-workload, recorded nowhere, "
                                    "deleted")
    assert exclusive(w.job()) == ("Failed", "JobTimedOut") and "workloadRef" not in w.job()["status"]
    assert w.trainjob() is None
    w.settle()
    w.tick()
    assert w.trainjob() is None and w.final() == ("Failed", "JobTimedOut", 0)


def test_a_tick_whose_launch_a_verdict_beats_deletes_its_trainjob(world: Callable[..., World],
                                                                  cluster: LocalCluster) -> None:
    """resync's launch of a Job meets a verdict between its create and its `workloadRef` write: 409, it reads the
    Job and its TrainJob again, finds the Job terminal and deletes that TrainJob; nothing is sent."""
    from functions.resync import read as resync

    w = world()
    w.create_job()
    sink = Receiver(default=202)
    try:
        ctx = racing(cluster, "resync", lambda: verdict(w, "Failed", "JobTimedOut"), at="/jobs/llm/status",
                     k_sink=sink.url)
        result = resync.resync_job(w.job(), {}, ctx)
        assert (result.event, result.error) == ("", "")
        assert ctx.gateway.race is None  # type: ignore[attr-defined]
        assert sink.requests == []
    finally:
        sink.close()
    assert w.trainjob() is None
    assert exclusive(w.job()) == ("Failed", "JobTimedOut") and "workloadRef" not in w.job()["status"]


@pytest.mark.parametrize("stop", ["after-the-create", "after-the-workload-ref"])
def test_the_tick_deletes_a_trainjob_a_terminal_job_records_nowhere(world: Callable[..., World],
                                                                     cluster: LocalCluster, stop: str) -> None:
    """A launch stopped between its create and its `workloadRef` write (the process killed), then a verdict:
    the Job is terminal and records no workload, and its TrainJob of this attempt would run on; the tick deletes
    it. A TrainJob the Job records is kept after the verdict (CRE keeps it)."""
    w = world()
    w.create_job()
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)))
    plan = launch.decide(launch.read(to_envelope(w.job_record()), ctx), ctx.settings, ctx.clock())
    apply(Plan(plan.effects[:1] if stop == "after-the-create" else plan.effects[:2]), ctx)
    uid = (w.trainjob() or {})["metadata"]["uid"]
    verdict(w, "Failed", "JobTimedOut")
    w.tick()
    left = w.trainjob()
    if stop == "after-the-create":
        assert left is None
    else:
        assert left is not None and left["metadata"]["uid"] == uid and not left["metadata"].get("deletionTimestamp")
        assert left["metadata"]["labels"]["crefn.dev/finished"] == "true"
    assert exclusive(w.job()) == ("Failed", "JobTimedOut")


# -- restart --------------------------------------------------------------------------------------


def test_restart_raced_by_its_own_duplicate_restarts_once(world: Callable[..., World],
                                                          cluster: LocalCluster) -> None:
    """A duplicate delivery restarts the Job between this one's read and its first write: 409, read
    again, the restart is recorded: nothing new, and never a second restart."""
    w = failed_job(world, max_restarts=2)
    record = failed_record(w)
    duplicate = racing(cluster, "restart", lambda: None)
    ctx = racing(cluster, "restart", lambda: answer(restart.handle, record, duplicate), at="/jobs/llm")
    status_, text = answer(restart.handle, record, ctx)
    assert status_ == 202 and "already recorded" in text, text
    job = w.job()
    assert job["status"]["restartCount"] == 1 and exclusive(job) == ("InProgress", "WorkloadRestarting")
    assert "workloadStartTime" not in job["status"] and "workloadRef" not in job["status"]


@pytest.mark.parametrize("change", ["gone", "terminal"])
def test_restart_when_the_job_changes_before_its_write(world: Callable[..., World], cluster: LocalCluster,
                                                       change: str) -> None:
    w = failed_job(world)
    record = failed_record(w)
    race = (lambda: delete_job(w)) if change == "gone" else (lambda: verdict(w, "Failed", "JobTimedOut"))
    ctx = racing(cluster, "restart", race, at="/jobs/llm")
    status_, text = answer(restart.handle, record, ctx)
    assert status_ == 202, text
    if change == "terminal":
        job = w.job()
        assert exclusive(job) == ("Failed", "JobTimedOut") and job["status"].get("restartCount", 0) == 0
        assert "crefn.dev/restart-not-before" not in job["metadata"].get("annotations", {})


def test_restart_never_deletes_the_next_attempt_created_in_between(world: Callable[..., World],
                                                                   cluster: LocalCluster) -> None:
    w = failed_job(world)
    record = failed_record(w)
    race = replace_trainjob(w, 1)
    ctx = racing(cluster, "restart", race, at="/trainjobs/llm-workload")
    status_, text = answer(restart.handle, record, ctx)
    assert status_ == 200, text
    survivor = w.trainjob()
    assert survivor is not None, "the TrainJob created in its place was deleted"
    assert survivor["metadata"]["uid"] == race.created()["metadata"]["uid"]  # type: ignore[attr-defined]
    assert survivor["metadata"].get("deletionTimestamp") is None


def test_a_relaunch_raced_by_a_timeout_leaves_its_trainjob_to_the_tick(world: Callable[..., World],
                                                                        cluster: LocalCluster) -> None:
    """A timeout verdict lands between the restart's relaunch create (attempt 1) and its `workloadRef` write: the
    write is a 409 and the follow-up stops (the restart stands); the TrainJob of attempt 1, recorded nowhere,
    is deleted by the next tick."""
    w = failed_job(world)
    record = failed_record(w)
    sink = Receiver(default=202)
    try:
        ctx = racing(cluster, "restart", lambda: verdict(w, "Failed", "JobTimedOut"), at="/trainjobs", method="POST",
                     k_sink=sink.url)
        status_, text = answer(restart.handle, record, ctx)
    finally:
        sink.close()
    assert status_ == 200 and "follow-up stopped" in text, text
    assert exclusive(w.job()) == ("Failed", "JobTimedOut") and "workloadRef" not in w.job()["status"]
    orphan = w.trainjob()
    assert orphan is not None and orphan["metadata"]["labels"]["crefn.dev/attempt"] == "1"
    w.tick()
    assert w.trainjob() is None and w.final() == ("Failed", "JobTimedOut", 1)


def test_a_failure_of_an_older_trainjob_of_the_same_name_is_stale(world: Callable[..., World],
                                                                  cluster: LocalCluster) -> None:
    """The TrainJob was replaced (same name, same attempt, another uid): a failure event about the old
    one does not restart the Job, even though the one there now has failed too."""
    w = failed_job(world)
    record = failed_record(w)
    record["data"]["workload"]["uid"] = "0b4c1a2e-0000-4000-8000-000000000000"  # the TrainJob before this one
    status_, text = answer(restart.handle, record, racing(cluster, "restart", lambda: None), raced=False)
    assert status_ == 202 and "stale" in text, text
    assert w.job()["status"].get("restartCount", 0) == 0 and w.trainjob() is not None


# -- status ---------------------------------------------------------------------------------------


def test_status_reads_again_after_a_409_and_writes_once(world: Callable[..., World], cluster: LocalCluster) -> None:
    w = resumed_job(world)
    record = phase_record(w.ns, "llm", "Running")
    ctx = racing(cluster, "status", lambda: touch(w), at="/jobs/llm/status")
    status_, text = answer(status.handle, record, ctx)
    assert status_ == 200, text
    job = w.job()
    assert exclusive(job) == ("InProgress", "WorkloadRunning") and job["metadata"]["labels"]["team"] == "vision"
    assert [m for m, p in ctx.gateway.writes if p.endswith("/jobs/llm/status")] == ["PATCH", "PATCH"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("change", ["gone", "terminal"])
def test_status_when_the_job_changes_before_its_write(world: Callable[..., World], cluster: LocalCluster,
                                                      change: str) -> None:
    """Terminal: the 409's re-read sees the verdict, and the terminal guard holds on it (202)."""
    w = resumed_job(world)
    race = (lambda: delete_job(w)) if change == "gone" else (lambda: verdict(w, "Failed", "WorkloadFailed"))
    ctx = racing(cluster, "status", race, at="/jobs/llm/status")
    status_, text = answer(status.handle, phase_record(w.ns, "llm", "Running"), ctx)
    assert status_ == 202, text
    if change == "terminal":
        job = w.job()
        assert exclusive(job) == ("Failed", "WorkloadFailed") and "workloadStartTime" not in job["status"]


def test_status_stamps_the_workload_start_once(world: Callable[..., World], cluster: LocalCluster) -> None:
    """A later Running event (an hour on, by the injected clock) keeps the first start time."""
    w = running_job(world)
    started = w.job()["status"]["workloadStartTime"]
    later = datetime.now(UTC) + HOUR
    ctx = racing(cluster, "status", lambda: None, clock=lambda: later)
    status_, text = answer(status.handle, phase_record(w.ns, "llm", "Running"), ctx, raced=False)
    assert status_ == 202, text
    assert w.job()["status"]["workloadStartTime"] == started


# -- timeout --------------------------------------------------------------------------------------


def deadline_record(ns: str) -> Record:
    return {"attributes": {"specversion": "1.0", "id": "d1", "source": "/crefn/resync",
                           "type": "dev.crefn.job.deadline", "subject": f"{ns}/llm", "namespace": ns,
                           "job": "llm", "partitionkey": f"{ns}/llm"},
            "data": {"job": {"name": "llm", "namespace": ns}, "attempt": 0, "elapsedSeconds": 3700.0,
                     "timeoutSeconds": 3600.0, "blocked": False}}


def bounded_job(world: Callable[..., World]) -> World:
    """A running Job with a one-minute bound: out of time an hour from now (the injected clock)."""
    w = running_job(world)
    w.gw.patch(w.jobs, w.ns, "llm", {"metadata": {"annotations": {"crefn.dev/timeout-per-job": "1m"}}})
    return w


@pytest.mark.parametrize(("change", "expected", "verdict_"), [
    ("conflict", 200, ("Failed", "JobTimedOut")),
    ("terminal", 202, ("Succeeded", "WorkloadCompleted")),
    ("gone", 202, None),
])
def test_timeout_when_the_job_changes_before_its_write(world: Callable[..., World], cluster: LocalCluster,
                                                       change: str, expected: int,
                                                       verdict_: tuple[str, str] | None) -> None:
    w = bounded_job(world)
    race = {"conflict": lambda: touch(w), "terminal": lambda: verdict(w, "Succeeded", "WorkloadCompleted"),
            "gone": lambda: delete_job(w)}[change]
    later = datetime.now(UTC) + HOUR
    ctx = racing(cluster, "timeout", race, at="/jobs/llm/status", clock=lambda: later)
    status_, text = answer(timeout.handle, deadline_record(w.ns), ctx)
    assert status_ == expected, text
    if verdict_ is not None:
        assert exclusive(w.job()) == verdict_
    trainjob = w.trainjob()
    if change == "terminal":  # nothing destructive for a Job that is no longer ours to fail
        assert trainjob is not None and trainjob["metadata"].get("deletionTimestamp") is None


# -- the restart's crash points, during a Job's second restart -----------------------------------


def second_failure(world: Callable[..., World], cluster: LocalCluster) -> tuple[World, Record, Plan]:
    """A Job restarted once (its grace over) whose attempt 1 has failed: the event, and restart's plan."""
    w = failed_job(world, max_restarts=2)
    w.settle()
    assert w.job()["status"]["restartCount"] == 1 and (w.trainjob() or {})["metadata"]["labels"][
        "crefn.dev/attempt"] == "1"
    assert "crefn.dev/restart-not-before" not in w.job()["metadata"].get("annotations", {})  # grace 0: none
    w.trainer("run")
    w.settle()
    w.trainer("fail")
    record = failed_record(w, attempt=1)
    ctx = racing(cluster, "restart", lambda: None, restart_grace_seconds=600)
    plan = restart.decide(restart.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    return w, record, plan


@pytest.mark.parametrize("steps", [1, 2, 3], ids=["annotated", "committed", "deleted"])
def test_a_crash_during_the_second_restart_never_skips_its_grace(world: Callable[..., World], cluster: LocalCluster,
                                                                 functions: Callable[..., dict[str, str]],
                                                                 steps: int) -> None:
    """The plan applied up to a step (the process dies), then the event redelivered: the Job is restarted
    once more, and launch waits for the second restart's grace, never the first's (long over)."""
    w, record, plan = second_failure(world, cluster)
    ctx = racing(cluster, "restart", lambda: None, restart_grace_seconds=600)
    apply(Plan(plan.effects[:steps]), ctx)
    status_, text = answer(restart.handle, record, ctx)
    assert status_ in (200, 202), text
    job = w.job()
    assert job["status"]["restartCount"] == 2
    not_before = datetime.fromisoformat(job["metadata"]["annotations"]["crefn.dev/restart-not-before"]
                                        .replace("Z", "+00:00"))
    assert not_before > datetime.now(UTC) + timedelta(minutes=5)
    launched = send(functions()["launch"], w.job_record())
    assert launched.status == 503 and "restart grace not over" in launched.text, launched.text


def test_a_commit_without_its_annotation_gets_a_fresh_grace_on_redelivery(world: Callable[..., World],
                                                                          cluster: LocalCluster,
                                                                          functions: Callable[..., dict[str, str]]
                                                                          ) -> None:
    """A second restart committed by an earlier release (commit first, annotation after) that died in
    between: the annotation left is the first restart's, long over. The redelivered event writes the
    second restart's grace; launch waits for it."""
    w, record, plan = second_failure(world, cluster)
    commit = plan.effects[1]
    ctx = racing(cluster, "restart", lambda: None, restart_grace_seconds=600)
    apply(Plan((commit,)), ctx)
    assert w.job()["status"]["restartCount"] == 2
    status_, text = answer(restart.handle, record, ctx)
    assert status_ == 202 and "already recorded" in text, text
    not_before = datetime.fromisoformat(w.job()["metadata"]["annotations"]["crefn.dev/restart-not-before"]
                                        .replace("Z", "+00:00"))
    assert not_before > datetime.now(UTC) + timedelta(minutes=5)
    launched = send(functions()["launch"], w.job_record())
    assert launched.status == 503 and "restart grace not over" in launched.text, launched.text


def test_a_redelivered_restart_writes_the_missing_annotation(world: Callable[..., World],
                                                             cluster: LocalCluster) -> None:
    """The first restart committed without its annotation (an earlier release's order), then redelivered."""
    w = failed_job(world)
    record = failed_record(w)
    ctx = racing(cluster, "restart", lambda: None, restart_grace_seconds=600)
    plan = restart.decide(restart.read(to_envelope(record), ctx), ctx.settings, ctx.clock())
    apply(Plan((plan.effects[1],)), ctx)  # the commit alone
    assert "crefn.dev/restart-not-before" not in w.job()["metadata"].get("annotations", {})
    status_, text = answer(restart.handle, record, ctx)
    assert status_ == 202, text
    assert "crefn.dev/restart-not-before" in w.job()["metadata"]["annotations"]


def test_a_tick_adopts_the_trainjob_a_launch_created_under_it(world: Callable[..., World],
                                                              cluster: LocalCluster) -> None:
    """resync's launch of a Job meets 409 AlreadyExists on its create: it reads the Job and its TrainJob
    again and adopts that TrainJob, as launch does (one TrainJob, the created event sent once)."""
    from functions.resync import read as resync

    w = world()
    w.create_job()
    other: dict[str, Any] = {}
    sink = Receiver(default=202)
    try:
        ctx = racing(cluster, "resync", lambda: other.update(w.gw.create(TRAINJOBS, w.ns, trainjob_record(w, 0))),
                     at="/trainjobs", k_sink=sink.url)
        result = resync.resync_job(w.job(), {}, ctx)
        assert (result.event, result.error) == ("dev.crefn.workload.created", "")
        assert ctx.gateway.race is None  # type: ignore[attr-defined]
        assert (w.trainjob() or {})["metadata"]["uid"] == other["metadata"]["uid"]
        assert exclusive(w.job()) == ("InProgress", "WorkloadAdopted")
        assert [body["adopted"] for body in sink.bodies] == [True]
    finally:
        sink.close()
