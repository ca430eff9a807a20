"""The local stack's composition: a real kube-apiserver + etcd with the CRDs and the RBAC of
`knative/`; every function served by functions-framework on loopback, each authenticated as its own
ServiceAccount, with the settings of a ConfigMap whose successor is a new revision (`localstack.revisions`);
stand-ins for the Knative parts: a Broker that routes with the Triggers and delivery settings of
`knative/base`, an ApiServerSource per source of `knative/base` (Resource mode, LIST+WATCH), and a
PingSource ticking `resync` (whose `K_SINK` is the local Broker); a real Alertmanager for the `alert`
function unless the user named one; and, when Debian's `prometheus` is installed, a real Prometheus
scraping every function and the `metrics` target with the rules of the monitoring component
(`localstack.observability.prometheus`). On a cluster of its own with Knative's CRDs, the
install's Knative objects, their status kept as Knative's controllers would (`localstack.knative`).
"""

from __future__ import annotations

import contextlib
import functools
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from events.types import CRE_GROUP_DEFAULT
from functions.registry import METRICS, TARGETS
from functions.runtime.client import send
from functions.runtime.errors import AlreadyExists, Unavailable
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NAMESPACES, Resource, cre_logprofiles
from localstack.cluster.apiserver import LocalCluster
from localstack.eventing.apisource import WatchSource
from localstack.eventing.broker import LocalBroker, triggers_from_manifests
from localstack.eventing.chaos import Chaos
from localstack.knative import Endpoint, Reconciler, missing_crds, write_objects
from localstack.manifests import KNATIVE, NAMESPACE, render, service_account_user
from localstack.observability.alertmanager import AlertmanagerError, LocalAlertmanager, find_alertmanager, start_webhook
from localstack.observability.prometheus import LocalPrometheus, PrometheusError, find_prometheus
from localstack.processes import stop_together
from localstack.revisions import Revisions, apply_settings, settings_of
from localstack.serving import ServedFunction
from localstack.timeline import Timeline

RBAC_KINDS = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
STOP_GRACE = 1.0
"""Seconds the stack's processes have, all together, to stop on SIGTERM before they are SIGKILLed: a function stays
in gunicorn's graceful stop for as long as a request it serves waits (on an API server stopping beside it), and
nothing here needs a graceful stop."""
SLOW_STOP = 3.0
"""Seconds the stack's stop may take before it says how long it took, and in which steps (those ≥ `SLOW_STEP`)."""
SLOW_STEP = 0.2
STACK_USERS = tuple(service_account_user(f"crefn-{t}") for t in (*TARGETS, "apiserversource"))


class Stopping(contextlib.ExitStack):
    """An ExitStack that times its own unwinding: `steps` holds each slow step's name and seconds (≥ `SLOW_STEP`),
    so a stop that takes long says what took the time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.clock = clock
        self.steps: list[tuple[str, float]] = []
        self.began = 0.0
        """When the stop began (monotonic), 0 until it does."""
        self.cpu = 0.0
        """This process's CPU seconds when the stop began."""

    def begin(self) -> None:
        """The stop begins now."""
        self.began, self.cpu = self.clock(), cpu_seconds()

    def note(self, name: str, began: float) -> None:
        took = self.clock() - began
        if took >= SLOW_STEP:
            self.steps.append((name, took))

    def report(self, say: Callable[[str], None]) -> None:
        took = self.clock() - self.began
        if self.began and took >= SLOW_STOP:
            slow = "".join(f"; {name} {seconds:.1f}s" for name, seconds in self.steps)
            say(f"!! the stop took {took:.1f}s (CPU {cpu_seconds() - self.cpu:.2f}s{slow})")

    def callback(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        name = getattr(fn, "__qualname__", repr(fn)).rpartition("<locals>.")[2]

        def timed() -> None:
            began = self.clock()
            try:
                fn(*args, **kwargs)
            finally:
                self.note(name, began)
        super().callback(timed)
        return fn


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Ticker:
    """PingSource stand-in: a `dev.knative.sources.ping` event to `url` every `interval` seconds."""

    def __init__(self, url: str, interval: float, name: str = "crefn-resync") -> None:
        self.url, self.interval, self.name = url, interval, name
        self._stop = threading.Event()
        self.ticks = 0
        threading.Thread(target=self._run, daemon=True, name="pingsource").start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            record = {"attributes": {"specversion": "1.0", "id": f"tick-{self.ticks}",
                                     "type": "dev.knative.sources.ping", "datacontenttype": "application/json",
                                     "source": f"/apis/v1/namespaces/crefn-system/pingsources/{self.name}"},
                      "data": {}}
            with contextlib.suppress(Unavailable):
                send(self.url, record)
            self.ticks += 1

    def stop(self) -> None:
        self._stop.set()


class Supervisor:
    """Starts again what dies, as Knative does a revision's pods and a kubelet a static pod: a served
    function on its own port (the Broker's Triggers keep their URLs; a delivery that failed meanwhile is
    retried by the Broker), and a killed kube-apiserver on the same etcd and port. Counts restarts. With
    `revisions`, makes a new revision of every served process (`functions` and `others`) when the settings
    change (`localstack.revisions`): each stopped, then started again on its port with the new settings; one that
    does not start with them is started again with the ones it had, as Knative keeps a Service's revision that
    never became ready out of traffic and the previous one serving."""

    def __init__(self, functions: dict[str, ServedFunction], cluster: LocalCluster | None, timeline: Timeline,
                 interval: float = 0.2, revisions: Revisions | None = None,
                 others: tuple[ServedFunction, ...] = ()) -> None:
        self.functions, self.cluster, self.timeline, self.interval = functions, cluster, timeline, interval
        self.revisions, self.others = revisions, others
        self.restarts: dict[str, int] = {}
        self.rolls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="supervisor")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            wanted = self.revisions.take() if self.revisions is not None else None
            if wanted is not None and not self._stop.is_set():
                self._roll(*wanted)
            for name, served in list(self.functions.items()):
                if served.exited and not self._stop.is_set():
                    self._restart(name, lambda served=served: served.start(timeout=30, same_port=True))
            if self.cluster is not None and self.cluster.apiserver_exited() and not self._stop.is_set():
                self._restart("kube-apiserver", self.cluster.restart_apiserver)

    def _restart(self, name: str, start: Any) -> None:
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self.timeline.say(f"!! {name} exited: starting it again (restart {self.restarts[name]})")
        try:
            start()
        except Exception as e:  # it stays down until the next look
            self.timeline.say(f"!! {name} did not start again: {e}")

    def _roll(self, name: str, settings: dict[str, str]) -> None:
        served = [*self.functions.values(), *self.others]
        self.rolls += 1
        self.timeline.say(f"!! settings {name}: a new revision of every function, in "
                          f"{settings.get('CREFN_MODE', 'manage')} mode")
        for one in served:
            one.terminate()
        for one in served:
            one.stop()
        for one in served:
            before, one.settings = one.settings, dict(settings)
            try:
                one.start(timeout=30, same_port=True)
            except RuntimeError as e:
                self.timeline.say(f"!! {one.target} did not start with {name} ({e}): its previous revision serves")
                one.settings = before
                self._restart(one.target, lambda one=one: one.start(timeout=30, same_port=True))

    def halt(self) -> None:
        """No more restarts from now on (a restart under way ends in its own time)."""
        self._stop.set()

    def stop(self) -> None:
        """No more restarts; a restart under way is not waited for beyond a second (what it starts dies with the
        supervisor's thread: `localstack.processes`)."""
        self.halt()
        self._thread.join(timeout=1)


def stop_all(functions: dict[str, ServedFunction]) -> None:
    """Stop served functions together: each asked to stop first, then each waited for."""
    for served in functions.values():
        served.terminate()
    for served in functions.values():
        served.stop()


@dataclass
class Stack:
    cluster: LocalCluster
    gateway: Gateway
    broker: LocalBroker
    functions: dict[str, ServedFunction]
    out_dir: Path
    group: str
    alertmanager: LocalAlertmanager | None = None
    prometheus: LocalPrometheus | None = None
    supervisor: Supervisor | None = None
    scrape_targets: list[ServedFunction] = field(default_factory=list)
    """Functions served for Prometheus only (the `metrics` target)."""
    revisions: Revisions | None = None
    """The settings ConfigMap the functions are served from (`revisions.served`), and what changes it."""

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


def start_prometheus(stack: contextlib.ExitStack, cluster: LocalCluster, work_dir: Path, out_dir: Path,
                     timeline: Timeline, settings: dict[str, str], functions: dict[str, ServedFunction],
                     scrape_targets: list[ServedFunction]) -> LocalPrometheus | None:
    """A local Prometheus (when one is installed) scraping every served function and the `metrics`
    target, served here as its own ServiceAccount with `settings`: it answers scrapes only, so only Prometheus
    needs it."""
    try:
        find_prometheus()
    except PrometheusError as e:
        timeline.say(f"      {e}; nothing is scraped")
        return None
    env = {"CREFN_KUBECONFIG": str(cluster.service_account_kubeconfig(NAMESPACE, f"crefn-{METRICS}"))}
    metrics = ServedFunction(METRICS, env, out_dir / f"function-{METRICS}.log", settings=settings)
    stack.callback(stop_all, {METRICS: metrics})
    scrape_targets.append(metrics)
    targets = {**{t: f.url for t, f in functions.items()}, METRICS: metrics.start().url}
    prometheus = LocalPrometheus(work_dir / "prometheus", targets).start()
    stack.callback(prometheus.stop)
    timeline.say(f"      Prometheus on {prometheus.url}: scrapes every function and the {METRICS} target, "
                 "with the rules of knative/components/monitoring")
    return prometheus


def apply_rbac(gw: Gateway, docs: list[dict[str, Any]]) -> None:
    """Create the ClusterRoles and bindings of the manifests (those already there are left as they are)."""
    for doc in docs:
        if doc["kind"] in RBAC_KINDS:
            res = Resource("rbac.authorization.k8s.io", "v1", RBAC_KINDS[doc["kind"]], doc["kind"], False)
            with contextlib.suppress(AlreadyExists):
                gw.create(res, None, doc)


@functools.cache
def shipped_logprofiles() -> tuple[dict[str, Any], ...]:
    """CRE's LogProfiles as the `logprofiles` component ships them: its resources with its labels (read, not built:
    a kustomize build on a busy machine delays the stack's start by seconds; tests/system/test_manifests.py renders
    the component itself)."""
    component = KNATIVE / "components" / "logprofiles"
    kustomization = yaml.safe_load((component / "kustomization.yaml").read_text())
    labels = {k: v for entry in kustomization.get("labels") or [] for k, v in (entry.get("pairs") or {}).items()}
    docs = [d for name in kustomization["resources"] for d in yaml.safe_load_all((component / name).read_text()) if d]
    return tuple({**d, "metadata": {**d["metadata"], "labels": {**(d["metadata"].get("labels") or {}), **labels}}}
                 for d in docs if d["kind"] == "LogProfile")


def apply_logprofiles(gw: Gateway, group: str) -> int:
    """CRE's LogProfiles for `group` (as the legacy-group component moves them), those missing created: what an
    install without CRE adds the `logprofiles` component for, so that `measure` finds the profiles its
    measurements name. How many were created."""
    made = 0
    for doc in shipped_logprofiles():
        body = {**doc, "apiVersion": f"{group}/{doc['apiVersion'].split('/', 1)[1]}"}
        with contextlib.suppress(AlreadyExists):
            gw.create(cre_logprofiles(group), None, body)
            made += 1
    return made


def endpoints_of(served: list[ServedFunction], broker: LocalBroker) -> dict[str, Endpoint]:
    """What serves each Knative Service of the install here: a function's process, the Broker's recorder."""
    found = {f"crefn-{f.target}": Endpoint(f.url, running(f), f.env) for f in served}
    found["crefn-dead-letters"] = Endpoint(broker.dead_letter_sink, lambda: bool(broker.url), {})
    return found


def running(served: ServedFunction) -> Callable[[], bool]:
    return lambda: not served.exited


def mirror_knative(stack: contextlib.ExitStack, cluster: LocalCluster, docs: list[dict[str, Any]],
                   revisions: Revisions, endpoints: dict[str, Endpoint], broker: LocalBroker,
                   watching: dict[str, list[WatchSource]], timeline: Timeline) -> Reconciler | None:
    """The install's Knative objects written to the API server and their status kept (`localstack.knative`),
    when its Knative CRDs are loaded."""
    gw = Gateway.connect(str(cluster.kubeconfig), 2.0)
    stack.callback(gw.close)
    if missing := missing_crds(gw, docs):
        timeline.say(f"      Knative's CRDs are not loaded ({', '.join(missing)}): the install's Knative objects "
                     "are not written")
        return None
    with contextlib.suppress(AlreadyExists):
        gw.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    written = write_objects(gw, docs, endpoints, revisions.served, revisions.data)
    sources = {name: (lambda ws=ws: all(w.ready.is_set() for w in ws)) for name, ws in watching.items()}
    reconciler = Reconciler(gw, NAMESPACE, endpoints, lambda: broker.url, sources,
                            settings=lambda: revisions.served)
    reconciler.reconcile()  # the first pass before the stack is used
    reconciler.start()
    timeline.say(f"      {written} Knative objects of the install in {NAMESPACE}, with the status Knative's "
                 "controllers would give them (cre-fn doctor reads them)")
    return reconciler


def label_selector(selector: dict[str, Any]) -> str:
    """An ApiServerSource's selector as a label selector string (matchLabels; matchExpressions In,
    NotIn, Exists, DoesNotExist)."""
    terms = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], ",".join(expr.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[op])
    return ",".join(terms)


CLUSTER_SCOPED = frozenset({"Node", "Namespace"})


def resource_of(api_version: str, kind: str) -> Resource:
    group, _, version = api_version.rpartition("/")
    return Resource(group, version, kind.lower() + "s", kind, namespaced=kind not in CLUSTER_SCOPED)


@contextlib.contextmanager
def start_stack(out_dir: Path, timeline: Timeline, settings: dict[str, str], ping_interval: float,
                work_dir: Path, group: str, cluster: LocalCluster | None = None,
                namespace: str | None = None, monitoring: bool = True,
                chaos: Chaos | None = None, audit: bool = False, install: str = "installs/default",
                parity_observer: Mapping[str, str] | None = None, knative: bool = True) -> Iterator[Stack]:
    """Everything but the demo, for CRE group `group` (the functions' `CREFN_CRE_GROUP`). An existing
    `cluster` (with the STACK_USERS tokens) is used as it is; `namespace` confines the ApiServerSources
    to one namespace (all namespaces otherwise). Without `monitoring`, no Alertmanager and no
    Prometheus are started (`make bench`: a scrape of the `metrics` target every second LISTs every
    Job, which would weigh on the figures). With `chaos`, the Broker drops, duplicates, holds back and
    delays deliveries (`localstack.eventing.chaos`). With `audit` (a cluster of its own), the audit log
    records every request of every function (`LocalCluster.audit_entries`). `install` (of knative/) gives the
    Triggers, the sources and, on a cluster of the stack's own, the roles. `parity_observer` (its settings)
    serves `parity` in observe mode beside the managing functions, with the observe install's Trigger and tick:
    every verdict the functions write is compared with what they would write. A supervisor starts again any
    function process, or the stack's own kube-apiserver, that dies. With `knative`, on a cluster of the stack's
    own, the install's Knative objects are written and their status kept (`make bench` goes without: the
    status passes would weigh on its figures). The functions' settings are the install's
    with `settings` merged in, a ConfigMap of the API server's `crefn-system`; a new one there is a new revision
    of every function (`localstack.revisions`)."""
    say = timeline.say
    with Stopping() as stack:
        stack.push(lambda *_: stack.report(say))  # the first pushed, the last to run
        owned = cluster is None
        functions: dict[str, ServedFunction] = {}
        scrape_targets: list[ServedFunction] = []
        ours: list[Any] = []  # what runs a process of ours: Alertmanager, Prometheus, the cluster if we started it
        supervisor: Supervisor | None = None
        reconciler: Reconciler | None = None
        try:
            if cluster is None:
                say("[1/5] starting etcd and kube-apiserver (built on first use, with progress)")
                groups = tuple(dict.fromkeys((CRE_GROUP_DEFAULT, group)))
                cluster = LocalCluster(work_dir / "cluster", users=STACK_USERS, cre_groups=groups, log=timeline.out,
                                       audit_users=STACK_USERS if audit else ()).start()  # stops itself if it fails
                stack.callback(cluster.stop)
                ours.append(cluster)
            else:
                say(f"[1/5] using the API server at {cluster.url}")
            gw = cluster.gateway()
            stack.callback(gw.close)
            docs = render(install)
            if parity_observer is not None:
                docs += [d for d in render("installs/observe") if d["kind"] in ("Trigger", "PingSource")
                         and d["metadata"]["name"].startswith("crefn-parity")]
            if owned or install == "installs/default":  # a cluster given (the test suite's, shared) keeps base's roles
                apply_rbac(gw, docs)
            if made := apply_logprofiles(gw, group):  # no CRE here: its chart's profiles come with the functions
                say(f"      CRE's LogProfiles of knative/components/logprofiles: {made} created, for measure to read")
            served = {**settings_of(docs), **settings}  # the install's settings, the stack's merged in
            watcher_gw = cluster.gateway()
            stack.callback(watcher_gw.close)
            revisions = Revisions(watcher_gw, NAMESPACE, apply_settings(gw, NAMESPACE, served), served).start()
            stack.callback(revisions.stop)
            alertmanager = start_alertmanager(stack, work_dir, timeline, settings) if monitoring else None
            ours.append(alertmanager)
            own = {"CREFN_ALERTMANAGER_URL": alertmanager.url} if alertmanager is not None else {}
            say("[2/5] serving every function with functions-framework, each as its ServiceAccount, with the "
                f"settings of the ConfigMap {NAMESPACE}/{revisions.served}")
            reserved = stack.enter_context(socket.socket())  # held until the Broker binds it: no function started
            reserved.bind(("127.0.0.1", 0))                   # meanwhile is given the Broker's port
            broker_port = int(reserved.getsockname()[1])
            broker_url = f"http://127.0.0.1:{broker_port}/"
            stack.callback(stop_all, functions)
            for target in TARGETS:
                user = service_account_user(f"crefn-{target}")
                env = {**own, "CREFN_KUBECONFIG": str(cluster.kubeconfig_for(user)), "K_SINK": broker_url}
                if target == "parity" and parity_observer is not None:
                    env.update({**parity_observer, "CREFN_MODE": "observe"})
                functions[target] = ServedFunction(target, env, out_dir / f"function-{target}.log", settings=served)
                functions[target].start()
            prometheus = start_prometheus(stack, cluster, work_dir, out_dir, timeline, served, functions,
                                          scrape_targets) if monitoring else None
            ours.append(prometheus)
            say(f"[3/5] starting the Broker with the Triggers and delivery of knative/{install}")
            triggers, _ = triggers_from_manifests(docs, {f"crefn-{t}": f.url for t, f in functions.items()})
            broker = LocalBroker(triggers, dead_letters=out_dir / "dead-letters.jsonl",
                                 event_log=out_dir / "events.jsonl", on_outcome=timeline.outcome,
                                 on_publish=timeline.published, chaos=chaos)
            stack.callback(broker.close)
            reserved.close()
            broker.serve(broker_port)
            say(f"[4/5] starting the ApiServerSources of knative/{install} → {broker_url}")
            watching: dict[str, list[WatchSource]] = {}
            for src in (d for d in docs if d["kind"] == "ApiServerSource"):
                for res in src["spec"]["resources"]:
                    selector = label_selector(res.get("selector") or {})
                    source_gw = cluster.gateway(service_account_user("crefn-apiserversource"))
                    source = WatchSource(source_gw, resource_of(res["apiVersion"], res["kind"]), broker.publish,
                                         namespace=namespace, label_selector=selector).start()
                    stack.callback(source_gw.close)
                    stack.callback(source.stop)
                    source.ready.wait(timeout=10)
                    watching.setdefault(src["metadata"]["name"], []).append(source)
            pings = {d["metadata"]["name"]: d["spec"]["sink"]["ref"]["name"].removeprefix("crefn-")
                     for d in docs if d["kind"] == "PingSource"}
            say(f"[5/5] PingSource: {', '.join(pings.values())} every {ping_interval:g}s")
            for name, target in pings.items():
                stack.callback(Ticker(functions[target].url, ping_interval, name).stop)
            if knative and owned:
                reconciler = mirror_knative(stack, cluster, docs, revisions,
                                            endpoints_of([*functions.values(), *scrape_targets], broker), broker,
                                            watching, timeline)
            supervisor = Supervisor(functions, cluster if owned else None, timeline, revisions=revisions,
                                    others=tuple(scrape_targets))
            stack.callback(supervisor.stop)
            yield Stack(cluster, gw, broker, functions, out_dir, group, alertmanager, prometheus, supervisor,
                        scrape_targets, revisions)
        finally:  # however the stack ends (Ctrl-C included): nothing started again, every process stopped at once,
            # and only then the loops waited for (a second each at most): on a busy machine their joins would
            # otherwise delay the processes' stop (Ctrl-C has 10 s: tests/localstack/test_dev.py)
            stack.begin()
            for loop in (supervisor, reconciler):
                if loop is not None:
                    loop.halt()
            stop_together([*(f.process for f in (*functions.values(), *scrape_targets) if f.process),
                           *(proc for holder in ours if holder is not None for proc in holder.children())],
                          STOP_GRACE)
            stack.note("every process", stack.began)
            for loop in (supervisor, reconciler):
                if loop is not None:
                    loop.stop()
