"""`resync` (SPEC §5), the level-triggered safety net, over HTTP on the real API server as its
ServiceAccount: it ends restart grace periods, and refuses what is not a PingSource tick. Lifecycles
driven by resync alone are the `resync` mode of tests/test_scenarios.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from functions.gateway import Gateway
from functions.transport import send
from tests.support.world import JOBS, Relay, World, phase_record, ping


def test_restart_grace_is_503_until_over_then_resync_launches(functions: Callable[..., dict[str, str]],
                                                              world: Callable[..., World], gateway: Gateway,
                                                              namespace: str, relay: Relay) -> None:
    urls = functions(CREFN_RESTART_GRACE_SECONDS="30")
    w = world(urls)
    w.create_job()
    w.checkpoint_evidence()
    w.settle()
    w.trainer("fail")
    w.settle()
    job = w.job()
    assert job["status"]["restartCount"] == 1 and "workloadRef" not in job["status"]
    not_before = job["metadata"]["annotations"]["crefn.dev/restart-not-before"]
    assert datetime.fromisoformat(not_before.replace("Z", "+00:00")) > datetime.now(UTC) + timedelta(seconds=20)
    launches = w.answers("launch")
    assert launches[-1].status == 503 and "restart grace not over" in launches[-1].text
    # Knative retried until the Trigger's retries ran out; the dead letters say why
    assert {d["attributes"]["knativeerrordata"].split(":")[0] for d in w.dead_letters} == {"restart grace not over"}
    answer = send(urls["launch"], w.job_record())
    assert answer.status == 503 and "restart grace not over" in answer.text
    # the grace ends (here: moved into the past); the next resync tick launches attempt 1
    past = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    gateway.patch(JOBS, namespace, "llm", {"metadata": {"annotations": {"crefn.dev/restart-not-before": past}}})
    relay.attach(w)
    assert send(urls["resync"], ping()).status == 202
    ours = [r for r in relay.received if r["attributes"]["namespace"] == namespace]
    assert [r["attributes"]["type"] for r in ours] == ["dev.crefn.workload.created"]
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    record = phase_record(namespace, "llm", "Running")
    answer = send(functions()["resync"], {"attributes": record["attributes"], "data": {}})
    assert answer.status == 400
