"""The `launch` function's own decision: a TrainJob a conflict left recorded nowhere is deleted by its uid.
The launch it shares with `resync` and `restart`: tests/domain/test_launching.py."""

from __future__ import annotations

from events.envelope import Envelope
from functions.launch.decide import Observed, decide
from functions.runtime.effects import Delete
from functions.runtime.resources import TRAINJOBS
from functions.runtime.settings import Settings
from tests.functions.launch.test_read import trainjob
from tests.support.helpers import NOW

CAUSE = Envelope(id="c1", type="dev.crefn.job.check", source="/crefn/resync",
                 traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate="vendor=1")


def test_an_orphan_is_deleted_by_its_uid() -> None:
    found = trainjob()
    found["metadata"]["namespace"] = "ns"
    plan = decide(Observed(CAUSE, "Job ns/llm", None, "Job ns/llm is terminal", abandoned=found), Settings(), NOW)
    assert plan.effects == (Delete(TRAINJOBS, "ns", "llm-workload", "tj-uid"),)
    assert plan.reason == "Job ns/llm is terminal: its TrainJob llm-workload, recorded nowhere, deleted"
    assert plan.reply is None
