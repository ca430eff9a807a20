"""What the suite's first pytest owns, it gives back: a session that leaves a temporary file behind fails, saying
so; and a second session in the same process (as mutmut runs them) gets a temporary directory of its own, the
environment as it was before the first once both are done."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.lineage import MARK
from tests.support.paths import REPO

LEAVES = "import os, tempfile\ndef test_leaves():\n    fd, _ = tempfile.mkstemp(); os.close(fd)\n"
WRITES = "import tempfile\ndef test_writes():\n    with tempfile.TemporaryFile() as f:\n        f.write(b'x')\n"


def inner(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (MARK, "TMPDIR") and not k.startswith("PYTEST_")}
    env["TMPDIR"] = str(tmp_path / "outer")
    (tmp_path / "outer").mkdir()
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, timeout=120)


def session(path: Path) -> str:
    return (f"pytest.main(['-q', '-p', 'no:randomly', '-p', 'no:cacheprovider', '-p', 'no:xdist', '-p', "
            f"'tests.conftest', '--rootdir', {str(path.parent)!r}, {str(path)!r}])")


@pytest.mark.process
def test_a_session_that_leaves_a_temporary_file_fails_saying_so(tmp_path: Path) -> None:
    (tmp_path / "test_leaves.py").write_text(LEAVES)
    result = inner(tmp_path, f"import sys, pytest; sys.exit({session(tmp_path / 'test_leaves.py')})")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ERROR: temporary files or directories left behind (removed now): tmp" in result.stdout
    assert list((tmp_path / "outer").iterdir()) == []  # the run's directory is gone with what it held


@pytest.mark.process
def test_a_second_session_in_the_same_process_owns_a_directory_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "test_writes.py").write_text(WRITES)
    first, second = session(tmp_path / "test_writes.py"), session(tmp_path / "test_writes.py")
    result = inner(tmp_path, f"import os, pytest; codes = ({first}, {second}); "
                             "print('codes', [int(c) for c in codes], os.environ['TMPDIR'], os.environ.get("
                             f"{MARK!r}))")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == f"codes [0, 0] {tmp_path / 'outer'} None"
