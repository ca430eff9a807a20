"""A WorkloadRun's target nodes, their GPU architecture and the pods' placement
(`functions.domain.placement`) as truth tables. CRE: `pkg/gpu/product.go` `ParseProduct` with its
testdata `pkg/gpu/testdata/parse-product/<id>`, `pkg/gpu/majority.go` `MajorityArchitecture` with
`pkg/gpu/testdata/majority-architecture/<id>`, `pkg/controller/helpers.go` `DefaultEnableMNNVL`, the
WorkloadRun CRD's `gpusPerNode` (8 for H100/A100, 4 for GB200/GB300), ADR-089 decision 6
(`TargetNodeAffinityTerms`)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.placement import (
    Hardware,
    affinity,
    enable_mnnvl,
    gpus_per_node,
    hardware,
    needs_nodes,
    node_platform,
    parse_product,
    selector,
    target_nodes,
    tolerations,
)


def node(name: str, product: str | None = None, taints: list[dict[str, str]] | None = None,
         **labels: str) -> dict[str, Any]:
    all_labels = {"nvidia.com/gpu.present": "true", **labels}
    if product is not None:
        all_labels["nvidia.com/gpu.product"] = product
    return {"metadata": {"name": name, "labels": all_labels}, "spec": {"taints": taints or []}}


@pytest.mark.parametrize(("product", "arch"), [
    ("", ""), ("NVIDIA-A100-SXM4-40GB", "a100"), ("NVIDIA-GB200-NVL72", "gb200"), ("NVIDIA-GB200", "gb200"),
    ("NVIDIA-GB300-NVL72", "gb300"), ("NVIDIA-H100-80GB-HBM3", "h100"), ("NVIDIA-H100-NVL", "h100"),
    ("NVIDIA-L40", "l40"), ("NVIDIA-L40S", "l40s"), ("NVIDIA-RTX-PRO-6000-Blackwell", "rtxpro6000"),
], ids=["empty-string", "nvidia-a100-sxm4-40gb", "nvidia-gb200-nvl72", "nvidia-gb200", "nvidia-gb300-nvl72",
        "nvidia-h100-80gb-hbm3", "nvidia-h100-nvl", "nvidia-l40", "nvidia-l40s", "rtx-pro-6000"])
def test_parse_product(product: str, arch: str) -> None:
    assert parse_product(product) == arch


@pytest.mark.parametrize(("nodes", "found"), [
    ([node("a"), node("b")], Hardware("", ())),
    ([node("a", "NVIDIA-H100-80GB-HBM3"), node("b", "NVIDIA-GB200-NVL72"), node("c", "NVIDIA-GB200")],
     Hardware("gb200", ("NVIDIA-GB200", "NVIDIA-GB200-NVL72"))),
    ([node("a", "NVIDIA-H100-80GB-HBM3"), node("b", "NVIDIA-GB200-NVL72")],
     Hardware("h100", ("NVIDIA-H100-80GB-HBM3",))),
    ([node("a"), node("b"), node("c", "NVIDIA-A100-SXM4-80GB")], Hardware("a100", ("NVIDIA-A100-SXM4-80GB",))),
    ([node("a", "NVIDIA-H100-NVL"), node("b", "NVIDIA-H100-80GB-HBM3"), node("c")],
     Hardware("h100", ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-NVL"))),
], ids=["all-unlabeled", "majority-beats-first-node", "tie-keeps-earliest-nodes-arch",
        "unlabeled-majority-does-not-outvote", "unlabeled-minority-does-not-vote"])
def test_majority_architecture(nodes: list[dict[str, Any]], found: Hardware) -> None:
    got = hardware(nodes)
    assert (got.architecture, got.products) == (found.architecture, found.products)


def provider(name: str, provider_id: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"providerID": provider_id}}


@pytest.mark.parametrize(("node_", "platform"), [
    (provider("n", "aws:///us-east-1a/i-0abc"), "aws"),
    (provider("n", "gce://proj/us-central1-a/n"), "gcp"),
    (provider("n", "azure:///subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/virtualMachines/n"),
     "azure"),
    (provider("n", "ocid1.instance.oc1.iad.abc"), "oci"),
    (provider("n", "openstack:///5a8f"), "onprem"),
    (provider("n", "nscale://n-1"), "nscale"),
    (provider("n", "kubevirt://vm-1", **{"node-role.together.ai/worker": ""}), "togetherai"),
    (provider("n", "kubevirt://vm-1"), "onprem"),
    (provider("n", "metal3://ns/bmh/n"), "mistral"),
    (provider("n", "kind://docker/kind/n"), "onprem"),
    (provider("n", "", **{"kubernetes.io/hostname": "forge-gpu-017"}), "forge"),
    (provider("n", "", **{"nke.nvidia.com/site-name": "site-a"}), "forge"),
    (provider("n", ""), "onprem"),
], ids=["aws", "gce", "azure", "oci", "openstack", "nscale", "kubevirt-together", "kubevirt-other", "metal3",
        "other-provider", "forge-hostname", "forge-site-label", "bare-metal"])
def test_the_platform_of_a_node_is_cres(node_: dict[str, Any], platform: str) -> None:
    """CRE's `nodePlatform` (`pkg/controller/workflow_detect.go`): the providerID's prefix, else the labels."""
    assert node_platform(node_) == platform


@pytest.mark.parametrize(("nodes", "detected_"), [
    ([provider("a", "aws:///x/i-1", **{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
      provider("b", "aws:///x/i-2", **{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})],
     {"detectedGPUArchitecture": "h100", "detectedPlatform": "aws"}),
    ([provider("a", ""), provider("b", "")], {"detectedGPUArchitecture": "unknown", "detectedPlatform": "onprem"}),
    ([provider("a", "aws:///x/i-1"), provider("b", "gce://p/z/b")], {"detectedGPUArchitecture": "unknown"}),
    ([], {}),
], ids=["aws-h100", "unlabelled-bare-metal", "heterogeneous-platforms", "no-node"])
def test_what_the_run_says_it_detected(nodes: list[dict[str, Any]], detected_: dict[str, str]) -> None:
    """CRE's Workflow: `unknown` when no node names its GPU product; a platform only when all nodes agree (CRE
    fails the Workflow otherwise: docs/deviations.md); nothing when no node was found."""
    assert dict(hardware(nodes).detected) == detected_


@pytest.mark.parametrize(("spec", "arch", "gpus", "mnnvl"), [
    ({}, "h100", 8, False), ({}, "a100", 8, False), ({}, "gb200", 4, True), ({}, "gb300", 4, True),
    ({}, "", 4, False), ({}, "gh200", 4, False), ({}, "b300", 8, False),
    ({"gpusPerNode": 2, "enableMNNVL": False}, "gb200", 2, False), ({"enableMNNVL": True}, "h100", 8, True),
], ids=["h100", "a100", "gb200", "gb300", "unknown", "unlisted-gh200", "hgx-b300-no-mnnvl", "run-says-so",
        "mnnvl-forced"])
def test_defaults_from_the_architecture(spec: dict[str, Any], arch: str, gpus: int, mnnvl: bool) -> None:
    found = Hardware(arch, ())
    assert (gpus_per_node(spec, found), enable_mnnvl(spec, found)) == (gpus, mnnvl)


NODES = [node("gpu-3", "NVIDIA-GB200", pool="b"), node("gpu-1", "NVIDIA-GB200", pool="a", rack="r1"),
         node("gpu-2", "NVIDIA-GB200", pool="a", rack="r2",
              taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
         {"metadata": {"name": "cpu-1", "labels": {"pool": "a"}}}]


@pytest.mark.parametrize(("target", "names"), [
    (None, ["gpu-1", "gpu-2", "gpu-3"]),
    ({"nodeSelector": {"pool": "a"}}, ["cpu-1", "gpu-1", "gpu-2"]),
    ({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}, ["gpu-2"]),
    ({"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r2"]}]}, ["cpu-1", "gpu-1", "gpu-3"]),
    ({"matchExpressions": [{"key": "rack", "operator": "Exists"}]}, ["gpu-1", "gpu-2"]),
    ({"matchExpressions": [{"key": "rack", "operator": "DoesNotExist"}]}, ["cpu-1", "gpu-3"]),
    ({"nodeSelector": {"pool": "a"}, "nodeNames": ["gpu-2", "gpu-3"]}, ["gpu-2"]),
    ({"taintSelectors": [{"key": "dedicated", "value": "ml"}]}, ["gpu-2"]),
    ({"taintSelectors": [{"key": "dedicated", "effect": "NoExecute"}]}, []),
    ({"taintSelectors": [{"key": "dedicated", "effect": "NoSchedule"}]}, ["gpu-2"]),
], ids=["default-every-gpu-node", "node-selector", "in", "not-in", "exists", "does-not-exist", "node-names-and",
        "taint-selector", "taint-of-another-effect", "taint-of-its-effect"])
def test_target_nodes(target: dict[str, Any] | None, names: list[str]) -> None:
    spec = {} if target is None else {"target": target}
    assert [n["metadata"]["name"] for n in target_nodes(spec, NODES)] == names


@pytest.mark.parametrize(("spec", "needed"), [
    ({}, True), ({"gpusPerNode": 8}, True), ({"gpusPerNode": 8, "enableMNNVL": False}, False),
    ({"gpusPerNode": 8, "enableMNNVL": False, "target": {"nodeNames": ["a"]}}, True),
], ids=["defaults", "mnnvl-unset", "both-set", "target"])
def test_needs_nodes(spec: dict[str, Any], needed: bool) -> None:
    assert needs_nodes(spec) == needed


def test_the_target_is_one_required_term_on_every_pod() -> None:
    spec = {"target": {"nodeSelector": {"pool": "a", "nvidia.com/gpu.present": "true"},
                       "matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]}],
                       "nodeNames": ["gpu-1", "gpu-2"], "taintSelectors": [{"key": "dedicated", "value": "ml"}]}}
    assert selector(spec) == {"pool": "a", "nvidia.com/gpu.present": "true"}
    assert affinity(spec, Hardware("gb200", ("NVIDIA-GB200",))) == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
            {"key": "pool", "operator": "In", "values": ["a"]},
            {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-GB200"]},
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-1", "gpu-2"]}]}]}}}
    assert tolerations(spec) == [{"key": "dedicated", "operator": "Equal", "value": "ml"}]


@pytest.mark.parametrize(("spec", "found"), [
    ({}, Hardware("gb200", ("NVIDIA-GB200",))), ({"target": {}}, Hardware("", ())),
    ({"target": {"taintSelectors": [{"key": "t"}]}}, Hardware("", ())),
], ids=["no-target", "empty-target", "taints-only"])
def test_no_affinity_without_a_target_term(spec: dict[str, Any], found: Hardware) -> None:
    assert affinity(spec, found) is None
