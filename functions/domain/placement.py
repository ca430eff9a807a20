"""A WorkloadRun's target nodes: which they are, what GPUs they carry, and how the pods are held to
them (CRE's `discoverTargetNodes`, `gpu.ParseProduct`, `gpu.MajorityArchitecture`,
`DefaultEnableMNNVL`; ADR-082, ADR-089 decision 6). Pure.

- The target: `spec.target` (its `nodeSelector`, `matchExpressions`, `nodeNames`, `taintSelectors`
  all hold), or every GPU node (`nvidia.com/gpu.present=true`) when it is omitted.
- The architecture: the one most target nodes' `nvidia.com/gpu.product` names (unlabelled nodes do
  not vote, a tie goes to the first by name); it sets `gpusPerNode` (8 on a100/h100/b200/b300, 4 on
  gb200/gb300 and on any architecture CRE's catalog does not list, or none found) and MNNVL (on for
  gb200/gb300) when the run does not.
- The pods: one required node selector term (the target's labels, expressions, GPU products and
  node names, ANDed) on every replicatedJob; `taintSelectors` become tolerations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PRODUCT_LABEL = "nvidia.com/gpu.product"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_SELECTOR = {"nvidia.com/gpu.present": "true"}
MNNVL_ARCHITECTURES = frozenset({"gb200", "gb300"})
GPUS_PER_NODE = {"a100": 8, "h100": 8, "b200": 8, "b300": 8, "gb200": 4, "gb300": 4}
"""GPUs per node of the architectures CRE's GPU catalog lists."""
DEFAULT_GPUS = 4
"""GPUs per node when the target's architecture is unknown (no `nvidia.com/gpu.product`, an unlisted product, no
node found): CRE's GPU catalog `fallbackGpusPerNode`."""


UNKNOWN_ARCHITECTURE = "unknown"
"""CRE's `gpuArchUnknown`: what the status says when target nodes were found and none names its GPU product."""
PROVIDERS = (("aws://", "aws"), ("gce://", "gcp"), ("azure://", "azure"), ("ocid1.", "oci"),
             ("openstack://", "onprem"), ("nscale://", "nscale"), ("metal3://", "mistral"))
"""CRE's `nodePlatform`: the platform a node's `spec.providerID` prefix names (any other: `onprem`)."""


@dataclass(frozen=True)
class Hardware:
    architecture: str
    """"" when no target node names its GPU product."""
    products: tuple[str, ...]
    """The distinct `nvidia.com/gpu.product` values of the target nodes of that architecture, sorted."""
    detected: tuple[tuple[str, str], ...] = ()
    """What CRE's Workflow detects on the target nodes, as the run's status fields (none when no node was found):
    `detectedGPUArchitecture` (`unknown` when none names its product), and `detectedPlatform` when every
    target node is of one platform."""


def node_platform(node: Mapping[str, Any]) -> str:
    """CRE's `nodePlatform`: from the node's `spec.providerID` (and, without one, its labels)."""
    labels, provider = _labels(node), str((node.get("spec") or {}).get("providerID") or "")
    if not provider:
        return "forge" if "forge" in labels.get(HOSTNAME_LABEL, "") or "nke.nvidia.com/site-name" in labels \
            else "onprem"
    if provider.startswith("kubevirt://"):
        return "togetherai" if "node-role.together.ai/worker" in labels else "onprem"
    return next((name for prefix, name in PROVIDERS if provider.startswith(prefix)), "onprem")


def detected(nodes: Sequence[Mapping[str, Any]], architecture: str) -> tuple[tuple[str, str], ...]:
    """The run's detected fields (`Hardware.detected`) for the target nodes and their architecture."""
    if not nodes:
        return ()
    platforms = {node_platform(n) for n in nodes}
    return (("detectedGPUArchitecture", architecture or UNKNOWN_ARCHITECTURE),
            *((("detectedPlatform", platforms.pop()),) if len(platforms) == 1 else ()))


def parse_product(product: str) -> str:
    """CRE's `gpu.ParseProduct`: `NVIDIA-H100-80GB-HBM3` → `h100`, `NVIDIA-GB200-NVL72` → `gb200`."""
    if not product:
        return ""
    product = product.removeprefix("NVIDIA-")
    if product.upper().startswith("RTX-PRO-6000"):
        return "rtxpro6000"
    if (cut := product.find("-")) > 0:
        product = product[:cut]
    return product.lower()


def selector(spec: Mapping[str, Any]) -> dict[str, str]:
    """The labels a target node must carry (what the node LIST selects on)."""
    target = spec.get("target")
    return dict(DEFAULT_SELECTOR) if not target else {str(k): str(v) for k, v in
                                                       (target.get("nodeSelector") or {}).items()}


def needs_nodes(spec: Mapping[str, Any]) -> bool:
    """Whether the run's translation depends on the cluster's nodes."""
    return bool(spec.get("target")) or spec.get("gpusPerNode") is None or spec.get("enableMNNVL") is None


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _meets(labels: Mapping[str, str], req: Mapping[str, Any]) -> bool:
    key, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def _tainted(node: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return any(t.get("key") == wanted.get("key") and (not wanted.get("value") or t.get("value") == wanted["value"])
               and (not wanted.get("effect") or t.get("effect") == wanted["effect"])
               for t in (node.get("spec") or {}).get("taints") or [])


def target_nodes(spec: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The nodes of the run's target, by name."""
    target = spec.get("target") or {}
    names = set(target.get("nodeNames") or [])
    kept = [n for n in nodes
            if all(_labels(n).get(k) == v for k, v in selector(spec).items())
            and all(_meets(_labels(n), r) for r in target.get("matchExpressions") or [])
            and (not names or (n.get("metadata") or {}).get("name") in names)
            and all(_tainted(n, t) for t in target.get("taintSelectors") or [])]
    return sorted(kept, key=lambda n: str((n.get("metadata") or {}).get("name")))


def hardware(nodes: Sequence[Mapping[str, Any]]) -> Hardware:
    """CRE's `gpu.MajorityArchitecture` over the target nodes (in name order), and its products."""
    archs = [(parse_product(_labels(n).get(PRODUCT_LABEL, "")), _labels(n).get(PRODUCT_LABEL, "")) for n in nodes]
    counts: dict[str, int] = {}
    for arch, _ in archs:
        if arch:
            counts[arch] = counts.get(arch, 0) + 1
    primary = ""
    for arch, _ in archs:
        if arch and (not primary or counts[arch] > counts[primary]):
            primary = arch
    return Hardware(primary, tuple(sorted({p for a, p in archs if a and a == primary})), detected(nodes, primary))


def gpus_per_node(spec: Mapping[str, Any], found: Hardware) -> Any:
    """The run's `gpusPerNode`, else the architecture's (validated by `functions.domain.translation`)."""
    return spec.get("gpusPerNode", GPUS_PER_NODE.get(found.architecture, DEFAULT_GPUS))


def enable_mnnvl(spec: Mapping[str, Any], found: Hardware) -> bool:
    """The run's `enableMNNVL`, else CRE's `DefaultEnableMNNVL` of the architecture."""
    set_ = spec.get("enableMNNVL")
    return bool(set_) if set_ is not None else found.architecture in MNNVL_ARCHITECTURES


def affinity(spec: Mapping[str, Any], found: Hardware) -> dict[str, Any] | None:
    """The required node affinity of every pod (None without a target)."""
    target = spec.get("target")
    if not target:
        return None
    terms: list[dict[str, Any]] = [{"key": k, "operator": "In", "values": [v]}
                                   for k, v in sorted(selector(spec).items())]
    terms += [dict(r) for r in target.get("matchExpressions") or []]
    if found.products:
        terms.append({"key": PRODUCT_LABEL, "operator": "In", "values": list(found.products)})
    if target.get("nodeNames"):
        terms.append({"key": HOSTNAME_LABEL, "operator": "In", "values": list(target["nodeNames"])})
    if not terms:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": terms}]}}}


def placement(spec: Mapping[str, Any], found: Hardware) -> dict[str, Any]:
    """What every pod carries to keep to the target: its affinity and tolerations (nothing without one)."""
    fields: dict[str, Any] = {}
    if (held := affinity(spec, found)) is not None:
        fields["affinity"] = held
    if tolerated := tolerations(spec):
        fields["tolerations"] = tolerated
    return fields


def tolerations(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    """One toleration per `target.taintSelectors` entry: so the pods may run on the nodes selected by taint."""
    out = []
    for t in (spec.get("target") or {}).get("taintSelectors") or []:
        toleration = {"key": t["key"], "operator": "Equal" if t.get("value") else "Exists"}
        toleration.update({k: t[k] for k in ("value", "effect") if t.get(k)})
        out.append(toleration)
    return out
