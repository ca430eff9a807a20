"""`nodehealth` on the real API server: Nodes created and patched (cordon, taints, labels, `nodes/status`
conditions) under pods placed by `spec.nodeName`, reached through the resync tick's `dev.crefn.job.check`
and through Node events. The decision, pure: tests/functions/nodehealth/test_decide.py."""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events.emitted import JobRef
from events.envelope import Envelope
from functions.domain.redelivery import Announced
from functions.nodehealth import read as nodehealth
from functions.nodehealth.decide import Evaluated, Evaluation
from functions.nodehealth.read import read
from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.errors import PermanentError, Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NODES, cre_jobs
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.kubelet import ensure_node
from localstack.cluster.pods import create_pod, set_running, terminate
from localstack.eventing.apisource import apiserver_record
from tests.support.helpers import announced_once, cond, job, job_events, waits_while_its_decider_may_be_at_work
from tests.support.world import World

HW = "HardwareFailureDetected"
DETAIL = "Hardware failure detected by node health check"
CORDONED = "node.spec.unschedulable == true"


# -- the merge, the message, the defaults (pure) ----------------------------------------------------


# -- the decision (pure) ------------------------------------------------------------------------


# -- on the real API server ---------------------------------------------------------------------


def node_name(w: World, suffix: str) -> str:
    return f"{w.ns}-{suffix}"


def monitored(w: World, expression: str = CORDONED, name: str = "llm", max_restarts: int = 2) -> None:
    """A managed Job with a node health monitor (immutable: it is set at creation), launched."""
    trainjob = {"runtimeRef": {"name": "torch-distributed"},
                "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2}}
    w.gw.create(w.jobs, w.ns, {"apiVersion": f"{w.group}/v1alpha1", "kind": "Job",
                               "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                               "spec": {"workload": {"trainJob": trainjob},
                                        "checkpoint": {"pvcName": f"{name}-ckpt", "maxRestarts": max_restarts},
                                        "nodeHealthMonitor": {"cel": {"expression": expression}}}})
    w.settle()
    assert w.job(name)["status"]["workloadRef"]["name"] == f"{name}-workload"


def place(w: World, pod_name: str, node: str, job_name: str = "llm", attempt: int = 0, phase: str = "Running") -> None:
    """A pod of the Job's attempt on `node` (created there, so Pending), then in `phase`."""
    ensure_node(w.gw, node)
    labels = {"nvcre.nvidia.com/job": job_name, "crefn.dev/attempt": str(attempt), "crefn.dev/managed": "true"}
    create_pod(w.gw, w.ns, pod_name, labels, node=node)
    if phase == "Running":
        set_running(w.gw, w.ns, pod_name)
    elif phase in ("Succeeded", "Failed"):
        terminate(w.gw, w.ns, pod_name, {"node": (0, "Completed") if phase == "Succeeded" else (1, "Error")})


def check_record(ns: str, job_name: str = "llm", checks: tuple[str, ...] = ("nodehealth",)) -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": f"check-{job_name}", "source": "/crefn/resync",
                           "type": "dev.crefn.job.check", "subject": f"{ns}/{job_name}", "namespace": ns,
                           "job": job_name, "partitionkey": f"{ns}/{job_name}"},
            "data": {"job": {"name": job_name, "namespace": ns}, "attempt": 0, "checks": list(checks)}}


def node_changed(w: World, node: str, verb: str = "update") -> None:
    """The ApiServerSource `crefn-nodes` sends the Node as it is now; the Broker routes it."""
    obj = w.gw.get(NODES, None, node)
    assert obj is not None
    w.broker.publish(apiserver_record(verb, obj, NODES, w.gw.host))
    w.broker.drain()


def hardware(w: World, job_name: str = "llm") -> tuple[str, str, str] | None:
    found = [c for c in w.job(job_name)["status"].get("conditions") or [] if c["type"] == "HardwareFailed"]
    return (found[0]["status"], found[0]["reason"], found[0]["message"]) if found else None


def failed_nodes(w: World, job_name: str = "llm") -> list[tuple[str, str]]:
    return [(n["name"], n["reason"]) for n in w.job(job_name)["status"].get("failedNodes") or []]


def hardware_replies(w: World) -> list[dict[str, Any]]:
    return [o.reply["data"] for o in w.answers("nodehealth") if o.reply
            and o.reply["attributes"]["type"] == "dev.crefn.job.hardware.failed"]


def test_the_tick_finds_a_cordoned_node_of_a_running_pod(world: Callable[..., World]) -> None:
    w = world()
    monitored(w)
    n1, n2 = node_name(w, "gpu-1"), node_name(w, "gpu-2")
    place(w, "llm-workload-node-0-0", n1)
    place(w, "llm-workload-node-1-0", n2, phase="Pending")
    w.settle()
    w.tick(rounds=1)
    assert hardware(w) is None and [o.status for o in w.answers("nodehealth")] == [202]
    w.gw.patch(NODES, None, n2, {"spec": {"unschedulable": True}})
    w.tick(rounds=1)
    message = f"Hardware failure detected on node(s): [{n2}]"
    assert hardware(w) == ("True", HW, message)
    assert w.job()["status"]["failedNodes"] == [{"name": n2, "reason": HW, "message": DETAIL}]
    assert w.final() == ("InProgress", "WorkloadRunning", 0)  # reported only: the workload keeps running
    assert w.trainjob() is not None
    warnings = [(e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["type"] == "Warning"]
    assert warnings == [(HW, message)]
    assert hardware_replies(w) == [{"job": {"name": "llm", "namespace": w.ns}, "nodes": [n2], "message": message,
                                    "action": "report", "failedNodes": [{"name": n2, "reason": HW, "message": DETAIL}]}]

    version = w.job()["metadata"]["resourceVersion"]
    w.tick(rounds=1)  # nothing new: no write, no event
    assert w.job()["metadata"]["resourceVersion"] == version
    assert w.answers("nodehealth")[-1].status == 202 and len(hardware_replies(w)) == 1

    w.gw.patch(NODES, None, n1, {"spec": {"unschedulable": True}})
    w.gw.patch(NODES, None, n2, {"spec": {"unschedulable": False}})  # recovered: stays listed
    w.tick(rounds=1)
    both = f"Hardware failure detected on node(s): [{n1} {n2}]"
    assert hardware(w) == ("True", HW, both)
    assert failed_nodes(w) == [(n1, HW), (n2, HW)]
    assert len([e for e in job_events(w.gw, w.ns) if e["type"] == "Warning"]) == 1  # the flip only
    assert hardware_replies(w)[-1]["nodes"] == [n1]


@pytest.mark.parametrize(("expression", "change"), [
    ("node.spec.taints.exists(t, t.key == 'nvidia.com/gpu-unhealthy' && t.effect == 'NoSchedule')",
     {"spec": {"taints": [{"key": "nvidia.com/gpu-unhealthy", "value": "xid-79", "effect": "NoSchedule"}]}}),
    ("'gpud.nvidia.com/unhealthy' in node.metadata.labels",
     {"metadata": {"labels": {"gpud.nvidia.com/unhealthy": "true"}}}),
    ("node.status.conditions.exists(c, c.type == 'GPUHealthy' && c.status == 'False')",
     {"status": {"conditions": [{"type": "GPUHealthy", "status": "False", "reason": "XidError"}]}}),
    (CORDONED, {"spec": {"unschedulable": True}}),
], ids=["taint", "label", "status-condition", "cordon"])
def test_a_node_event_checks_the_jobs_with_pods_on_it(world: Callable[..., World], expression: str,
                                                     change: dict[str, Any]) -> None:
    w = world()
    monitored(w, expression)
    node = node_name(w, "gpu-1")
    place(w, "llm-workload-node-0-0", node)
    w.settle()
    node_changed(w, node, "add")
    assert hardware(w) is None and w.answers("nodehealth")[-1].status == 202
    w.gw.patch(NODES, None, node, change, status="status" in change)
    node_changed(w, node)
    assert hardware(w) == ("True", HW, f"Hardware failure detected on node(s): [{node}]")
    assert [o.trigger for o in w.answers("nodehealth")] == ["crefn-nodehealth-nodes"] * 2
    assert hardware_replies(w)[0]["nodes"] == [node]


def test_only_pods_of_the_current_attempt_running_or_pending_count(world: Callable[..., World]) -> None:
    w = world()
    monitored(w)
    names = {s: node_name(w, s) for s in ("run", "wait", "done", "fail", "old")}
    place(w, "p-run", names["run"])
    place(w, "p-wait", names["wait"], phase="Pending")
    place(w, "p-done", names["done"], phase="Succeeded")
    place(w, "p-fail", names["fail"], phase="Failed")
    place(w, "p-old", names["old"], attempt=1)  # not the Job's attempt (restartCount 0)
    w.settle()
    for node in names.values():
        w.gw.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    w.tick(rounds=1)
    assert failed_nodes(w) == sorted([(names["run"], HW), (names["wait"], HW)])


def test_one_node_event_answers_for_one_job_the_tick_for_the_next(world: Callable[..., World]) -> None:
    w = world()
    node, record = two_jobs_on_a_node(w)
    w.broker.publish(record)
    w.broker.drain()
    assert hardware(w, "llm") is not None and hardware(w, "llm2") is None
    assert [r["job"]["name"] for r in hardware_replies(w)] == ["llm"]
    w.tick(rounds=1)
    assert hardware(w, "llm2") == ("True", HW, f"Hardware failure detected on node(s): [{node}]")
    assert [r["job"]["name"] for r in hardware_replies(w)] == ["llm", "llm2"]


def test_a_node_without_workload_pods_and_a_wrong_kind(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                       namespace: str) -> None:
    url = functions()["nodehealth"]
    node = f"{namespace}-idle"
    ensure_node(gateway, node)
    obj = gateway.get(NODES, None, node)
    assert obj is not None
    assert send(url, apiserver_record("update", obj, NODES, gateway.host)).status == 202
    not_a_node = {**obj, "kind": "Pod"}
    refused = send(url, apiserver_record("update", not_a_node, NODES, gateway.host))
    assert refused.status == 400 and "expected v1/Node" in refused.text
    assert send(url, check_record(namespace, "never-was")).status == 202
    assert send(url, check_record(namespace, checks=("validation",))).status == 202


@pytest.mark.parametrize("expression", ["node.spec.unschedulable", "node.spec.(", "nodes.spec.unschedulable == true"],
                         ids=["not-bool", "syntax", "undeclared"])
def test_a_bad_expression_changes_nothing_and_is_logged_once(world: Callable[..., World],
                                                            functions: Callable[..., dict[str, str]],
                                                            gateway: Gateway, caplog: pytest.LogCaptureFixture,
                                                            expression: str) -> None:
    w = world()
    monitored(w, expression)
    node = node_name(w, "gpu-1")
    place(w, "llm-workload-node-0-0", node)
    w.gw.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    w.settle()
    answer = send(functions()["nodehealth"], check_record(w.ns))
    assert answer.status == 202
    assert hardware(w) is None and "failedNodes" not in w.job()["status"]
    ctx = Context(Settings(), gateway)
    with caplog.at_level(logging.WARNING, logger="crefn"):
        for _ in range(3):
            read(Envelope(id="c", type="dev.crefn.job.check", source="s"), JobRef(name="llm", namespace=w.ns), ctx)
    rejected = [r for r in caplog.records if "node health expression rejected" in r.getMessage()]
    assert len(rejected) == 1 and rejected[0].fields["expression"] == expression  # type: ignore[attr-defined]
    assert rejected[0].fields["namespace"] == w.ns and rejected[0].fields["job"] == "llm"  # type: ignore[attr-defined]


def test_a_terminal_job_is_untouched(world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    w = world()
    monitored(w)
    node = node_name(w, "gpu-1")
    place(w, "llm-workload-node-0-0", node)
    w.gw.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    w.settle()
    stamp = "2026-11-30T10:00:00Z"
    w.gw.patch(w.jobs, w.ns, "llm", {"status": {"conditions": [
        {"type": t, "status": s, "reason": r, "message": "", "lastTransitionTime": stamp}
        for t, s, r in (("InProgress", "False", "NotApplicable"), ("Succeeded", "True", "WorkloadCompleted"),
                        ("Failed", "False", "NotApplicable"))]}}, status=True)
    version = w.job()["metadata"]["resourceVersion"]
    assert send(functions()["nodehealth"], check_record(w.ns)).status == 202
    node_changed(w, node)
    assert w.answers("nodehealth")[-1].status == 202
    assert hardware(w) is None and w.job()["metadata"]["resourceVersion"] == version
    w.tick(rounds=1)  # a terminal Job is not due for the check at all
    assert not [r for r in w.resynced if r["attributes"]["type"] == "dev.crefn.job.check"]


@pytest.mark.parametrize(("max_restarts", "final"), [(2, ("InProgress", "WorkloadRunning", 1)),
                                                     (0, ("Failed", "WorkloadFailed", 0))],
                         ids=["restarted", "no-restart-left"])
def test_the_restart_action_deletes_the_trainjob_and_restart_decides(world: Callable[..., World],
                                                                     functions: Callable[..., dict[str, str]],
                                                                     max_restarts: int,
                                                                     final: tuple[str, str, int]) -> None:
    w = world(functions(CREFN_HARDWARE_FAILURE_ACTION="restart"))
    monitored(w, max_restarts=max_restarts)
    w.checkpoint_evidence()
    node = node_name(w, "gpu-1")
    place(w, "llm-workload-node-0-0", node)
    w.settle()
    uid = (w.trainjob() or {})["metadata"]["uid"]
    w.gw.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    node_changed(w, node)
    assert hardware_replies(w)[0]["action"] == "restart"
    w.settle()
    assert w.final() == final
    assert hardware(w) == ("True", HW, f"Hardware failure detected on node(s): [{node}]")  # never cleared
    if final[0] == "Failed":
        failed = next(c for c in w.job()["status"]["conditions"] if c["type"] == "Failed")
        assert failed["message"] == "Workload TrainJob/llm-workload was deleted"
    trainjob = w.trainjob()
    assert trainjob is None or trainjob["metadata"]["uid"] != uid


def test_observe_mode_replies_and_writes_nothing(functions: Callable[..., dict[str, str]], gateway: Gateway,
                                                 namespace: str) -> None:
    jobs = cre_jobs("nvcre.nvidia.com")
    gateway.create(jobs, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                 "nodeHealthMonitor": {"cel": {"expression": CORDONED}}}})
    node = f"{namespace}-gpu-1"
    ensure_node(gateway, node)
    gateway.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    create_pod(gateway, namespace, "llm-workload-node-0-0",
               {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}, node=node)
    answer = send(functions(CREFN_MODE="observe")["nodehealth"], check_record(namespace))
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.job.hardware.failed"
    assert json.loads(answer.body)["nodes"] == [node]
    stored = gateway.get(jobs, namespace, "llm") or {}
    assert "failedNodes" not in (stored.get("status") or {}) and not job_events(gateway, namespace)


class FailingGateway(Gateway):
    """A gateway whose reads of the named Jobs fail as they do when the API server answers 503."""

    def __init__(self, inner: Gateway, jobs: tuple[str, ...]) -> None:
        super().__init__(inner.transport, 10.0)
        self.jobs = jobs

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        if method == "GET" and path.rsplit("/", 2)[-2:] in (["jobs", job] for job in self.jobs):
            raise Unavailable(f"GET {path}: the API server answered 503")
        return super().request(method, path, body=body, query=query, content_type=content_type)


def two_jobs_on_a_node(w: World) -> tuple[str, dict[str, Any]]:
    """`llm` and `llm2` each with a pod on one cordoned Node: the Node's update event."""
    monitored(w, name="llm")
    monitored(w, name="llm2")
    node = node_name(w, "shared")
    place(w, "llm-p", node)
    place(w, "llm2-p", node, job_name="llm2")
    w.settle()
    w.gw.patch(NODES, None, node, {"spec": {"unschedulable": True}})
    obj = w.gw.get(NODES, None, node)
    assert obj is not None
    return node, apiserver_record("update", obj, NODES, w.gw.host)


@pytest.mark.parametrize(("failing", "replied"), [((), "llm"), (("llm",), "llm2"), (("llm", "llm2"), "")],
                         ids=["none", "the-first", "both"])
def test_a_node_event_goes_on_past_a_job_it_cannot_read(world: Callable[..., World], gateway: Gateway,
                                                        failing: tuple[str, ...], replied: str) -> None:
    """A Job whose read fails is named in the answer's reason and the next Job is checked; only when none
    could answer with an event is the delivery retried (503), naming the first failure."""
    w = world()
    node, record = two_jobs_on_a_node(w)
    ctx = Context(Settings(), gateway=FailingGateway(gateway, failing))
    failures = [f"Job {w.ns}/{job}: GET /apis/nvcre.nvidia.com/v1alpha1/namespaces/{w.ns}/jobs/{job}: "
                f"the API server answered 503" for job in failing]
    summary = f"node {node}: 2 jobs, {len(failing)} failed"
    if not replied:
        with pytest.raises(Unavailable) as raised:
            nodehealth.handle(to_envelope(record), ctx)
        assert str(raised.value) == f"{summary}; first: {failures[0]}"
        return
    outcome = nodehealth.handle(to_envelope(record), ctx)
    assert outcome.reply is not None and outcome.reply.extensions["job"] == replied
    deferred = [f"Job {w.ns}/llm2: a new failed node, left to its next check (one event per answer)"]
    assert outcome.reason.split("; ") == [summary, *(deferred if replied == "llm" else []), *failures]


def test_a_node_that_cannot_be_read_is_skipped_and_logged(gateway: Gateway, namespace: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """A pod placed on a Node the API server does not have: the Node is skipped, with why, on the line too."""
    gateway.create(cre_jobs("nvcre.nvidia.com"), namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}},
                 "nodeHealthMonitor": {"cel": {"expression": CORDONED}}}})
    node = f"{namespace}-never-was"
    create_pod(gateway, namespace, "llm-workload-node-0-0",
               {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true"}, node=node)
    ctx = Context(Settings(), gateway)
    with caplog.at_level(logging.WARNING, logger="crefn"):
        try:
            observed = read(to_envelope(check_record(namespace)), JobRef(name="llm", namespace=namespace), ctx)
        finally:
            ctx.cel.close()
    assert isinstance(observed, Evaluated) and observed.unread == ((node, "not found"),)
    (line,) = [r for r in caplog.records if r.getMessage() == f"node {node} skipped: not found"]
    assert line.fields == {"function": "nodehealth", "node": node, "skipped": "not found",  # type: ignore[attr-defined]
                           "namespace": namespace, "job": "llm"}


def test_a_check_of_an_earlier_attempt_reads_no_event_to_restate(gateway: Gateway) -> None:
    """`HardwareFailed` made True at 12:00 in attempt 0, the Job restarted since: a check of attempt 0 sent just
    before is not its decider (no Event read); one of attempt 1, or a Node event, may be (its Events read)."""
    written = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    message = "Hardware failure detected on node(s): [gpu-1]"
    conditions = [cond("InProgress", "True", "WorkloadRunning"), cond("Succeeded", "False", "NotApplicable"),
                  cond("Failed", "False", "NotApplicable"),
                  cond("HardwareFailed", "True", HW, message, ltt="2026-11-30T12:00:00Z")]
    restarted = job(conditions, restart_count=1, workload_ref=True,
                    spec={"nodeHealthMonitor": {"cel": {"expression": CORDONED}}},
                    status={"failedNodes": [{"name": "gpu-1", "reason": HW, "message": DETAIL}]})
    evaluation = Evaluation(nodes=("gpu-1",), unhealthy=("gpu-1",))
    ctx = Context(Settings(), gateway, clock=lambda: written + timedelta(seconds=35))

    def check(attempt: int) -> Envelope:
        record = check_record("ns")
        record["attributes"]["time"] = "2026-11-30T11:59:59Z"
        record["data"]["attempt"] = attempt
        return to_envelope(record)

    assert nodehealth.announced(check(0), ctx, restarted, evaluation) is None
    assert nodehealth.announced(check(1), ctx, restarted, evaluation) == Announced(None)
    node = Envelope(id="node-2", type="dev.knative.apiserver.resource.update", source="/apis/v1/nodes",
                    time="2026-11-30T11:59:59Z")
    assert nodehealth.announced(node, ctx, restarted, evaluation) == Announced(None)


# -- tenant CEL under its time budget (functions.runtime.celbudget) -------------------------------------

INVENTORY = "node.metadata.annotations['example.com/inventory']"
ZEROS = "[" + ",".join(["0"] * 90) + "]"
SLOW = f"{ZEROS}.all(i, {ZEROS}.all(j, size({INVENTORY} + {INVENTORY} + {INVENTORY}) > 0))"
"""8100 iterations, each concatenating a 150 KB annotation three times: over ten seconds in-process,
holding the interpreter lock all along; 270 characters."""


def timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """What `call` gave, when it started and when it ended (monotonic seconds)."""
    started = time.monotonic()
    got = call()
    return got, started, time.monotonic()


def test_an_expression_past_its_budget_holds_up_nothing_and_is_told_on_the_job(
        world: Callable[..., World], functions: Callable[..., dict[str, str]]) -> None:
    """While one Job's expression runs out its budget (1 s) in a worker process, the function answers its
    metrics and another Job's check (which starts a second worker) at once; then the expression is
    interrupted: nothing written, a Warning Event on the Job. Evaluated in the server's own process, the
    expression would hold up both for over ten seconds."""
    w = world()
    url = functions()["nodehealth"]
    monitored(w, SLOW, name="slow")
    monitored(w, CORDONED, name="quick")
    slow_node, sick_node = node_name(w, "big"), node_name(w, "sick")
    place(w, "slow-workload-node-0-0", slow_node, job_name="slow")
    place(w, "quick-workload-node-0-0", sick_node, job_name="quick")
    w.gw.patch(NODES, None, slow_node, {"metadata": {"annotations": {"example.com/inventory": "x" * 150_000}}})
    w.settle()
    assert send(url, check_record(w.ns, "quick")).status == 202  # healthy: the function has evaluated once
    w.gw.patch(NODES, None, sick_node, {"spec": {"unschedulable": True}})
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(timed, lambda: send(url, check_record(w.ns, "slow")))
        time.sleep(0.3)
        (status, _), metrics_from, metrics_to = timed(lambda: scrape(url))
        quick, quick_from, _ = timed(lambda: send(url, check_record(w.ns, "quick")))
        answer, slow_from, slow_to = slow.result()
    assert status == 200 and metrics_from < metrics_to < slow_to  # answered while the slow one ran
    assert quick.status == 200 and quick_from < slow_to
    assert hardware(w, "quick") == ("True", HW, f"Hardware failure detected on node(s): [{sick_node}]")
    assert answer.status == 202 and 1.0 <= slow_to - slow_from < 4.0  # its budget, the reads and a loaded machine
    assert hardware(w, "slow") is None and "failedNodes" not in w.job("slow")["status"]
    assert warnings(w, "slow") == [("InvalidNodeHealthExpression", f"node health expression rejected on node "
                                    f"{slow_node}: CEL evaluation error: operation interrupted: took longer than 1s")]

    assert send(url, check_record(w.ns, "slow")).status == 202  # the next tick: the same Event, not another
    assert len(warnings(w, "slow")) == 1


def warnings(w: World, job_name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in job_events(w.gw, w.ns, job_name) if e["type"] == "Warning"]


def scrape(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url + "metrics", timeout=30) as resp:
        return resp.status, resp.read()


def test_the_api_server_caps_a_node_health_expression_at_2048_characters(world: Callable[..., World]) -> None:
    """The CRD's `maxLength`, which `functions.domain.cel.MAX_LENGTH` applies to thresholds too."""
    w = world()
    monitored(w, CORDONED + " " * (2048 - len(CORDONED)), name="longest")
    with pytest.raises(PermanentError) as refused:
        monitored(w, CORDONED + " " * (2049 - len(CORDONED)), name="too-long")
    assert str(refused.value).endswith(
        "spec.nodeHealthMonitor.cel.expression in body should be at most 2048 chars long")


def test_a_hardware_failure_delivered_again_after_a_crash_sends_its_event_and_its_reply(
        world: Callable[..., World], functions: Callable[..., dict[str, str]], cluster: LocalCluster) -> None:
    """Killed after the HardwareFailed write, before its Event and its reply: the same check, delivered again
    (nothing new on the Job any more), records the Event and answers `job.hardware.failed`; delivered once more,
    it answers again and records nothing twice; another event, the same one past the hour, or the same one once
    another node has joined the condition, restates nothing."""
    from functions.runtime.apply import apply
    from functions.runtime.effects import KubeEvent, WriteStatus
    from functions.runtime.plan import Plan

    w = world()
    monitored(w)
    n1, n2 = node_name(w, "gpu-1"), node_name(w, "gpu-2")
    place(w, "llm-workload-node-0-0", n1)
    w.gw.patch(NODES, None, n1, {"spec": {"unschedulable": True}})
    decided = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=40)
    check = check_record(w.ns)
    check["attributes"]["time"] = (decided - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig)), clock=lambda: decided)
    try:
        plan = nodehealth.decide(read(to_envelope(check), JobRef(name="llm", namespace=w.ns), ctx), ctx.settings,
                                 ctx.clock())
    finally:
        ctx.cel.close()
    assert [type(e) for e in plan.effects] == [WriteStatus, KubeEvent]
    apply(Plan(plan.effects[:1]), ctx)  # the condition written, then the process dies
    message = f"Hardware failure detected on node(s): [{n1}]"
    assert hardware(w) == ("True", HW, message)
    assert not [e for e in job_events(w.gw, w.ns) if e["reason"] == HW]
    waits_while_its_decider_may_be_at_work(nodehealth.handle, check, ctx.settings, decided)

    url = functions()["nodehealth"]
    answer = send(url, check)  # Knative delivers it again
    assert answer.status == 200 and answer.ce["type"] == "dev.crefn.job.hardware.failed", answer.text
    assert json.loads(answer.body) == {"job": {"name": "llm", "namespace": w.ns}, "nodes": [n1],
                                       "failedNodes": [{"name": n1, "reason": HW, "message": DETAIL}],
                                       "message": message, "action": "report"}
    events = [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["reason"] == HW]
    assert events == [("Warning", HW, message)]
    recorded = next(e for e in job_events(w.gw, w.ns) if e["reason"] == HW)
    assert recorded["metadata"]["annotations"]["crefn.dev/cause"] == "check-llm"

    announced_once(url, check, answer.body, nodehealth.handle, ctx.settings, lambda: job_events(w.gw, w.ns))

    place(w, "llm-workload-node-1-0", n2)
    w.gw.patch(NODES, None, n2, {"spec": {"unschedulable": True}})
    joined = {"attributes": {**check["attributes"], "id": "check-3", "time": stamp_now()}, "data": check["data"]}
    grown = send(url, joined)
    assert grown.status == 200 and json.loads(grown.body)["nodes"] == [n2]
    assert send(url, check).status == 202  # the first check decided gpu-1 alone: gpu-2 is not restated
    assert [(e["type"], e["reason"], e["message"]) for e in job_events(w.gw, w.ns) if e["reason"] == HW] == events


def stamp_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_an_answer_with_an_event_logs_its_reason_with_the_events_type(caplog: pytest.LogCaptureFixture) -> None:
    """The server logs only the reply's type: the reason of an answer with an event is a line of its own, with the
    function and the reply's type as its fields; an answer without an event logs nothing here."""
    from events.emitted import JobHardwareFailedData
    from events.envelope import to_outbound
    from functions.runtime.plan import Outcome

    data = JobHardwareFailedData(job=JobRef(name="llm", namespace="ns"), nodes=["n1"], message="m")
    reply = to_outbound("dev.crefn.job.hardware.failed", "nodehealth", "ns", "llm", data, None)
    outcome = Outcome(reply, "Job ns/llm: HardwareFailed/HardwareFailureDetected delivered again")
    with caplog.at_level(logging.INFO, logger="crefn"):
        assert nodehealth.answered(outcome) is outcome
        assert nodehealth.answered(Outcome(None, "Job ns/llm: no new failed node")) is not None
    (line,) = [r for r in caplog.records if r.getMessage().startswith("replied ")]
    assert line.getMessage() == ("replied dev.crefn.job.hardware.failed: Job ns/llm: "
                                 "HardwareFailed/HardwareFailureDetected delivered again")
    assert line.fields == {"function": "nodehealth",  # type: ignore[attr-defined]
                           "replied": "dev.crefn.job.hardware.failed"}
