"""The local stack's revisions (`localstack.revisions`): the functions are served from a settings ConfigMap of the
API server, and a new one applied there with kubectl, or a change of the one served from, starts every function
again with it, on its port, as a new revision would; a settings ConfigMap no longer served changes nothing, and a
process that does not start with the new settings is started again with the ones it had."""

from __future__ import annotations

import io
import json
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from functions.registry import METRICS, TARGETS
from functions.runtime.gateway import Gateway
from functions.runtime.resources import CONFIGMAPS
from localstack.cluster.apiserver import LocalCluster
from localstack.manifests import NAMESPACE, kubectl, render
from localstack.revisions import Revisions, apply_settings, settings_name, settings_of
from localstack.serving import ServedFunction
from localstack.stack import Supervisor, start_stack
from localstack.timeline import Timeline
from localstack.trainer import wait_until


def modes(log: Path) -> list[str]:
    """The mode of each start-up line of a served process's log, in order."""
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line["mode"] for line in lines if str(line.get("message", "")).startswith("cre-functions ")]


def build_info(url: str) -> str:
    """The `crefn_build_info` line of a served process's scrape."""
    with urllib.request.urlopen(f"{url}metrics", timeout=30) as resp:
        (line,) = [x for x in resp.read().decode().splitlines() if x.startswith("crefn_build_info{")]
    return line


def apply(cluster: LocalCluster, path: Path, namespace: str, name: str, data: dict[str, str]) -> None:
    """`kubectl apply -f` a settings ConfigMap, as an operator applies an install with a changed setting."""
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": namespace}, "data": data}))
    subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), "apply", "-f", str(path)], check=True,
                   capture_output=True, timeout=60)


@pytest.mark.process  # kubectl kustomize
def test_the_install_s_settings_are_those_its_services_name_and_the_name_follows_the_data() -> None:
    settings = settings_of(render("installs/observe"))
    assert settings["CREFN_MODE"] == "observe" and settings["CREFN_RESTART_GRACE_SECONDS"] == "30"
    assert settings_of(render("base"))["CREFN_MODE"] == "manage"
    assert settings_name({"CREFN_MODE": "observe"}) == settings_name({"CREFN_MODE": "observe"})
    assert settings_name({"CREFN_MODE": "observe"}) != settings_name({"CREFN_MODE": "manage"})
    assert settings_name({"CREFN_MODE": "observe"}).startswith("crefn-settings-")
    assert len(settings_name({})) == len("crefn-settings-") + 10


@pytest.mark.stack
def test_a_new_settings_configmap_starts_every_function_again_in_its_mode(
        cluster: LocalCluster, gateway: Gateway, namespace: str, tmp_path: Path) -> None:
    said = io.StringIO()
    settings = {"CREFN_RESTART_GRACE_SECONDS": "2", "CREFN_LOG_LEVEL": "WARNING"}
    with start_stack(tmp_path, Timeline(said), settings, 3600, tmp_path / "work", "nvcre.nvidia.com", cluster,
                     namespace, monitoring=False) as stack:
        assert stack.revisions is not None and stack.supervisor is not None
        first = stack.revisions.served
        held = (gateway.get(CONFIGMAPS, NAMESPACE, first) or {})["data"]
        assert held == {**settings_of(render("installs/default")), **settings}  # the install's, the stack's merged
        assert held["CREFN_MODE"] == "manage" and held["CREFN_CEL_BUDGET_SECONDS"] == "1"
        logs = {t: f.log_path for t, f in stack.functions.items() if f.log_path}
        assert sorted(logs) == sorted(TARGETS) and len(logs) == 13
        assert {t: modes(log) for t, log in logs.items()} == {t: ["manage"] for t in logs}
        urls = {t: f.url for t, f in stack.functions.items()}
        assert 'mode="manage"' in build_info(urls["phase"])

        second = f"crefn-settings-{uuid.uuid4().hex[:10]}"
        apply(cluster, tmp_path / "observe.yaml", NAMESPACE, second, {**held, "CREFN_MODE": "observe"})
        assert wait_until(lambda: all(modes(log) == ["manage", "observe"] for log in logs.values()), 180, 0.5), {
            t: modes(log) for t, log in logs.items()}
        assert wait_until(lambda: all(not f.exited and f.process for f in stack.functions.values()), 30)
        assert {t: f.url for t, f in stack.functions.items()} == urls  # the Broker's Triggers still reach them
        assert 'mode="observe"' in build_info(urls["phase"]) and 'mode="observe"' in build_info(urls["alert"])
        assert stack.revisions.served == second and stack.supervisor.rolls == 1
        assert f"!! settings {second}: a new revision of every function, in observe mode" in said.getvalue()

        # the ConfigMap served before is no revision's any more: changing it changes nothing
        gateway.patch(CONFIGMAPS, NAMESPACE, first, {"data": {"CREFN_MODE": "manage", "CREFN_LOG_LEVEL": "ERROR"}})
        assert not wait_until(lambda: stack.supervisor is not None and stack.supervisor.rolls > 1, 3)
        assert {t: modes(log) for t, log in logs.items()} == {t: ["manage", "observe"] for t in logs}


@pytest.fixture
def supervised(cluster: LocalCluster, gateway: Gateway, namespace: str,
               tmp_path: Path) -> Iterator[tuple[Supervisor, Revisions, dict[str, ServedFunction], io.StringIO]]:
    """`phase` and the `metrics` target served from a settings ConfigMap of the test's namespace, supervised."""
    data = {"CREFN_MODE": "manage", "CREFN_LOG_LEVEL": "WARNING"}
    revisions = Revisions(cluster.gateway(), namespace, apply_settings(gateway, namespace, data), data).start()
    metrics_user = str(cluster.service_account_kubeconfig(NAMESPACE, f"crefn-{METRICS}"))
    served = {"phase": ServedFunction("phase", {}, tmp_path / "phase.log", settings=data),
              METRICS: ServedFunction(METRICS, {"CREFN_KUBECONFIG": metrics_user}, tmp_path / "metrics.log",
                                      settings=data)}
    said = io.StringIO()
    try:
        for one in served.values():
            one.start()
        supervisor = Supervisor({"phase": served["phase"]}, None, Timeline(said), revisions=revisions,
                                others=(served[METRICS],))
        try:
            yield supervisor, revisions, served, said
        finally:
            supervisor.stop()
    finally:
        for one in served.values():
            one.stop()
        revisions.stop()
        revisions.gw.close()


@pytest.mark.process
def test_the_served_configmap_changed_in_place_is_a_new_revision_and_one_that_cannot_start_keeps_the_last(
        supervised: tuple[Supervisor, Revisions, dict[str, ServedFunction], io.StringIO], gateway: Gateway,
        cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    supervisor, revisions, served, said = supervised
    urls = {t: f.url for t, f in served.items()}
    assert all('mode="manage"' in build_info(url) for url in urls.values())
    first = revisions.served
    gateway.patch(CONFIGMAPS, namespace, first, {"data": {"CREFN_MODE": "observe"}})
    assert wait_until(lambda: all(modes(f.log_path) == ["manage", "observe"] for f in served.values()
                                  if f.log_path), 120, 0.5)
    assert wait_until(lambda: all(not f.exited and f.process for f in served.values()), 30)
    assert all('mode="observe"' in build_info(url) for url in urls.values())  # the metrics target's scrape too
    assert (supervisor.rolls, revisions.served) == (1, first)

    bad = f"crefn-settings-{uuid.uuid4().hex[:10]}"
    apply(cluster, tmp_path / "bad.yaml", namespace, bad, {"CREFN_MODE": "shadow", "CREFN_LOG_LEVEL": "WARNING"})
    assert wait_until(lambda: all(modes(f.log_path) == ["manage", "observe", "observe"] for f in served.values()
                                  if f.log_path), 120, 0.5), said.getvalue()
    assert wait_until(lambda: all(not f.exited and f.process for f in served.values()), 30)
    assert all('mode="observe"' in build_info(url) for url in urls.values())
    assert (supervisor.rolls, revisions.served) == (2, bad)
    text = said.getvalue()
    assert f"!! settings {bad}: a new revision of every function, in shadow mode" in text
    assert f"!! phase did not start with {bad} (functions-framework for phase exited with 1): its previous " \
           "revision serves" in text
    assert f"!! {METRICS} did not start with {bad} (functions-framework for {METRICS} exited with 1)" in text
    assert "invalid settings: CREFN_MODE" in served["phase"].log_path.read_text()  # type: ignore[union-attr]
