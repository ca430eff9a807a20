"""`functions.nodehealth.decide`, pure (CRE's node health check): the merge into failedNodes, the message
as Go prints a slice, CRE's Node defaults, a Node's Jobs from its pods, and the decision as a truth table."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from events.emitted import FailedNode, JobRef
from events.envelope import Envelope
from functions.domain.cel import CelOutcome, outcomes
from functions.domain.jobs import Gone, parse_job
from functions.domain.redelivery import Announced
from functions.nodehealth.decide import (
    Evaluated,
    Evaluation,
    Observed,
    decide,
    deferring,
    evaluate,
    hardware_message,
    jobs_on_node,
    merge_failed_nodes,
    pod_nodes,
)
from functions.runtime.effects import Delete, KubeEvent, WriteStatus
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings
from tests.functions.nodehealth.test_read import CORDONED, DETAIL, HW
from tests.support.helpers import cond, job, pod

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def entry(name: str, reason: str = HW, message: str = DETAIL) -> FailedNode:
    return FailedNode(name=name, reason=reason, message=message)


@pytest.mark.parametrize(("existing", "unhealthy", "merged", "new"), [
    ([], ["n2", "n1"], [entry("n1"), entry("n2")], ("n1", "n2")),
    ([], ["n1", "n1", ""], [entry("n1")], ("n1",)),
    ([entry("n1", message="earlier words")], ["n1"], [entry("n1", message="earlier words")], ()),
    ([entry("n1", "WorkloadFailed", "boom")], ["n1"], [entry("n1"), entry("n1", "WorkloadFailed", "boom")], ("n1",)),
    ([entry("n3"), entry("n1", "ThresholdViolation", "slow")], ["n2"],
     [entry("n1", "ThresholdViolation", "slow"), entry("n2"), entry("n3")], ("n2",)),
    ([entry("n1"), entry("n9")], [], [entry("n1"), entry("n9")], ()),
    ([entry("n1"), entry("n1", message="duplicate"), entry("")], ["n1"], [entry("n1")], ()),
], ids=["new-sorted", "deduplicated", "existing-entry-wins", "new-reason-for-a-listed-node-is-news",
        "sorted-by-name-then-reason", "recovered-nodes-are-never-removed", "existing-duplicates-and-nameless-dropped"])
def test_merge_into_failed_nodes(existing: list[FailedNode], unhealthy: list[str], merged: list[FailedNode],
                                 new: tuple[str, ...]) -> None:
    merge = merge_failed_nodes(existing, unhealthy)
    assert list(merge.failed_nodes) == merged
    assert merge.new == new


@pytest.mark.parametrize(("entries", "message"), [
    ([entry("gpu-2"), entry("gpu-1")], "Hardware failure detected on node(s): [gpu-1 gpu-2]"),
    ([entry("gpu-1"), entry("gpu-1", "WorkloadFailed"), entry("gpu-0", "ThresholdViolation")],
     "Hardware failure detected on node(s): [gpu-0 gpu-1]"),
    ([entry("a")], "Hardware failure detected on node(s): [a]"),
    ([], "Hardware failure detected on node(s): []"),
], ids=["sorted", "distinct-names-of-every-reason", "one", "none-as-go-prints-a-nil-slice"])
def test_the_message_names_the_merged_entries_as_go_prints_a_slice(entries: list[FailedNode], message: str) -> None:
    assert hardware_message(entries) == message


BARE = {"metadata": {"name": "bare"}}


def evaluated(expression: str, nodes: dict[str, dict[str, Any]]) -> Evaluation:
    """The expression on the Nodes, evaluated in this process (`functions.runtime.celbudget` runs the same code)."""
    names = sorted(nodes)
    checked = list(outcomes("node", expression, ()))
    if checked:
        return Evaluation(rejected=checked[0])
    return evaluate(names, list(outcomes("node", expression, [nodes[n] for n in names])))


@pytest.mark.parametrize(("expression", "node", "unhealthy", "skipped"), [
    (CORDONED, BARE, (), ()),
    ("size(node.spec.taints) > 0 || size(node.status.conditions) > 0", BARE, (), ()),
    ("'gpud.nvidia.com/unhealthy' in node.metadata.labels", BARE, (), ()),
    (CORDONED, {"metadata": {"name": "bare"}, "spec": {"unschedulable": True}}, ("bare",), ()),
    ("node.metadata.labels['gpu'] == 'bad'", BARE, (), ("bare",)),
    ("node.metadata.labels[?'gpu'].orValue('ok') == 'bad'", {"metadata": {"labels": {"gpu": "bad"}}}, ("bare",), ()),
], ids=["unschedulable-defaults-to-false", "lists-default-to-empty", "labels-default-to-empty", "cordoned",
        "a-missing-key-skips-the-node", "optional-types"])
def test_evaluation_fills_cres_node_defaults(expression: str, node: dict[str, Any], unhealthy: tuple[str, ...],
                                            skipped: tuple[str, ...]) -> None:
    result = evaluated(expression, {"bare": node})
    assert result.unhealthy == unhealthy
    assert tuple(name for name, _ in result.skipped) == skipped


def test_a_skipped_node_says_why() -> None:
    """The reply names each node the expression failed on with the CEL library's reason."""
    result = evaluated("node.metadata.labels['gpu'] == 'bad'", {"bare": BARE, "gpu-1": {"metadata": {"labels": {}}}})
    assert result.skipped == (("bare", 'Key not found in map : "gpu"'), ("gpu-1", 'Key not found in map : "gpu"'))


def test_nodes_are_those_of_live_placed_pods() -> None:
    pods = [pod("a", node="n2", phase="Running"), pod("b", node="n1", phase="Pending"),
            pod("c", node="n1", phase="Running"), pod("d", node="n3", phase="Succeeded"),
            pod("e", node="n4", phase="Failed"), pod("f", node="", phase="Pending")]
    assert pod_nodes(pods) == ("n1", "n2")


def test_a_nodes_jobs_come_from_its_pods_labels() -> None:
    def raw(ns: str, job_name: str | None, node: str = "n1") -> dict[str, Any]:
        labels = {"nvcre.nvidia.com/job": job_name} if job_name else {}
        return {"metadata": {"namespace": ns, "labels": labels}, "spec": {"nodeName": node}}
    pods = [raw("b", "x"), raw("a", "y"), raw("a", "y"), raw("a", None), raw("a", "z", node="n2")]
    assert jobs_on_node(pods, "n1", "nvcre.nvidia.com") == (JobRef(namespace="a", name="y"),
                                                            JobRef(namespace="b", name="x"))
    assert jobs_on_node(pods, "n1", "cre.nvidia.com") == ()
    assert jobs_on_node([{"metadata": {"labels": {"nvcre.nvidia.com/job": "w"}}, "spec": {"nodeName": "n1"}}],
                        "n1", "nvcre.nvidia.com") == (JobRef(namespace="", name="w"),)  # no namespace: ""


CAUSE = Envelope(id="c1", type="dev.crefn.job.check", source="/crefn/resync")


REF = JobRef(name="llm", namespace="ns")


RUNNING = [cond("InProgress", "True", "WorkloadRunning"), cond("Succeeded", "False", "NotApplicable"),
           cond("Failed", "False", "NotApplicable")]


TRAINJOB = {"metadata": {"name": "llm-workload", "namespace": "ns", "uid": "tj-uid",
                         "labels": {"crefn.dev/attempt": "0"},
                         "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm",
                                              "uid": "job-uid", "controller": True}]}}


def observed(expression: str | None = CORDONED, nodes: dict[str, dict[str, Any]] | None = None,
             failed_nodes: list[dict[str, str]] | None = None, conditions: list[dict[str, Any]] | None = None,
             trainjob: dict[str, Any] | None = None, unread: tuple[tuple[str, str], ...] = (),
             managed: bool = True, gone: bool = False) -> Observed:
    spec = {"nodeHealthMonitor": {"cel": {"expression": expression}}} if expression is not None else {}
    state = job(RUNNING if conditions is None else conditions, spec=spec, workload_ref=True,
                status={"failedNodes": failed_nodes or []})
    if not managed:
        state = parse_job({**state.raw, "metadata": {**state.raw["metadata"], "labels": {}}}, "nvcre.nvidia.com")
    return Gone(REF) if gone else Evaluated(CAUSE, REF, state, evaluated(expression or "", nodes or {}),
                                                  unread, trainjob)


def cordoned(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"unschedulable": True}}


def healthy(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


REPORT, RESTART = Settings(), Settings(hardware_failure_action="restart")


TERMINAL = [cond("InProgress", "False", "NotApplicable"), cond("Succeeded", "True", "WorkloadCompleted"),
            cond("Failed", "False", "NotApplicable")]


@pytest.mark.parametrize(("case", "settings", "effects", "replies"), [
    (observed(gone=True), REPORT, [], False),
    (observed(managed=False, nodes={"n1": cordoned("n1")}), REPORT, [], False),
    (observed(conditions=TERMINAL, nodes={"n1": cordoned("n1")}), REPORT, [], False),
    (observed(expression=None, nodes={"n1": cordoned("n1")}), REPORT, [], False),
    (observed(expression="node.spec.unschedulable", nodes={"n1": cordoned("n1")}), REPORT, [], False),
    (observed(expression="node.spec.(", nodes={"n1": cordoned("n1")}), REPORT, [], False),
    (observed(nodes={}), REPORT, [], False),
    (observed(nodes={"n1": healthy("n1")}), REPORT, [], False),
    (observed(nodes={"n1": cordoned("n1")}), REPORT, [WriteStatus, KubeEvent], True),
    (observed(nodes={"n1": cordoned("n1")}, failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]),
     REPORT, [], False),
    (observed(nodes={"n1": cordoned("n1")}, trainjob=TRAINJOB), RESTART, [WriteStatus, KubeEvent, Delete], True),
    (observed(nodes={"n1": cordoned("n1")}, trainjob=TRAINJOB,
              failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]), RESTART, [Delete], False),
    (observed(nodes={"n1": cordoned("n1")}, trainjob={"metadata": {**TRAINJOB["metadata"],
                                                                  "deletionTimestamp": "2026-11-30T11:00:00Z"}}),
     RESTART, [WriteStatus, KubeEvent], True),
    (observed(nodes={"n1": healthy("n1")}, trainjob=TRAINJOB), RESTART, [], False),
    (observed(nodes={"n2": cordoned("n2")}, unread=(("n1", "not found"),)), REPORT, [WriteStatus, KubeEvent], True),
], ids=["job-gone", "not-managed", "terminal", "no-monitor", "not-bool", "does-not-compile", "no-nodes",
        "healthy", "new-failure", "nothing-new", "restart-deletes-the-trainjob",
        "restart-deletes-again-on-a-listed-node", "restart-trainjob-already-going", "restart-healthy",
        "unreadable-node-skipped"])
def test_decision(case: Observed, settings: Settings, effects: list[type], replies: bool) -> None:
    plan = decide(case, settings, NOW)
    assert [type(e) for e in plan.effects] == effects
    assert (plan.reply is not None) == replies


def test_a_new_failure_is_one_write_its_warning_and_the_event() -> None:
    plan = decide(observed(nodes={"n2": cordoned("n2"), "n1": cordoned("n1"), "n3": healthy("n3")},
                           failed_nodes=[{"name": "n0", "reason": "WorkloadFailed", "message": "boom"}]), REPORT, NOW)
    write, event = plan.effects
    assert isinstance(write, WriteStatus) and isinstance(event, KubeEvent)
    message = "Hardware failure detected on node(s): [n0 n1 n2]"
    assert write.status["failedNodes"] == [{"name": "n0", "reason": "WorkloadFailed", "message": "boom"},
                                           {"name": "n1", "reason": HW, "message": DETAIL},
                                           {"name": "n2", "reason": HW, "message": DETAIL}]
    hardware = next(c for c in write.status["conditions"] if c["type"] == "HardwareFailed")
    assert (hardware["status"], hardware["reason"], hardware["message"]) == ("True", HW, message)
    assert [c["type"] for c in write.status["conditions"]] == ["InProgress", "Succeeded", "Failed", "HardwareFailed"]
    assert (event.body["type"], event.body["reason"], event.body["note"]) == ("Warning", HW, message)
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.hardware.failed"
    assert plan.reply.data_json() == {
        "job": {"name": "llm", "namespace": "ns"}, "nodes": ["n1", "n2"], "message": message, "action": "report",
        "failedNodes": [{"name": "n0", "reason": "WorkloadFailed", "message": "boom"},
                        {"name": "n1", "reason": HW, "message": DETAIL},
                        {"name": "n2", "reason": HW, "message": DETAIL}]}


def test_the_hardware_failed_event_carries_the_trace_of_its_cause() -> None:
    traced = Envelope(id="c1", type="dev.crefn.job.check", source="/crefn/resync",
                      traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="vendor=1")
    plan = decide(replace(observed(nodes={"n1": cordoned("n1")}), cause=traced), REPORT, NOW)
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.hardware.failed"
    assert (plan.reply.traceparent, plan.reply.tracestate) == (
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=1")


def test_deferring_leaves_news_to_the_jobs_next_check_and_passes_the_rest() -> None:
    """Once another Job on the Node has taken the answer: a new failed node is neither written nor replied for."""
    news = deferring(observed(nodes={"n1": cordoned("n1")}), REPORT, NOW)
    assert (news.effects, news.reply, news.reason) == (
        (), None, "Job ns/llm: a new failed node, left to its next check (one event per answer)")
    kept = deferring(observed(nodes={"n1": cordoned("n1")}, trainjob=TRAINJOB,
                              failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]), RESTART, NOW)
    assert kept.effects == (Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid"),) and kept.reply is None
    assert kept.reason == "Job ns/llm: unhealthy [n1], no new failed node, deleting the attempt's TrainJob"


def test_a_second_failure_while_true_updates_the_message_without_an_event() -> None:
    already = [cond("HardwareFailed", "True", HW, "Hardware failure detected on node(s): [n1]")]
    plan = decide(observed(nodes={"n1": cordoned("n1"), "n2": cordoned("n2")}, conditions=RUNNING + already,
                           failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]), REPORT, NOW)
    (write,) = plan.effects
    assert isinstance(write, WriteStatus)
    hardware = next(c for c in write.status["conditions"] if c["type"] == "HardwareFailed")
    assert hardware["message"] == "Hardware failure detected on node(s): [n1 n2]"
    assert hardware["lastTransitionTime"] == already[0]["lastTransitionTime"]
    assert plan.reply is not None and plan.reply.data_json()["nodes"] == ["n2"]


INTERRUPTED = CelOutcome(failure="interrupted", error="operation interrupted: took longer than 1s")


@pytest.mark.parametrize(("on", "note"), [
    ("n2", "node health expression rejected on node n2: CEL evaluation error: operation interrupted: took longer "
           "than 1s"),
    ("", "node health expression rejected: CEL compilation error: operation interrupted: took longer than 1s"),
], ids=["evaluating", "compiling"])
def test_an_interrupted_expression_writes_nothing_and_is_a_warning_event(on: str, note: str) -> None:
    state = job(RUNNING, spec={"nodeHealthMonitor": {"cel": {"expression": CORDONED}}}, workload_ref=True)
    evaluation = Evaluation(("n1", "n2") if on else (), rejected=INTERRUPTED, rejected_on=on)
    plan = decide(Evaluated(CAUSE, REF, state, evaluation), REPORT, NOW)
    (event,) = plan.effects
    assert isinstance(event, KubeEvent) and plan.reply is None
    assert (event.body["type"], event.body["reason"], event.body["note"]) == (
        "Warning", "InvalidNodeHealthExpression", note)
    assert plan.reason == "Job ns/llm: node health expression rejected: operation interrupted: took longer than 1s"


def test_the_outcomes_stop_at_the_one_that_rejects() -> None:
    outcomes_ = (CelOutcome(True), CelOutcome(failure="evaluate", error="no such key"), INTERRUPTED)
    assert evaluate(("a", "b", "c", "d"), outcomes_) == Evaluation(("a", "b", "c", "d"), rejected=INTERRUPTED,
                                                                   rejected_on="c")
    assert evaluate(("a", "b"), outcomes_[:2]) == Evaluation(("a", "b"), ("a",), (("b", "no such key"),))


def test_an_interruption_after_the_last_nodes_outcome_is_not_read() -> None:
    """The budget may run out after the worker answered for every node (its end of answer late): each node has its
    outcome, and the interruption past them is no rejection."""
    assert evaluate(("a", "b"), (CelOutcome(True), CelOutcome(False), INTERRUPTED)) == Evaluation(("a", "b"), ("a",))
    assert evaluate((), (INTERRUPTED,)) == Evaluation()


def test_restart_deletes_the_attempts_trainjob_by_uid_after_the_write() -> None:
    plan = decide(observed(nodes={"n1": cordoned("n1")}, trainjob=TRAINJOB), RESTART, NOW)
    assert plan.effects[-1] == Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid")
    assert plan.reply is not None and plan.reply.data_json()["action"] == "restart"


def test_restart_never_deletes_a_trainjob_the_job_does_not_control() -> None:
    """Whatever `workloadRef` names (in any namespace), a TrainJob controlled by something else is left."""
    anothers = {"metadata": {**TRAINJOB["metadata"],
                             "ownerReferences": [{**TRAINJOB["metadata"]["ownerReferences"][0], "uid": "x"}]}}
    plan = decide(observed(nodes={"n1": cordoned("n1")}, trainjob=anothers), RESTART, NOW)
    assert not [e for e in plan.effects if isinstance(e, Delete)]




@pytest.mark.parametrize(("note", "restated"), [
    ("Hardware failure detected on node(s): [n1]", True),
    ("Hardware failure detected on node(s): [n0]", False),
], ids=["its-own-note", "a-node-joined-since"])
def test_a_redelivered_failure_is_announced_again_only_while_its_event_says_the_condition(note: str,
                                                                                          restated: bool) -> None:
    """The event that wrote `HardwareFailed`, delivered again, sends its `job.hardware.failed` again when the
    recorded Event's note is the condition's message; once another node joined (the note says another list), the
    Job's failedNodes were announced by that node's event, and nothing is sent."""
    already = [cond("HardwareFailed", "True", HW, "Hardware failure detected on node(s): [n1]")]
    event = {"note": note, "metadata": {"annotations": {"crefn.dev/cause": CAUSE.id}}}
    case = replace(observed(nodes={"n1": cordoned("n1")}, conditions=RUNNING + already,
                            failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]),
                   announced=Announced(event))
    assert isinstance(case, Evaluated)
    plan = decide(case, REPORT, NOW)
    assert plan.effects == ()
    if restated:
        assert plan.reply is not None and plan.reply.type == "dev.crefn.job.hardware.failed"
        assert plan.reason == "Job ns/llm: HardwareFailed/HardwareFailureDetected delivered again"
    else:
        assert plan.reply is None
        assert plan.reason == "Job ns/llm: unhealthy [n1], no new failed node"


def test_a_redelivered_failure_records_its_missing_event_with_its_cause() -> None:
    """The event that wrote `HardwareFailed` delivered again, its Event not recorded (its decider stopped before):
    the Event is recorded now, naming that event, and the answer sent again."""
    already = [cond("HardwareFailed", "True", HW, "Hardware failure detected on node(s): [n1]")]
    case = replace(observed(nodes={"n1": cordoned("n1")}, conditions=RUNNING + already,
                            failed_nodes=[{"name": "n1", "reason": HW, "message": DETAIL}]),
                   announced=Announced(None))
    assert isinstance(case, Evaluated)
    plan = decide(case, REPORT, NOW)
    (event,) = plan.effects
    assert isinstance(event, KubeEvent)
    assert (event.body["reason"], event.body["note"]) == (HW, "Hardware failure detected on node(s): [n1]")
    assert event.body["metadata"]["annotations"] == {"crefn.dev/cause": CAUSE.id}
    assert plan.reply is not None and plan.reply.type == "dev.crefn.job.hardware.failed"
