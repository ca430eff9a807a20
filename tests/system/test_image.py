"""The image's contents and entrypoint without a container engine: the wheel the Dockerfile installs
holds what the functions need and nothing of the dev stack, and the Dockerfile's CMD, run as written
against that installed copy, serves every target (the event functions and `metrics`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from functions.registry import METRICS, SERVED
from functions.runtime.client import post, send
from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
from localstack.samples import load_sample
from localstack.serving import wait_for_port
from tests.support.paths import REPO

pytestmark = pytest.mark.process  # a wheel is built and installed, its programs run


DOCKER_COPIED = [source for line in (REPO / "Dockerfile").read_text().splitlines()
                 if line.startswith("COPY ") and "--from=" not in line for source in line.split()[1:-1]]
"""What the Dockerfile copies into its build stage from the checkout: what the wheel below is built from."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # what the Dockerfile copies; building leaves build/ behind
    assert {"pyproject.toml", "README.md", "LICENSE", "events", "functions"} <= set(DOCKER_COPIED)
    for name in DOCKER_COPIED:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / name, source / name)
    # the dev stack beside them must stay out of the wheel
    shutil.copytree(REPO / "localstack", source / "localstack", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                   check=True, capture_output=True)
    (found,) = out.glob("cre_functions-*.whl")
    return found


def test_wheel_holds_code_schemas_and_samples(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"functions/main.py", "functions/runtime/codec.py", "functions/runtime/server.py",
            "functions/runtime/client.py",
            "events/schemas/dev.crefn.workload.phase.json", "events/samples/trainjob-resource-add.json"} <= names
    assert not any(n.startswith(("tests/", "localstack/")) for n in names)
    assert not any("localstack" in n for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "cre-fn = functions.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    license_file = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert zipfile.ZipFile(wheel).read(license_file) == (REPO / "LICENSE").read_bytes()
    assert (REPO / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    return target


def installed_env(site: Path, **extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")}, "PYTHONPATH": str(site),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}", **extra}


DOCKER_CMD = next(json.loads(line.removeprefix("CMD ")) for line in (REPO / "Dockerfile").read_text().splitlines()
                  if line.startswith("CMD "))


@pytest.mark.parametrize("target", sorted(SERVED))
def test_dockerfile_cmd_serves_every_target_from_the_installed_package(site: Path, target: str,
                                                                       tmp_path: Path) -> None:
    port = free_port()
    env = installed_env(site, FUNCTION_TARGET=target, PORT=str(port))
    proc = spawn(DOCKER_CMD, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                 stderr=subprocess.PIPE)  # stopped with its gunicorn workers, as a group
    try:
        assert wait_for_port(port, alive=lambda: proc.poll() is None), "the CMD did not serve"
        sample = load_sample("trainjob-resource-update-complete")
        if target == METRICS:  # answers scrapes only (a scrape needs an API server: see test_metrics)
            answer = post(f"http://127.0.0.1:{port}/metrics", {}, b"")
            assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD", answer.text
        elif target == "phase":
            answer = send(f"http://127.0.0.1:{port}/", sample)
            assert answer.status == 200 and answer.ce["workloadphase"] == "Succeeded"
        else:  # our server answers, with this target's own idea of what it accepts
            unknown = {**sample, "attributes": {**sample["attributes"], "type": "com.example.unknown"}}
            answer = send(f"http://127.0.0.1:{port}/", unknown)
            assert answer.status == 400 and "unknown event type" in answer.text, answer.text
        located = subprocess.run([sys.executable, "-c", "import functions.main as m; print(m.__file__)"],
                                 env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
        assert located.startswith(str(site))  # the installed copy, not the work tree
    finally:
        stop_process(proc)
        if proc.stderr:
            proc.stderr.close()


def test_the_cmd_finds_the_installed_source_without_loading_the_framework(site: Path, tmp_path: Path) -> None:
    """Finding the source is one more interpreter on every cold start: it loads the bare package, not
    functions-framework and Flask (about 200 ms)."""
    (finder,) = re.findall(r"python -c '([^']*)'", DOCKER_CMD[-1])
    roots = ("flask", "functions_framework", "functions")
    code = f"{finder}; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {roots!r}))"
    shown = subprocess.run([sys.executable, "-c", code], env=installed_env(site), cwd=tmp_path, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert shown[0] == str(site / "functions") and (site / "functions" / "main.py").is_file()
    assert shown[1] == "['functions']"


def test_the_installed_cli_has_every_command_of_the_image_and_none_of_the_dev_stack(site: Path,
                                                                                     tmp_path: Path) -> None:
    # the development venv can import the work tree's localstack; an installed copy alone cannot
    code = (f"import sys; sys.path = [p for p in sys.path if p.rstrip('/') != {str(REPO)!r}]; "
            "from functions.cli import main; sys.exit(main(sys.argv[1:]))")
    shown = subprocess.run([sys.executable, "-c", code, "--help"], env=installed_env(site), cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"\{([a-z,]+)\}", shown.stdout).group(1).split(",") == [  # type: ignore[union-attr]
        "serve", "render", "record", "replay", "parity", "doctor"]
    result = subprocess.run([sys.executable, "-c", code, "dev", "--no-demo"], env=installed_env(site), cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("cre-fn: argument command: invalid choice: 'dev'")


def test_tenant_cel_is_evaluated_by_a_worker_of_the_installed_package_that_writes_nothing(site: Path,
                                                                                         tmp_path: Path) -> None:
    """`functions.runtime.celbudget` starts its worker process (`python -m functions.runtime.celworker`) from
    the installed copy, through pipes, with nothing to write (the image's root filesystem is read-only)."""
    assert (site / "functions" / "runtime" / "celworker.py").is_file()
    before = sorted(site.rglob("*"))
    code = ("from datetime import timedelta; from functions.runtime.celbudget import CelBudget; "
            "budget = CelBudget(timedelta(seconds=5)); "
            "print(budget.outcomes('node', 'node.spec.unschedulable == true', [{'spec': {'unschedulable': True}}]))")
    result = subprocess.run([sys.executable, "-c", code], env=installed_env(site), cwd=tmp_path, capture_output=True,
                            text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "(CelOutcome(value=True, failure=None, error=''),)\n", "")
    assert sorted(site.rglob("*")) == before and list(tmp_path.iterdir()) == []
