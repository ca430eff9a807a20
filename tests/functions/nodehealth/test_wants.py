"""What steers `nodehealth`'s read: a racing event does not restate a hardware failure of an earlier attempt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from events.emitted import JobRef
from events.envelope import Envelope
from functions.nodehealth.decide import Evaluated, Evaluation, decide
from functions.runtime.effects import KubeEvent
from functions.runtime.settings import Settings
from tests.functions.nodehealth.test_read import DETAIL, HW
from tests.support.helpers import cond, job


def test_a_racing_event_does_not_restate_a_hardware_failure_after_the_job_restarted() -> None:
    """A Node event made `HardwareFailed` True at 12:00 in attempt 0 and recorded its Event; the Job then restarted
    (the condition stays True, its time unchanged). A check of attempt 0 sent just before the write is not the
    decider; a Node event sent then finds the flip's Event under attempt 0's name, recorded by another event."""
    from functions.domain.kubeevents import CAUSE_ANNOTATION
    from functions.domain.redelivery import Announced
    from functions.nodehealth.wants import restate_wanted

    written = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    message = "Hardware failure detected on node(s): [gpu-1]"
    conditions = [cond("InProgress", "True", "WorkloadRunning"), cond("Succeeded", "False", "NotApplicable"),
                  cond("Failed", "False", "NotApplicable"),
                  cond("HardwareFailed", "True", HW, message, ltt="2026-11-30T12:00:00Z")]
    restarted = job(conditions, restart_count=1, workload_ref=True,
                    spec={"nodeHealthMonitor": {"cel": {"expression": "x"}}},
                    status={"failedNodes": [{"name": "gpu-1", "reason": HW, "message": DETAIL}]})
    evaluation = Evaluation(nodes=("gpu-1",), unhealthy=("gpu-1",))
    sent = "2026-11-30T11:59:59Z"
    check = Envelope(id="check-llm", type="dev.crefn.job.check", source="/crefn/resync", time=sent)
    assert restate_wanted(restarted, evaluation, check, 0, written + timedelta(seconds=35)) == ()
    node = Envelope(id="node-2", type="dev.knative.apiserver.resource.update", source="/apis/v1/nodes", time=sent)
    names = restate_wanted(restarted, evaluation, node, None, written + timedelta(seconds=35))
    assert len(names) == 2  # attempt 1's name, then attempt 0's
    flipped = {"metadata": {"name": names[1], "annotations": {CAUSE_ANNOTATION: "node-1"}}, "note": message}
    plan = decide(Evaluated(node, JobRef(name="llm", namespace="ns"), restarted, evaluation, (), None,
                            Announced(flipped)), Settings(), written + timedelta(seconds=35))
    assert plan.reply is None and not [e for e in plan.effects if isinstance(e, KubeEvent)]
