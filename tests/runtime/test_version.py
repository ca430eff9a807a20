"""One version: pyproject.toml's, read from the installed package's metadata, from pyproject.toml in a source
tree that is not installed, else `0+unknown`; `cre-fn --version` prints it. Every other place that names it follows
it (knative/base's image tag, `make`'s default image, the docs' examples), and CHANGELOG.md has its section."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from functions.runtime.version import source_version, version
from localstack.processes import run
from tests.support.helpers import released
from tests.support.paths import REPO


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


VERSION_NAMED = re.compile(r"cre-functions[:@ -]v?(\d+\.\d+\.\d+\S*?)(?=[\s`/,;)\"']|\.(?:yaml|json)|$)|"
                           r"newTag: \"?(\d+\.\d+\.\d+[^\"\s]*)")
"""A version given to the project: `…/cre-functions:0.2.0` (an image), `cre-functions-0.2.0` (a bundle),
`cre-functions 0.2.0` (a start-up line), `newTag: "0.2.0"` (knative/base's image)."""


def named_versions() -> dict[str, set[str]]:
    """Each shipped file but CHANGELOG.md (history) → the project versions it names."""
    paths = [REPO / "README.md", REPO / "Makefile", REPO / "Dockerfile", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "knative").rglob("*.yaml")), *sorted((REPO / "scripts").glob("*.sh"))]
    found: dict[str, set[str]] = {}
    for path in paths:
        for match in VERSION_NAMED.finditer(path.read_text()):
            found.setdefault(str(path.relative_to(REPO)), set()).add(match[1] or match[2])
    return found


def test_every_file_that_names_the_release_names_pyproject_s_version() -> None:
    found = named_versions()
    assert found["knative/base/kustomization.yaml"] == {released()}  # the image tag every install deploys
    assert {"docs/operating.md", "README.md"} <= set(found)
    assert {path: versions for path, versions in found.items() if versions != {released()}} == {}


def test_the_changelog_s_newest_section_is_the_release_s() -> None:
    sections = re.findall(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert sections[0] == released() and "0.1.0" in sections and len(set(sections)) == len(sections)


@pytest.mark.process
def test_make_s_default_image_is_tagged_with_it() -> None:
    result = run(["make", "--no-print-directory", "-s", "-C", str(REPO), "--eval", "crefn-image: ; @echo $(IMAGE)",
                  "crefn-image"], timeout=60, text=True, env={k: v for k, v in os.environ.items()
                                                             if k not in ("IMAGE", "VERSION")})
    assert (result.returncode, result.stdout, result.stderr) == (0, f"ghcr.io/crefn/cre-functions:{released()}\n", "")
