"""`make bench`'s rows per served target (`localstack.bench.served`): each target is sent an event the default
install's Triggers (observe's for `parity`; for `resync`, its PingSource) route to it."""

from __future__ import annotations

import pytest

from functions.registry import METRICS, SERVED, TARGETS
from localstack.bench.served import event_for, phase_answers


@pytest.mark.process  # serves `phase` for its answers
def test_every_served_target_gets_an_event_routed_to_it() -> None:
    answers = phase_answers()
    assert sorted((a["attributes"]["type"], a["attributes"]["workloadphase"]) for a in answers) == [
        ("dev.crefn.workload.phase", "Failed"), ("dev.crefn.workload.phase", "Running")]
    chosen = {target: event_for(target, answers) for target in sorted(SERVED)}
    assert chosen.pop(METRICS) is None  # a scrape
    assert {t: e["attributes"]["type"] in TARGETS[t].accepts for t, e in chosen.items() if e} == {
        t: True for t in SERVED - {METRICS}}
    kinds = {t: (e["attributes"]["type"], e["attributes"].get("kind", "")) for t, e in chosen.items() if e}
    assert kinds["launch"] == kinds["parity"] == ("dev.knative.apiserver.resource.add", "Job")
    assert kinds["phase"] == ("dev.knative.apiserver.resource.update", "TrainJob")
    assert kinds["resync"] == ("dev.knative.sources.ping", "")
    assert chosen["status"] is not None and chosen["status"]["attributes"]["workloadphase"] == "Running"
