"""The resources the functions address (`functions.runtime.resources`), checked against the real API server's
discovery: each plural is served under its group and version, with the kind and scope written here;
and the paths the gateway builds from them."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.measurement_objects import bandwidth_measurements
from functions.runtime import resources
from functions.runtime.gateway import Gateway
from functions.runtime.resources import Resource, cre_goodput, cre_jobs, cre_workloadruns

GROUP = "nvcre.nvidia.com"
EVERY = [r for r in vars(resources).values() if isinstance(r, Resource)] + [
    cre_jobs(GROUP), cre_workloadruns(GROUP), cre_goodput(GROUP), bandwidth_measurements(GROUP)]


def served_by(res: Resource) -> Any:
    """Knative's kinds are served only from its upstream CRDs (the project's fallback CRDs are Trainer's and
    CRE's): those cases are the `upstream` marker's, skipped in a clone with nothing beside it."""
    return pytest.param(res, marks=pytest.mark.upstream) if res.group.endswith("knative.dev") else res


@pytest.mark.parametrize("res", [served_by(r) for r in EVERY], ids=[f"{r.group or 'core'}/{r.plural}" for r in EVERY])
def test_the_api_server_serves_it_as_written(gateway: Gateway, res: Resource) -> None:
    base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    served = {r["name"]: r for r in gateway.request("GET", base)["resources"]}
    assert res.plural in served, sorted(served)
    assert (served[res.plural]["kind"], served[res.plural]["namespaced"]) == (res.kind, res.namespaced)


def test_paths() -> None:
    assert cre_jobs(GROUP).path("ml", "llama", "status") == \
        "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ml/jobs/llama/status"
    assert resources.PODS.path("ml") == "/api/v1/namespaces/ml/pods"
    assert resources.NODES.path("ml", "gpu-1") == "/api/v1/nodes/gpu-1"  # cluster-scoped: no namespace
    assert resources.TRAINJOBS.api_version == "trainer.kubeflow.org/v1alpha1"
    assert resources.PODS.api_version == "v1"
