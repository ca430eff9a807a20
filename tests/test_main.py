"""Every function over HTTP, fed random and mutated events: the answer is always one of SPEC §4.3's
(never 500, never a crash). The Kubernetes API is unreachable here, so reads answer 503. Every target
answers `GET /metrics`; the `metrics` target, fed any method and path, only its documented answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.registry import METRICS, SERVED, TARGETS
from functions.runtime.client import Answer, send
from localstack.samples import load_sample
from localstack.serving import ServedFunction
from tests.support.helpers import closed_port, unreachable_kubeconfig

TYPES = ["dev.knative.apiserver.resource.add", "dev.knative.apiserver.resource.update",
         "dev.knative.apiserver.resource.delete", "dev.knative.apiserver.ref.update", "dev.knative.sources.ping",
         "dev.crefn.workload.phase", "dev.crefn.job.condition.changed", "dev.crefn.job.restarted", "x.y"]
BASES: list[dict[str, Any]] = [
    load_sample("trainjob-resource-update-failed")["data"],
    load_sample("workloadrun-resource-add")["data"],
    {"job": {"name": "llm", "namespace": "ml"}, "phase": "Failed", "observedAt": "2026-11-30T12:00:00Z",
     "workload": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm-workload",
                  "namespace": "ml", "attempt": 0}},
    {"job": {"name": "llm", "namespace": "ml"}, "new": {"type": "Failed", "reason": "WorkloadFailed"},
     "restartCount": 1},
    {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "llm", "namespace": "ml"},
     "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}}},
     "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed"}]}},
]
ALLOWED = {200, 202, 400, 409, 429, 503}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10)


@pytest.fixture(scope="module")
def servers(serve: Callable[..., ServedFunction], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    kubeconfig = unreachable_kubeconfig(Path(tmp_path_factory.mktemp("kc")) / "kubeconfig")
    env = {"CREFN_KUBECONFIG": str(kubeconfig), "CREFN_KUBE_TIMEOUT_SECONDS": "1", "CREFN_LOG_LEVEL": "ERROR",
           "K_SINK": f"http://127.0.0.1:{closed_port()}/", "CREFN_ALERTMANAGER_URL": f"http://127.0.0.1:{closed_port()}"}
    return {target: serve(target, **env).url for target in SERVED}


def mutate(obj: Any, path: list[str], value: Any) -> Any:
    if not path or not isinstance(obj, dict):
        return value
    return {**obj, path[0]: mutate(obj.get(path[0]), path[1:], value)}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(sorted(TARGETS)), type_=st.sampled_from(TYPES), base=st.sampled_from(BASES),
       path=st.lists(st.sampled_from(["metadata", "spec", "status", "job", "new", "phase", "workload", "name",
                                      "kind", "apiVersion", "conditions", "framework", "attempt"]), max_size=3),
       value=json_values, structured=st.booleans(),
       kind=st.sampled_from(["TrainJob", "Job", "WorkloadRun", ""]))
def test_every_answer_is_a_documented_one(servers: dict[str, str], target: str, type_: str, base: dict[str, Any],
                                          path: list[str], value: Any, structured: bool, kind: str) -> None:
    attrs = {"specversion": "1.0", "id": "f", "source": "/fuzz", "type": type_, "kind": kind,
             "apiversion": "nvcre.nvidia.com/v1alpha1", "workloadphase": "Failed"}
    answer = send(servers[target], {"attributes": attrs, "data": mutate(base, path, value)}, structured=structured)
    assert answer.status in ALLOWED, (target, answer.status, answer.text)
    if answer.status >= 400:
        assert answer.text and "\n" not in answer.text


@pytest.mark.parametrize("job", [True, [], "llm", 3, {"name": ["x"], "namespace": "ml"}],
                         ids=["bool", "list", "string", "number", "name-a-list"])
def test_a_job_reference_that_is_not_one_is_400_for_workloadrun(servers: dict[str, str], job: Any) -> None:
    """Found by `make fuzz`: `job` of a job.condition.changed that is not an object crashed the mirror (500)."""
    attrs = {"specversion": "1.0", "id": "f", "source": "/fuzz", "type": "dev.crefn.job.condition.changed"}
    answer = send(servers["workloadrun"], {"attributes": attrs, "data": {"job": job, "new": {"type": "Failed"}}})
    assert answer.status == 400 and answer.text.startswith("invalid dev.crefn.job.condition.changed data: job"), \
        answer.text


@pytest.mark.parametrize("field", ["kind", "apiVersion"])
def test_an_object_without_its_kind_is_400_for_every_function(servers: dict[str, str], field: str) -> None:
    """Found by `make fuzz`: a resource-mode object with an empty kind or apiVersion crashed workloadrun."""
    attrs = {"specversion": "1.0", "id": "f", "source": "/fuzz", "type": "dev.knative.apiserver.resource.add"}
    data = {**load_sample("workloadrun-resource-add")["data"], field: ""}
    for target in sorted(TARGETS):
        answer = send(servers[target], {"attributes": attrs, "data": data})
        assert answer.status == 400, (target, answer.status, answer.text)


def request(url: str, method: str) -> Answer:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=30) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_function_answers_get_metrics(servers: dict[str, str], target: str) -> None:
    answer = request(servers[target] + "metrics", "GET")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain")
    assert "# TYPE crefn_events_total counter" in answer.text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
       path=st.sampled_from(["metrics", "", "metrics/", "x", "metrics?x=1", "a/b"]))
def test_the_metrics_target_answers_only_its_documented_answers(servers: dict[str, str], method: str,
                                                                path: str) -> None:
    answer = request(servers[METRICS] + path, method)
    assert answer.status in {404, 405, 503}, (method, path, answer.status, answer.text)
    if method not in ("GET", "HEAD"):
        assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"
    elif path.split("?")[0] == "metrics":
        assert answer.status == 503  # the API server is unreachable here
    if method != "HEAD":
        assert answer.text and "\n" not in answer.text
