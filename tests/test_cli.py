"""`cre-fn` (`functions.cli`) as a program: `render` prints the objects a WorkloadRun file becomes or
names every problem (`--check`), `serve` serves one function. `cre-fn replay`: tests/test_replay.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from functions.client import send
from functions.rules.translate import translate
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
@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_cre_fn_render_check_passes_the_samples(sample: Path, upstream_crds: Path) -> None:
    result = cre_fn("render", "--check", str(sample))
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.strip() == "cre-fn render --check: 1 WorkloadRuns, 0 problems"


@pytest.mark.process
def test_cre_fn_render_check_prints_every_problem_with_its_path(tmp_path: Path, upstream_crds: Path) -> None:
    run = with_spec(numNodes=0, gpusPerNode="eight", framework={"torch": {"script": "a.py", "module": "a"}},
                    workloadMetadata={"labels": {"nvcre.nvidia.com/team": "x"}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(run))
    result = cre_fn("render", "--check", str(path))
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "wr: spec.gpusPerNode: 'eight' is not of type 'integer'",
        "wr: spec.numNodes: 0 is less than the minimum of 1",
        "wr: spec.framework.torch: Invalid value: script and module are mutually exclusive",
        "wr: spec.workloadMetadata.labels: Invalid value: labels must not set the controller-owned keys "
        "app.kubernetes.io/managed-by or any key under the nvcre.nvidia.com/ prefix",
        "wr: refused by the translator: spec.numNodes must be an integer of at least 1",
        "cre-fn render --check: 1 WorkloadRuns, 5 problems"]


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
