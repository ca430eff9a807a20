"""What is shipped, run as shipped: every Knative Service and the Deployment of knative/base (rendered), and those
the oidc component changes (its projected token stood in by the account's token files), started as its pod would
start it from the Dockerfile's image — the container's command/args or the image's CMD, the image's ENV and
WORKDIR, the container's env and the settings ConfigMap it names, as the image's user, on a read-only root where
only the declared volumes and /dev/shm are writable, with its ServiceAccount's token mounted (unless the pod says
not to) — and answering: a scrape of GET /metrics, and an event where one needs no API server (`phase`, the
dead-letter recorder). The pod is reproduced in a private mount namespace (`tests.support.pod`: building the image
needs a container engine and its base image, which not every machine running the suite has); the package is the
wheel the Dockerfile installs (`tests.system.test_image`)."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.runtime.client import send
from localstack.cluster.apiserver import LocalCluster, free_port
from localstack.manifests import NAMESPACE, render
from localstack.samples import load_sample
from localstack.serving import wait_for_port
from tests.support import pod
from tests.support.paths import REPO
from tests.system.test_image import site, wheel  # noqa: F401 (the installed package, as test_image builds it)

DOCS = render("base")


def workloads(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What runs a pod: the Knative Services (the functions) and the Deployment (the dead-letter recorder)."""
    return {d["metadata"]["name"]: d for d in docs if (d["apiVersion"], d["kind"]) in (
        ("serving.knative.dev/v1", "Service"), ("apps/v1", "Deployment"))}


SERVICES = workloads(DOCS)
OIDC = render("installs/closed")
OIDC_SERVICES = workloads(OIDC)
"""The closed install (namespaced and oidc): the only component whose pods differ from base's is oidc (a projected
token); the others change settings, checked by
tests/system/test_manifests.py."""
IMAGE = pod.read_dockerfile(REPO / "Dockerfile")


@pytest.fixture(scope="module")
def installed(site: Path) -> pod.Installed:  # noqa: F811
    site.chmod(0o755)  # readable by the image's user
    return pod.Installed(site)


@pytest.fixture(scope="module")
def image_etc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pod.image_etc(IMAGE, tmp_path_factory.mktemp("image") / "etc")


def token_of(kubeconfig: Path) -> str:
    token: str = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
    return token


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.read().decode()


CASES = [("base", name) for name in sorted(SERVICES)] + [
    ("installs/closed", name) for name in sorted(OIDC_SERVICES) if OIDC_SERVICES[name] != SERVICES.get(name)]


def test_every_pod_of_base_is_started_here() -> None:
    assert len(SERVICES) == 15 and SERVICES["crefn-dead-letters"]["kind"] == "Deployment"


@pytest.mark.parametrize(("install", "name"), CASES)
def test_every_service_starts_as_shipped_and_answers(install: str, name: str, installed: pod.Installed,
                                                     image_etc: Path, cluster: LocalCluster, tmp_path: Path) -> None:
    docs = OIDC if install == "installs/closed" else DOCS
    service = workloads(docs)[name]
    account = service["spec"]["template"]["spec"].get("serviceAccountName", "default")
    tokens = pod.service_account_files(
        tmp_path / "serviceaccount", token_of(cluster.service_account_kubeconfig(NAMESPACE, account)),
        cluster.ca_file, NAMESPACE)
    port = free_port()
    spec = pod.pod_of(service, docs, IMAGE, installed, port, tokens, cluster.port)
    if token := spec.env.get("CREFN_OIDC_TOKEN_PATH"):  # the file the setting names is in a mounted volume
        (source,) = [v.source for v in spec.volumes if Path(v.path) == Path(token).parent]
        assert source is not None and (source / Path(token).name).is_file()
    proc = pod.start(spec, tmp_path, installed.dirs, image_etc)
    try:
        started = wait_for_port(port, timeout=30, alive=lambda: proc.poll() is None)
        assert started, f"{name} did not serve:\n{(tmp_path / 'stderr').read_text()[-3000:]}"
        answer_as_shipped(name, service, f"http://127.0.0.1:{port}", tmp_path)
    finally:
        pod.stop(proc)


def answer_as_shipped(name: str, service: dict[str, Any], url: str, logs: Path) -> None:
    sample = load_sample("trainjob-resource-update-complete")
    event_type = sample["attributes"]["type"]
    if name == "crefn-phase":
        answer = send(f"{url}/", sample)
        assert answer.status == 200 and answer.ce["workloadphase"] == "Succeeded", answer.text
    elif name == "crefn-dead-letters":
        answer = send(f"{url}/", sample)
        assert answer.status == 202, answer.text
    status, body = get(f"{url}/metrics")
    assert status == 200
    if name == "crefn-phase":
        assert f'crefn_events_total{{answer="200",function="phase",outcome="ok",type="{event_type}"}} 1.0' in body, body
    elif name == "crefn-dead-letters":  # appended to the claim's file (written as the image's user) and the log
        assert 'crefn_dead_letters_file_bytes{path="/var/lib/crefn/dead-letters.jsonl"}' in body
        assert 'crefn_dead_letters_file_bytes{path="/var/lib/crefn/dead-letters.jsonl"} 0.0' not in body
        assert sample["attributes"]["id"] in (logs / "stdout").read_text()
    elif name == "crefn-metrics":  # the Jobs, listed through the in-cluster configuration as crefn-metrics
        assert "# TYPE crefn_job_info gauge" in body, body
    else:
        assert "# TYPE crefn_events_total counter" in body, body
