"""The house and the tests that mirror it. A folder per function (`functions.registry.HANDLERS`), each with its
`read` and its pure `decide` (and `wants`, where the read is steered); the shared domain; the runtime; the tools.
`events/X.py` is tested in `tests/events/test_X.py`, `functions/X.py` in `tests/test_X.py`, `functions/<room>/X.py`
in `tests/<room>/test_X.py` and a function's `functions/<name>/X.py` in `tests/functions/<name>/test_X.py`; the
tests of a pure module use no API server. Reads read only through `functions/runtime/reads.py`, never through
`ctx.gateway`. No product module is over 300 lines, no function's read over 25; one `Skipped` and one `Gone`
(`functions.domain.jobs`); no function or domain module keeps state in a module global; the import contracts name
every function the registry serves. No function of the modules `make mutation` mutates returns a `TypeGuard`
(its trampolines drop the narrowing: see `type_guards`).
Each check also runs on a small tree that breaks it, so that none of them passes whatever the code does."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from functions.registry import HANDLERS
from tests.support.layout import ROOMS, pure_modules
from tests.support.paths import REPO

SHARE = 0.9
MAX_LINES = 300
MAX_READ_LINES = 25
API_SERVER = "cluster"
"""The session's API server: a fixture that asks for it, directly or through other fixtures, needs it."""


def packages(repo: Path) -> dict[str, str]:
    """Each product package → the test folder that mirrors it."""
    found = {"events": "tests/events", "functions": "tests"}
    for folder in sorted(p for p in (repo / "functions").iterdir() if (p / "__init__.py").is_file()):
        found[f"functions/{folder.name}"] = (f"tests/{folder.name}" if folder.name in ROOMS
                                             else f"tests/functions/{folder.name}")
    return found


def product_modules(repo: Path) -> list[str]:
    return sorted(str(path.relative_to(repo)) for package in packages(repo) for path in (repo / package).glob("*.py")
                  if path.name != "__init__.py")


def mirror_of(module: str, repo: Path) -> str:
    package, name = module.rsplit("/", 1)
    return f"{packages(repo)[package]}/test_{name}"


def untested(repo: Path) -> list[str]:
    return [module for module in product_modules(repo) if not (repo / mirror_of(module, repo)).is_file()]


def strays(repo: Path, functions: Iterable[str]) -> list[str]:
    """Folders of `functions/` that are neither a room nor a function the registry serves, and functions the
    registry serves without their folder."""
    folders = {p.name for p in (repo / "functions").iterdir() if (p / "__init__.py").is_file()}
    return sorted((folders - set(ROOMS) - set(functions)) | {f"{name} (no folder)" for name in
                                                              set(functions) - folders})


def pure_tests(repo: Path) -> list[Path]:
    """The test modules of the pure modules: the domain's, and each function's but its read's."""
    return sorted(p for module in pure_modules(repo) if (p := repo / mirror_of(
        module.replace(".", "/") + ".py", repo)).is_file())


def oversized(repo: Path, limit: int = MAX_LINES) -> list[str]:
    return [f"{module} ({n} lines)" for module in product_modules(repo)
            if (n := len((repo / module).read_text().splitlines())) > limit]


def long_reads(repo: Path, limit: int = MAX_READ_LINES) -> list[str]:
    """Every function of a function's read module longer than `limit` lines."""
    return [f"{path.relative_to(repo)}:{node.name} ({length} lines)"
            for path in sorted((repo / "functions").glob("*/read.py"))
            for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)
            and (length := node.end_lineno - node.lineno + 1) > limit]  # type: ignore[operator]


def shapes(repo: Path, names: tuple[str, ...] = ("Skipped", "Gone")) -> list[str]:
    """Where a class of one of `names` is defined, but the one in `functions/domain/jobs.py`."""
    return sorted(f"{path.relative_to(repo)}:{node.name}" for path in (repo / "functions").rglob("*.py")
                  for node in ast.parse(path.read_text()).body
                  if isinstance(node, ast.ClassDef) and node.name in names
                  and path != repo / "functions" / "domain" / "jobs.py")


MUTABLE = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter", "Lock", "RLock"})


def mutable_globals(paths: Iterable[Path]) -> list[str]:
    """`file:line` for every module-level name bound to a container, a lock or an instance of a class of its own
    module: state a process keeps between events, which belongs to the context (`functions.runtime.memory`)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        own = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            called = value.func if isinstance(value, ast.Call) else None
            name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) \
                else ""
            if name in MUTABLE or name in own:
                found.append(f"{path.name}:{node.lineno}")
    return found


def contract_gaps(config: dict[str, Any], functions: Iterable[str], pure: Iterable[str]) -> list[str]:
    """What the import contracts miss of the house: the function folders the independence contract and the
    layers' function layer list, the pure modules the purity contract covers, the reads it forbids them."""
    found = config["tool"]["importlinter"]["contracts"]
    folders = {f"functions.{name}" for name in functions}
    gaps = []
    independence = [c for c in found if c["type"] == "independence" and set(c["modules"]) & folders]
    if not independence or set(independence[0]["modules"]) != folders:
        gaps.append("independence: " + ", ".join(sorted(folders ^ set(independence[0]["modules"] if independence
                                                                          else ()))))
    layers = [set(layer.split(" | ")) for c in found if c["type"] == "layers" for layer in c["layers"]]
    if folders not in layers:
        gaps.append("layers: no layer of exactly the function folders")
    purity = [c for c in found if c["type"] == "forbidden" and "functions.domain" in c.get("source_modules", ())]
    if not purity:
        return [*gaps, "purity: no contract"]
    sources = set(purity[0]["source_modules"])
    covered = {m for m in pure if m in sources or any(m.startswith(f"{s}.") for s in sources)}
    gaps += [f"purity: {m} not covered" for m in sorted(set(pure) - covered)]
    gaps += [f"purity: {f}.read not forbidden" for f in sorted(folders)
             if f"{f}.read" not in purity[0]["forbidden_modules"]]
    return gaps


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
        f"missing: {', '.join(f'{m} ({mirror_of(m, REPO)})' for m in missing)}")


def test_every_folder_of_functions_is_a_room_or_a_function_the_registry_serves() -> None:
    assert strays(REPO, HANDLERS) == []


def test_the_tests_of_the_pure_modules_are_pure() -> None:
    tests = pure_tests(REPO)
    assert len(tests) >= len(HANDLERS)
    assert api_server_uses(REPO / "tests" / "conftest.py", tests) == []


def test_reads_read_only_through_reads() -> None:
    assert gateway_reads(sorted((REPO / "functions").glob("*/read.py"))) == []


def test_no_product_module_is_over_300_lines_and_no_read_over_25() -> None:
    assert oversized(REPO) == []
    assert long_reads(REPO) == []


def test_one_skipped_and_one_gone() -> None:
    assert shapes(REPO) == []


def test_no_function_and_no_domain_module_keeps_state_in_a_module_global() -> None:
    assert mutable_globals(sorted(path for folder in ("domain", *HANDLERS)
                                  for path in (REPO / "functions" / folder).glob("*.py"))) == []


def test_the_import_contracts_name_every_function_and_every_pure_module() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert contract_gaps(config, HANDLERS, pure_modules(REPO)) == []


def test_the_mutated_modules_narrow_by_return_type_never_by_a_type_guard() -> None:
    assert type_guards(sorted(path for folder in ("domain", *HANDLERS)
                              for path in (REPO / "functions" / folder).glob("*.py"))) == []


# -- each check fails where it should ----------------------------------------------------------

def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(("files", "expected"), [
    ({"functions/runtime/__init__.py": "", "functions/runtime/plan.py": "", "tests/runtime/test_plan.py": "",
      "functions/domain/__init__.py": "", "functions/domain/grace.py": ""}, ["functions/domain/grace.py"]),
    ({"events/objects.py": "", "tests/events/test_objects.py": "", "functions/status/__init__.py": "",
      "functions/status/read.py": "", "tests/functions/status/test_decide.py": ""}, ["functions/status/read.py"]),
    ({"functions/status/__init__.py": "", "functions/status/decide.py": "", "tests/domain/test_decide.py": ""},
     ["functions/status/decide.py"]),
], ids=["domain-untested", "read-tested-as-a-decision", "decision-tested-in-the-domain"])
def test_a_module_without_its_test_module_is_named(tmp_path: Path, files: dict[str, str],
                                                   expected: list[str]) -> None:
    assert untested(write(tmp_path, files)) == expected


def test_a_folder_the_registry_does_not_serve_and_a_function_without_its_folder_are_named(tmp_path: Path) -> None:
    root = write(tmp_path, {"functions/runtime/__init__.py": "", "functions/status/__init__.py": "",
                            "functions/rules/__init__.py": ""})
    assert strays(root, ("status", "restart")) == ["restart (no folder)", "rules"]


def test_a_long_module_and_a_long_read_are_named(tmp_path: Path) -> None:
    read = "def read(env, ctx):\n" + "    x = 1\n" * 25
    root = write(tmp_path, {"functions/domain/__init__.py": "", "functions/domain/big.py": "x = 1\n" * 301,
                            "functions/domain/fits.py": "x = 1\n" * 300, "functions/status/__init__.py": "",
                            "functions/status/read.py": read, "functions/phase/__init__.py": "",
                            "functions/phase/read.py": "def read(env, ctx):\n" + "    x = 1\n" * 24})
    assert oversized(root) == ["functions/domain/big.py (301 lines)"]
    assert long_reads(root) == ["functions/status/read.py:read (26 lines)"]


def test_a_second_skipped_or_gone_is_named(tmp_path: Path) -> None:
    root = write(tmp_path, {"functions/domain/jobs.py": "class Skipped: ...\nclass Gone: ...\n",
                            "functions/alert/decide.py": "class Skipped: ...\nclass Found: ...\n",
                            "functions/phase/decide.py": "class Gone: ...\n"})
    assert shapes(root) == ["functions/alert/decide.py:Skipped", "functions/phase/decide.py:Gone"]


@pytest.mark.parametrize(("module", "expected"), [
    ("ACCEPTS = frozenset({'a'})\nTABLE = {'a': 1}\nLIMIT: int = 3\n", []),
    ("import threading\nclass Remembered: ...\nREMEMBERED = Remembered()\n_lock = threading.Lock()\n",
     ["m.py:3", "m.py:4"]),
    ("from collections import OrderedDict\nSEEN: OrderedDict[str, int] = OrderedDict()\n", ["m.py:2"]),
], ids=["constants", "an-instance-and-a-lock", "a-container"])
def test_a_module_global_holding_state_is_named(tmp_path: Path, module: str, expected: list[str]) -> None:
    assert mutable_globals([write(tmp_path, {"m.py": module}) / "m.py"]) == expected


def config(independent: list[str], layer: str, sources: list[str], forbidden: list[str]) -> dict[str, Any]:
    return {"tool": {"importlinter": {"contracts": [
        {"type": "independence", "modules": independent},
        {"type": "layers", "layers": ["functions.main", layer, "functions.domain"]},
        {"type": "forbidden", "name": "pure", "source_modules": sources, "forbidden_modules": forbidden}]}}}


@pytest.mark.parametrize(("found", "gaps"), [
    (config(["functions.a", "functions.b"], "functions.a | functions.b", ["functions.domain", "functions.a.decide",
            "functions.b.decide"], ["functions.a.read", "functions.b.read"]), []),
    (config(["functions.a"], "functions.a", ["functions.domain", "functions.a.decide"], ["functions.a.read"]),
     ["independence: functions.b", "layers: no layer of exactly the function folders",
      "purity: functions.b.decide not covered", "purity: functions.b.read not forbidden"]),
    (config(["functions.a", "functions.b"], "functions.a | functions.b", ["functions.a.decide", "functions.b.decide"],
            ["functions.a.read", "functions.b.read"]), ["purity: no contract"]),
], ids=["complete", "a-function-added-without-its-contracts", "no-purity-contract"])
def test_a_function_or_pure_module_the_contracts_miss_is_named(found: dict[str, Any], gaps: list[str]) -> None:
    assert contract_gaps(found, ("a", "b"), ["functions.domain.grace", "functions.a.decide",
                                               "functions.b.decide"]) == gaps


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
