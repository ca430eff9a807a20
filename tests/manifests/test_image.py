"""The image's contents and entrypoint without a container engine: the wheel the Dockerfile installs
holds what the functions need, and the Dockerfile's CMD, run as written against that installed copy,
serves a function that answers a real event."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from functions.localstack.apiserver import free_port, stop_process
from functions.localstack.client import load_sample, send
from functions.localstack.serving import wait_for_port

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # what the Dockerfile copies; building leaves build/ behind
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("events", "functions"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                   check=True, capture_output=True)
    (found,) = out.glob("cre_functions-*.whl")
    return found


def test_wheel_holds_code_schemas_and_samples(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"functions/main.py", "functions/transport.py", "events/schemas/dev.crefn.workload.phase.json",
            "events/samples/trainjob-resource-add.json"} <= names
    assert not any(n.startswith("tests/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "cre-fn = functions.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_dockerfile_cmd_serves_the_target_from_the_installed_package(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    cmd = next(json.loads(line.removeprefix("CMD ")) for line in (REPO / "Dockerfile").read_text().splitlines()
               if line.startswith("CMD "))
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CREFN_")},
           "PYTHONPATH": str(site), "FUNCTION_TARGET": "phase", "PORT": str(port),
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_for_port(port, alive=lambda: proc.poll() is None), "the CMD did not serve"
        answer = send(f"http://127.0.0.1:{port}/", load_sample("trainjob-resource-update-complete"))
        assert answer.status == 200 and answer.ce["workloadphase"] == "Succeeded"
        located = subprocess.run([sys.executable, "-c", "import functions.main as m; print(m.__file__)"],
                                 env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
        assert located.startswith(str(site))  # the installed copy, not the work tree
    finally:
        stop_process(proc)
        if proc.stderr:
            proc.stderr.close()
