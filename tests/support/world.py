"""A world for lifecycle tests: the real API server, the functions served over HTTP, the dev stack's
Broker (`localstack.eventing.broker.LocalBroker`, deterministic mode) with the Triggers and delivery of
knative/base (or of an install), a polling ApiServerSource and the dev stack's Kubeflow Trainer
actions (`localstack.trainer.apply_action`).

A world is stepped: `settle()` lets the source and the Broker run until nothing moves; `tick()` is a
PingSource tick to `resync` (whose events reach the Broker through the session's relay, its K_SINK);
`play(script)` runs a Trainer script per attempt, one action at a time, letting the world move in
between. `event_plane()` is the threaded variant (the Broker's workers and watching sources), for
tests that run the Trainer simulator itself.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from events.emitted import JobRef, WorkloadPhaseData, WorkloadRef
from events.types import ATTEMPT_LABEL, CRE_GROUP_DEFAULT, Phase
from functions.domain.attempts import workload_name
from functions.runtime.client import send
from functions.runtime.codec import Record, decode
from functions.runtime.gateway import Gateway
from functions.runtime.resources import PODS, TRAINJOBS, Resource, cre_goodput, cre_jobs
from localstack.cluster.kubelet import StandInKubelet
from localstack.eventing.apisource import PollingSource, WatchSource, apiserver_record
from localstack.eventing.broker import DeliveryAttempt, LocalBroker, Trigger, triggers_from_manifests
from localstack.manifests import render
from localstack.trainer import Script, apply_action

GROUP = CRE_GROUP_DEFAULT
JOBS = cre_jobs(GROUP)
LIFECYCLE = ("phase", "launch", "measurements", "status", "restart", "timeout", "nodehealth", "validate", "resync",
             "workloadrun")


@functools.cache
def _rendered(install: str) -> tuple[dict[str, Any], ...]:
    return tuple(render(install))


def knative_triggers(urls: Mapping[str, str], install: str = "installs/default") -> list[Trigger]:
    """The Triggers of knative/<install> whose subscriber is among `urls` (function target → URL)."""
    triggers, _ = triggers_from_manifests(list(_rendered(install)), {f"crefn-{t}": url for t, url in urls.items()})
    return triggers


def phase_record(ns: str, job: str, phase: str, attempt: int = 0, reason: str = "") -> Record:
    """A `dev.crefn.workload.phase` event as `phase` sends it."""
    data = WorkloadPhaseData(job=JobRef(name=job, namespace=ns),
                             workload=WorkloadRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
                                                  name=f"{job}-workload", namespace=ns, attempt=attempt),
                             phase=Phase(phase), reason=reason, observed_at=datetime.now(UTC))
    return {"attributes": {"specversion": "1.0", "id": "x", "source": "/crefn/phase",
                           "type": "dev.crefn.workload.phase", "subject": f"{ns}/{job}", "workloadphase": phase,
                           "namespace": ns, "job": job, "partitionkey": f"{ns}/{job}"},
            "data": data.model_dump(mode="json", by_alias=True)}


def ping() -> Record:
    return {"attributes": {"specversion": "1.0", "id": "tick", "source": "/apis/v1/namespaces/crefn/pingsources/resync",
                           "type": "dev.knative.sources.ping", "datacontenttype": "application/json"},
            "data": {}}


@dataclass
class World:
    gw: Gateway
    ns: str
    broker: LocalBroker
    source: PollingSource | None
    resync_url: str = ""
    group: str = GROUP
    resynced: list[Record] = field(default_factory=list)
    """What resync sent for this namespace (through the relay), in order."""
    kubelet: StandInKubelet | None = None
    """The stand-in kubelet the Trainer's pods are placed behind (None: the Trainer makes no pods)."""

    @property
    def jobs(self) -> Resource:
        return cre_jobs(self.group)

    # -- the user -----------------------------------------------------------------------------

    def create_job(self, name: str = "llm", max_restarts: int | None = 2, suspend: bool = False,
                   managed: bool = True, nodes: str = "") -> dict[str, Any]:
        """A Job with a TrainJob workload; `max_restarts=None`: no spec.checkpoint at all; `nodes`: the
        group-nodes annotation CRE's Workflow sets on the Jobs it creates."""
        trainjob: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"},
                                    "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2}}
        if suspend:
            trainjob["suspend"] = True
        spec: dict[str, Any] = {"workload": {"trainJob": trainjob}}
        if max_restarts is not None:
            spec["checkpoint"] = {"pvcName": f"{name}-ckpt", "maxRestarts": max_restarts}
        labels = {"crefn.dev/managed": "true"} if managed else {}
        annotations = {f"{self.group}/group-nodes": nodes} if nodes else {}
        return self.gw.create(self.jobs, self.ns, {"apiVersion": f"{self.group}/v1alpha1", "kind": "Job",
                                                   "metadata": {"name": name, "labels": labels,
                                                                "annotations": annotations}, "spec": spec})

    def checkpoint_evidence(self, job: str = "llm", step: int = 1200) -> None:
        goodput = cre_goodput(self.group)
        self.gw.create(goodput, self.ns, {"apiVersion": f"{self.group}/v1alpha1", "kind": "GoodputMeasurement",
                                          "metadata": {"name": f"{job}-goodput"},
                                          "spec": {"jobRef": {"kind": "Job", "name": job}, "logProfileRef": "p"}})
        self.gw.patch(goodput, self.ns, f"{job}-goodput", {"status": {"lastCheckpointStep": step}}, status=True)

    def job(self, name: str = "llm") -> dict[str, Any]:
        obj = self.gw.get(self.jobs, self.ns, name)
        assert obj is not None
        return obj

    def trainjob(self, job: str = "llm") -> dict[str, Any] | None:
        return self.gw.get(TRAINJOBS, self.ns, workload_name(job))

    def launched_by_cre(self, job: str = "llm") -> dict[str, Any]:
        """The Job's first workload as CRE's own controller launches it (observe mode launches nothing): the
        TrainJob, owned by the Job, and the Job's `workloadRef`."""
        owner = self.job(job)
        trainjob = self.gw.create(TRAINJOBS, self.ns, {
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": workload_name(job), "labels": {ATTEMPT_LABEL: "0"}, "ownerReferences": [{
                "apiVersion": owner["apiVersion"], "kind": "Job", "name": job, "uid": owner["metadata"]["uid"],
                "controller": True}]},
            "spec": {"runtimeRef": {"name": "torch-distributed"}}})
        self.gw.patch(self.jobs, self.ns, job, {"status": {"workloadRef": {
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": workload_name(job),
            "namespace": self.ns}}}, status=True)
        return trainjob

    # -- the Trainer --------------------------------------------------------------------------

    def trainer(self, action: str, job: str = "llm") -> None:
        """One action of the dev stack's Trainer on the Job's current TrainJob."""
        tj = self.trainjob(job)
        assert tj is not None, f"no TrainJob for {job} to {action}: {self.dump()}"
        apply_action(self.gw, tj, action, self.kubelet)

    def succeed(self, job: str = "llm") -> None:
        """The Job's workload launched, run and completed, the world settled after each step: the Job Succeeded."""
        for action in ("", "run", "complete"):
            if action:
                self.trainer(action, job)
            self.settle()
        assert self.final(job)[:2] == ("Succeeded", "WorkloadCompleted"), self.dump()

    def play(self, script: Script, job: str = "llm") -> list[tuple[int, str]]:
        """Run a Trainer script (attempt → actions): each action on the TrainJob of its attempt, once the
        world has moved on after the previous one; every action must find its attempt's TrainJob."""
        progress: dict[int, int] = {}
        done: list[tuple[int, str]] = []
        while len(done) < sum(len(steps) for steps in script.values()):
            self.advance()
            tj = self.trainjob(job)
            assert tj is not None, f"after {done}: no TrainJob for {job}: {self.dump()}"
            attempt = int(tj["metadata"].get("labels", {}).get(ATTEMPT_LABEL, "0"))
            steps, index = script.get(attempt, []), progress.get(attempt, 0)
            assert index < len(steps), f"after {done}: attempt {attempt} has no action left: {self.dump()}"
            apply_action(self.gw, tj, steps[index], self.kubelet)
            progress[attempt] = index + 1
            done.append((attempt, steps[index]))
        self.advance()
        return done

    # -- the event plane ----------------------------------------------------------------------

    def advance(self) -> None:
        """Let the world move: the source and the Broker, or, without a source, resync's ticks."""
        if self.source is None:
            self.tick()
        else:
            self.settle()

    def settle(self, rounds: int = 40) -> None:
        """Let the source and the Broker run until nothing moves."""
        assert self.source is not None
        for _ in range(rounds):
            changed = self.source.poll()
            if not changed and self.broker.idle():
                return
            self.broker.drain()
        raise AssertionError(f"did not settle: {self.dump()}")

    def tick(self, rounds: int = 3) -> None:
        """Resync only: a PingSource tick, then deliver what it sent (each tick once the API server's watch cache,
        which the tick lists from, has this world's latest writes)."""
        assert self.resync_url, "no resync in this world"
        for _ in range(rounds):
            cache_caught_up(self.gw, self.ns, (TRAINJOBS, self.jobs))
            answer = send(self.resync_url, ping())
            assert answer.status == 202, answer.text  # 503: some Job could not be handled or its event not delivered
            self.broker.drain()

    # -- what happened ------------------------------------------------------------------------

    def final(self, job: str = "llm") -> tuple[str, str, int]:
        status = self.job(job).get("status") or {}
        true = [c for c in status.get("conditions") or [] if c["status"] == "True"
                and c["type"] in ("InProgress", "Succeeded", "Failed")]
        assert len(true) == 1, status
        return true[0]["type"], true[0]["reason"], int(status.get("restartCount", 0))

    def trainjobs_created(self) -> int:
        """TrainJobs created in this world: seen added by the source, or (resync alone) announced by
        resync's `workload.created`."""
        if self.source is not None:
            return len(self.source.uids_added["TrainJob"])
        return len({r["data"]["workload"]["uid"] for r in self.resynced
                    if r["attributes"]["type"] == "dev.crefn.workload.created"})

    def answers(self, function: str) -> list[DeliveryAttempt]:
        """Every delivery to `function` (through any of its Triggers), in order."""
        return [o for o in self.broker.outcomes if o.trigger.startswith(f"crefn-{function}-")]

    def replies(self) -> list[tuple[str, str]]:
        """(Trigger, reply type) of every delivery answered with an event, in order."""
        return [(o.trigger, o.reply["attributes"]["type"]) for o in self.broker.outcomes if o.reply]

    @property
    def dead_letters(self) -> list[Record]:
        return self.broker.dead

    def job_record(self, name: str = "llm") -> Record:
        """The ApiServerSource's update event of the Job as it is now."""
        return apiserver_record("update", self.job(name), self.jobs, self.gw.host)

    def dump(self) -> str:
        return json.dumps(self.broker.summary()[-30:], indent=1)


def cache_caught_up(gw: Gateway, ns: str, resources: Sequence[Resource], timeout: float = 10) -> None:
    """Wait until the API server's watch cache serves, for the namespace, the objects etcd holds (same names and
    resourceVersions). resync lists from that cache: a tick right after a write may not see it yet, which the
    next tick mends in a cluster, and a test that ticks once must not depend on."""
    def listed(cached: bool) -> set[tuple[str, str, str]]:
        return {(res.plural, o["metadata"]["name"], o["metadata"]["resourceVersion"])
                for res in resources for o in gw.list_all(res, ns, cached=cached)}

    deadline = time.monotonic() + timeout
    while listed(cached=True) != listed(cached=False):
        assert time.monotonic() < deadline, f"the watch cache did not catch up with etcd in {ns} within {timeout}s"
        time.sleep(0.05)


def make_world(gw: Gateway, ns: str, urls: Mapping[str, str], poll: bool = True, group: str = GROUP,
               install: str = "installs/default", duplicate: bool = False, swap: bool = False,
               kubelet: StandInKubelet | None = None) -> World:
    """A world in `ns`: the Broker (Triggers of knative/<install>) delivers to `urls` (function target →
    URL) one round at a time; `poll=False`: no ApiServerSource, resync's ticks drive the world."""
    broker = LocalBroker(knative_triggers(urls, install), workers=0, duplicate=duplicate, swap=swap)
    source = PollingSource(gw, [TRAINJOBS, cre_jobs(group), PODS], ns, broker.publish) if poll else None
    return World(gw, ns, broker, source, resync_url=urls.get("resync", ""), group=group, kubelet=kubelet)


@dataclass
class Relay:
    """Where resync's `K_SINK` points: records what it receives and hands the events of the attached
    world's namespace to that world's Broker (503 while no world is attached). resync re-drives Jobs
    of every namespace; other tests' Jobs stay out of this world."""

    url: str = ""
    world: World | None = None
    received: list[Record] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, world: World | None) -> None:
        with self.lock:
            self.world, self.received = world, []

    def receive(self, record: Record) -> int:
        with self.lock:
            self.received.append(record)
            world = self.world
            if world is None:
                return 503
            if record["attributes"].get("namespace") != world.ns:
                return 202
            world.resynced.append(record)
        world.broker.publish(record)
        return 202


@contextlib.contextmanager
def serve_relay() -> Iterator[Relay]:
    relay = Relay()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            status = relay.receive(decode({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    relay.url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        yield relay
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def event_plane(urls: Mapping[str, str], gateway: Gateway, namespace: str, resources: Sequence[Resource],
                **broker_options: Any) -> Iterator[LocalBroker]:
    """The local Broker with the Triggers of knative/base (subscribers: `urls` by function) and a
    watching ApiServerSource per resource, confined to `namespace`; all stopped on the way out."""
    broker = LocalBroker(knative_triggers(urls), **broker_options)
    sources = [WatchSource(gateway, res, broker.publish, namespace=namespace,
                           label_selector="crefn.dev/managed=true").start() for res in resources]
    try:
        for source in sources:
            assert source.ready.wait(10)
        yield broker
    finally:
        for source in sources:
            source.stop()
        broker.close()
