"""`cre-fn dev` (behind `make run`): the whole system on one machine, with no cluster.

A real kube-apiserver + etcd with the CRDs and the RBAC of `knative/`; every function served by
functions-framework on loopback, each authenticated as its own ServiceAccount; stand-ins for the
Knative parts: a Broker that routes with the Triggers and delivery settings of `knative/base`, an
ApiServerSource per source of `knative/base` (Resource mode, LIST+WATCH), and a PingSource ticking
`resync` (whose `K_SINK` is the local Broker). `CREFN_*` settings in the environment reach the
functions. Then, by default, the demo: a Job whose TrainJob a Trainer simulator drives through
suspend → resume → failure → checkpoint restart → success, with a live timeline and a summary; the
full event log (replayable JSONL) and the dead letters are written to the output directory.
`--replay FILE` reproduces a recorded event log in the fresh stack instead and compares final states.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from functions.conditions import true_exclusive
from functions.errors import TemporaryError
from functions.gateway import NAMESPACES, Gateway, Resource, cre_goodput, cre_jobs
from functions.localstack.alertmanager import AlertmanagerError, LocalAlertmanager, find_alertmanager, start_webhook
from functions.localstack.apiserver import LocalCluster, free_port
from functions.localstack.apisource import WatchSource
from functions.localstack.broker import LocalBroker, Outcome, triggers_from_manifests
from functions.localstack.client import send
from functions.localstack.manifests import render, service_account_user
from functions.localstack.replay import read_recording
from functions.localstack.serving import ServedFunction
from functions.localstack.trainer import Script, TrainerSimulator, script_from_recording, wait_until

TARGETS = ("phase", "launch", "status", "restart", "resync", "workloadrun", "alert")
RBAC_KINDS = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
DEMO_NAMESPACE, DEMO_JOB = "ml-team", "llama-pretrain"
DEMO_SCRIPT: Script = {0: ["resume", "run", "fail"], 1: ["resume", "run", "complete"]}


@dataclass
class Timeline:
    """Readable live lines: event → function → answer, and every change of a Job's True condition."""

    out: TextIO = sys.stdout
    started: float = field(default_factory=time.monotonic)
    conditions: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    notified: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(namespace, job, alertname) → the last status Alertmanager notified."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def say(self, text: str) -> None:
        with self.lock:
            print(f"{time.monotonic() - self.started:7.2f}s  {text}", file=self.out, flush=True)

    def outcome(self, o: Outcome) -> None:
        attrs = o.record["attributes"]
        what = describe(o.record)
        answer = f"{o.status}"
        if o.reply is not None:
            answer += f" → {short_type(o.reply['attributes']['type'])}{reply_detail(o.reply)}"
        elif o.text:
            answer += f" ({o.text[:90]})"
        retry = f" [retry {o.attempt}]" if o.attempt else ""
        self.say(f"{short_type(attrs['type']):<22} {what:<44} → {o.trigger.removeprefix('crefn-'):<22} {answer}{retry}")

    def published(self, record: dict[str, Any]) -> None:
        attrs = record["attributes"]
        if attrs.get("kind") != "Job" or not str(attrs.get("type", "")).startswith("dev.knative.apiserver"):
            return
        obj = record["data"]
        status = obj.get("status") or {}
        cond = true_exclusive(status.get("conditions") or [])
        if cond is None:
            return
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        now = (cond.type, cond.reason, int(status.get("restartCount", 0)))
        with self.lock:
            changed = self.conditions.get(key) != now
            self.conditions[key] = now
        if changed:
            self.say(f"== Job {key}: {cond.type}/{cond.reason} (restarts {now[2]}): {cond.message}")


def short_type(t: str) -> str:
    return t.removeprefix("dev.knative.apiserver.").removeprefix("dev.crefn.").removeprefix("dev.knative.sources.")


def describe(record: dict[str, Any]) -> str:
    attrs, data = record["attributes"], record.get("data") or {}
    if attrs.get("kind") and isinstance(data, dict) and "metadata" in data:
        attempt = (data["metadata"].get("labels") or {}).get("crefn.dev/attempt")
        suffix = f" #{attempt}" if attempt is not None and attrs["kind"] == "TrainJob" else ""
        return f"{attrs['kind']} {attrs.get('namespace')}/{attrs.get('name')}{suffix}"
    return str(attrs.get("subject") or attrs.get("source", ""))


def reply_detail(reply: dict[str, Any]) -> str:
    attrs, data = reply["attributes"], reply.get("data") or {}
    if "workloadphase" in attrs:
        return f" {attrs['workloadphase']}" + (f"/{data['reason']}" if data.get("reason") else "")
    if "jobcondition" in attrs:
        return f" {attrs['jobcondition']}/{(data.get('new') or {}).get('reason', '')}"
    if attrs["type"].endswith("job.restarted"):
        return f" attempt {data.get('attempt')}/{data.get('maxRestarts')}"
    if attrs["type"].endswith("workload.created"):
        return f" attempt {data.get('attempt')}" + (" (adopted)" if data.get("adopted") else "")
    return ""


class Ticker:
    """PingSource stand-in: a `dev.knative.sources.ping` event to `url` every `interval` seconds."""

    def __init__(self, url: str, interval: float) -> None:
        self.url, self.interval = url, interval
        self._stop = threading.Event()
        self.ticks = 0
        threading.Thread(target=self._run, daemon=True, name="pingsource").start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            record = {"attributes": {"specversion": "1.0", "id": f"tick-{self.ticks}",
                                     "type": "dev.knative.sources.ping", "datacontenttype": "application/json",
                                     "source": "/apis/v1/namespaces/crefn-system/pingsources/crefn-resync"},
                      "data": {}}
            with contextlib.suppress(OSError):
                send(self.url, record)
            self.ticks += 1

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Stack:
    cluster: LocalCluster
    gateway: Gateway
    broker: LocalBroker
    functions: dict[str, ServedFunction]
    out_dir: Path
    alertmanager: LocalAlertmanager | None = None

    def quiet(self) -> bool:
        return self.broker.wait_idle(timeout=0.5, quiet=0.3)


def start_alertmanager(stack: contextlib.ExitStack, work_dir: Path, timeline: Timeline,
                       settings: dict[str, str]) -> LocalAlertmanager | None:
    """A local Alertmanager for the `alert` function, unless the user named one (or none is installed);
    its notifications are printed on the timeline."""
    if settings.get("CREFN_ALERTMANAGER_URL"):
        return None
    try:
        find_alertmanager()
    except AlertmanagerError as e:
        timeline.say(f"      {e}; alerts go to no sink")
        return None

    def notified(body: dict[str, Any]) -> None:
        for alert in body.get("alerts") or []:
            labels = alert.get("labels") or {}
            key = (str(labels.get("namespace")), str(labels.get("job")), str(labels.get("alertname")))
            timeline.notified[key] = str(alert.get("status"))
            timeline.say(f"!! Alertmanager notifies: {alert.get('status')} {labels.get('alertname')} "
                         f"({labels.get('severity')}) {labels.get('namespace')}/{labels.get('job')}")

    server, url = start_webhook(notified)
    stack.callback(server.server_close)
    stack.callback(server.shutdown)
    alertmanager = LocalAlertmanager(work_dir / "alertmanager", url).start()
    stack.callback(alertmanager.stop)
    timeline.say(f"      Alertmanager on {alertmanager.url} (its notifications show as !! lines)")
    return alertmanager


def apply_rbac(gw: Gateway, docs: list[dict[str, Any]]) -> None:
    """Create the ClusterRoles and bindings of the manifests (those already there are left as they are)."""
    for doc in docs:
        if doc["kind"] in RBAC_KINDS:
            res = Resource("rbac.authorization.k8s.io", "v1", RBAC_KINDS[doc["kind"]], doc["kind"], False)
            try:
                gw.create(res, None, doc)
            except TemporaryError as e:
                if e.reason != "AlreadyExists":
                    raise


def resource_of(api_version: str, kind: str) -> Resource:
    group, _, version = api_version.rpartition("/")
    return Resource(group, version, kind.lower() + "s", kind)


STACK_USERS = tuple(service_account_user(f"crefn-{t}") for t in (*TARGETS, "apiserversource"))


@contextlib.contextmanager
def start_stack(out_dir: Path, timeline: Timeline, settings: dict[str, str], ping_interval: float,
                work_dir: Path, cluster: LocalCluster | None = None, namespace: str | None = None) -> Iterator[Stack]:
    """Everything but the demo. An existing `cluster` (with the STACK_USERS tokens) is used as it is;
    `namespace` confines the ApiServerSources to one namespace (all namespaces otherwise)."""
    say = timeline.say
    with contextlib.ExitStack() as stack:
        if cluster is None:
            say("[1/5] starting etcd and kube-apiserver (built on first use, with progress)")
            cluster = stack.enter_context(LocalCluster(work_dir / "cluster", users=STACK_USERS, log=timeline.out))
        else:
            say(f"[1/5] using the API server at {cluster.url}")
        gw = cluster.gateway()
        stack.callback(gw.close)
        docs = render("base")
        apply_rbac(gw, docs)
        alertmanager = start_alertmanager(stack, work_dir, timeline, settings)
        if alertmanager is not None:
            settings = {**settings, "CREFN_ALERTMANAGER_URL": alertmanager.url}
        say("[2/5] serving every function with functions-framework, each as its ServiceAccount")
        broker_port = free_port()
        broker_url = f"http://127.0.0.1:{broker_port}/"
        functions: dict[str, ServedFunction] = {}
        for target in TARGETS:
            env = {**settings, "CREFN_KUBECONFIG": str(cluster.kubeconfig_for(service_account_user(f"crefn-{target}"))),
                   "K_SINK": broker_url}
            served = ServedFunction(target, env, out_dir / f"function-{target}.log")
            stack.callback(served.stop)
            functions[target] = served.start()
        say("[3/5] starting the Broker with the Triggers and delivery of knative/base")
        triggers, _ = triggers_from_manifests(docs, {f"crefn-{t}": f.url for t, f in functions.items()})
        broker = LocalBroker(triggers, dead_letters=out_dir / "dead-letters.jsonl", event_log=out_dir / "events.jsonl",
                             on_outcome=timeline.outcome, on_publish=timeline.published)
        stack.callback(broker.close)
        broker.serve(broker_port)
        say(f"[4/5] starting the ApiServerSources of knative/base → {broker_url}")
        for src in (d for d in docs if d["kind"] == "ApiServerSource"):
            for res in src["spec"]["resources"]:
                selector = ",".join(f"{k}={v}" for k, v in (res.get("selector") or {}).get("matchLabels", {}).items())
                source_gw = cluster.gateway(service_account_user("crefn-apiserversource"))
                source = WatchSource(source_gw, resource_of(res["apiVersion"], res["kind"]), broker.publish,
                                     namespace=namespace, label_selector=selector).start()
                stack.callback(source_gw.close)
                stack.callback(source.stop)
                source.ready.wait(timeout=10)
        say(f"[5/5] PingSource: resync every {ping_interval:g}s")
        ticker = Ticker(functions["resync"].url, ping_interval)
        stack.callback(ticker.stop)
        yield Stack(cluster, gw, broker, functions, out_dir, alertmanager)


def create_job(gw: Gateway, namespace: str, body: dict[str, Any], evidence: bool) -> None:
    if gw.get(NAMESPACES, None, namespace) is None:
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    gw.create(cre_jobs("nvcre.nvidia.com"), namespace, body)
    if evidence:
        name = body["metadata"]["name"]
        goodput = cre_goodput("nvcre.nvidia.com")
        gw.create(goodput, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                       "metadata": {"name": f"{name}-goodput"},
                                       "spec": {"jobRef": {"kind": "Job", "name": name}, "logProfileRef": "default"}})
        gw.patch(goodput, namespace, f"{name}-goodput", {"status": {"lastCheckpointStep": 4200}}, status=True)


def demo_job() -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": DEMO_JOB, "labels": {"crefn.dev/managed": "true", "team": "foundation-models"}},
            "spec": {"checkpoint": {"pvcName": f"{DEMO_JOB}-ckpt", "maxRestarts": 2},
                     "workload": {"trainJob": {
                         "runtimeRef": {"name": "torch-distributed"}, "suspend": True,
                         "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2, "numProcPerNode": 8,
                                     "command": ["torchrun"], "args": ["train.py", "--resume-from", "/ckpt"]}}}}}


def final_state(job: dict[str, Any]) -> tuple[str, str, int]:
    status = job.get("status") or {}
    cond = true_exclusive(status.get("conditions") or [])
    return (cond.type if cond else "", cond.reason if cond else "", int(status.get("restartCount", 0)))


def drive(stack: Stack, namespace: str, job: str, script: Script, timeline: Timeline, timeout: float) -> None:
    trainer = TrainerSimulator(stack.gateway, namespace, job, script, stack.quiet,
                               on_action=lambda a, act: timeline.say(f"-- Trainer: {act} TrainJob attempt {a}")).start()
    jobs = cre_jobs("nvcre.nvidia.com")

    def settled() -> bool:
        obj = stack.gateway.get(jobs, namespace, job) or {}
        return trainer.finished and final_state(obj)[0] in ("Succeeded", "Failed") and stack.quiet()

    wait_until(settled, timeout, interval=0.5)
    trainer.stop()


def summary(stack: Stack, namespace: str, job: str, timeline: Timeline) -> tuple[str, str, int]:
    obj = stack.gateway.get(cre_jobs("nvcre.nvidia.com"), namespace, job) or {}
    state = final_state(obj)
    outcomes = Counter((o.trigger.removeprefix("crefn-"), o.status) for o in stack.broker.outcomes)
    trainjobs = count_trainjobs(stack.out_dir / "events.jsonl", job)
    print("\n== summary", file=timeline.out)
    print(f"   Job {namespace}/{job}: {state[0]}/{state[1]}, restartCount {state[2]}, TrainJobs created {trainjobs}",
          file=timeline.out)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        print(f"     {cond['type']:<11} {cond['status']:<5} {cond['reason']:<18} {cond.get('message', '')}",
              file=timeline.out)
    counts = ", ".join(f"{fn} {st}x{n}" for (fn, st), n in sorted(outcomes.items()))
    print(f"   deliveries: {counts}", file=timeline.out)
    print(f"   events published: {stack.broker.published}; dead letters: {len(stack.broker.dead)}", file=timeline.out)
    if stack.alertmanager is not None:
        active = [f"{a['labels']['alertname']} ({a['labels']['severity']})" for a in stack.alertmanager.alerts()
                  if a["labels"].get("namespace") == namespace and a["labels"].get("job") == job]
        print(f"   active alerts in Alertmanager: {', '.join(active) or 'none'}", file=timeline.out)
    print(f"   event log: {stack.out_dir / 'events.jsonl'} (replay: cre-fn dev --replay FILE)", file=timeline.out)
    return state


def count_trainjobs(event_log: Path, job: str) -> int:
    uids = set()
    for r in read_recording(event_log):
        if r["attributes"].get("type") == "dev.knative.apiserver.resource.add" and r["attributes"].get("kind") == \
                "TrainJob" and (r["data"]["metadata"].get("labels") or {}).get("nvcre.nvidia.com/job") == job:
            uids.add(r["data"]["metadata"]["uid"])
    return len(uids)


def jobs_in_recording(records: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(namespace, name) → (first and last recorded state) of every CRE Job in a recording."""
    found: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for r in records:
        attrs = r["attributes"]
        if attrs.get("kind") == "Job" and str(attrs.get("type", "")).startswith("dev.knative.apiserver.resource"):
            key = (attrs["namespace"], attrs["name"])
            first = found.get(key, (r["data"], r["data"]))[0]
            found[key] = (first, r["data"])
    return found


def restore_job(recorded: dict[str, Any]) -> dict[str, Any]:
    meta = recorded["metadata"]
    keep = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith("crefn.dev/")}
    return {"apiVersion": recorded["apiVersion"], "kind": "Job",
            "metadata": {"name": meta["name"], "labels": meta.get("labels") or {}, "annotations": keep},
            "spec": recorded["spec"]}


def run(out_dir: Path, demo: bool = True, keep: bool = False, replay_file: Path | None = None,
        ping_interval: float = 10.0, timeout: float = 180.0, out: TextIO = sys.stdout,
        cluster: LocalCluster | None = None, namespace: str | None = None) -> int:
    """`cre-fn dev`. `namespace` runs the demo (or reproduces the recording) in that namespace and
    confines the sources to it; `cluster` reuses a running API server (the test suite's)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("events.jsonl", "dead-letters.jsonl"):
        (out_dir / name).unlink(missing_ok=True)
    settings = {k: v for k, v in os.environ.items() if k.startswith("CREFN_")}
    settings.setdefault("CREFN_RESTART_GRACE_SECONDS", "2")
    settings.setdefault("CREFN_LOG_LEVEL", "WARNING")
    timeline = Timeline(out)
    records = read_recording(replay_file) if replay_file else []
    demo_ns = namespace or DEMO_NAMESPACE
    with tempfile.TemporaryDirectory(prefix="crefn-dev-") as tmp, \
            start_stack(out_dir, timeline, settings, ping_interval, Path(tmp), cluster, namespace) as stack:
        code = 0
        if replay_file:
            code = reproduce(stack, records, timeline, timeout, namespace)
        elif demo:
            timeline.say(f"demo: Job {demo_ns}/{DEMO_JOB}, checkpoint restarts allowed: 2, "
                         "TrainJob starts suspended")
            create_job(stack.gateway, demo_ns, demo_job(), evidence=True)
            drive(stack, demo_ns, DEMO_JOB, DEMO_SCRIPT, timeline, timeout)
            if stack.alertmanager is not None:  # let Alertmanager send the resolved notifications
                wait_until(lambda: "firing" not in timeline.notified.values(), 20, interval=0.5)
            state = summary(stack, demo_ns, DEMO_JOB, timeline)
            expected = ("Succeeded", "WorkloadCompleted", 1)
            trainjobs = count_trainjobs(out_dir / "events.jsonl", DEMO_JOB)
            ok = state == expected and trainjobs == 2 and not stack.broker.dead
            print(f"\ndemo {'ended as expected' if ok else f'did NOT end as expected (want {expected}, 2 TrainJobs)'}",
                  file=out)
            code = 0 if ok else 1
        if keep:
            print(f"KUBECONFIG={stack.cluster.kubeconfig}", file=out)
            print(f"BROKER={stack.broker.url}", file=out, flush=True)
            print("the stack stays up; Ctrl-C stops everything", file=out, flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
        return code


def reproduce(stack: Stack, records: list[dict[str, Any]], timeline: Timeline, timeout: float,
              into: str | None = None) -> int:
    """Re-create each recorded Job (in `into` when given), let the Trainer repeat what the recording
    shows it did, and compare the final Job status with the recorded one."""
    jobs = jobs_in_recording(records)
    if not jobs:
        print("the recording holds no CRE Job events: nothing to reproduce", file=timeline.out)
        return 1
    failures = 0
    for (recorded_ns, name), (first, last) in jobs.items():
        namespace = into or recorded_ns
        restarted = any(r["attributes"].get("type") == "dev.crefn.job.restarted" and r["attributes"].get("job") == name
                        for r in records)
        script = script_from_recording(records, name)
        timeline.say(f"replay: Job {namespace}/{name}, Trainer script {json.dumps(script)}")
        create_job(stack.gateway, namespace, restore_job(first), evidence=restarted)
        drive(stack, namespace, name, script, timeline, timeout)
        got = summary(stack, namespace, name, timeline)
        want = final_state(last)
        same = got == want
        failures += not same
        print(f"\nreplay of {namespace}/{name}: recorded {want}, reproduced {got}: {'same' if same else 'DIFFERENT'}",
              file=timeline.out)
    return 1 if failures else 0
