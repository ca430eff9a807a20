"""Hostile events at volume, against every event function served as its ServiceAccount on the real API
server: generated events (hypothesis, seeded with `FUZZ_SEED`, a fresh seed when unset, printed in the run's
header) of every type each function accepts and of others, whose data are the catalog's samples mutated, naming
objects that do not exist. Every answer is a documented one for its input (never 500; 400 for what can never be
handled; the API server is up, so never 503), and no event makes a function write to the API server: an object
it cannot read fresh is never written. A PingSource tick ignores its data (parity's as resync's, which acts on
the cluster's Jobs and is not fuzzed): whatever it carries, it is never malformed. `FUZZ_EXAMPLES` events per
function (50 in `make test`; `make fuzz` runs 10,000)."""

from __future__ import annotations

import os
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from events.types import ApiServerType
from functions.registry import HANDLERS, TARGETS
from functions.runtime.client import send
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import service_account_user
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.helpers import closed_port

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
SEED = int(os.environ["FUZZ_SEED"])
"""Chosen once per run by tests/conftest.py (`FUZZ_SEED`, else a fresh one), shared by pytest-xdist's workers."""
TICK = ApiServerType.PING.value
"""A PingSource tick: the function reads the cluster, not the tick's data (a tick carries none it needs)."""
FUZZED = sorted(set(HANDLERS) - {"resync"})  # resync acts on the cluster's Jobs, not on its event's object
ABSENT = "fuzz-absent"
"""The namespace every generated event names: it does not exist, so nothing it names can be read."""
WRITES = re.compile(r'^crefn_kube_requests_total\{.*verb="(create|patch|update|delete)".*\} (\d+)', re.M)
BASES: list[dict[str, Any]] = [load_sample(name)["data"] for name in (
    "trainjob-resource-update-failed", "workloadrun-resource-add", "trainjob-resource-delete")]
BASES += [
    {"job": {"name": "llm", "namespace": ABSENT}, "phase": "Failed", "observedAt": "2026-11-30T12:00:00Z",
     "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                  "namespace": ABSENT, "attempt": 0}},
    {"job": {"name": "llm", "namespace": ABSENT}, "new": {"type": "Failed", "reason": "WorkloadFailed"},
     "restartCount": 1},
    {"job": {"name": "llm", "namespace": ABSENT}, "attempt": 0, "checks": ["nodehealth", "validation"]},
    {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
     "metadata": {"name": "llm", "namespace": ABSENT, "labels": {"crefn.dev/managed": "true"}},
     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}},
     "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}]}},
]
EMITTED = ("dev.crefn.job.deadline", "dev.crefn.workload.stalled", "dev.crefn.job.validation",
           "dev.crefn.job.hardware.failed")
BASES += [load_sample(f"emitted/{name}")["data"] for name in EMITTED]
BASES += [{"job": {"name": "llm", "namespace": ABSENT}, "attempt": 0, "adopted": False,
           "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                        "namespace": ABSENT, "uid": "u", "resourceVersion": "1", "attempt": 0}}]
OBJECTS = (0, 1, 2, 6)
"""The bases that are Kubernetes objects (the API server's events carry one)."""
MATCHING = {"dev.crefn.workload.phase": 3, "dev.crefn.job.condition.changed": 4, "dev.crefn.job.check": 5,
            **{name: 7 + i for i, name in enumerate(EMITTED)}, "dev.crefn.workload.created": 7 + len(EMITTED)}
"""The base whose shape an event type calls for (objects, for the API server's event types)."""
ANSWERS: Counter[tuple[str, int]] = Counter()
SPENT: Counter[str] = Counter()
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10)


def absent(obj: Any) -> Any:
    """The object with every namespace it names moved to ABSENT."""
    if isinstance(obj, dict):
        return {k: ABSENT if k == "namespace" else absent(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [absent(v) for v in obj]
    return obj


def mutate(obj: Any, path: list[str], value: Any) -> Any:
    if not path or not isinstance(obj, dict):
        return value
    return {**obj, path[0]: mutate(obj.get(path[0]), path[1:], value)}


@pytest.fixture(scope="module")
def servers(serve: Callable[..., ServedFunction], cluster: LocalCluster,
            request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    urls = {}
    for target in FUZZED:
        kubeconfig = cluster.kubeconfig_for(service_account_user(f"crefn-{target}"))
        # no alert sink: what alert sends is not tried here; K_SINK refuses connections
        urls[target] = serve(target, CREFN_KUBECONFIG=str(kubeconfig), CREFN_LOG_LEVEL="ERROR", FUZZ="1",
                             K_SINK=f"http://127.0.0.1:{closed_port()}/").url
    yield urls
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None and ANSWERS:
        with capture.global_and_fixture_disabled():  # the figures go to the terminal, not to captured output
            reporter.write_line(f"\nfuzz: {EXAMPLES} events per function (FUZZ_SEED={SEED}), answers by status")
            for target in FUZZED:
                by_status = ", ".join(f"{status}: {n}" for (t, status), n in sorted(ANSWERS.items()) if t == target)
                reporter.write_line(f"  {target:<14} {by_status}  ({SPENT[target]:.1f} s)")


def writes(url: str) -> int:
    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        return sum(int(n) for _, n in WRITES.findall(resp.read().decode()))


@pytest.mark.parametrize("target", FUZZED)
def test_fuzzed_events_get_documented_answers_and_write_nothing(servers: dict[str, str], target: str) -> None:
    url = servers[target]
    types = [*sorted(TARGETS[target].accepts), "dev.crefn.unknown", "x.y"]
    started = time.monotonic()

    @seed(SEED)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(type_=st.sampled_from(types), base=st.sampled_from(BASES),
           path=st.lists(st.sampled_from(["metadata", "spec", "status", "job", "new", "phase", "workload", "name",
                                          "kind", "apiVersion", "conditions", "labels", "attempt", "checks"]),
                         max_size=3),
           value=json_values, mutated=st.booleans(), matched=st.booleans(), structured=st.booleans(),
           kind=st.sampled_from(["TrainJob", "Job", "WorkloadRun", "Pod", "Node", ""]))
    def one(type_: str, base: dict[str, Any], path: list[str], value: Any, mutated: bool, matched: bool,
            structured: bool, kind: str) -> None:
        if matched:  # the data its type calls for, so that the event gets past parsing
            base = BASES[MATCHING.get(type_, OBJECTS[BASES.index(base) % len(OBJECTS)])]
            kind = str(base.get("kind", kind))
        attrs = {"specversion": "1.0", "id": "fuzz", "source": "/fuzz", "type": type_, "kind": kind,
                 "apiversion": "nvcre.nvidia.com/v1alpha1", "workloadphase": "Failed", "namespace": ABSENT,
                 "job": "llm", "subject": f"{ABSENT}/llm"}
        data = absent(mutate(base, path, value) if mutated else base)
        answer = send(url, {"attributes": attrs, "data": data}, structured=structured)
        ANSWERS[(target, answer.status)] += 1
        assert answer.status in {200, 202, 400}, (type_, answer.status, answer.text)
        accepted = type_ in TARGETS[target].accepts
        if accepted and type_ == TICK:  # its data ignored, whatever it is: a tick, handled
            assert answer.status == 202, (type_, answer.status, answer.text)
        elif not accepted or (mutated and not path and not isinstance(value, dict)):  # malformed: never handled
            assert answer.status == 400, (type_, answer.status, answer.text)
        elif matched and not mutated and type_ in MATCHING:  # well-formed, naming a Job that is not there: gone
            assert answer.status == 202, (type_, answer.status, answer.text)
        if answer.status == 400:
            assert answer.text and "\n" not in answer.text

    try:
        one()
    except Exception as e:  # the falsifying example is shown; with `-q` the header's seed is not
        e.add_note(f"FUZZ_SEED={SEED}: `make fuzz FUZZ_SEED={SEED} FUZZ_EXAMPLES={EXAMPLES}` makes these events again")
        raise
    SPENT[target] += time.monotonic() - started
    assert writes(url) == 0
