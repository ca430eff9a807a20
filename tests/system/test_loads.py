"""Each served function loads its own code and nothing else: a fresh interpreter builds the target as its
first request would (`functions.main.responder`) and lists what it imported. No function loads another's
folder; only a function that evaluates tenant CEL (its folder asks `ctx.cel`, or reads the thresholds) loads
the CEL budget and what an outcome is, and none loads the evaluator itself (cel-expr-python), which only the
budget's worker processes hold; only one that notifies (its decision returns `Notify`) loads the alert sinks;
only one that decides a Job's running path (its folder asks `decide_running`, the condition of a phase or the
launch decision) loads it, so `phase`, which maps a TrainJob to its phase, does not.
No target loads prometheus-client (a scrape does), nor the `kubernetes` package once connected with a kubeconfig
of a token and a CA file (the in-cluster connection never imports it: `tests/system/test_shipped.py`,
`tests/runtime/test_kubeconfig.py`). The deny-lists are derived from the functions' own code, so a borrowed name
cannot drag a module back in. gunicorn's arbiter, which looks the target up and forks the worker, loads neither
pydantic nor the settings nor the event catalog: a child of it checks the settings."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

import localstack.serving
from functions.registry import HANDLERS, SERVED
from tests.support import pod
from tests.support.helpers import self_signed
from tests.support.paths import REPO

CEL = ("functions.domain.cel", "functions.runtime.celbudget")
EVALUATOR = ("cel_expr_python",)
SINKS = ("functions.runtime.alertsinks",)
RUNNING = ("functions.domain.running", "functions.domain.phase_conditions")
EXPOSITION = ("prometheus_client",)
"""What exposes the metrics, loaded by a scrape (`functions.runtime.metrics`), never by a build or an event."""
ATTEMPT_RULES = ("functions.domain.pods", "functions.domain.checkpoint", "functions.domain.measurement_objects")
"""What a failed attempt is judged by (its pods and their logs, its checkpoint, its measurements): `functions.runtime.
reads` loads each with the read that needs it."""


@cache
def folder_text(name: str) -> str:
    return "\n".join(p.read_text() for p in sorted((REPO / "functions" / name).glob("*.py")))


def says(name: str, *texts: str) -> bool:
    """Whether the folder of the function `name` holds any of `texts` (no other target has a folder)."""
    return name in HANDLERS and any(text in folder_text(name) for text in texts)


def uses_cel(name: str) -> bool:
    return says(name, "ctx.cel", "functions.domain.thresholds", "functions.domain.cel")


def notifies(name: str) -> bool:
    return says(name, "Notify(")


def decides_running(name: str) -> bool:
    return says(name, "import decide_running", "from functions.domain.phase_conditions import",
                "from functions.domain.launching import")


def denied(name: str) -> set[str]:
    """What the target `name` must not load."""
    refused = {f"functions.{other}" for other in HANDLERS if other != name} | {"kubernetes", *EVALUATOR, *EXPOSITION}
    if not uses_cel(name):
        refused |= set(CEL)
    if not notifies(name):
        refused |= set(SINKS)
    if not decides_running(name):
        refused |= set(RUNNING)
    return refused


@cache
def loaded(name: str, kubeconfig: Path) -> frozenset[str]:
    """The modules a fresh interpreter holds once the target `name` is built as its first request builds it, and
    connected to the API server named by `kubeconfig`."""
    code = ("import json, sys; import functions.main as m; m.responder(sys.argv[1]); m.context().gateway; "
            "print(json.dumps(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, check=False,
                            cwd=REPO, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(REPO),
                                                        "CREFN_KUBECONFIG": str(kubeconfig)})
    assert result.returncode == 0, result.stderr
    return frozenset(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.process
@pytest.mark.parametrize("name", sorted(SERVED))
def test_a_served_function_loads_nothing_it_does_not_use(name: str, a_kubeconfig: Path) -> None:
    found = loaded(name, a_kubeconfig)
    assert sorted(m for m in found if m in denied(name) or any(m.startswith(f"{d}.") for d in denied(name))) == []
    if name in HANDLERS:
        assert f"functions.{name}.read" in found and f"functions.{name}.decide" in found


@pytest.mark.process
def test_phase_loads_no_rule_of_an_attempt_no_effect_and_no_http_client(a_kubeconfig: Path) -> None:
    """`phase` maps a TrainJob to its phase: it reads its TrainJob, a pod's labels or a Job's `workloadRef`, judges
    no attempt, writes nothing (the effects' classes, `functions.runtime.effects`, are made by the first effect
    applied) and answers with its event rather than sending it (the HTTP client, `functions.runtime.client`, is
    loaded by the first event a function sends)."""
    assert sorted({*ATTEMPT_RULES, "functions.runtime.client", "functions.runtime.effects"}
                  & loaded("phase", a_kubeconfig)) == []
    assert set(ATTEMPT_RULES) <= loaded("restart", a_kubeconfig)  # which does judge one


@pytest.mark.process
@pytest.mark.parametrize("name", ["phase", "alert"])
def test_the_arbiter_loads_no_pydantic_settings_or_catalog_and_leaves_the_saying_to_its_worker(name: str) -> None:
    code = ("import json, os, sys, threading; import functions.main as m; before = dict(os.environ); "
            "getattr(m, sys.argv[1]); assert dict(os.environ) == before, 'the environment changed'; "
            "assert threading.active_count() == 1, 'a thread started'; print(json.dumps(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, check=False,
                            cwd=REPO, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(REPO)})
    assert result.returncode == 0, result.stderr  # no thread, and the environment the processes it starts inherit
    found = json.loads(result.stdout.splitlines()[-1])
    assert [m for m in found if m.split(".")[0] in ("pydantic", "pydantic_core", "events")
            or m.startswith("functions.runtime.")] == []
    assert result.stderr == ""  # the worker says what runs, once it has built it (tests/system/test_start.py)


@pytest.mark.process
@pytest.mark.parametrize("image_env", [True, False], ids=["the image's env", "without it"])
def test_with_the_images_env_pydantic_looks_for_no_plugin(image_env: bool) -> None:
    """pydantic looks for its plugins in every installed distribution's entry points as it builds its first model
    (about 8 ms of every start); the image's ENV (and the local stack's, `localstack.serving.IMAGE_ENV`) says not
    to, and a `phase` built with it lists no distribution."""
    image = pod.read_dockerfile(REPO / "Dockerfile").env
    env = {"PATH": "/usr/bin:/bin", "HOME": str(REPO)}
    if image_env:
        env["PYDANTIC_DISABLE_PLUGINS"] = image["PYDANTIC_DISABLE_PLUGINS"]
    code = ("import importlib.metadata as md; listed = []; every = md.distributions; "
            "md.distributions = lambda *a, **k: listed.append(1) or every(*a, **k); "
            "import functions.main as m; m.responder('phase'); print(len(listed))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert (int(result.stdout.split()[-1]) == 0) is image_env
    assert localstack.serving.IMAGE_ENV.items() <= image.items()


@pytest.fixture(scope="module")
def a_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig of a token and a CA file, as the dev stack writes them (its server need not answer)."""
    folder = tmp_path_factory.mktemp("kubeconfig")
    self_signed(folder, "ca")
    path = folder / "kubeconfig.yaml"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_the_deny_lists_follow_what_each_function_uses() -> None:
    assert {name for name in HANDLERS if uses_cel(name)} == {"nodehealth", "validate"}
    assert {name for name in HANDLERS if notifies(name)} == {"alert"}
    assert {name for name in HANDLERS if decides_running(name)} == {"launch", "parity", "restart", "resync", "status"}
    others = {"kubernetes"} | set(RUNNING) | set(EVALUATOR) | set(EXPOSITION)
    assert denied("alert") == {f"functions.{n}" for n in HANDLERS if n != "alert"} | set(CEL) | others
    assert denied("validate") == {f"functions.{n}" for n in HANDLERS if n != "validate"} | set(SINKS) | others
    assert set(RUNNING) <= denied("phase")
    assert set(EVALUATOR) <= denied("nodehealth") & denied("validate")
