"""Every read the handlers make (they never call the gateway themselves): a CRE Job as a `JobState`, a
TrainJob, WorkloadRun or Node as raw JSON, the Job's measurements, the pods of a Job's attempt or on a
Node, and the end of a failed container's log.

Decisions about writes and deletes use what these return, never an event's payload alone: events
can be stale, duplicated or forged (SPEC §6.4). The rules an attempt is judged by (its pods and their logs, its
checkpoint, its measurements) are imported by the reads that need them, so a function that reads none of them
(`phase`) does not load them (`tests/system/test_loads.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from events.objects import CreJob, Pod
from events.types import (
    CRE_VERSION,
    FINISHED_LABEL,
    JOB_KIND,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    MANAGED_LABEL,
    TRAINJOB_KIND,
    job_label,
)
from functions.domain.jobs import JobState, parse_job
from functions.runtime.context import Context
from functions.runtime.errors import CrefnError, Forbidden, NotFound, PermanentError
from functions.runtime.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    EVENTS,
    NODES,
    PODS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    Resource,
    cre_goodput,
    cre_jobs,
    cre_workloadruns,
)

if TYPE_CHECKING:
    from functions.domain.pods import Capture, LogSource


def read_job(ctx: Context, namespace: str, name: str) -> JobState | None:
    group = ctx.settings.cre_group
    raw = ctx.gateway.get(cre_jobs(group), namespace, name)
    if raw is None:
        return None
    raw.setdefault("apiVersion", f"{group}/{CRE_VERSION}")
    raw.setdefault("kind", JOB_KIND)
    return parse_job(raw, group)


def read_trainjob(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(TRAINJOBS, namespace, name)


def read_event(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    """A Kubernetes Event (events.k8s.io) by name: a verdict's transition Event."""
    return ctx.gateway.get(EVENTS, namespace, name)


def read_first_event(ctx: Context, namespace: str, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The first of the named Events that exists (None: none does)."""
    for name in names:
        if (event := read_event(ctx, namespace, name)) is not None:
            return event
    return None


def has_events(ctx: Context, namespace: str, kind: str, name: str, uid: str) -> bool:
    """Whether the API server holds an Event about that object, by its kind, name and uid together (a uid alone,
    taken from an event, could be any object's): what the cluster still says of an object that is gone. One
    LIST, served by the API server's watch cache (no scan of the namespace's Events in etcd). The API server
    keeps an Event an hour by default (kube-apiserver's `--event-ttl`). Not allowed to list Events (the role
    not yet updated): False, as for an object nothing is known of."""
    selector = ",".join(f"regarding.{field}={field_value(value)}"
                        for field, value in (("kind", kind), ("name", name), ("uid", uid)))
    try:
        page = next(ctx.gateway.pages(EVENTS, namespace, page_size=1, field_selector=selector, cached=True))
    except Forbidden:
        return False
    return bool(page["items"])


def field_value(value: str) -> str:
    """A value of a field selector, its separators escaped (as Kubernetes' `fields.EscapeValue`)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def read_pod(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(PODS, namespace, name)


def read_job_of_workload(ctx: Context, namespace: str, trainjob: str) -> CreJob | None:
    """The Job whose `status.workloadRef` names the TrainJob (one LIST of the namespace's Jobs): how a
    TrainJob that is gone, and its ownerReferences with it, is attributed."""
    for raw in ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), namespace):
        job = CreJob.model_validate(raw)
        ref = job.status.workload_ref
        if ref and ref.kind == TRAINJOB_KIND and ref.name == trainjob:
            return job
    return None


def managed_trainjob_pages(ctx: Context, unfinished: bool = False) -> Iterator[dict[str, Any]]:
    """Every TrainJob made as CRE makes them (label `app.kubernetes.io/managed-by: nvcre`: the functions' and CRE's
    own), a page at a time; with
    `unfinished`, only those without the finished label, from the API server's watch cache (see `job_pages`)."""
    selector = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}" + (f",!{FINISHED_LABEL}" if unfinished else "")
    return ctx.gateway.pages(TRAINJOBS, None, label_selector=selector, cached=unfinished)


def cached_jobs(ctx: Context, label_selector: str) -> list[dict[str, Any]]:
    """Every CRE Job the selector picks, from the API server's watch cache (`resourceVersion=0`): what a
    metrics scrape reads — a moment behind etcd at most, which a gauge can be, and no etcd read."""
    return ctx.gateway.list_all(cre_jobs(ctx.settings.cre_group), None, label_selector=label_selector, cached=True)


def job_pages(ctx: Context, label_selector: str, cached: bool = False) -> Iterator[dict[str, Any]]:
    """Every CRE Job of the cluster that the selector picks, a page at a time; with `cached`, from the API
    server's watch cache (`resourceVersion=0`, one page): the selector is applied in the API server's memory,
    where a LIST from etcd reads and decodes every Job, finished ones too, to find the few it picks."""
    return ctx.gateway.pages(cre_jobs(ctx.settings.cre_group), None, label_selector=label_selector, cached=cached)


def read_goodputs(ctx: Context, state: JobState, evidence: bool = False) -> tuple[dict[str, Any], ...]:
    """The GoodputMeasurements that refer to the Job (`spec.jobRef`). The one named `<job>-goodput` (the
    name `measurements` gives it) when it refers to the Job: one GET, however many the namespace holds;
    with `evidence`, only when it also reports a checkpoint (else another of the Job's might). Otherwise
    all that refer to it, in list order (one LIST of the namespace), as CRE's `findJobGoodputMeasurement`
    looks for them."""
    from functions.domain.checkpoint import has_checkpoint
    from functions.domain.measurement_objects import goodput_name, measures

    res, job = cre_goodput(ctx.settings.cre_group), state.ref.name
    named = ctx.gateway.get(res, state.ref.namespace, goodput_name(job))
    if named is not None and measures(named, job) and (not evidence or has_checkpoint((named,), job)):
        return (named,)
    return tuple(gm for gm in ctx.gateway.list_all(res, state.ref.namespace) if measures(gm, job))


def goodput_exists(ctx: Context, state: JobState) -> bool:
    """Whether the Job's `<job>-goodput` measurement exists: one GET."""
    from functions.domain.measurement_objects import goodput_name

    return ctx.gateway.get(cre_goodput(ctx.settings.cre_group), state.ref.namespace,
                           goodput_name(state.ref.name)) is not None


def read_bandwidth(ctx: Context, state: JobState) -> dict[str, Any] | None:
    """The object named `<job>-bandwidth` (whichever Job it was made for): one GET."""
    from functions.domain.measurement_objects import bandwidth_measurements, bandwidth_name

    return ctx.gateway.get(bandwidth_measurements(ctx.settings.cre_group), state.ref.namespace,
                           bandwidth_name(state.ref.name))


def read_measurements(ctx: Context, namespace: str, goodput: bool, bandwidth: bool) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    """The namespace's GoodputMeasurements and BandwidthMeasurements (each listed only when asked for)."""
    from functions.domain.measurement_objects import bandwidth_measurements

    group = ctx.settings.cre_group
    return (ctx.gateway.list_all(cre_goodput(group), namespace) if goodput else [],
            ctx.gateway.list_all(bandwidth_measurements(group), namespace) if bandwidth else [])


PAGE_SIZE = 500


def read_node(ctx: Context, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(NODES, None, name)


def read_nodes(ctx: Context, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The Nodes that carry all these labels (paged)."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return ctx.gateway.list_all(NODES, None, label_selector=selector, page_size=PAGE_SIZE)


def read_managed_pods_on_node(ctx: Context, node: str) -> list[dict[str, Any]]:
    """The managed pods on a Node, in every namespace (paged)."""
    return ctx.gateway.list_all(PODS, None, label_selector=f"{MANAGED_LABEL}=true", page_size=PAGE_SIZE,
                                field_selector=f"spec.nodeName={node}")


def read_workloadrun(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(cre_workloadruns(ctx.settings.cre_group), namespace, name)


def read_object(ctx: Context, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
    return ctx.gateway.get(resource, namespace, name)


def read_pods(ctx: Context, state: JobState, attempt: int | None = None) -> tuple[Pod, ...]:
    """The pods of the Job's attempt (the current one unless named): of the Job's pods, those its labels say
    (`functions.domain.pods.of_attempt`)."""
    from functions.domain.pods import of_attempt

    return of_attempt(read_job_pods(ctx, state), state.job.status.restart_count if attempt is None else attempt)


def read_job_pods(ctx: Context, state: JobState) -> tuple[Pod, ...]:
    """Every pod labelled with the Job (`<group>/job=<job>`, what CRE labels its workload's pods with), of any
    attempt: what a verdict CRE wrote was decided on."""
    return pods_selected(ctx, state, f"{job_label(ctx.settings.cre_group)}={state.ref.name}")


def pods_selected(ctx: Context, state: JobState, selector: str) -> tuple[Pod, ...]:
    try:
        return tuple(Pod.model_validate(p) for p in ctx.gateway.list_all(PODS, state.ref.namespace, selector))
    except ValidationError as e:
        raise PermanentError(f"unreadable pod of {state.where}: {e.errors()[0]['msg']}") from None


def read_tail(ctx: Context, namespace: str, source: LogSource | None) -> str:
    """The end of the source container's log (800 lines, the last 32 KiB); "" when there is no source or
    the log cannot be read (no node, the kubelet unreachable, no permission): the verdict goes on without."""
    from functions.domain.pods import TAIL_BYTES, TAIL_LINES

    if source is None:
        return ""
    try:
        return ctx.gateway.read_log(namespace, source.pod, source.container, TAIL_LINES, TAIL_BYTES,
                                    ctx.settings.log_timeout_seconds)
    except CrefnError:
        return ""


def read_capture(ctx: Context, state: JobState, attempt: int | None = None, timeout: bool = False,
                 tail: bool = True) -> Capture:
    """The attempt's pods and the container a failure (or a timeout) log records, with its log tail
    unless `tail` is false."""
    from functions.domain.pods import Capture, failed_container, timeout_container

    pods = read_pods(ctx, state, attempt)
    source = timeout_container(pods) if timeout else failed_container(pods)
    return Capture(pods, source, read_tail(ctx, state.ref.namespace, source) if tail else "")


def read_runtime_jobs(ctx: Context, state: JobState) -> tuple[str, ...] | None:
    """The replicatedJob names of the training runtime the Job's TrainJob refers to (a TrainingRuntime in
    the Job's namespace, or a ClusterTrainingRuntime, the Trainer's default kind); None when it cannot
    be read (missing, or not readable by this function): the launch then names the usual ones."""
    ref = (state.job.spec.workload.train_job or {}).get("runtimeRef") or {}
    if not ref.get("name"):
        return None
    namespaced = ref.get("kind") == TRAINING_RUNTIMES.kind
    res = TRAINING_RUNTIMES if namespaced else CLUSTER_TRAINING_RUNTIMES
    try:
        runtime = ctx.gateway.get(res, state.ref.namespace if namespaced else None, str(ref["name"]))
    except (NotFound, Forbidden, PermanentError):
        return None
    jobs = (((runtime or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs") or []
    names = tuple(str(j["name"]) for j in jobs if isinstance(j, dict) and j.get("name"))
    return names or None
