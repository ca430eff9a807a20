"""The scenario library (tests/scenarios/*.yaml) through the local Broker (Triggers and delivery of
knative/base), a watching ApiServerSource and the Trainer simulator, against the real API server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.gateway import Gateway
from functions.resources import TRAINJOBS, cre_jobs
from localstack.demo import create_job, final_state
from localstack.trainer import TrainerSimulator, wait_until
from tests.kube.lifecycle import event_plane

SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").glob("*.yaml"))
JOBS = cre_jobs("nvcre.nvidia.com")


def job_body(spec: dict[str, Any]) -> dict[str, Any]:
    trainjob: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"},
                                "trainer": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "numNodes": 2}}
    if spec.get("suspend"):
        trainjob["suspend"] = True
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": "llm", "labels": {"crefn.dev/managed": "true"}},
            "spec": {"workload": {"trainJob": trainjob},
                     "checkpoint": {"pvcName": "llm-ckpt", "maxRestarts": spec["maxRestarts"]}}}


def injected(record: dict[str, Any], namespace: str) -> dict[str, Any]:
    attrs = {"specversion": "1.0", "id": str(uuid.uuid4()), "source": "/scenario", "namespace": namespace,
             **record["attributes"]}
    return {"attributes": attrs, "data": record["data"].encode() if isinstance(record["data"], str)
            else record["data"]}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path, functions: Callable[..., dict[str, str]], cluster: Any, gateway: Gateway,
                  namespace: str) -> None:
    sc = yaml.safe_load(path.read_text())
    delivery = sc.get("delivery") or {}
    with event_plane(functions(), gateway, namespace, (TRAINJOBS, JOBS), duplicate=delivery.get("duplicate", False),
                     jitter=delivery.get("jitter", 0.0), seed=delivery.get("seed", 0)) as broker:
        create_job(gateway, namespace, job_body(sc["job"]), evidence=sc.get("evidence", False))
        for record in sc.get("inject") or []:
            broker.publish(injected(record, namespace))

        def quiet() -> bool:
            return broker.wait_idle(timeout=0.5, quiet=0.3)

        script = {int(k): v for k, v in sc["trainer"].items()}
        trainer = TrainerSimulator(gateway, namespace, "llm", script, quiet, step_delay=0.2).start()

        def settled() -> bool:
            return trainer.finished and final_state(
                gateway.get(JOBS, namespace, "llm") or {})[0] in ("Succeeded", "Failed") and quiet()

        try:
            assert wait_until(settled, 90), (trainer.done, final_state(gateway.get(JOBS, namespace, "llm") or {}))
        finally:
            trainer.stop()
    expect = sc["expect"]
    job = gateway.get(JOBS, namespace, "llm") or {}
    assert final_state(job) == (expect["condition"], expect["reason"], expect["restartCount"])
    adds = {o.record["data"]["metadata"]["uid"] for o in broker.outcomes
            if o.record["attributes"]["type"] == "dev.knative.apiserver.resource.add"
            and o.record["attributes"].get("kind") == "TrainJob"}
    assert len(adds) == expect["trainjobs"]
    assert len(broker.dead) == expect["deadLetters"], [d["attributes"]["knativeerrordata"] for d in broker.dead]
    assert all(d["attributes"]["knativeerrorcode"] == "400" for d in broker.dead)
    if "failedNodes" in expect:
        assert [n["name"] for n in job["status"]["failedNodes"]] == expect["failedNodes"]
