"""`functions.runtime.reads` on the real API server: what a read costs in requests (the Job's GoodputMeasurement is
one GET when it has its name)."""

from __future__ import annotations

import pytest

from functions.runtime.gateway import Gateway
from functions.runtime.resources import cre_goodput
from functions.runtime.settings import Settings
from localstack.cluster.apiserver import LocalCluster
from tests.support.world import JOBS


@pytest.mark.parametrize(("measurements", "evidence", "reads", "found"), [
    ({"llm-goodput": 5, "other": 0}, True, ["GET"], ["llm-goodput"]),
    ({"llm-goodput": 0, "a-earlier": 7}, True, ["GET", "GET"], ["a-earlier", "llm-goodput"]),
    ({"llm-goodput": 0, "a-earlier": 7}, False, ["GET"], ["llm-goodput"]),
    ({"a-earlier": 7, "b-later": 0}, False, ["GET", "GET"], ["a-earlier", "b-later"]),
    ({}, True, ["GET", "GET"], []),
], ids=["named-with-evidence", "named-without-evidence-lists", "named-for-the-stall", "unnamed-lists",
        "none"])
def test_the_jobs_goodput_measurement_is_one_get_when_it_has_its_name(
        cluster: LocalCluster, gateway: Gateway, namespace: str, measurements: dict[str, int], evidence: bool,
        reads: list[str], found: list[str]) -> None:
    """`<job>-goodput` is read by name, whatever else the namespace holds; only without it (or, for the
    evidence, without a checkpoint on it) are the namespace's measurements listed."""
    from functions.runtime.context import Context
    from functions.runtime.reads import read_goodputs, read_job
    from tests.support.helpers import CountingGateway

    gm = cre_goodput("nvcre.nvidia.com")
    gateway.create(JOBS, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                     "metadata": {"name": "llm"},
                                     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}}})
    gateway.create(gm, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                   "metadata": {"name": "unrelated"},
                                   "spec": {"jobRef": {"name": "another-job", "kind": "Job"}, "logProfileRef": "p"}})
    for name, step in measurements.items():
        gateway.create(gm, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                                       "metadata": {"name": name},
                                       "spec": {"jobRef": {"name": "llm", "kind": "Job"}, "logProfileRef": "p"}})
        gateway.patch(gm, namespace, name, {"status": {"lastCheckpointStep": step}}, status=True)
    counting = CountingGateway(cluster.gateway())
    ctx = Context(Settings(), gateway=counting)
    try:
        state = read_job(ctx, namespace, "llm")
        assert state is not None
        counting.calls.clear()
        got = read_goodputs(ctx, state, evidence)
        assert [method for method, _ in counting.calls] == reads
        assert [g["metadata"]["name"] for g in got] == found
    finally:
        counting.close()


def test_the_events_of_an_object_are_found_by_its_kind_name_and_uid_together(
        cluster: LocalCluster, gateway: Gateway, namespace: str) -> None:
    """`has_events`: an Event as CRE records it (core/v1, `involvedObject`) is found through events.k8s.io's
    `regarding`; the same uid under another kind or name is not that object; a role that may not list Events
    knows of none."""
    from functions.runtime.context import Context
    from functions.runtime.reads import has_events
    from tests.support.helpers import record_failure

    record_failure(gateway, namespace, {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                        "metadata": {"name": "llm", "uid": "u-1"}}, "m")
    ctx = Context(Settings(), gateway=gateway)
    assert has_events(ctx, namespace, "Job", "llm", "u-1")
    assert not has_events(ctx, namespace, "Job", "llm", "u-2")
    assert not has_events(ctx, namespace, "Pod", "llm", "u-1")
    assert not has_events(ctx, namespace, "Job", "other", "u-1")
    assert not has_events(ctx, namespace, "Job", "llm", "u-1,regarding.kind=Job")
    nobody = cluster.gateway("nobody")
    assert not has_events(Context(Settings(), gateway=nobody), namespace, "Job", "llm", "u-1")
