"""`functions.launch.decide`, pure (SPEC §5): the launch decision as a truth table, the plan as plain
data, the TrainJob body (attempt labels, owner, replicated Jobs labelled), refused creates, adoption and
foreign-holder texts, reserved workloadMetadata labels, observe mode and what is read for which case."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from events.envelope import Envelope
from functions.domain.jobs import JobState, parse_job
from functions.domain.kubeevents import RefusalWarning
from functions.domain.launching import LaunchObserved, can_only_fail, creates, decide_launch, orphaned, why_not_launch
from functions.domain.pods import Capture
from functions.launch.decide import Observed, decide
from functions.runtime.apply import reply_for
from functions.runtime.effects import Create, Delete, KubeEvent, Label, Wait, WriteStatus
from functions.runtime.plan import Plan
from functions.runtime.resources import TRAINJOBS, cre_jobs
from functions.runtime.settings import Settings
from tests.functions.launch.test_read import ADOPTED, FOREIGN, trainjob
from tests.support.helpers import NOW, cond, job

LATER = (NOW + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


PAST = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("state", "existing", "action"), [
    (job(), None, "create"),
    (job(), trainjob(), "adopt"),
    (job(restart_count=1), trainjob(None), "adopt"),
    (job(restart_count=1), trainjob("0"), "replace"),
    (job(), trainjob(terminating=True), "wait"),
    (job(), trainjob(None, terminating=True), "wait"),
    (job(), trainjob(owner_uid="someone-else"), "fail"),
    (job(), trainjob(None, owner_uid="someone-else"), "fail"),
    (job(train_job=False), None, "fail"),
    (job(annotations={"crefn.dev/restart-not-before": LATER}), None, "wait"),
    (job(annotations={"crefn.dev/restart-not-before": PAST}), None, "create"),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, "wait"),
], ids=["create", "adopt", "adopt-cres", "stale-attempt", "terminating", "cres-terminating", "collision",
        "cres-of-another", "no-trainjob", "grace", "grace-over", "restart-annotation-pending"])
def test_launch_decision(state: JobState, existing: dict[str, Any] | None, action: str) -> None:
    plan = decide_launch(LaunchObserved(state, existing), Settings(), NOW, "launch", None)
    assert launch_action(plan) == action


def test_cres_own_trainjob_is_labelled_as_the_current_attempt_locked_on_its_version() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=1), trainjob(None)), Settings(), NOW, "launch", None)
    labelled = [e for e in plan.effects if isinstance(e, Label)]
    assert [(e.res, e.namespace, e.name, dict(e.labels), e.resource_version) for e in labelled] == [
        (TRAINJOBS, "ns", "llm-workload", {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "1",
                                           "crefn.dev/managed": "true"}, "7")]
    assert type(plan.effects[0]) is Label and not any(isinstance(e, Delete | Create) for e in plan.effects)
    assert plan.reason == ADOPTED
    # one the functions made (it carries its attempt) is adopted as it is
    ours = decide_launch(LaunchObserved(job(), trainjob()), Settings(), NOW, "launch", None)
    assert not any(isinstance(e, Label) for e in ours.effects) and ours.reason == ADOPTED


def test_an_earlier_attempt_is_deleted_by_its_uid() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=1), trainjob("0")), Settings(), NOW, "launch", None)
    deletes = [e for e in plan.effects if isinstance(e, Delete)]
    assert [(d.name, d.uid) for d in deletes] == [("llm-workload", "tj-uid")]


def effects_of(plan: Plan) -> list[tuple[Any, ...]]:
    """A plan's effects as an operator sees them applied: what is created or deleted where, the Job's
    True condition and fields written, the Events recorded, and why it waits."""
    seen: list[tuple[Any, ...]] = []
    for e in plan.effects:
        if isinstance(e, Create):
            seen.append(("create", e.res, e.namespace, e.body["metadata"]["name"]))
        elif isinstance(e, Delete):
            seen.append(("delete", e.res, e.namespace, e.name, e.uid))
        elif isinstance(e, WriteStatus):
            (true,) = [(c["type"], c["reason"], c["message"]) for c in e.status["conditions"] if c["status"] == "True"]
            fields = {k: v["reason"] if k == "failureLog" else v for k, v in e.status.items() if k != "conditions"}
            seen.append(("write", e.res, e.namespace, e.name, true, fields))
        elif isinstance(e, KubeEvent):
            seen.append(("event", e.body["reason"], e.body["type"], e.body["reportingInstance"], e.body["note"]))
        else:
            assert isinstance(e, Wait)
            seen.append(("wait", e.reason))
    return seen


JOBS_RES = cre_jobs("nvcre.nvidia.com")


CREATED = "Workload TrainJob/llm-workload created and is starting"


NO_TYPE = "Unsupported workload type: no workload type specified in WorkloadSpec"


REF = {"workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                       "namespace": "ns"}}


LOG = {"failureLog": "PodNotFound"}


RESERVED_LABEL = job(spec={"workloadMetadata": {"labels": {"nvcre.nvidia.com/team": "ml"}}})
NOT_BUILT = ('Failed to build workload: spec.workloadMetadata.labels["nvcre.nvidia.com/team"]: label key is reserved '
             'for the controller: "app.kubernetes.io/managed-by" and any key under "nvcre.nvidia.com/" identify '
             'workload ownership')


CREATE_EFFECTS = [("create", TRAINJOBS, "ns", "llm-workload"),
                  ("write", JOBS_RES, "ns", "llm", ("InProgress", "WorkloadCreated", CREATED), REF),
                  ("event", "WorkloadCreated", "Normal", "crefn-launch", CREATED)]


@pytest.mark.parametrize(("state", "existing", "effects"), [
    (job(), None, CREATE_EFFECTS),
    (job(restart_count=1), trainjob("0"), [("delete", TRAINJOBS, "ns", "llm-workload", "tj-uid"), *CREATE_EFFECTS]),
    (job(), trainjob(), [
        ("write", JOBS_RES, "ns", "llm", ("InProgress", "WorkloadAdopted", ADOPTED), REF),
        ("event", "WorkloadAdopted", "Normal", "crefn-launch", ADOPTED)]),
    (job(), trainjob(owner_uid="someone-else"), [
        ("write", JOBS_RES, "ns", "llm", ("Failed", "WorkloadCreationError", FOREIGN), LOG),
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", FOREIGN)]),
    (job(train_job=False), None, [
        ("write", JOBS_RES, "ns", "llm", ("Failed", "WorkloadCreationError", NO_TYPE), LOG),
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", NO_TYPE)]),
    (RESERVED_LABEL, None, [
        ("write", JOBS_RES, "ns", "llm", ("Failed", "WorkloadCreationError", NOT_BUILT), LOG),
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", NOT_BUILT)]),
    (job(), trainjob(terminating=True), [("wait", "TrainJob llm-workload is still terminating")]),
    (job(annotations={"crefn.dev/restart-not-before": LATER}), None, [
        ("wait", "restart grace not over: next TrainJob not before 2026-11-30T12:00:10+00:00")]),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:00Z"}), None, CREATE_EFFECTS),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, [
        ("wait", "restart recorded, its grace period not yet written")]),
], ids=["create", "stale-attempt", "adopt", "collision", "no-trainjob", "reserved-label", "terminating", "grace",
        "grace-ends-now", "restart-annotation-pending"])
def test_launch_effects(state: JobState, existing: dict[str, Any] | None, effects: list[tuple[Any, ...]]) -> None:
    """What each launch applies, in order: the status write records `workloadRef` with
    `InProgress`/`WorkloadCreated` or `WorkloadAdopted`, or fails the Job with its failure log; the
    Event of the flip comes from `crefn-launch`; a wait says what it waits for (the 503's reason)."""
    observed = Observed(CAUSE, state.where, LaunchObserved(state, existing, capture=Capture((), None)))
    assert effects_of(decide(observed, Settings(), NOW)) == effects


@pytest.mark.parametrize(("state", "existing", "seconds"), [
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:10Z"}), None, 10),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:09.200Z"}), None, 10),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:00:00.300Z"}), None, 1),
    (job(annotations={"crefn.dev/restart-not-before": "2026-11-30T12:05:00Z"}), None, 300),
    (job(), trainjob(terminating=True), None),
    (job(conditions=[cond("InProgress", "True", "WorkloadRestarting")], restart_count=1), None, None),
], ids=["whole-seconds", "rounded-up", "under-a-second", "minutes", "terminating", "restart-annotation-pending"])
def test_a_wait_knows_its_seconds_only_when_it_knows_its_end(state: JobState, existing: dict[str, Any] | None,
                                                              seconds: int | None) -> None:
    """The restart grace ends at `crefn.dev/restart-not-before`: the wait's `retry_after` (the 503's
    `Retry-After`) is the whole seconds left, rounded up. A TrainJob still terminating, or a grace not
    yet written, has no known end: none."""
    observed = LaunchObserved(state, existing, capture=Capture((), None))
    (wait,) = decide_launch(observed, Settings(), NOW, "launch", None).effects
    assert isinstance(wait, Wait) and wait.retry_after == seconds


@pytest.mark.parametrize(("state", "reason"), [
    (job(workload_ref=True), "Job ns/llm already has its workload"),
    (job(conditions=[cond("Succeeded", "True", "WorkloadCompleted")]), "Job ns/llm is terminal"),
    (parse_job({**job().raw, "metadata": {**job().raw["metadata"], "deletionTimestamp": "2026-11-30T11:59:00Z",
                                          "finalizers": ["example.com/keep"]}}, "nvcre.nvidia.com"),
     "Job ns/llm is being deleted"),
], ids=["has-workload", "terminal", "being-deleted"])
def test_a_launch_that_is_not_needed_says_why(state: JobState, reason: str) -> None:
    assert why_not_launch(state, Settings()) == reason


TIMED_OUT = [cond("Failed", "True", "JobTimedOut")]


def unmanaged(state: JobState) -> JobState:
    """The Job without the label `crefn.dev/managed`."""
    return parse_job({**state.raw, "metadata": {**state.raw["metadata"], "labels": {}}}, "nvcre.nvidia.com")


@pytest.mark.parametrize(("state", "found", "orphan"), [
    (job(conditions=TIMED_OUT), trainjob(), True),
    (job(conditions=TIMED_OUT, restart_count=2), trainjob("2"), True),
    (job(conditions=TIMED_OUT, workload_ref=True), trainjob(), False),
    (job(), trainjob(), False),
    (job(conditions=TIMED_OUT, restart_count=1), trainjob("0"), False),
    (job(conditions=TIMED_OUT), trainjob(owner_uid="someone-else"), False),
    (job(conditions=TIMED_OUT), trainjob(terminating=True), False),
    (unmanaged(job(conditions=TIMED_OUT)), trainjob(), False),
    (job(conditions=TIMED_OUT), None, False),
], ids=["terminal-unrecorded", "later-attempt", "recorded-kept", "not-terminal", "earlier-attempt", "foreign",
        "terminating", "unmanaged", "none"])
def test_an_orphan_is_the_current_attempt_a_terminal_job_records_nowhere(
        state: JobState, found: dict[str, Any] | None, orphan: bool) -> None:
    assert orphaned(state, found, Settings()) is orphan


def test_the_workload_created_event_tells_a_creation_from_an_adoption() -> None:
    created = decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", None)
    adopted = decide_launch(LaunchObserved(job(), trainjob()), Settings(), NOW, "launch", None)
    read = trainjob()
    read["metadata"]["resourceVersion"] = "42"
    for reply, was_adopted in ((reply_for(created, read), False), (adopted.reply, True)):
        assert reply is not None
        assert (reply.type, reply.source, reply.subject) == ("dev.crefn.workload.created", "/crefn/launch", "ns/llm")
        assert reply.extensions == {"namespace": "ns", "job": "llm", "partitionkey": "ns/llm"}
        data = reply.data.model_dump(by_alias=True)
        assert (data["adopted"], data["attempt"], data["job"]) == (was_adopted, 0, {"name": "llm", "namespace": "ns"})
        assert data["workload"] == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                    "name": "llm-workload", "namespace": "ns", "uid": "tj-uid",
                                    "resourceVersion": "42" if not was_adopted else "7", "attempt": 0}


def test_a_refused_create_is_a_warning_and_a_retry() -> None:
    """A create the API refuses records a Warning Event named by the error and waits (retried), so the
    Job is never failed for it."""
    plan = decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    assert create.refused is not None
    refused = "Failed to create TrainJob/llm-workload: quota exceeded"
    assert effects_of(Plan(create.refused.follow("quota exceeded"))) == [
        ("event", "WorkloadCreationError", "Warning", "crefn-launch", refused), ("wait", f"{refused} (retried)")]


@pytest.mark.parametrize(("state", "existing", "fails"), [
    (job(train_job=False), None, True),
    (job(), trainjob(owner_uid="someone-else"), True),
    (job(), trainjob(owner_uid="someone-else", terminating=True), False),
    (job(), None, False),
    (job(), trainjob(), False),
    (job(restart_count=1), trainjob("0"), False),
], ids=["no-trainjob", "foreign", "foreign-terminating", "name-free", "this-attempt", "earlier-attempt"])
def test_the_pods_are_read_only_for_a_launch_that_can_only_fail(state: JobState, existing: dict[str, Any] | None,
                                                                fails: bool) -> None:
    assert can_only_fail(LaunchObserved(state, existing)) is fails


@pytest.mark.parametrize(("state", "existing", "creates_one"), [
    (job(), None, True),
    (job(restart_count=1), trainjob("0"), True),
    (job(), trainjob(), False),
    (job(restart_count=1), trainjob("0", terminating=True), False),
    (job(), trainjob(owner_uid="someone-else"), False),
], ids=["name-free", "earlier-attempt", "this-attempt", "earlier-attempt-terminating", "foreign"])
def test_the_runtime_is_read_only_for_a_launch_that_creates(state: JobState, existing: dict[str, Any] | None,
                                                             creates_one: bool) -> None:
    assert creates(LaunchObserved(state, existing)) is creates_one


CAUSE = Envelope(id="c1", type="dev.crefn.job.check", source="/crefn/resync",
                 traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="vendor=1")


@pytest.mark.parametrize(("state", "existing"), [
    (job(), None),
    (job(), trainjob()),
    (job(restart_count=1), trainjob("0")),
    (job(), trainjob(owner_uid="someone-else")),
    (job(train_job=False), None),
    (RESERVED_LABEL, None),
], ids=["create", "adopt", "stale-attempt", "collision", "no-trainjob", "reserved-label"])
def test_the_reply_carries_the_trace_context_of_its_cause(state: JobState, existing: dict[str, Any] | None) -> None:
    """SPEC §4.2: `traceparent`/`tracestate` are copied from the input event, whether the reply is
    `workload.created` (built from the created object) or the failure's `job.condition.changed`."""
    plan = decide_launch(LaunchObserved(state, existing), Settings(), NOW, "launch", CAUSE)
    reply = reply_for(plan, trainjob())
    assert reply is not None
    assert (reply.traceparent, reply.tracestate) == (CAUSE.traceparent, "vendor=1")


@pytest.mark.parametrize(("state", "existing", "would"), [
    (job(), None, "create, writestatus, kubeevent"),
    (job(), trainjob(), "writestatus, kubeevent"),
    (job(restart_count=1), trainjob("0"), "delete, create, writestatus, kubeevent"),
    (job(), trainjob(terminating=True), "wait"),
    (job(train_job=False), None, "writestatus, kubeevent"),
], ids=["create", "adopt", "stale-attempt", "terminating", "no-trainjob"])
def test_observe_mode_does_nothing_and_says_what_it_would_do(state: JobState, existing: dict[str, Any] | None,
                                                            would: str) -> None:
    """`CREFN_MODE=observe` (SPEC §6.1): no write and no event; the 202 answer names the effects that
    manage mode would apply, in order."""
    plan = decide_launch(LaunchObserved(state, existing), Settings(mode="observe"), NOW, "launch", CAUSE)
    assert (plan.effects, plan.reply, plan.created_ref) == ((), None, "")
    assert plan.reason == f"observe mode: would {would}"


def test_a_plan_is_plain_data_equal_when_decided_alike_and_shown_whole() -> None:
    """A plan is frozen data, none of it a function: decided twice from the same reads it compares equal
    (a different clock does not), and its repr names every part, the refusal's and the reply's included."""
    first, again = (decide_launch(LaunchObserved(job(), None), Settings(), NOW, "launch", CAUSE) for _ in range(2))
    assert first == again
    assert first != decide_launch(LaunchObserved(job(), None), Settings(), NOW + timedelta(seconds=1), "launch", CAUSE)
    (create,) = [e for e in first.effects if isinstance(e, Create)]
    assert create.refused == RefusalWarning(job(), "WorkloadCreationError", "Failed to create TrainJob/llm-workload: ",
                                            NOW, "launch", retried=True)
    shown = repr(first)
    assert "RefusalWarning(state=JobState(" in shown and "message='Failed to create TrainJob/llm-workload: '" in shown
    assert "'dev.crefn.workload.created'" in shown and "created_ref='workload'" in shown
    assert "partial" not in shown and "<function" not in shown and "<bound" not in shown


def launch_action(plan: Plan) -> str:
    """The launch plan in the words of SPEC §5."""
    kinds = [type(e) for e in plan.effects]
    if Delete in kinds and Create in kinds:
        assert kinds.index(Delete) < kinds.index(Create), "the old attempt goes before the next is created"
        return "replace"
    if Create in kinds:
        return "create"
    if Wait in kinds:
        return "wait"
    if plan.reply is not None and plan.reply.type == "dev.crefn.workload.created":
        return "adopt"
    if plan.reply is not None and plan.reply.extensions.get("jobcondition") == "Failed":
        return "fail"
    return "nothing"


"""CRE's `pkg/workload/testdata/build-object/reserved-nvcre-prefix-rejected/expected.json`, verbatim."""


def test_created_trainjob_carries_attempt_labels_and_owner() -> None:
    plan = decide_launch(LaunchObserved(job(restart_count=2), None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    body = create.body
    assert (body["apiVersion"], body["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    assert body["metadata"] == {
        "name": "llm-workload", "namespace": "ns",
        "labels": {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm",
                   "crefn.dev/attempt": "2", "crefn.dev/managed": "true"},
        "annotations": {"crefn.dev/first-phase": "creator"},
        "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                             "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}]}
    assert body["spec"]["runtimeRef"] == {"name": "t"}
    (patch,) = body["spec"]["runtimePatches"]
    assert patch["manager"] == "crefn.dev/controller"
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node"
    assert node["template"]["spec"]["template"]["metadata"]["labels"] == {
        "nvcre.nvidia.com/job": "llm", "crefn.dev/managed": "true", "crefn.dev/attempt": "2"}


def test_the_training_runtimes_replicated_jobs_are_labelled_when_it_was_read() -> None:
    """The replicatedJobs of the TrainJob's training runtime, as read, win over the guess from its name."""
    observed = LaunchObserved(job(), None, runtime_jobs=("launcher", "trainer", "launcher"))
    plan = decide_launch(observed, Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    (patch,) = create.body["spec"]["runtimePatches"]
    assert [r["name"] for r in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]] == [
        "launcher", "trainer"]


# -- the first phase of a TrainJob just created ---------------------------------------------------

CREATED_MESSAGE = "Workload TrainJob/llm-workload created and is starting"  # CRE's, verbatim
RUNNING_MESSAGE = "Workload TrainJob/llm-workload is running"  # CRE's, verbatim


def created_trainjob(suspend: bool = False) -> dict[str, Any]:
    """The TrainJob as the API server returns it from the create: no status yet."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "namespace": "ns", "uid": "new-uid", "resourceVersion": "77",
                         "labels": {"crefn.dev/attempt": "1"}},
            "spec": {"runtimeRef": {"name": "t"}, "suspend": suspend,
                     "managedBy": "trainer.kubeflow.org/trainjob-controller"}}


def written_job() -> dict[str, Any]:
    """The Job as the launch's status write left it: workloadRef and InProgress/WorkloadCreated."""
    raw = job(conditions=[cond("InProgress", "True", "WorkloadCreated", CREATED_MESSAGE)], restart_count=1,
              workload_ref=True).raw
    return {**raw, "metadata": {**raw["metadata"], "resourceVersion": "42"}}


def written(raw: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {("jobs", "ns", "llm"): raw}


def first_phase() -> Any:
    plan = decide_launch(LaunchObserved(job(restart_count=1), None), Settings(), NOW, "launch", None)
    assert plan.then is not None
    return plan.then


def test_a_creation_is_followed_by_its_first_phase_decided_on_what_the_writes_returned() -> None:
    plan = first_phase().follow(created_trainjob(), written(written_job()))
    (write,) = plan.effects
    assert isinstance(write, WriteStatus) and plan.reply is not None
    assert (write.res, write.namespace, write.name, write.resource_version) == (cre_jobs("nvcre.nvidia.com"), "ns",
                                                                                 "llm", "42")
    (running,) = [c for c in write.status["conditions"] if c["status"] == "True"]
    assert (running["type"], running["reason"], running["message"]) == ("InProgress", "WorkloadRunning",
                                                                          RUNNING_MESSAGE)
    assert write.status["workloadStartTime"] == "2026-11-30T12:00:00Z"
    data = plan.reply.data
    assert plan.reply.type == "dev.crefn.job.condition.changed" and plan.reply.source.endswith("/launch")
    assert (data.previous.reason, data.new.reason) == ("WorkloadCreated", "WorkloadRunning")
    assert (data.workload.name, data.workload.uid, data.workload.attempt) == ("llm-workload", "new-uid", 1)


@pytest.mark.parametrize(("created", "job_written"), [
    (created_trainjob(suspend=True), written_job()),
    (created_trainjob(), None),
    ({**created_trainjob(), "status": {"conditions": [{"type": "Failed", "status": "True"}]}}, written_job()),
], ids=["returned-suspended", "status-write-not-locked", "not-running"])
def test_no_first_phase_but_running_and_none_without_the_written_job(created: dict[str, Any],
                                                                       job_written: dict[str, Any] | None) -> None:
    plan = first_phase().follow(created, written(job_written) if job_written else {})
    assert (plan.effects, plan.reply) == ((), None)


def test_a_job_with_stall_detection_leaves_the_first_phase_to_status() -> None:
    """Its running path reads the GoodputMeasurement, which the creator does not: no follow-up, no annotation."""
    state = job(restart_count=1, spec={"stallMultiplier": 3})
    plan = decide_launch(LaunchObserved(state, None), Settings(), NOW, "launch", None)
    (create,) = [e for e in plan.effects if isinstance(e, Create)]
    assert plan.then is None and "annotations" not in create.body["metadata"]


def test_every_creation_is_followed_and_nothing_else() -> None:
    replaced = decide_launch(LaunchObserved(job(restart_count=1), trainjob("0")), Settings(), NOW, "launch", None)
    adopted = decide_launch(LaunchObserved(job(), trainjob()), Settings(), NOW, "launch", None)
    assert replaced.then == first_phase()
    assert adopted.then is None


