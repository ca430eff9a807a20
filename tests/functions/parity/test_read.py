"""The `parity` function over HTTP on the real API server, as its ServiceAccount, in observe mode: CRE's verdict
as stored against the functions', the answer `dev.crefn.parity.checked`, a Warning Event where they differ, the
counter once per check, a forged copy in the event deciding nothing, and nothing read in manage mode. The
comparison itself, pure: tests/functions/parity/test_decide.py."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.parity.decide import Read
from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.gateway import Gateway
from functions.runtime.memory import Memory
from functions.runtime.resources import TRAINJOBS, cre_goodput, cre_jobs
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.pods import create_pod
from localstack.eventing.apisource import apiserver_record
from localstack.manifests import service_account_user
from tests.support.answers import counted_here, moved
from tests.support.helpers import Receiver, job_events
from tests.support.world import cache_caught_up, ping

JOBS = cre_jobs("nvcre.nvidia.com")
EARLIER = "2026-11-30T10:00:00Z"


def exclusive(true_type: str, reason: str, message: str) -> list[dict[str, Any]]:
    return [{"type": t, "status": "True" if t == true_type else "False",
             "reason": reason if t == true_type else "NotApplicable", "message": message if t == true_type else "",
             "observedGeneration": 1, "lastTransitionTime": EARLIER} for t in ("InProgress", "Succeeded", "Failed")]


def cre_job(gateway: Gateway, namespace: str, name: str, status: dict[str, Any],
            checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """A managed Job with the status CRE wrote, and its failed TrainJob (controlled by the Job)."""
    spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}
    if checkpoint:
        spec["checkpoint"] = checkpoint
    job = gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                           "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"}},
                                           "spec": spec})
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": f"{name}-workload", "ownerReferences": [
            {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": name, "uid": job["metadata"]["uid"],
             "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    gateway.patch(TRAINJOBS, namespace, f"{name}-workload", {"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "Failed", "message": "exit 1",
         "lastTransitionTime": EARLIER}]}}, status=True)
    return gateway.patch(JOBS, namespace, name, {"status": status}, status=True)


def served(serve: Callable[..., Any], cluster: LocalCluster, **settings: str) -> str:
    env = {"CREFN_KUBECONFIG": str(cluster.kubeconfig_for(service_account_user("crefn-parity"))),
           "CREFN_LOG_LEVEL": "WARNING", **settings}
    return str(serve("parity", **env).url)


def parity_series(url: str, field: str, result: str) -> float:
    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=10) as r:
        text = r.read().decode()
    found = re.search(rf'^crefn_parity_checks_total{{field="{field}",result="{result}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_restart_cre_made_and_the_functions_would_not_is_reported(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """No `spec.checkpoint`, yet CRE says `Restarting workload from checkpoint (restart 1/1)`: the functions would
    fail it. The answer says so field by field, the Job gets a Warning `VerdictsDiffer`, the counter counts it
    once however often the event comes. (A settle window of 0: a difference is reported when first seen.)"""
    url = served(serve, cluster, CREFN_MODE="observe", CREFN_PARITY_SETTLE_SECONDS="0")
    message = "Restarting workload from checkpoint (restart 1/1)"
    job = cre_job(gateway, namespace, "llm", {"conditions": exclusive("InProgress", "WorkloadRestarting", message),
                                              "restartCount": 1})
    record = apiserver_record("update", job, JOBS, "https://api")
    before = parity_series(url, "phase", "differ")
    answer = send(url, record)
    assert answer.status == 200, answer.text
    assert answer.ce["type"] == "dev.crefn.parity.checked" and answer.ce["parityresult"] == "differ"
    data = json.loads(answer.body)
    assert (data["job"], data["verdict"], data["result"]) == (
        {"name": "llm", "namespace": namespace}, "InProgress/WorkloadRestarting", "differ")
    assert data["fields"] == [
        {"field": "phase", "result": "differ", "cre": "InProgress/WorkloadRestarting",
         "functions": "Failed/WorkloadFailed"},
        {"field": "restartCount", "result": "differ", "cre": "1", "functions": "0"}]
    trainjob = gateway.get(TRAINJOBS, namespace, "llm-workload") or {}
    assert data["inputs"] == {"Job": job["metadata"]["resourceVersion"],
                              "TrainJob": trainjob["metadata"]["resourceVersion"]}
    warnings = [(e["type"], e["reason"]) for e in job_events(gateway, namespace)]
    assert warnings == [("Warning", "VerdictsDiffer")]
    assert send(url, record).status == 200  # a redelivery: the same check
    assert parity_series(url, "phase", "differ") == before + 1
    assert len(job_events(gateway, namespace)) == 1
    assert gateway.get(JOBS, namespace, "llm")["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]


def test_a_failure_both_would_record_agrees_with_no_event(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    url = served(serve, cluster, CREFN_MODE="observe")  # an agreement is reported at once
    job = cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed",
                                                                      "Workload TrainJob/llm-workload failed: exit 1")})
    answer = send(url, apiserver_record("update", job, JOBS, "https://api"))
    assert answer.status == 200 and json.loads(answer.body)["result"] == "agree", answer.text
    assert job_events(gateway, namespace) == []


def test_a_forged_copy_in_the_event_decides_nothing(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """The event claims CRE restarted the Job; the Job as stored says it failed, which both would do: agree."""
    url = served(serve, cluster, CREFN_MODE="observe")
    job = cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")})
    forged = json.loads(json.dumps(job))
    forged["status"] = {"conditions": exclusive("InProgress", "WorkloadRestarting", "forged"), "restartCount": 1}
    answer = send(url, apiserver_record("update", forged, JOBS, "https://api"))
    data = json.loads(answer.body)
    assert (data["verdict"], data["result"]) == ("Failed/WorkloadFailed", "agree")


def test_pods_of_the_job_decide_its_failed_nodes(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """CRE attributed gpu-9; the Job's only pod ran on gpu-1 (`nvcre.nvidia.com/job=llm`): failedNodes differ.
    Seen for the first time, the difference waits the settle window (503, Retry-After 60: CRE may not have acted
    yet; counted as a wait); with a window of 0 it is reported."""
    job_inputs_now = served(serve, cluster, CREFN_MODE="observe")
    url = served(serve, cluster, CREFN_MODE="observe", CREFN_PARITY_SETTLE_SECONDS="0")
    create_pod(gateway, namespace, "llm-workload-node-0-0", {"nvcre.nvidia.com/job": "llm"}, node="gpu-1")
    job = cre_job(gateway, namespace, "llm", {
        "conditions": exclusive("Failed", "WorkloadFailed", "failed"),
        "failedNodes": [{"name": "gpu-9", "reason": "WorkloadFailed", "message": "failed"}]})
    record = apiserver_record("update", job, JOBS, "https://api")
    waiting, counted = moved(job_inputs_now, "parity", lambda: send(job_inputs_now, record))
    assert waiting.status == 503 and "CRE may not have acted yet" in waiting.text
    assert int(waiting.headers["retry-after"]) == 60
    assert counted == {("503", "wait"): 1}  # a designed wait, not an error
    data = json.loads(send(url, record).body)
    assert {f["field"]: (f["cre"], f["functions"]) for f in data["fields"]}["failedNodes"] == ("gpu-9", "gpu-1")


def goodput(gateway: Gateway, namespace: str, name: str, checkpoint_step: int) -> None:
    """A GoodputMeasurement of the Job `llm` reporting that last checkpoint step."""
    res = cre_goodput("nvcre.nvidia.com")
    gateway.create(res, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                    "metadata": {"name": name},
                                    "spec": {"jobRef": {"kind": "Job", "name": "llm"}, "logProfileRef": "p"}})
    gateway.patch(res, namespace, name, {"status": {"lastCheckpointStep": checkpoint_step}}, status=True)


def test_the_checkpoint_evidence_is_any_of_the_jobs_goodput_measurements(gateway: Gateway, namespace: str) -> None:
    """CRE failed the Job; `llm-goodput` reports no checkpoint, another GoodputMeasurement of the Job does (CRE's
    `findJobGoodputMeasurement` may take either): the evidence is there, the functions would restart it."""
    from functions.parity import read as parity

    job = cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")},
                  checkpoint={"pvcName": "llm-ckpt", "maxRestarts": 2})
    goodput(gateway, namespace, "llm-goodput", 0)
    goodput(gateway, namespace, "llm-goodput-earlier", 1200)
    ctx = Context(Settings(mode="observe"), gateway)
    observed = parity.read(to_envelope(apiserver_record("update", job, JOBS, "https://api")), ctx)
    assert isinstance(observed, Read) and observed.evidence is True


def test_only_a_difference_is_remembered_with_when_it_was_first_seen(gateway: Gateway, namespace: str) -> None:
    """A difference read at 12:00 and again at 12:00:10, nothing changed: first seen at 12:00. An agreement has no
    first sighting (None)."""
    from functions.parity import read as parity

    differs = cre_job(gateway, namespace, "llm", {"conditions": exclusive("InProgress", "WorkloadRestarting", "r"),
                                                  "restartCount": 1})
    agrees = cre_job(gateway, namespace, "other", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")})
    first = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    now = [first]
    ctx = Context(Settings(mode="observe"), gateway, clock=lambda: now[0])

    def seen(job: dict[str, Any]) -> datetime | None:
        observed = parity.read(to_envelope(apiserver_record("update", job, JOBS, "https://api")), ctx)
        assert isinstance(observed, Read)
        return observed.first_seen

    assert (seen(differs), seen(agrees)) == (first, None)
    now[0] = first + timedelta(seconds=10)
    assert (seen(differs), seen(agrees)) == (first, None)


@pytest.mark.own_process  # reads the served function's log file
def test_in_manage_mode_nothing_is_compared(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    function = serve("parity", **{"CREFN_KUBECONFIG": str(cluster.kubeconfig_for(service_account_user("crefn-parity"))),
                                  "CREFN_LOG_LEVEL": "INFO"})
    job = cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")})
    answer = send(function.url, apiserver_record("update", job, JOBS, "https://api"))
    assert answer.status == 202
    assert "manage mode: the functions write the verdicts, there is nothing to compare" in function.log_path.read_text()


def test_the_tick_makes_the_check_whose_event_was_lost_and_posts_it_once(
        cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """No Job event reached `parity` (dropped): the tick lists the managed Jobs not terminal, or made terminal within
    the settle and recheck windows, checks each and posts a check this process has not sent to K_SINK."""
    from functions.parity import read as parity

    cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")})
    flipped = datetime.strptime(EARLIER, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)  # its Failed condition's time
    sink = Receiver(default=202)
    now = [flipped + timedelta(seconds=90)]
    settings = Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url, mode="observe",
                        parity_settle_seconds=60, parity_recheck_seconds=120)
    ctx = Context(settings, gateway=cluster.gateway(), clock=lambda: now[0])

    def ours() -> list[tuple[str, str]]:
        return [(b["job"]["name"], b["result"]) for b in sink.bodies if b["job"]["namespace"] == namespace]

    try:
        cache_caught_up(gateway, namespace, (JOBS,))  # the tick lists from the API server's watch cache
        outcome = parity.handle(to_envelope(ping()), ctx)
        assert ours() == [("llm", "agree")] and "checks sent" in outcome.reason
        assert sink.requests[-1][1]["ce-type"] == "dev.crefn.parity.checked"
        parity.handle(to_envelope(ping()), ctx)
        assert ours() == [("llm", "agree")]  # sent once by this process
        ctx.memory = Memory()  # as a restarted process
        now[0] = flipped + timedelta(seconds=181)  # made terminal too long ago: not checked again
        parity.handle(to_envelope(ping()), ctx)
        assert ours() == [("llm", "agree")]
        manage = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url), gateway=ctx.gateway,
                         clock=lambda: flipped + timedelta(seconds=90))
        assert parity.handle(to_envelope(ping()), manage).reason.startswith("manage mode")
    finally:
        sink.close()
        ctx.gateway.close()


def parity_counted(field: str, result: str) -> float:
    """What this process's `crefn_parity_checks_total{field,result}` has counted."""
    return counted_here("crefn_parity_checks_total", {"field": field, "result": result})


def test_a_check_the_sink_refuses_is_posted_by_the_next_tick_and_counted_once(
        cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """K_SINK answers 503 to the tick's check: the tick answers 503 and nothing is counted; the next tick posts the
    check again (accepted now) and counts it, and the one after posts nothing."""
    from functions.parity import read as parity
    from functions.runtime.errors import Unavailable

    cre_job(gateway, namespace, "llm", {"conditions": exclusive("Failed", "WorkloadFailed", "failed")})
    flipped = datetime.strptime(EARLIER, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    sink = Receiver(default=202, script=[(503, {})],
                    scripted=lambda body: json.loads(body)["job"]["namespace"] == namespace)
    settings = Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url, mode="observe",
                        parity_settle_seconds=60, parity_recheck_seconds=120)
    ctx = Context(settings, gateway=cluster.gateway(), clock=lambda: flipped + timedelta(seconds=90))

    def posted() -> list[tuple[str, str]]:
        return [(b["job"]["name"], b["result"]) for b in sink.bodies if b["job"]["namespace"] == namespace]

    def counted() -> float:
        """This process's count of phase agreements, less those of other tests' Jobs the ticks checked (the tick
        checks every managed Job the API server holds, and other tests share it)."""
        elsewhere = sum(1 for b in sink.bodies if b["job"]["namespace"] != namespace
                        and any((f["field"], f["result"]) == ("phase", "agree") for f in b["fields"]))
        return parity_counted("phase", "agree") - elsewhere

    try:
        cache_caught_up(gateway, namespace, (JOBS,))
        before = counted()
        try:
            parity.handle(to_envelope(ping()), ctx)
        except Unavailable as e:
            assert re.fullmatch(rf"\d+ Jobs to check, \d+ checks sent, \d+ failed: .*Job {namespace}/llm: K_SINK: "
                                r"answered 503: ok.*", str(e)), e
        else:
            raise AssertionError("a tick whose check K_SINK refused answers 503")
        assert posted() == [("llm", "agree")] and counted() == before
        assert [b for b in sink.bodies if b["job"]["namespace"] == namespace][-1]["fields"] == [
            {"field": "phase", "result": "agree", "cre": "Failed/WorkloadFailed", "functions": "Failed/WorkloadFailed"},
            {"field": "restartCount", "result": "agree", "cre": "0", "functions": "0"}]
        parity.handle(to_envelope(ping()), ctx)
        assert posted() == [("llm", "agree"), ("llm", "agree")]
        assert counted() == before + 1
        parity.handle(to_envelope(ping()), ctx)
        assert posted() == [("llm", "agree"), ("llm", "agree")] and counted() == before + 1
    finally:
        sink.close()
        ctx.gateway.close()
