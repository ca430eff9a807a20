"""`cre-fn` (`functions.cli`) as a program: `render` prints the objects a WorkloadRun file becomes, `serve`
serves one function, and the dev stack's commands are not `cre-fn`'s (`python -m localstack`, in the source
tree). `cre-fn replay`: tests/tools/test_replay.py; the offline check: tests/localstack/test_rendercheck.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from functions.domain.translation import translate
from functions.runtime.client import send
from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
from localstack.samples import load_sample
from localstack.serving import wait_for_port
from tests.support import paths
from tests.support.render_cases import with_spec

SAMPLES = paths.SAMPLES / "workloadruns"


def cre_fn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "functions.cli", *args], capture_output=True, text=True,
                          check=False, timeout=60)


@pytest.mark.process
@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_cre_fn_render_prints_the_objects(sample: Path) -> None:
    result = cre_fn("render", str(sample))
    assert result.returncode == 0, result.stderr
    objs = list(yaml.safe_load_all(result.stdout))
    assert objs == translate(yaml.safe_load(sample.read_text())).objects
    assert {o["kind"] for o in objs} >= {"TrainingRuntime", "Job"}


@pytest.mark.process
def test_cre_fn_render_refuses_an_invalid_spec(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(with_spec(framework={"torch": {"script": "a.py", "module": "a"}})))
    result = cre_fn("render", str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == "cre-fn render: wr: spec.framework.torch: set exactly one of script or module"


@pytest.mark.process
def test_cre_fn_serve_phase() -> None:
    port = free_port()
    proc = spawn([sys.executable, "-m", "functions.cli", "serve", "phase", "--host", "127.0.0.1", "--port", str(port)],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_port(port)
        answer = send(f"http://127.0.0.1:{port}/", load_sample("trainjob-resource-update-complete"))
        assert answer.status == 200 and answer.ce["workloadphase"] == "Succeeded"
    finally:
        stop_process(proc)


@pytest.mark.process
@pytest.mark.parametrize("command", ["dev", "soak", "schemas"])
def test_the_dev_stacks_commands_are_not_the_shipped_clis(command: str) -> None:
    result = cre_fn(command)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"cre-fn: argument command: invalid choice: '{command}'")
    assert "(see cre-fn --help)" in result.stderr


@pytest.mark.process
def test_the_dev_stack_names_its_commands() -> None:
    result = subprocess.run([sys.executable, "-m", "localstack"], capture_output=True, text=True, check=False,
                            timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == ("python -m localstack: the following arguments are required: command "
                                     "(see python -m localstack --help)")
