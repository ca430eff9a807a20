"""`python -m localstack soak`: its invariants catch what they promise to, and a short soak (its own stack, chaos,
kills of functions and of the kube-apiserver) holds them. The soak kills its API server, so it runs
its own stack rather than the session's."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from localstack.scenarios import soak
from localstack.scenarios.soak import LIFECYCLES, check

BY_NAME = {o.name: o for o in LIFECYCLES}


def job(kind: str, reason: str, restarts: int) -> dict[str, Any]:
    other = "InProgress" if kind != "InProgress" else "Failed"
    return {"status": {"restartCount": restarts, "conditions": [
        {"type": kind, "status": "True", "reason": reason}, {"type": other, "status": "False", "reason": ""}]}}


def test_a_soak_that_went_as_scripted_holds_every_invariant() -> None:
    scripts = {"a": BY_NAME["fail then succeed"], "b": BY_NAME["no checkpoint"]}
    final = {"a": job("Succeeded", "WorkloadCompleted", 1), "b": job("Failed", "WorkloadFailed", 0)}
    creates = Counter({"a-workload": 2, "b-workload": 1})
    malformed = [{"attributes": {"id": "soak-malformed-0"}}]
    assert check(scripts, final, creates, malformed) == []


def test_each_broken_invariant_is_reported() -> None:
    scripts = {"a": BY_NAME["fail then succeed"], "b": BY_NAME["no checkpoint"], "c": BY_NAME["succeed"],
               "d": BY_NAME["budget spent"]}
    final = {"a": job("Succeeded", "WorkloadCompleted", 1), "b": job("InProgress", "WorkloadRunning", 0),
             "d": job("Failed", "WorkloadFailed", 2)}
    creates = Counter({"a-workload": 3, "b-workload": 1, "d-workload": 3})  # a: a second create for one restart
    dead = [{"attributes": {"id": "a-well-formed-event"}}]
    violations = check(scripts, final, creates, dead)
    assert "a: 3 TrainJob creates for 2 attempt(s)" in violations
    assert "b (no checkpoint): ('InProgress', 'WorkloadRunning', 0), expected ('Failed', 'WorkloadFailed', 0)" \
        in violations and "b: left non-terminal" in violations
    assert "c: the Job is gone" in violations
    assert "d: restartCount 2 > maxRestarts 1" in violations
    assert "1 dead letters of well-formed events: ['a-well-formed-event']" in violations
    assert "2 dead letters the recorder never took" in check(scripts, final, creates, [], lost=2)


def test_creates_are_counted_by_uid_from_the_audit_log_and_the_watch() -> None:
    """A create the audit log never recorded (its API server killed first) still counts, once, from the
    watch; a TrainJob published many times counts once; a refused create does not count."""
    def audited(name: str, uid: str, code: int = 201) -> dict[str, Any]:
        return {"responseStatus": {"code": code}, "responseObject": {"metadata": {"name": name, "uid": uid}}}

    def published(name: str, uid: str, kind: str = "TrainJob") -> dict[str, Any]:
        return {"attributes": {}, "data": {"kind": kind, "metadata": {"name": name, "uid": uid}}}

    counted = soak.created(
        [audited("a-workload", "1"), audited("a-workload", "x", code=409), audited("b-workload", "3")],
        [published("a-workload", "1"), published("a-workload", "1"), published("a-workload", "2"),
         published("b-workload", "3"), published("a-workload", "9", kind="Job")])
    assert counted == Counter({"a-workload": 2, "b-workload": 1})


@pytest.mark.kube  # the soak starts an API server of its own
@pytest.mark.stack
@pytest.mark.timeout(420)  # the soak's own bound (300 s) ends it first, with its account of what was left
def test_a_short_soak_holds_every_invariant(tmp_path: Path) -> None:
    out = io.StringIO()
    code = soak.run(jobs=10, seed=2, kill_every=3.0, timeout=300, out=out, out_dir=tmp_path)
    text = out.getvalue()
    assert code == 0, text[-3000:]
    assert "invariants: all hold" in text and "kube-apiserver kills                  1" in text
    assert "!! kube-apiserver exited: starting it again (restart 1)" in text
    assert (tmp_path / "events.jsonl").stat().st_size > 0
    on_disk = [json.loads(line) for line in (tmp_path / "dead-letters.jsonl").read_text().splitlines()]
    assert on_disk and all(d["attributes"]["id"].startswith("soak-malformed-") for d in on_disk)
    assert all(d["attributes"]["knativeerrorcode"] == "400" for d in on_disk)
    assert f"{'dead letters (on disk)':<28} {len(on_disk):>10}" in text  # the figure is the file's count


def measured(step: int | None, interruptions: int, complete: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"interruptionCount": interruptions}
    if step is not None:
        status["lastCheckpointStep"] = step
    if complete:
        status["completionTime"] = "2026-12-06T10:00:00Z"
    return {"status": status}


def test_each_measured_job_ends_complete_at_a_checkpoint_of_its_last_attempt_each_interruption_counted_once() -> None:
    """A restart is one interruption; a failure that ends the Job one more (CRE's `JobFailed`)."""
    scripts = {"a": BY_NAME["fail then succeed"], "b": BY_NAME["succeed"], "c": BY_NAME["budget spent"],
               "d": BY_NAME["no checkpoint"]}
    saved = {"a": [60, 80], "b": [20], "c": [60]}
    assert soak.measured_violations(scripts, {"a-goodput": measured(80, 1), "b-goodput": measured(20, 0),
                                              "c-goodput": measured(60, 2)}, saved) == []
    violations = soak.measured_violations(
        scripts, {"a-goodput": measured(40, 2), "b-goodput": measured(20, 0, complete=False)}, saved)
    assert violations == [
        "a (fail then succeed): lastCheckpointStep 40, not a checkpoint its last attempt saved ([60, 80])",
        "a (fail then succeed): interruptionCount 2, expected 1",
        "b (succeed): its measurement was never completed",
        "c (budget spent): lastCheckpointStep None, not a checkpoint its last attempt saved ([60])",
        "c (budget spent): interruptionCount None, expected 2",
        "c (budget spent): its measurement was never completed"]
