"""`python -m localstack check FILE` (the dev stack's, not `cre-fn`'s): every sample WorkloadRun passes the real
CRD's schema and CEL rules and the translator; a bad one gets every problem named with its field path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import paths
from tests.support.render_cases import with_spec


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localstack", "check", *args], capture_output=True, text=True,
                          check=False, timeout=60)


SAMPLES = paths.SAMPLES / "workloadruns"


@pytest.mark.process
@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_samples_pass(sample: Path, upstream_crds: Path) -> None:
    result = check(str(sample))
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.strip() == "python -m localstack check: 1 WorkloadRuns, 0 problems"


@pytest.mark.process
def test_every_problem_is_printed_with_its_path(tmp_path: Path, upstream_crds: Path) -> None:
    run = with_spec(numNodes=0, gpusPerNode="eight", framework={"torch": {"script": "a.py", "module": "a"}},
                    workloadMetadata={"labels": {"nvcre.nvidia.com/team": "x"}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(run))
    result = check(str(path))
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "wr: spec.gpusPerNode: 'eight' is not of type 'integer'",
        "wr: spec.numNodes: 0 is less than the minimum of 1",
        "wr: spec.framework.torch: Invalid value: script and module are mutually exclusive",
        "wr: spec.workloadMetadata.labels: Invalid value: labels must not set the controller-owned keys "
        "app.kubernetes.io/managed-by or any key under the nvcre.nvidia.com/ prefix",
        "wr: refused by the translator: spec.numNodes must be an integer of at least 1",
        "python -m localstack check: 1 WorkloadRuns, 5 problems"]
