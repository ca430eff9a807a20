"""`cre-fn parity FILE` (`functions.tools.paritytable`): a recording's parity checks as a table, each check once
however often it was delivered, the first differing Jobs with both values, and the exit status."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from functions.tools.paritytable import main


def checked(job: str, check: str, verdict: str, fields: list[tuple[str, str, str]]) -> dict[str, Any]:
    result = "differ" if any(cre != fn for _, cre, fn in fields) else "agree"
    return {"attributes": {"specversion": "1.0", "id": f"id-{check}", "source": "/crefn/parity",
                           "type": "dev.crefn.parity.checked", "parityresult": result},
            "data": {"job": {"name": job, "namespace": "ml"}, "check": check, "verdict": verdict, "result": result,
                     "fields": [{"field": f, "result": "agree" if cre == fn else "differ", "cre": cre, "functions": fn}
                                for f, cre, fn in fields],
                     "inputs": {"Job": "12"}, "observedAt": "2026-12-03T10:00:00Z"}}


def recording(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "parity.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


AGREE = checked("a", "c1", "Failed/WorkloadFailed", [("phase", "Failed/WorkloadFailed", "Failed/WorkloadFailed"),
                                                      ("restartCount", "0", "0")])
DIFFER = checked("b", "c2", "InProgress/WorkloadRestarting",
                 [("phase", "InProgress/WorkloadRestarting", "Failed/WorkloadFailed"), ("restartCount", "1", "0")])
OTHER = {"attributes": {"specversion": "1.0", "id": "x", "source": "/crefn/phase", "type": "dev.crefn.workload.phase"},
         "data": {}}


def test_the_table_counts_each_check_once_and_names_the_jobs_that_differ(tmp_path: Path) -> None:
    out = io.StringIO()
    code = main(str(recording(tmp_path, [AGREE, OTHER, DIFFER, DIFFER, AGREE])), out)
    assert code == 1
    assert out.getvalue().splitlines() == [
        "2 checks of CRE's verdicts, 1 differing",
        "field                 checks   agree  differ  agreement",
        "phase                      2       1       1      50.0%",
        "restartCount               2       1       1      50.0%",
        "",
        "first Jobs that differ (of 1):",
        "  ml/b  CRE InProgress/WorkloadRestarting: phase: CRE InProgress/WorkloadRestarting, functions "
        "Failed/WorkloadFailed",
        "  ml/b  CRE InProgress/WorkloadRestarting: restartCount: CRE 1, functions 0",
    ]


def test_every_check_agreeing_is_exit_0(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(str(recording(tmp_path, [AGREE])), out) == 0
    assert "100.0%" in out.getvalue() and "differ (of" not in out.getvalue()


def test_an_unreadable_parity_event_is_counted_not_fatal(tmp_path: Path) -> None:
    broken = json.loads(json.dumps(AGREE))
    broken["data"]["result"] = "maybe"
    out = io.StringIO()
    assert main(str(recording(tmp_path, [broken, AGREE])), out) == 0
    assert out.getvalue().splitlines()[-1] == "1 parity events could not be read (skipped)"


@pytest.mark.process
def test_the_cli_reads_the_file_and_a_missing_one_is_exit_2(tmp_path: Path) -> None:
    path = recording(tmp_path, [DIFFER])
    run = subprocess.run([sys.executable, "-m", "functions.cli", "parity", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1 and run.stdout.startswith("1 checks of CRE's verdicts, 1 differing"), run.stderr
    missing = subprocess.run([sys.executable, "-m", "functions.cli", "parity", str(tmp_path / "none.jsonl")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and missing.stderr.startswith("cre-fn parity: ")


@pytest.mark.parametrize("records", [[], [OTHER]], ids=["empty", "another-stream"])
def test_a_recording_without_a_check_is_exit_3_never_a_success(tmp_path: Path, records: list[dict[str, Any]],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert main(str(recording(tmp_path, records)), out) == 3
    assert out.getvalue().splitlines()[0] == "0 checks of CRE's verdicts, 0 differing"
    assert capsys.readouterr().err == (f"cre-fn parity: {tmp_path / 'parity.jsonl'} holds no dev.crefn.parity.checked "
                                       "event: nothing was compared\n")


@pytest.mark.process
def test_json_output_holds_the_counts_and_every_differing_job(tmp_path: Path) -> None:
    path = recording(tmp_path, [AGREE, DIFFER, DIFFER])
    run = subprocess.run([sys.executable, "-m", "functions.cli", "parity", str(path), "-o", "json"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert json.loads(run.stdout) == {
        "checks": 2, "differing": 1, "unreadable": 0,
        "fields": {"phase": {"agree": 1, "differ": 1}, "restartCount": {"agree": 1, "differ": 1}},
        "differ": [{"namespace": "ml", "job": "b", "verdict": "InProgress/WorkloadRestarting", "fields": [
            {"field": "phase", "cre": "InProgress/WorkloadRestarting", "functions": "Failed/WorkloadFailed"},
            {"field": "restartCount", "cre": "1", "functions": "0"}]}]}
