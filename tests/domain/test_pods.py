"""Which container a failure log records, and what it says when there is none (`functions.domain.pods`,
CRE's `captureFailureLog`): list order, a later OOMKilled wins, PodNotFound / NoTerminatedContainer
with CRE's texts, the CRD-required fields always sent, the first failure kept."""

from __future__ import annotations

import pytest

from functions.domain.pods import (
    Capture,
    failed_container,
    failure_info,
    failure_log,
    failure_log_field,
    timeout_container,
)
from tests.support.helpers import job, pod


def test_first_non_zero_exit_in_list_order() -> None:
    pods = [pod("a", node="n1", exits=[("node", 0, "Completed")]),
            pod("b", node="n2", exits=[("sidecar", -1, ""), ("node", 1, "Error")]),
            pod("c", node="n3", exits=[("node", 2, "Error")])]
    source = failed_container(pods)
    assert source is not None and (source.pod, source.node, source.container, source.exit_code, source.reason) == (
        "b", "n2", "node", 1, "Error")


def test_a_later_oomkilled_wins_and_the_last_one_of_several() -> None:
    pods = [pod("a", node="n1", exits=[("node", 1, "Error")]),
            pod("b", node="n2", exits=[("node", 137, "OOMKilled")]),
            pod("c", node="n3", exits=[("node", 3, "Error")]),
            pod("d", node="n4", exits=[("node", 137, "OOMKilled")])]
    source = failed_container(pods)
    assert source is not None and (source.pod, source.reason) == ("d", "OOMKilled")


def test_no_pods_and_no_failed_container_say_why() -> None:
    gone = failure_log([], None, "")
    assert gone.model_dump(by_alias=True) == {
        "podName": "", "nodeName": "", "exitCode": 0, "reason": "PodNotFound",
        "tail": "no pods for this Job were found when the failure was recorded; the pod was most likely deleted "
                "before its logs could be read"}
    running = [pod(node="n1", exits=[("node", -1, "")])]
    none = failure_log(running, failed_container(running), "")
    assert (none.reason, none.pod_name, none.exit_code) == ("NoTerminatedContainer", "", 0)
    assert none.tail == ("pods for this Job were found, but none had a container terminated with a non-zero exit "
                         "code")


def test_the_first_failure_log_is_kept() -> None:
    pods = (pod("a", node="n1", exits=[("node", 137, "OOMKilled")]),)
    capture = Capture(pods, failed_container(pods), "CUDA out of memory")
    field = failure_log_field(job(), capture)
    assert field == {"failureLog": {"podName": "a", "nodeName": "n1", "exitCode": 137, "reason": "OOMKilled",
                                    "tail": "CUDA out of memory"}}
    recorded = job(status=field)
    assert failure_log_field(recorded, capture) == {}
    info = failure_info(capture)
    assert info is not None and (info.pod_name, info.node_name, info.exit_code, info.reason) == (
        "a", "n1", 137, "OOMKilled")


def test_timeout_log_prefers_the_trainer_step_pod_that_ran() -> None:
    step = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    pods = [pod("pending", phase="Pending", labels=step),
            pod("launcher", node="n0", exits=[("launcher", -1, "")]),
            pod("worker", node="n1", exits=[("init", -1, ""), ("node", -1, "")], labels=step)]
    source = timeout_container(pods)
    assert source is not None and (source.pod, source.container, source.exit_code, source.reason) == (
        "worker", "node", 0, "Timeout")
    other = timeout_container([pod("launcher", node="n0", exits=[("launcher", -1, "")])])
    assert other is not None and (other.pod, other.container) == ("launcher", "launcher")
    assert timeout_container([pod(phase="Pending")]) is None


@pytest.mark.parametrize(("phase", "eligible"), [
    ("Running", True), ("Succeeded", True), ("Failed", True), ("Pending", False), ("Unknown", False),
])
def test_a_timeout_log_comes_from_a_pod_that_ran(phase: str, eligible: bool) -> None:
    """A pod counts for the timeout log once it ran: Running, Succeeded or Failed (CRE's `captureTimeoutLog`)."""
    source = timeout_container([pod("worker", node="n1", exits=[("node", 0, "Completed")], phase=phase)])
    assert (None if source is None else (source.pod, source.container)) == (("worker", "node") if eligible else None)


def test_a_timeout_with_no_pod_that_ran_leaves_the_failure_log_unset() -> None:
    assert failure_log_field(job(), Capture((), None), timeout=True) == {}
    assert failure_log_field(job(), Capture((), None))["failureLog"]["reason"] == "PodNotFound"
