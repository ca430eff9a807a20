"""`cre-fn doctor`: is a cluster ready for the functions, and do they run as meant? One check per line.

Read through the Kubernetes gateway, as the user the kubeconfig names (reads only): the CRDs the functions
work with (CRE's in the group the functions are set to, Trainer's TrainJob with `spec.runtimePatches`, which
`launch` writes and Trainer serves from 2.2; Knative Serving's and Eventing's), the Broker, its dead-letter sink
(the recorder's Deployment Available, or a KafkaSink) and every Trigger on it Ready, every ApiServerSource's
`SufficientPermissions`, each function's Knative Service Ready and the mode it runs in, and, where one runs in
`manage` mode, that CRE's own controller does not (two controllers would write the same Jobs); whether the
managed Jobs' measurements still move (`functions.tools.measured`; a warning, `!`, does not fail the run). A
Service's mode is what its pods start with: its container's `CREFN_MODE`, directly or from the ConfigMaps its
`env`/`envFrom` name (a pod keeps the mode it started with; its `crefn_build_info` says which). Knative's
readiness is its conditions: `Ready` True, or the condition's reason and message.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from functions.registry import SERVED
from functions.runtime.errors import CrefnError, one_line
from functions.runtime.gateway import Gateway
from functions.runtime.resources import (
    APISERVERSOURCES,
    BROKERS,
    CRDS,
    DEPLOYMENTS,
    KAFKASINKS,
    TRIGGERS,
)
from functions.tools import measured
from functions.tools.services import Service, service

BROKER = "crefn"
NAMESPACE = "crefn-system"
CRE_CONTROLLER = "app.kubernetes.io/name=cluster-readiness-engine"
"""The label CRE's Helm chart gives its manager Deployment (the chart's name, unless `nameOverride` changes it)."""
CRE_PLURALS = ("jobs", "workloadruns", "goodputmeasurements", "bandwidthmeasurements")
CRE_GROUPS = ("nvcre.nvidia.com", "cre.nvidia.com")
TRAINJOBS_CRD = "trainjobs.trainer.kubeflow.org"
SERVING_CRDS = ("services.serving.knative.dev",)
EVENTING_CRDS = ("brokers.eventing.knative.dev", "triggers.eventing.knative.dev",
                 "apiserversources.sources.knative.dev", "pingsources.sources.knative.dev",
                 "sinkbindings.sources.knative.dev")
APPLY = "apply the install (see docs/operating.md#deploy-to-a-cluster)"
TRUE = ("true", "1", "yes", "on")


@dataclass(frozen=True)
class Check:
    check: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False
    """A check that passes but says something is amiss (`!`): it does not fail the run."""

    def line(self) -> str:
        mark = "!" if self.warning else "✓" if self.ok else "✗"
        fix = f" — {self.fix}" if self.fix and mark != "✓" else ""
        return f"{mark} {self.check}: {self.detail}{fix}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def diagnose(gw: Gateway, namespace: str = NAMESPACE, cre_group: str = "",
             cre_controller: str = CRE_CONTROLLER, jobs_namespace: str | None = None,
             now: datetime | None = None) -> list[Check]:
    """Every check, in order; only the first when the API server cannot be asked. The measurements are
    looked at in `jobs_namespace` (None: all), against `now` (the wall clock by default)."""
    try:
        version = gw.request("GET", "/version").get("gitVersion", "?")
    except CrefnError as e:
        return [Check("API server", False, f"{gw.host}: {one_line(str(e), 200)}",
                      "check the kubeconfig (--kubeconfig, KUBECONFIG) and that the API server is reachable")]
    checks = [Check("API server", True, f"{gw.host}, Kubernetes {version}")]
    services = [service(gw, namespace, f"crefn-{target}") for target in sorted(SERVED)]
    groups = [cre_group] if cre_group else sorted({s.env.get("CREFN_CRE_GROUP", CRE_GROUPS[0])
                                                   for s in services if s.found}) or [CRE_GROUPS[0]]
    cre = [guarded(f"CRE CRDs ({group})", lambda group=group: cre_crds(gw, group)) for group in groups]
    checks += cre
    checks.append(guarded("Trainer TrainJob CRD", lambda: trainjob_crd(gw)))
    checks.append(guarded("Knative Serving CRDs", lambda: crds(gw, SERVING_CRDS, "install Knative Serving")))
    checks.append(guarded("Knative Eventing CRDs", lambda: crds(gw, EVENTING_CRDS, "install Knative Eventing")))
    checks.append(guarded(f"Broker {namespace}/{BROKER}", lambda: broker(gw, namespace)))
    checks.append(guarded("Dead-letter sink", lambda: dead_letter_sink(gw, namespace)))
    checks += listed(f"Triggers on {namespace}/{BROKER}", lambda: triggers(gw, namespace))
    checks += listed(f"ApiServerSources in {namespace}", lambda: sources(gw, namespace))
    checks += [served(s, namespace) for s in services]
    checks.append(guarded("CRE's controller", lambda: controller(gw, services, cre_controller)))
    when = now or datetime.now(UTC)
    checks += [measurements(gw, services, group, jobs_namespace, cre_controller, when)
               for group, crds_ok in zip(groups, cre, strict=True) if crds_ok.ok]
    return checks


def guarded(name: str, check: Any) -> Check:
    """`check()` → (ok, detail, fix); a refusal or an unreachable API server is a failed check, said."""
    try:
        ok, detail, fix = check()
    except CrefnError as e:
        return Check(name, False, f"cannot read: {one_line(str(e), 200)}", "run as a user who may read it")
    return Check(name, ok, detail, fix)


def listed(name: str, each: Any) -> list[Check]:
    try:
        found: list[Check] = list(each())
    except CrefnError as e:
        return [Check(name, False, f"cannot read: {one_line(str(e), 200)}", "run as a user who may read them")]
    return found or [Check(name, False, "none found", APPLY)]


# -- CRDs ---------------------------------------------------------------------------------------------------


def crd_problem(gw: Gateway, name: str) -> str:
    """Why the CRD cannot be used ("" when it is there and Established)."""
    crd = gw.get(CRDS, None, name)
    if crd is None:
        return f"{name} not found"
    if condition(crd, "Established").get("status") != "True":
        return f"{name} not Established"
    return ""


def crds(gw: Gateway, names: tuple[str, ...], fix: str) -> tuple[bool, str, str]:
    problems = [p for name in names if (p := crd_problem(gw, name))]
    return (False, "; ".join(problems), fix) if problems else (True, ", ".join(names), "")


def cre_crds(gw: Gateway, group: str) -> tuple[bool, str, str]:
    names = tuple(f"{plural}.{group}" for plural in CRE_PLURALS)
    ok, detail, _ = crds(gw, names, "")
    if ok:
        return ok, f"{len(names)} kinds in {group}", ""
    other = next((g for g in CRE_GROUPS if g != group and not crd_problem(gw, f"jobs.{g}")), "")
    fix = (f"CRE's CRDs are in {other}: set CREFN_CRE_GROUP={other} in the functions' settings" if other else
           "install CRE's CRDs (its Helm chart), or set CREFN_CRE_GROUP to the group they are in")
    return False, detail, fix


def trainjob_crd(gw: Gateway) -> tuple[bool, str, str]:
    if problem := crd_problem(gw, TRAINJOBS_CRD):
        return False, problem, "install Kubeflow Trainer ≥ 2.2"
    crd = gw.get(CRDS, None, TRAINJOBS_CRD) or {}
    served = [v for v in crd["spec"].get("versions") or () if v.get("served")]
    for version in served:
        spec = (((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("spec")
        if "runtimePatches" in ((spec or {}).get("properties") or {}):
            return True, f"{TRAINJOBS_CRD} {version['name']} has spec.runtimePatches (Trainer ≥ 2.2)", ""
    return (False, f"{TRAINJOBS_CRD} has no spec.runtimePatches: Trainer is older than 2.2",
            "upgrade Kubeflow Trainer to ≥ 2.2 (launch writes spec.runtimePatches)")


# -- Knative objects ----------------------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_]
    return dict(found[0]) if found else {}


def readiness(obj: Mapping[str, Any], type_: str = "Ready") -> tuple[bool, str]:
    cond = condition(obj, type_)
    if cond.get("status") == "True":
        return True, type_
    why = ": ".join(str(cond[k]) for k in ("reason", "message") if cond.get(k))
    return False, f"not {type_}" + (f" ({cond.get('status', 'Unknown')}: {why})" if why else
                                    " (no such condition yet)" if not cond else f" ({cond.get('status')})")


def broker(gw: Gateway, namespace: str) -> tuple[bool, str, str]:
    found = gw.get(BROKERS, namespace, BROKER)
    if found is None:
        return False, "not found", APPLY
    ok, detail = readiness(found)
    return ok, detail, "" if ok else f"kubectl -n {namespace} describe broker {BROKER}"


def dead_letter_sink(gw: Gateway, namespace: str) -> tuple[bool, str, str]:
    """Where the Broker sends what it gives up on: the recorder (a Kubernetes Service in front of the Deployment
    of the same name, `knative/base/dead-letters.yaml`) Available, or the kafka component's KafkaSink Ready."""
    found = gw.get(BROKERS, namespace, BROKER)
    if found is None:
        return False, f"no Broker {BROKER} to send dead letters", APPLY
    ref = (((found.get("spec") or {}).get("delivery") or {}).get("deadLetterSink") or {}).get("ref") or {}
    name = str(ref.get("name", ""))
    if (ref.get("apiVersion"), ref.get("kind")) == ("v1", "Service"):
        found, kind, type_ = gw.get(DEPLOYMENTS, namespace, name), "Deployment", "Available"
        fix = f"kubectl -n {namespace} describe deployment {name}; kubectl -n {namespace} describe pvc {name}"
    elif ref.get("kind") == "KafkaSink":
        found, kind, type_ = gw.get(KAFKASINKS, namespace, name), "KafkaSink", "Ready"
        fix = f"kubectl -n {namespace} describe kafkasink {name}"
    elif ref:
        return True, f"{ref.get('kind')} {name}, not the install's: not checked", ""
    else:
        return False, f"Broker {BROKER} has no deadLetterSink: what it gives up on is lost", APPLY
    if found is None:
        return False, f"{kind} {name} not found", APPLY
    ok, detail = readiness(found, type_)
    return ok, f"{kind} {name} {detail}", "" if ok else fix


def triggers(gw: Gateway, namespace: str) -> Iterator[Check]:
    for trigger in gw.list_all(TRIGGERS, namespace):
        if (trigger.get("spec") or {}).get("broker") != BROKER:
            continue
        name = trigger["metadata"]["name"]
        ok, detail = readiness(trigger)
        yield Check(f"Trigger {name}", ok, detail, f"kubectl -n {namespace} describe trigger {name}")


def sources(gw: Gateway, namespace: str) -> Iterator[Check]:
    for source in gw.list_all(APISERVERSOURCES, namespace):
        name = source["metadata"]["name"]
        ok, detail = readiness(source, "SufficientPermissions")
        account = (source.get("spec") or {}).get("serviceAccountName", "default")
        yield Check(f"ApiServerSource {name}", ok, detail,
                    f"grant the ServiceAccount {namespace}/{account} get, list and watch on what the source "
                    "selects (the install's ClusterRole crefn-apiserversource)")


def served(found: Service, namespace: str) -> Check:
    name = f"Service {found.name}"
    if found.found is None:
        return Check(name, False, "not found", APPLY)
    ok, detail = readiness(found.found)
    if found.mode not in ("manage", "observe"):
        return Check(name, False, f"{detail}, CREFN_MODE={found.mode!r}", "set CREFN_MODE to manage or observe")
    return Check(name, ok, f"{detail}, mode {found.mode}",
                 "" if ok else f"kubectl -n {namespace} describe ksvc {found.name}")


def cre_running(gw: Gateway, selector: str) -> tuple[list[dict[str, Any]], str]:
    """CRE's manager Deployments with replicas above 0, and their names (`ns/name, …`)."""
    running = [d for d in gw.list_all(DEPLOYMENTS, label_selector=selector)
               if (d.get("spec") or {}).get("replicas", 1) != 0]
    return running, ", ".join(f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in running)


def controller(gw: Gateway, services: list[Service], selector: str) -> tuple[bool, str, str]:
    managing = [s.name for s in services if s.found and s.mode == "manage"]
    running, named = cre_running(gw, selector)
    if not managing:
        return True, f"no function runs in manage mode (running: {named or 'none'})", ""
    if not running:
        return True, f"none running ({selector}) beside {len(managing)} functions in manage mode", ""
    first = running[0]["metadata"]
    return (False, f"{named} runs while {len(managing)} functions run in manage mode: both would write the same Jobs",
            f"kubectl -n {first['namespace']} scale deployment {first['name']} --replicas=0, or set "
            "CREFN_MODE=observe")


# -- the measurements' producer ------------------------------------------------------------------------------


def measurements(gw: Gateway, services: list[Service], group: str, jobs_namespace: str | None, selector: str,
                 now: datetime) -> Check:
    """Whether the managed Jobs' measurements still move (`functions.tools.measured`); a warning when not,
    whose fix says who should move them: CRE's manager, stopped or running."""
    name = f"Measurements ({group})"
    manage_all = any(s.env.get("CREFN_MANAGE_ALL", "").lower() in TRUE for s in services if s.found)
    try:
        looked = measured.find(gw, group, jobs_namespace, manage_all, now)
        if not looked.still:
            return Check(name, True, f"{looked.judged} measurements of managed Jobs move" if looked.judged else
                         "no running or ended managed Job has a measurement to look at")
        _, named = cre_running(gw, selector)
    except CrefnError as e:
        return Check(name, False, f"cannot read: {one_line(str(e), 200)}", "run as a user who may read them")
    producing = any(s.name == "crefn-measure" and s.found and s.mode == "manage" for s in services)
    return Check(name, True, measured.summary(looked), measured.fix(named, producing), warning=True)


def main(kubeconfig: str | None, namespace: str, cre_group: str, cre_controller: str, output: str,
         timeout: float, jobs_namespace: str | None = None) -> int:
    """`cre-fn doctor`: every check on stdout, one line each (or one JSON document); 0 when all pass, 1 when
    one fails, 2 when there is no cluster to ask (one line on stderr)."""
    try:
        gw = Gateway.connect(kubeconfig, timeout)
    except CrefnError as e:
        print(f"cre-fn doctor: {one_line(str(e), 300)}", file=sys.stderr)
        return 2
    try:
        checks = diagnose(gw, namespace, cre_group, cre_controller, jobs_namespace)
    finally:
        gw.close()
    passed = all(c.ok for c in checks)
    if output == "json":
        print(json.dumps({"ok": passed, "checks": [c.as_json() for c in checks]}, indent=2, ensure_ascii=False))
    else:
        print("\n".join(c.line() for c in checks))
    return 0 if passed else 1
