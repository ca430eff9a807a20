"""`resync` (SPEC §5), the level-triggered safety net, over HTTP on the real API server as its
ServiceAccount: it ends restart grace periods, and refuses what is not a PingSource tick. Lifecycles
driven by resync alone are the `resync` mode of tests/system/test_scenarios.py."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.errors import Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS as TRAINJOBS_LISTED
from functions.runtime.resources import Resource
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from tests.support.helpers import CountingGateway
from tests.support.world import JOBS, Relay, World, cache_caught_up, phase_record, ping


@pytest.mark.parametrize("sample", ["running", "failed", "complete", "suspended"])
def test_the_ticks_index_keeps_what_the_adapter_reads(sample: str) -> None:
    """A listed TrainJob is kept without its managedFields and the spec the adapter does not read; its
    phase, message and workload are the same as the whole object's."""
    from functions.domain.adapter import decide_phase
    from functions.domain.attempts import workload_ref_of
    from functions.domain.phases import parse_trainjob
    from functions.resync.read import indexed
    from localstack.samples import load_sample

    whole = load_sample(f"trainjob-resource-update-{sample}")["data"]
    whole["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
    whole["spec"]["runtimePatches"] = [{"manager": "someone", "trainingRuntimeSpec": {"template": {}}}]
    kept = indexed(whole)
    assert "managedFields" not in kept["metadata"] and "runtimePatches" not in kept["spec"]
    assert kept["status"] == whole["status"] and kept["spec"].get("suspend") == whole["spec"].get("suspend")
    assert decide_phase(parse_trainjob(kept)) == decide_phase(parse_trainjob(whole))
    assert workload_ref_of(parse_trainjob(kept)) == workload_ref_of(parse_trainjob(whole))


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
    # the launch, then its first phase (the TrainJob is Running to the adapter), as the event path does it
    assert [r["attributes"]["type"] for r in ours] == ["dev.crefn.workload.created", "dev.crefn.job.condition.changed"]
    assert ours[1]["data"]["new"]["reason"] == "WorkloadRunning"
    assert (w.trainjob() or {})["metadata"]["labels"]["crefn.dev/attempt"] == "1"


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    record = phase_record(namespace, "llm", "Running")
    answer = send(functions()["resync"], {"attributes": record["attributes"], "data": {}})
    assert answer.status == 400


def in_step_job(gateway: Gateway, namespace: str, name: str, managed: bool = True) -> None:
    """A Job whose status already shows its running TrainJob, as the event path leaves it (`managed`: with
    the label `crefn.dev/managed`)."""
    from functions.runtime.resources import TRAINJOBS

    job = gateway.create(JOBS, namespace, {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "labels": {"crefn.dev/managed": "true"} if managed else {}},
        "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "torch-distributed"}}}}})
    gateway.create(TRAINJOBS, namespace, {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": f"{name}-workload", "labels": {
            "app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": name,
            "crefn.dev/attempt": "0", "crefn.dev/managed": "true"},
            "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": name,
                                 "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"runtimeRef": {"name": "torch-distributed"}}})
    stamp = "2026-11-30T10:00:00Z"
    gateway.patch(JOBS, namespace, name, {"status": {
        "workloadRef": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": f"{name}-workload",
                        "namespace": namespace},
        "workloadStartTime": stamp,
        "conditions": [
            {"type": "InProgress", "status": "True", "reason": "WorkloadRunning",
             "message": f"Workload TrainJob/{name}-workload is running", "lastTransitionTime": stamp},
            {"type": "Succeeded", "status": "False", "reason": "NotApplicable", "message": "",
             "lastTransitionTime": stamp},
            {"type": "Failed", "status": "False", "reason": "NotApplicable", "message": "",
             "lastTransitionTime": stamp}]}}, status=True)


def test_a_tick_lists_and_sends_only_where_jobs_drift(cluster: LocalCluster, gateway: Gateway,
                                                      namespace: str) -> None:
    from functions.resync import read as resync
    from functions.runtime.resources import TRAINJOBS
    from tests.support.helpers import Receiver

    for i in range(12):
        in_step_job(gateway, namespace, f"job-{i}")
    sink = Receiver(default=202)
    counting = CountingGateway(cluster.gateway())
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url), gateway=counting)
    try:
        envelope = to_envelope(ping())
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        outcome = resync.handle(envelope, ctx)
        ours = [b for b in sink.bodies if b["job"]["namespace"] == namespace]
        assert ours == [] and "jobs" in outcome.reason  # in step: nothing to send
        assert [c for c in counting.calls if namespace in c[1]] == []  # no GET per Job: two cluster-wide LISTs
        assert counting.calls[:2] == [("GET", TRAINJOBS.path()), ("GET", JOBS.path())]

        gateway.delete(TRAINJOBS, namespace, "job-3-workload")  # drift: the TrainJob is gone
        counting.calls.clear()
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        resync.handle(envelope, ctx)
        ours = [b for b in sink.bodies if b["job"]["namespace"] == namespace]
        assert [(b["job"]["name"], b["phase"], b["reason"]) for b in ours] == [("job-3", "Failed", "WorkloadDeleted")]
        # the LIST's word alone is not enough to call it gone: one GET confirms it
        confirmed = ("GET", TRAINJOBS.path(namespace) + "/job-3-workload")
        assert [c for c in counting.calls if namespace in c[1]] == [confirmed]
    finally:
        sink.close()
        counting.close()


def test_a_tick_lists_a_finished_job_no_more_and_the_sweep_does(cluster: LocalCluster, gateway: Gateway,
                                                                 namespace: str) -> None:
    """A finished Job (terminal, nothing due) and its TrainJob get the finished label on a tick; later ticks
    do not list them. What a label cannot catch — the Job made unfinished by hand, its TrainJob then gone —
    only the sweep (the tick of the hour's first minute, on the injected clock) sees: it takes the label
    off and sends the Job's event."""
    from functions.resync import read as resync
    from functions.runtime.resources import TRAINJOBS
    from tests.support.helpers import Receiver

    in_step_job(gateway, namespace, "done")
    conditions = (gateway.get(JOBS, namespace, "done") or {})["status"]["conditions"]
    succeeded = [{**c, "status": "True" if c["type"] == "Succeeded" else "False",
                  "reason": "WorkloadCompleted" if c["type"] == "Succeeded" else "NotApplicable"} for c in conditions]
    gateway.patch(JOBS, namespace, "done", {"status": {"conditions": succeeded}}, status=True)
    sink = Receiver(default=202)
    now = [datetime(2026, 12, 2, 10, 17, tzinfo=UTC)]
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url), gateway=cluster.gateway(),
                  clock=lambda: now[0])

    def finished() -> tuple[str | None, str | None]:
        return tuple(((gateway.get(res, namespace, name) or {})["metadata"].get("labels") or {})
                     .get("crefn.dev/finished") for res, name in ((JOBS, "done"), (TRAINJOBS, "done-workload")))

    def ours() -> list[tuple[str, str]]:
        return [(b["job"]["name"], b.get("reason", "")) for b in sink.bodies if b["job"]["namespace"] == namespace]

    try:
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        resync.handle(to_envelope(ping()), ctx)
        assert finished() == ("true", "true") and ours() == []
        # by hand: the Job running again, with a TrainJob that is gone (a listed Job would send Failed/deleted)
        gateway.patch(JOBS, namespace, "done", {"status": {"conditions": conditions}}, status=True)
        gateway.delete(TRAINJOBS, namespace, "done-workload")
        now[0] = datetime(2026, 12, 2, 10, 18, tzinfo=UTC)
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        resync.handle(to_envelope(ping()), ctx)
        assert ours() == []  # not listed: the label excludes it
        now[0] = datetime(2026, 12, 2, 11, 0, 30, tzinfo=UTC)  # the sweep
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        resync.handle(to_envelope(ping()), ctx)
        assert ours() == [("done", "WorkloadDeleted")]
        assert ((gateway.get(JOBS, namespace, "done") or {})["metadata"].get("labels") or {}).get(
            "crefn.dev/finished") is None
    finally:
        sink.close()
        ctx.gateway.close()


class PagedGateway(Gateway):
    """The real gateway, its LISTs two objects a page: a sweep's LIST, from etcd, takes several pages."""

    def pages(self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500,
              field_selector: str = "", cached: bool = False) -> Iterator[dict[str, Any]]:
        return super().pages(res, namespace, label_selector, 2, field_selector, cached)


@pytest.mark.parametrize(("raw", "named"), [
    ({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "llm", "namespace": "ml"}},
     "ml/llm"),
    ({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
      "metadata": {"name": "odd", "namespace": "ml"}, "status": {"restartCount": "many"}}, "odd"),
    ({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {}, "status": {"restartCount": "many"}},
     "?"),
], ids=["a-job", "unparsable", "unparsable-nameless"])
def test_the_ticks_results_name_a_job_by_namespace_and_name_else_by_its_name(raw: dict[str, Any],
                                                                             named: str) -> None:
    from functions.resync import read as resync

    assert resync.job_name(raw, Context(Settings())) == named


@pytest.mark.parametrize(("workload_ref", "key"), [
    ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-run-2",
      "namespace": "training"}, ("training", "llm-run-2")),
    ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-run-2"}, ("ml", "llm-run-2")),
    (None, ("ml", "llm-workload")),
], ids=["its-workload-ref", "its-workload-ref-in-the-jobs-namespace", "the-name-a-launch-gives"])
def test_a_jobs_workload_is_looked_for_where_its_workload_ref_says(workload_ref: dict[str, str] | None,
                                                                    key: tuple[str, str]) -> None:
    """The tick's index is looked up (and a TrainJob read) where the Job's `workloadRef` says, else under the name
    a launch would give it."""
    from functions.domain.jobs import parse_job
    from functions.resync import read as resync

    raw = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "llm", "namespace": "ml"},
           "status": {"workloadRef": workload_ref} if workload_ref else {}}
    assert resync.workload_key(parse_job(raw, "nvcre.nvidia.com")) == key


class ListingGateway(Gateway):
    """No API server: each LIST is recorded (the resource, the label selector, whether from the watch cache) and
    finds nothing."""

    def __init__(self) -> None:
        self.listed: list[tuple[str, str, bool]] = []

    def pages(self, res: Resource, namespace: str | None = None, label_selector: str = "", page_size: int = 500,
              field_selector: str = "", cached: bool = False) -> Iterator[dict[str, Any]]:
        self.listed.append((res.plural, label_selector, cached))
        return iter(())


@pytest.mark.parametrize(("sweep", "manage_all", "jobs"), [
    (False, False, ("crefn.dev/managed=true,!crefn.dev/finished", True)),
    (True, False, ("crefn.dev/managed=true", False)),
    (False, True, ("!crefn.dev/finished", True)),
    (True, True, ("", False)),
], ids=["tick", "sweep", "tick-manage-all", "sweep-manage-all"])
def test_a_tick_lists_the_unfinished_jobs_from_the_watch_cache_and_the_sweep_every_job_from_etcd(
        sweep: bool, manage_all: bool, jobs: tuple[str, bool]) -> None:
    """A tick's two LISTs pick the managed objects without the finished label from the API server's watch cache;
    the sweep's pick the finished ones too, from etcd; with `CREFN_MANAGE_ALL`, every Job."""
    from functions.resync import read as resync

    listing = ListingGateway()
    ctx = Context(Settings(manage_all=manage_all), gateway=listing)
    assert resync.resync_pages(ctx, sweep=sweep) == (0, [])
    trainjobs = "app.kubernetes.io/managed-by=nvcre" + ("" if sweep else ",!crefn.dev/finished")
    assert listing.listed == [("trainjobs", trainjobs, not sweep), ("jobs", *jobs)]


def drifted_jobs(gateway: Gateway, namespace: str, names: list[str], managed: bool = True) -> None:
    """In-step Jobs whose TrainJobs are then gone: each one's tick sends its Failed/WorkloadDeleted phase."""
    from functions.runtime.resources import TRAINJOBS

    for name in names:
        in_step_job(gateway, namespace, name, managed)
        gateway.delete(TRAINJOBS, namespace, f"{name}-workload")


def test_a_sweep_over_many_pages_counts_every_job_and_keeps_every_pages_results(cluster: LocalCluster,
                                                                                 gateway: Gateway,
                                                                                 namespace: str) -> None:
    """The sweep lists from etcd page by page (two Jobs a page here): it counts the Jobs of every page and
    reports what the Jobs of every page sent, not the last page's alone."""
    from functions.resync import read as resync
    from tests.support.helpers import Receiver

    drifted_jobs(gateway, namespace, ["drift-0", "drift-1", "drift-2", "drift-3", "drift-4"])
    sink = Receiver(default=202)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url),
                  gateway=PagedGateway.connect(str(cluster.kubeconfig)))
    try:
        jobs, results = resync.resync_pages(ctx, sweep=True)
        assert jobs >= 5  # every managed Job of the cluster, these five among them
        assert sorted((r.job, r.event, r.error) for r in results if r.job.startswith(f"{namespace}/")) == [
            (f"{namespace}/drift-{i}", "dev.crefn.workload.phase", "") for i in range(5)]
    finally:
        sink.close()
        ctx.gateway.close()


@pytest.mark.parametrize("manage_all", [False, True], ids=["labelled-only", "manage-all"])
def test_a_tick_lists_the_unlabelled_jobs_only_with_manage_all(cluster: LocalCluster, gateway: Gateway,
                                                              namespace: str, manage_all: bool) -> None:
    """With `CREFN_MANAGE_ALL` every Job is managed: the tick lists those without `crefn.dev/managed` too."""
    from functions.resync import read as resync
    from tests.support.helpers import Receiver

    drifted_jobs(gateway, namespace, ["labelled"])
    drifted_jobs(gateway, namespace, ["unlabelled"], managed=False)
    sink = Receiver(default=202)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url, manage_all=manage_all),
                  gateway=cluster.gateway())
    try:
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        _, results = resync.resync_pages(ctx, sweep=False)
        assert sorted(r.job for r in results if r.job.startswith(f"{namespace}/")) == (
            [f"{namespace}/labelled", f"{namespace}/unlabelled"] if manage_all else [f"{namespace}/labelled"])
    finally:
        sink.close()
        ctx.gateway.close()


def test_a_trainjob_newer_than_the_ticks_list_is_not_called_gone(cluster: LocalCluster, gateway: Gateway,
                                                                   namespace: str) -> None:
    """The index the tick listed lacks the Job's TrainJob (created after that LIST): one GET finds it
    in step, and nothing is sent."""
    from functions.resync import read as resync
    from tests.support.helpers import Receiver

    in_step_job(gateway, namespace, "newer")
    sink = Receiver(default=202)
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=sink.url), gateway=cluster.gateway())
    try:
        result = resync.resync_job(gateway.get(JOBS, namespace, "newer") or {}, {}, ctx)
        assert (result.event, result.error) == ("", "") and sink.bodies == []
    finally:
        sink.close()
        ctx.gateway.close()


def test_a_tick_that_cannot_deliver_is_503(cluster: LocalCluster, gateway: Gateway, namespace: str,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """An event lost on the way to K_SINK must be sent again: the tick is retried (503), never 202. Its line
    counts the failures and names the first of them (`namespace/name: error`) as its `errors` field."""
    from functions.resync import read as resync
    from functions.runtime.resources import TRAINJOBS
    from functions.runtime.server import answer_for
    from tests.support.helpers import closed_port

    in_step_job(gateway, namespace, "drifted")
    gateway.delete(TRAINJOBS, namespace, "drifted-workload")  # drift: an event to send
    ctx = Context(Settings(kubeconfig=str(cluster.kubeconfig), k_sink=f"http://127.0.0.1:{closed_port()}/"),
                  gateway=cluster.gateway())
    try:
        cache_caught_up(gateway, namespace, (TRAINJOBS_LISTED, JOBS))
        with caplog.at_level(logging.INFO, logger="crefn"):
            resync.handle(to_envelope(ping()), ctx)
        raise AssertionError("a tick that could not deliver was answered 202")
    except Unavailable as e:
        assert answer_for(e) == 503 and "0 failed" not in str(e), str(e)
        (line,) = [r for r in caplog.records if r.getMessage().startswith("resync: ")]
        logged = line.fields  # type: ignore[attr-defined]
        assert logged["function"] == "resync" and logged["failed"] >= 1 and logged["sweep"] is False
        assert logged["jobs"] >= logged["failed"] + logged["sent"]
        assert len(logged["errors"]) == min(logged["failed"], 5)
        assert all(": " in error for error in logged["errors"])
        assert str(e).endswith(f"; first: {logged['errors'][0]}")
    finally:
        ctx.gateway.close()


def test_a_tick_posts_with_the_oidc_token_read_at_each_send(serve: Callable[..., Any], cluster: LocalCluster,
                                                            gateway: Gateway, namespace: str) -> None:
    """Served as its ServiceAccount with CREFN_OIDC_TOKEN_PATH, resync posts to K_SINK with `Authorization:
    Bearer` and the file's token, read again at each send (the kubelet rotates a projected token); without the
    setting, no header. A file that cannot be read is a 503 naming it; the token is in no answer and no log."""
    import json
    import shutil
    import tempfile
    from pathlib import Path

    from functions.runtime.resources import TRAINJOBS
    from localstack.manifests import service_account_user
    from tests.support.helpers import Receiver

    in_step_job(gateway, namespace, "drifted")
    gateway.delete(TRAINJOBS, namespace, "drifted-workload")  # drift: every tick sends this Job's event
    folder = Path(tempfile.mkdtemp(prefix="oidc"))  # a short path: the 503's one line names it
    token = folder / "token"
    token.write_text("first.token.value\n")
    sink = Receiver(default=202)
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-resync")))

    def headers() -> list[str | None]:
        """The Authorization header of each event sent for this test's Job."""
        return [h.get("authorization") for _, h, body in sink.requests if json.loads(body)["job"]["name"] == "drifted"
                and json.loads(body)["job"]["namespace"] == namespace]

    try:
        plain = serve("resync", CREFN_KUBECONFIG=kubeconfig, K_SINK=sink.url)
        assert send(plain.url, ping()).status == 202
        assert headers() == [None]
        resync = serve("resync", CREFN_KUBECONFIG=kubeconfig, K_SINK=sink.url, CREFN_OIDC_TOKEN_PATH=str(token))
        assert send(resync.url, ping()).status == 202
        token.write_text("second.token.value")  # rotated
        assert send(resync.url, ping()).status == 202
        assert headers() == [None, "Bearer first.token.value", "Bearer second.token.value"]
        token.unlink()
        gone = send(resync.url, ping())
        token.mkdir()
        unreadable = send(resync.url, ping())
        assert headers() == [None, "Bearer first.token.value", "Bearer second.token.value"]  # nothing sent without it
    finally:
        sink.close()
        shutil.rmtree(folder)
    assert gone.status == 503 and f"OIDC token file {token} cannot be read (No such file or directory)" in gone.text
    assert unreadable.status == 503 and f"OIDC token file {token} cannot be read (Is a directory)" in unreadable.text
    logged = resync.log_path.read_text() if resync.log_path and resync.log_path.exists() else ""
    assert "cannot be read" in logged or not logged
    assert "token.value" not in logged + gone.text + unreadable.text


@pytest.mark.own_process  # reads the served functions' log files
def test_a_sink_quoting_the_oidc_token_or_a_k_sink_url_with_credentials_shows_them_nowhere(
        serve: Callable[..., Any], cluster: LocalCluster, gateway: Gateway, namespace: str, tmp_path: Any) -> None:
    """K_SINK refusing the event with an answer that quotes the bearer token it was sent, and a K_SINK whose
    URL holds a password or a query token and cannot be reached: resync answers 503 (the tick is retried),
    and neither its answer nor its log holds the token, the password or the query's token."""
    from functions.runtime.resources import TRAINJOBS
    from localstack.manifests import service_account_user
    from tests.support.helpers import Receiver, closed_port

    in_step_job(gateway, namespace, "quoted")
    gateway.delete(TRAINJOBS, namespace, "quoted-workload")  # drift: every tick sends this Job's event
    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.OIDCSECRETpayload.sig\n")
    sink = Receiver(401, b"could not verify request: Bearer eyJhbGciOiJSUzI1NiJ9.OIDCSECRETpayload.sig")
    kubeconfig = str(cluster.kubeconfig_for(service_account_user("crefn-resync")))
    down = closed_port()
    try:
        quoting = serve("resync", CREFN_KUBECONFIG=kubeconfig, K_SINK=sink.url, CREFN_OIDC_TOKEN_PATH=str(token),
                        CREFN_LOG_LEVEL="INFO")
        refused = send(quoting.url, ping())
        password = serve("resync", CREFN_KUBECONFIG=kubeconfig, CREFN_LOG_LEVEL="INFO",
                         K_SINK=f"http://crefn:PASSWORDsecret@127.0.0.1:{down}/ns/default")
        in_url = send(password.url, ping())
        query = serve("resync", CREFN_KUBECONFIG=kubeconfig, CREFN_LOG_LEVEL="INFO",
                      K_SINK=f"http://127.0.0.1:{down}/ns/default?access_token=T0KENsecret")
        in_query = send(query.url, ping())
    finally:
        sink.close()
    assert refused.status == 503
    assert "K_SINK: answered 401: could not verify request: Bearer [redacted]" in refused.text
    for answer in (in_url, in_query):
        assert answer.status == 503 and "K_SINK: unreachable ([Errno 111] Connection refused)" in answer.text
    logged = "".join(s.log_path.read_text() for s in (quoting, password, query) if s.log_path is not None)
    assert logged.count("K_SINK: answered 401: could not verify request: Bearer [redacted]") >= 1
    for shown in (refused.text, in_url.text, in_query.text, logged):
        assert "OIDCSECRET" not in shown and "PASSWORDsecret" not in shown and "T0KENsecret" not in shown
