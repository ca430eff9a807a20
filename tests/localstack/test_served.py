"""`make bench`'s rows per served target (`localstack.bench.served`): each target is sent an event the default
install's Triggers (observe's for `parity`; for `resync`, its PingSource) route to it."""

from __future__ import annotations

import json

import pytest

from functions.registry import METRICS, SERVED, TARGETS
from functions.runtime.client import send
from localstack.bench.served import MODELS, event_for, phase_answers
from localstack.samples import load_sample
from localstack.serving import ServedFunction


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


@pytest.mark.process
def test_the_models_floor_answers_the_phase_event_of_the_trainjob_it_is_sent() -> None:
    """The bench's models floor does what a `phase` within SPEC cannot do without: the TrainJob validated, the
    phase event's data built and dumped by the catalog's models."""
    sample = load_sample("trainjob-resource-update-failed")
    with ServedFunction("models", {}, source=MODELS) as models:
        answer = send(models.url, sample, timeout=10)
    data = json.loads(answer.body)
    assert answer.status == 200
    assert data["job"] == {"name": "llama-pretrain-workload", "namespace": "ml-team"}
    assert data["workload"]["kind"] == "TrainJob" and data["workload"]["name"] == "llama-pretrain-workload"
    assert data["phase"] == "Failed" and data["observedAt"].endswith("Z")
