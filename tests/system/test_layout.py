"""The tests mirror the code: `events/X.py` is tested in `tests/events/test_X.py`, `functions/X.py` in
`tests/test_X.py`, `functions/handlers/X.py` in `tests/handlers/test_X.py` (its function on the real API
server) and `functions/rules/X.py` in `tests/rules/test_X.py` (pure tables: no test there uses the API
server's fixtures). Handlers read only through `functions/reads.py`, never through `ctx.gateway`. No function of
the modules `make mutation` mutates returns a `TypeGuard` (its trampolines drop the narrowing: see `type_guards`).
Each check also runs on a small tree that breaks it, so that none of them passes whatever the code does."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.support.paths import REPO

MIRROR = {"events": "tests/events", "functions": "tests", "functions/handlers": "tests/handlers",
          "functions/rules": "tests/rules"}
SHARE = 0.9
API_SERVER = "cluster"
"""The session's API server: a fixture that asks for it, directly or through other fixtures, needs it."""


def product_modules(repo: Path) -> list[str]:
    return sorted(str(path.relative_to(repo)) for package in MIRROR for path in (repo / package).glob("*.py")
                  if path.name != "__init__.py")


def mirror_of(module: str) -> str:
    package, name = module.rsplit("/", 1)
    return f"{MIRROR[package]}/test_{name}"


def untested(repo: Path) -> list[str]:
    return [module for module in product_modules(repo) if not (repo / mirror_of(module)).is_file()]


def fixtures(tree: ast.Module) -> dict[str, set[str]]:
    """Each fixture a module defines, with the arguments it asks for."""
    return {node.name: {arg.arg for arg in node.args.args} for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)}


def needing_api_server(defined: dict[str, set[str]]) -> set[str]:
    needing = {API_SERVER}
    while grown := {name for name, args in defined.items() if args & needing} - needing:
        needing |= grown
    return needing


def api_server_uses(conftest: Path, files: Iterable[Path]) -> list[str]:
    """`file::function` for every test of `files` that asks for a fixture needing the API server (the
    conftest's, or the file's own built on them), by argument or `usefixtures`, and every such fixture of its own."""
    shared = fixtures(ast.parse(conftest.read_text()))
    found = []
    for path in files:
        tree = ast.parse(path.read_text())
        needing = needing_api_server({**shared, **fixtures(tree)})
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and (node.name.startswith("test") or node.name in needing):
                asked = {arg.arg for arg in node.args.args} | {
                    arg.value for d in node.decorator_list if "usefixtures" in ast.unparse(d)
                    for arg in getattr(d, "args", []) if isinstance(arg, ast.Constant)}
                if asked & needing:
                    found.append(f"{path.name}::{node.name}")
    return found


def gateway_reads(files: Iterable[Path]) -> list[str]:
    """`file:line` for every `ctx.gateway` in `files`."""
    return [f"{path.name}:{node.lineno}" for path in files for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and node.attr == "gateway"
            and isinstance(node.value, ast.Name) and node.value.id == "ctx"]


def type_guards(files: Iterable[Path]) -> list[str]:
    """`file:line` for every function of `files` that returns a `TypeGuard` or a `TypeIs`. mutmut wraps every
    function of the modules it mutates in a decorator typed `Callable[P, R]`, which drops the narrowing; the mypy
    run on the mutated copy (`make mutation`) then fails in the unmutated callers that rely on it, an error it
    can lay on no mutant, and the run stops. A rule narrows by the type it returns instead (`X | None`)."""
    return [f"{path.name}:{node.lineno}" for path in files for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None
            and re.search(r"\bType(Guard|Is)\b", ast.unparse(node.returns))]


def test_at_least_90_percent_of_the_product_modules_have_their_test_module() -> None:
    modules, missing = product_modules(REPO), untested(REPO)
    assert len(modules) - len(missing) >= SHARE * len(modules), (
        f"{len(modules) - len(missing)} of {len(modules)} product modules have their test module; "
        f"missing: {', '.join(f'{m} ({mirror_of(m)})' for m in missing)}")


def test_the_rules_tests_are_pure() -> None:
    assert api_server_uses(REPO / "tests" / "conftest.py", sorted((REPO / "tests" / "rules").glob("*.py"))) == []


def test_handlers_read_only_through_reads() -> None:
    assert gateway_reads(sorted((REPO / "functions" / "handlers").glob("*.py"))) == []


def test_the_mutated_modules_narrow_by_return_type_never_by_a_type_guard() -> None:
    assert type_guards(sorted(path for package in ("rules", "handlers")
                              for path in (REPO / "functions" / package).glob("*.py"))) == []


# -- each check fails where it should ----------------------------------------------------------

def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(("files", "expected"), [
    ({"functions/plan.py": "", "tests/test_plan.py": "", "functions/rules/grace.py": "",
      "functions/handlers/__init__.py": ""}, ["functions/rules/grace.py"]),
    ({"events/objects.py": "", "tests/events/test_objects.py": "", "functions/handlers/status.py": "",
      "tests/rules/test_status.py": ""}, ["functions/handlers/status.py"]),
], ids=["rule-untested", "handler-tested-as-a-rule"])
def test_a_module_without_its_test_module_is_named(tmp_path: Path, files: dict[str, str],
                                                   expected: list[str]) -> None:
    assert untested(write(tmp_path, files)) == expected


CONFTEST = """
import pytest
@pytest.fixture
def cluster(): ...
@pytest.fixture
def gateway(cluster): ...
@pytest.fixture
def world(gateway, tmp_path): ...
@pytest.fixture
def settings(tmp_path): ...
"""


@pytest.mark.parametrize(("test", "expected"), [
    ("def test_pure(settings): ...\ndef helper(gateway): ...", []),
    ("def test_live(world): ...", ["test_x.py::test_live"]),
    ("import pytest\n@pytest.fixture\ndef served(gateway): ...\ndef test_live(served): ...",
     ["test_x.py::served", "test_x.py::test_live"]),
    ("import pytest\n@pytest.mark.usefixtures('cluster')\ndef test_live(): ...", ["test_x.py::test_live"]),
], ids=["pure", "through-conftest", "through-its-own-fixture", "usefixtures"])
def test_a_rules_test_using_the_api_server_is_named(tmp_path: Path, test: str, expected: list[str]) -> None:
    root = write(tmp_path, {"conftest.py": CONFTEST, "test_x.py": test})
    assert api_server_uses(root / "conftest.py", [root / "test_x.py"]) == expected


@pytest.mark.parametrize(("handler", "expected"), [
    ("def read(env, ctx):\n    return read_job(ctx, 'ns', 'llm')", []),
    ("def read(env, ctx):\n    return ctx.gateway.get(JOBS, 'ns', 'llm')", ["h.py:2"]),
], ids=["through-reads", "through-the-gateway"])
def test_a_handler_reading_through_the_gateway_is_named(tmp_path: Path, handler: str, expected: list[str]) -> None:
    assert gateway_reads([write(tmp_path, {"h.py": handler}) / "h.py"]) == expected


@pytest.mark.parametrize(("module", "expected"), [
    ("def deleted(data: A | B) -> A | None:\n    return data if isinstance(data, A) else None", []),
    ("from typing import TypeGuard\ndef is_a(data: A | B) -> TypeGuard[A]:\n    return isinstance(data, A)",
     ["m.py:2"]),
    ("import typing\ndef is_a(data: A | B) -> typing.TypeIs[A]: ...", ["m.py:2"]),
    ("async def is_a(data: A | B) -> 'TypeGuard[A]': ...", ["m.py:1"]),
], ids=["by-return-type", "type-guard", "type-is", "quoted"])
def test_a_type_guard_is_named(tmp_path: Path, module: str, expected: list[str]) -> None:
    assert type_guards([write(tmp_path, {"m.py": module}) / "m.py"]) == expected
