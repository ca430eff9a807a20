"""`functions.domain.measurement_objects`, pure (CRE's `ensureGoodputMeasurement` / `ensureBandwidthMeasurement`):
the bodies CRE creates, the BandwidthMeasurement resource, and which GoodputMeasurement is the Job's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from events.objects import BandwidthMeasurementSpec, GoodputMeasurementSpec
from functions.domain.checkpoint import has_checkpoint
from functions.domain.measurement_objects import (
    GoodputMeasurement,
    bandwidth_body,
    bandwidth_measurements,
    goodput_body,
    goodput_of,
    is_reset,
    reset_goodput,
)
from functions.runtime.errors import PermanentError
from functions.runtime.resources import Resource
from tests.support.helpers import job
from tests.support.world import GROUP


def test_bodies_are_cres() -> None:
    state = job()
    gm = goodput_body(state, GROUP, GoodputMeasurementSpec(log_profile_ref="nemo", sample_interval="45s"))
    owner = [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm", "uid": "job-uid",
              "controller": True, "blockOwnerDeletion": True}]
    labels = {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/job": "llm"}
    assert gm == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "GoodputMeasurement",
                  "metadata": {"name": "llm-goodput", "namespace": "ns", "labels": labels, "ownerReferences": owner},
                  "spec": {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "llm"},
                           "logProfileRef": "nemo", "sampleInterval": "45s"}}
    wanted = BandwidthMeasurementSpec(log_profile_ref="nccl", test_type="all_reduce")
    bm = bandwidth_body(state, "cre.nvidia.com", wanted)
    assert bm["kind"] == "BandwidthMeasurement" and bm["metadata"]["name"] == "llm-bandwidth"
    assert bm["metadata"]["labels"]["cre.nvidia.com/job"] == "llm"
    assert bm["spec"] == {"jobRef": {"apiGroup": "cre.nvidia.com", "kind": "Job", "name": "llm"},
                          "logProfileRef": "nccl", "testType": "all_reduce"}  # no sampleInterval: CRE's default
    sampled = bandwidth_body(state, GROUP, BandwidthMeasurementSpec(log_profile_ref="nccl", sample_interval="2m"))
    assert sampled["spec"] == {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "llm"},
                               "logProfileRef": "nccl", "sampleInterval": "2m"}  # no testType: CRE's default


def listed(name: str, job_name: str, kind: str = "Job", step: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"jobRef": {"kind": kind, "name": job_name}, "logProfileRef": "p"},
            "status": {"lastCheckpointStep": step}}


def test_the_jobs_goodput_is_the_first_listed_that_refers_to_it() -> None:
    raws = [listed("a", "other", step=5), listed("b", "llm", kind="Workflow", step=5), listed("c", "llm"),
            listed("d", "llm", step=7)]
    found = goodput_of(raws, "llm")
    assert found is not None and found.metadata.name == "c"
    assert goodput_of(raws[:2], "llm") is None
    assert has_checkpoint(raws, "llm") and not has_checkpoint(raws[:3], "llm")


def test_an_unreadable_goodput_measurement_is_named_in_the_error() -> None:
    raws = [{**listed("llm-goodput", "llm"), "status": {"lastCheckpointStep": "many"}}]
    with pytest.raises(PermanentError) as err:
        goodput_of(raws, "llm")
    assert str(err.value).startswith("unreadable GoodputMeasurement llm-goodput: status.lastCheckpointStep: ")


def test_the_reset_on_a_restart_is_a_best_effort_unlocked_status_patch() -> None:
    """CRE logs a failed reset and restarts all the same: the write is best effort, on no resourceVersion."""
    gm = GoodputMeasurement.model_validate({**listed("llm-goodput", "llm", step=5),
                                            "metadata": {"name": "llm-goodput", "namespace": "ns"}})
    write = reset_goodput(gm, "nvcre.nvidia.com", datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    assert (write.res, write.namespace, write.name, write.resource_version) == (
        Resource("nvcre.nvidia.com", "v1alpha1", "goodputmeasurements", "GoodputMeasurement"), "ns", "llm-goodput", "")
    assert write.status == {"lastStepTimestamp": None, "avgStepTimeSec": "", "applicationStartTime": None,
                            "startTime": "2026-11-30T12:00:00Z"}
    assert write.best_effort is True


def test_the_bandwidth_resource_is_the_upstream_crds(upstream_crds: Path) -> None:
    """Group, version, plural and kind as CRE's BandwidthMeasurement CRD declares them (the API path)."""
    import yaml


    crd = yaml.safe_load((upstream_crds / "cre" / "nvcre.nvidia.com_bandwidthmeasurements.yaml").read_text())
    res = bandwidth_measurements("nvcre.nvidia.com")
    assert (res.group, res.plural, res.kind) == (crd["spec"]["group"], crd["spec"]["names"]["plural"],
                                                 crd["spec"]["names"]["kind"])
    assert res.version in [v["name"] for v in crd["spec"]["versions"]]


@pytest.mark.parametrize(("status", "reset"), [
    ({}, True), ({"avgStepTimeSec": ""}, True), ({"lastStepTimestamp": "2026-11-30T12:00:00Z"}, False),
    ({"applicationStartTime": "2026-11-30T12:00:00Z"}, False), ({"avgStepTimeSec": "6.000000"}, False),
])
def test_a_measurement_is_reset_when_it_shows_no_step_state(status: dict[str, Any], reset: bool) -> None:
    """What CRE's reset on a restart clears: lastStepTimestamp, applicationStartTime, avgStepTimeSec."""
    raw = {**listed("llm-goodput", "llm"), "metadata": {"name": "llm-goodput", "namespace": "ns"}, "status": status}
    assert is_reset(GoodputMeasurement.model_validate(raw)) is reset
