"""A world for lifecycle tests: the real API server, the functions served over HTTP, a broker with
Knative's delivery semantics, a polling ApiServerSource and a Kubeflow Trainer simulator."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from functions.gateway import Gateway
from functions.resources import TRAINJOBS, Resource, cre_goodput, cre_jobs
from functions.transport import send
from localstack.apisource import PollingSource, WatchSource
from localstack.broker import LocalBroker, triggers_from_manifests
from localstack.manifests import render
from tests.kube.rounds import Bus, Route, route

GROUP = "nvcre.nvidia.com"
JOBS = cre_jobs(GROUP)
APISERVER_TYPES = {f"dev.knative.apiserver.resource.{v}" for v in ("add", "update", "delete")}


def routes(group: str = GROUP) -> list[Route]:
    """The Triggers: which events reach which function."""
    return [
        route("phase", type=APISERVER_TYPES, kind="TrainJob", apiversion="trainer.kubeflow.org/v1alpha1"),
        route("launch", type={"dev.knative.apiserver.resource.add", "dev.knative.apiserver.resource.update"},
              kind="Job", apiversion=f"{group}/v1alpha1"),
        route("status", type="dev.crefn.workload.phase", workloadphase={"Pending", "Running", "Succeeded"}),
        route("restart", type="dev.crefn.workload.phase", workloadphase="Failed"),
    ]


def ping() -> dict[str, Any]:
    return {"attributes": {"specversion": "1.0", "id": "tick", "source": "/apis/v1/namespaces/crefn/pingsources/resync",
                           "type": "dev.knative.sources.ping", "datacontenttype": "application/json"},
            "data": {}}


@dataclass
class World:
    gw: Gateway
    ns: str
    bus: Bus
    source: PollingSource | None
    resync_url: str = ""
    group: str = GROUP

    @property
    def jobs(self) -> Resource:
        return cre_jobs(self.group)

    # -- the user -----------------------------------------------------------------------------

    def create_job(self, name: str = "llm", max_restarts: int | None = 2, suspend: bool = False,
                   managed: bool = True) -> dict[str, Any]:
        trainjob: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"},
                                    "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2}}
        if suspend:
            trainjob["suspend"] = True
        spec: dict[str, Any] = {"workload": {"trainJob": trainjob}}
        if max_restarts is not None:
            spec["checkpoint"] = {"pvcName": f"{name}-ckpt", "maxRestarts": max_restarts}
        labels = {"crefn.dev/managed": "true"} if managed else {}
        return self.gw.create(self.jobs, self.ns, {"apiVersion": f"{self.group}/v1alpha1", "kind": "Job",
                                              "metadata": {"name": name, "labels": labels}, "spec": spec})

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
        return self.gw.get(TRAINJOBS, self.ns, f"{job}-workload")

    # -- the Trainer --------------------------------------------------------------------------

    def trainer(self, action: str, job: str = "llm") -> None:
        tj = self.trainjob(job)
        assert tj is not None, f"no TrainJob for {job} to {action}"
        name = tj["metadata"]["name"]
        if action == "delete":
            self.gw.delete(TRAINJOBS, self.ns, name)
            return
        if action == "resume":
            self.gw.patch(TRAINJOBS, self.ns, name, {"spec": {"suspend": False}})
            return
        if action == "fail":
            self.gw.patch(TRAINJOBS, self.ns, name,
                          {"metadata": {"annotations": {f"{self.group}/group-nodes": "gpu-node-07,gpu-node-11"}}})
        conditions = {
            "run": [],
            "fail": [{"type": "Failed", "status": "True", "reason": "JobsFailed",
                      "message": "jobset node-0 failed: exit code 137"}],
            "complete": [{"type": "Complete", "status": "True", "reason": "JobsCompleted",
                          "message": "all jobs completed"}],
        }[action]
        for c in conditions:
            c["lastTransitionTime"] = "2026-11-02T09:00:00Z"
        active = 2 if action == "run" else 0
        self.gw.patch(TRAINJOBS, self.ns, name, {"status": {
            "conditions": conditions or None,
            "jobsStatus": [{"name": "node", "active": active, "ready": active, "succeeded": 0, "failed": 0,
                            "suspended": 0}]}},
            status=True)

    # -- the event plane ----------------------------------------------------------------------

    def settle(self, rounds: int = 40) -> None:
        """Let the source and the broker run until nothing moves."""
        assert self.source is not None
        for _ in range(rounds):
            changed = self.source.poll()
            if not changed and self.bus.idle:
                return
            self.bus.drain()
        raise AssertionError(f"did not settle: {self.bus.summary()[-10:]}")

    def tick(self, rounds: int = 3) -> None:
        """Resync only: a PingSource tick, then deliver what it sent."""
        for _ in range(rounds):
            answer = send(self.resync_url, ping())
            assert answer.status in (202, 503), answer.text
            self.bus.drain()

    # -- what happened ------------------------------------------------------------------------

    def final(self, job: str = "llm") -> tuple[str, str, int]:
        status = self.job(job).get("status") or {}
        true = [c for c in status.get("conditions") or [] if c["status"] == "True"
                and c["type"] in ("InProgress", "Succeeded", "Failed")]
        assert len(true) == 1, status
        return true[0]["type"], true[0]["reason"], int(status.get("restartCount", 0))

    def trainjobs_created(self) -> int:
        assert self.source is not None
        return len(self.source.uids_added["TrainJob"])

    def dump(self) -> str:
        return json.dumps(self.bus.summary()[-30:], indent=1)


def make_world(gw: Gateway, ns: str, urls: dict[str, str], poll: bool = True, group: str = GROUP,
               **bus_options: Any) -> World:
    bus = Bus(urls=urls, routes=routes(group), **bus_options)
    resources: list[Resource] = [TRAINJOBS, cre_jobs(group)]
    source = PollingSource(gw, resources, ns, bus.publish) if poll else None
    return World(gw, ns, bus, source, group=group)


Step = Callable[[World], None]


@contextlib.contextmanager
def event_plane(urls: dict[str, str], gateway: Gateway, namespace: str, resources: Sequence[Resource],
                **broker_options: Any) -> Iterator[LocalBroker]:
    """The local Broker with the Triggers of knative/base (subscribers: `urls` by function) and a
    watching ApiServerSource per resource, confined to `namespace`; all stopped on the way out."""
    triggers, _ = triggers_from_manifests(render("base"), {f"crefn-{t}": u for t, u in urls.items()})
    broker = LocalBroker(triggers, **broker_options)
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
