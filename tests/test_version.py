"""One version: pyproject.toml's, read from the installed package's metadata, from pyproject.toml in a source
tree that is not installed, else `0+unknown`; `cre-fn --version` prints it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from functions.version import source_version, version
from tests.support.helpers import released


def test_the_running_version_is_pyproject_s() -> None:
    assert version() == released()


@pytest.mark.parametrize(("text", "expected"), [
    ('[project]\nname = "cre-functions"\nversion = "9.8.7"\n', "9.8.7"),
    ('[project]\nname = "cre-functions"\n', "0+unknown"),
    ("[project\n", "0+unknown"),
    ('[project]\nversion = 3\n', "0+unknown"),
    (None, "0+unknown"),
], ids=["given", "no-version", "not-toml", "not-text", "no-file"])
def test_a_source_tree_gives_its_version_or_an_unknown_one(tmp_path: Path, text: str | None, expected: str) -> None:
    pyproject = tmp_path / "pyproject.toml"
    if text is not None:
        pyproject.write_text(text)
    assert source_version(pyproject) == expected


@pytest.mark.process
def test_cre_fn_version_prints_it() -> None:
    result = subprocess.run([sys.executable, "-m", "functions.cli", "--version"], capture_output=True, text=True,
                            check=False, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"cre-fn {released()}\n", "")
