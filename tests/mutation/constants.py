"""`python -m tests.mutation.constants JOBS [again]` (a step of `make mutation`, alone with
`make mutation MUTATION_ONLY=constants`): mutants of the module-level constants of the pure modules
(`functions/domain/` and every module of a function folder but its `read`), which mutmut leaves alone (it
mutates function bodies), run against the unit tests.

A constant's mutants change one literal of its value, wherever it sits in it (the items of a tuple, set or
dict, the arguments of a call such as `timedelta(seconds=300)` or `re.compile(...)`): a number by +1 and by
-1, a text to "XX" + text + "XX", a bool flipped. Type aliases (`Status = Literal[...]`) are left alone.

A mutant runs in a fork of this process (which imported the libraries the tests use, and nothing of
`functions`), where the mutated module is loaded from its mutated source: every importer sees the mutated
value, `from ... import NAME` and default arguments included. Its tests, stopping at the first failure, each
phase only when the one before passed:
1. tests/test_cre_constants.py (CRE's numbers and texts);
2. the test modules that import the mutated module;
3. the rest of the unit tests of the decisions (mutmut's test selection in pyproject.toml), all without the tests
   that need an API server.
First the same tests run unmutated: they must pass, or no mutant's result would mean anything. Last, the
tests that killed a mutant run again unmutated: a kill by a test that fails there too does not count.
The results go to mutants/constants.json (read by `tests.mutation.report`), each mutant's pytest output to
mutants/constants/NAME.log. With `again`, only the mutants the last run left (survived) run again; mutant
names after JOBS run only those, without the unmutated run (`python -m tests.mutation.constants list` lists
them all).
"""

from __future__ import annotations

import ast
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import time
import tomllib
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from tests.support.layout import pure_modules

ROOT = Path(__file__).resolve().parents[2]
OUT = Path("mutants")
RESULTS = OUT / "constants.json"
PINNED = "tests/test_cre_constants.py"
WALL_SECONDS = 900
STATUS = {0: "survived", 1: "killed", 2: "killed", 5: "no tests"}
"""pytest's exit status → the mutant's: a test failed, or the mutated module failed to import (2, collection
interrupted); any other status (pytest's internal or usage error) is an error of the run, not a kill."""
PRELOADED = ("pytest", "pydantic", "kubernetes", "cel_expr_python", "yaml",
             "flask", "functions_framework", "cloudevents.http", "prometheus_client", "opentelemetry.sdk.trace",
             "urllib3", "events.emitted", "events.objects", "events.types", "events.envelope")
"""What a mutant's fork finds imported already: the libraries (seconds to import) and the event contract
(`events/`, never mutated); nothing of `functions`, which a mutant may change."""


@dataclass(frozen=True)
class Mutant:
    name: str
    """`<module>.<constant>__const_<n>`, n counting the constant's mutants from 1 in source order."""
    module: str
    line: int
    change: str
    start: int
    end: int
    replacement: str

    def source(self) -> str:
        data = (ROOT / module_path(self.module)).read_bytes()
        return (data[:self.start] + self.replacement.encode() + data[self.end:]).decode()


def module_path(module: str) -> Path:
    return Path(*module.split(".")).with_suffix(".py")


def is_type_alias(value: ast.expr) -> bool:
    """`Literal[...]`, `tuple[...]`, `A | B`, `TypeVar(...)`: a type, not a value."""
    if isinstance(value, ast.Subscript):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return is_type_alias(value.left) or isinstance(value.left, ast.Name)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "TypeVar"


def literals(value: ast.expr) -> Iterator[ast.Constant]:
    """The literals of a constant's value, in source order (an f-string's parts are not literals here)."""
    formatted = {id(n) for outer in ast.walk(value) if isinstance(outer, ast.JoinedStr) for n in ast.walk(outer)}
    found = [n for n in ast.walk(value) if isinstance(n, ast.Constant) and id(n) not in formatted]
    yield from sorted(found, key=lambda n: (n.lineno, n.col_offset))


def changed(value: object) -> list[object]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1, value - 1]
    if isinstance(value, str):
        return [f"XX{value}XX"]
    if isinstance(value, bytes):
        return [b"XX" + value + b"XX"]
    return []  # None, Ellipsis


def short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}..."


def constant_mutants(module: str) -> list[Mutant]:
    """Every mutant of the module-level constants of one module."""
    data = (ROOT / module_path(module)).read_bytes()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    mutants = []
    for stmt in ast.parse(data).body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            names, value = [t.id for t in stmt.targets if isinstance(t, ast.Name)], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            names, value = [stmt.target.id], stmt.value
        else:
            continue
        if is_type_alias(value):
            continue
        count = 0
        for node in literals(value):
            assert node.end_lineno is not None and node.end_col_offset is not None
            start = starts[node.lineno - 1] + node.col_offset  # ast offsets count UTF-8 bytes
            end = starts[node.end_lineno - 1] + node.end_col_offset
            for new in changed(node.value):
                count += 1
                mutants.append(Mutant(f"{module}.{names[0]}__const_{count}", module, node.lineno,
                                      f"{names[0]}: {short(node.value)} -> {short(new)}", start, end, repr(new)))
    return mutants


def decision_modules() -> list[str]:
    """The pure modules: the domain and every function's decision (`tests.support.layout`)."""
    return pure_modules(ROOT)


def all_mutants() -> list[Mutant]:
    return [m for module in decision_modules() for m in constant_mutants(module)]


class MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads the mutant's module from its mutated source (never from, nor into, the bytecode cache)."""

    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.mutant.module:
            return None
        return importlib.util.spec_from_file_location(fullname, ROOT / module_path(fullname), loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        code: CodeType = compile(self.mutant.source(), str(ROOT / module_path(self.mutant.module)), "exec",
                                 dont_inherit=True)
        exec(code, module.__dict__)


class Failures:
    """A pytest plugin: the ids of the tests (or modules, which then fail to import) that failed, in order."""

    def __init__(self) -> None:
        self.nodeids: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.nodeids:
            self.nodeids.append(report.nodeid)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.nodeids.append(f"{report.nodeid or 'collection'} (does not import)")


@functools.cache
def unit_tests() -> list[str]:
    """The unit tests of the decisions: mutmut's selection, its folders as their test modules."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    selection = config["tool"]["mutmut"]["pytest_add_cli_args_test_selection"]
    return [str(p.relative_to(ROOT)) for entry in selection
            for p in (sorted((ROOT / entry).rglob("test_*.py")) if (ROOT / entry).is_dir() else [ROOT / entry])]


@functools.cache
def test_imports() -> dict[str, frozenset[str]]:
    """Test module → the modules it imports (`from a.b import c` counts as importing `a.b` and `a.b.c`)."""
    imports = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
        imports[str(path.relative_to(ROOT))] = frozenset(names)
    return imports


def importers(module: str) -> list[str]:
    """The test modules that import `module` themselves."""
    return [test for test, names in test_imports().items() if module in names]


def phases(mutant: Mutant | None) -> list[list[str]]:
    """The test modules a mutant runs, phase by phase; unmutated (None), every one any mutant runs."""
    if mutant is None:
        every = ({t for m in decision_modules() for t in importers(m)} | {*unit_tests()}) - {PINNED}
        return [[PINNED, *sorted(every)]]
    near = [t for t in importers(mutant.module) if t != PINNED]
    rest = [t for t in unit_tests() if t not in near and t != PINNED]
    return [tests for tests in ([PINNED], near, rest) if tests]


@dataclass(frozen=True)
class Task:
    """One pytest session: a mutant's phase (`mutant` None: unmutated) without the tests found flaky, stopping
    at the first failure; or, with `only`, those tests unmutated, every one of them."""

    mutant: Mutant | None
    phase: int = 0
    flaky: tuple[str, ...] = ()
    only: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "confirm" if self.only else self.mutant.name if self.mutant else "unmutated"

    def args(self) -> list[str]:
        if self.only:
            return list(self.only)
        return ["-x", *phases(self.mutant)[self.phase], *(f"--deselect={t}" for t in self.flaky)]


def fork(task: Task, log: Path, verdict: Path) -> int:
    """Start a task's tests in a child process; its pid. The tests that failed go to `verdict`, one a line."""
    pid = os.fork()
    if pid:
        return pid
    code = 3
    try:
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(out, 1)
        os.dup2(out, 2)
        print(f"\n[phase {task.phase + 1}{', without ' + ', '.join(task.flaky) if task.flaky else ''}]", flush=True)
        if task.mutant is not None:
            sys.meta_path.insert(0, MutantFinder(task.mutant))
        import pytest

        failures = Failures()
        code = int(pytest.main(["-q", "-m", "not kube", "-p", "no:cacheprovider", "-o", "timeout=120",
                                "--durations=0", "--durations-min=5", *task.args()], plugins=[failures]))
        verdict.write_text("".join(f"{n}\n" for n in failures.nodeids))
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(tasks: Sequence[Task], jobs: int, title: str) -> dict[str, dict[str, Any]]:
    """Every task through its mutant's phases, `jobs` at once: name → status, the test that failed first, the
    seconds it took."""
    folder = OUT / "constants"
    folder.mkdir(parents=True, exist_ok=True)
    todo = list(tasks)
    running: dict[int, tuple[Task, float]] = {}
    results: dict[str, dict[str, Any]] = {}
    started = due = time.monotonic()
    while todo or running:
        while todo and len(running) < jobs:
            task = todo.pop(0)
            if task.phase == 0:
                (folder / f"{task.name}.log").unlink(missing_ok=True)
            (folder / f"{task.name}.verdict").unlink(missing_ok=True)
            running[fork(task, folder / f"{task.name}.log", folder / f"{task.name}.verdict")] = (task, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        now = time.monotonic()
        if now >= due + 30:
            due = now
            tally = [r["status"] for r in results.values() if "status" in r]
            print(f"[mutation] {title}: {len(tally)}/{len(tasks)} done: {tally.count('killed')} killed, "
                  f"{tally.count('survived')} survived ({now - started:.0f} s)", flush=True)
        if pid == 0:
            for child, (_, since) in list(running.items()):
                if now - since > WALL_SECONDS:
                    os.kill(child, signal.SIGKILL)
            time.sleep(0.05)
            continue
        task, since = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        verdict = folder / f"{task.name}.verdict"
        failed = verdict.read_text().splitlines() if verdict.exists() else []
        entry = results.setdefault(task.name, {"seconds": 0.0})
        entry["seconds"] = round(entry["seconds"] + now - since, 1)
        if code == 0 and task.mutant is not None and task.phase + 1 < len(phases(task.mutant)):
            todo.insert(0, Task(task.mutant, task.phase + 1, task.flaky))
            continue
        entry.update(status="timeout" if code == -signal.SIGKILL else STATUS.get(code, "error"),
                     killed_by=failed[0] if failed and code else "", failed=failed)
        if task.mutant is not None:
            entry.update(module=task.mutant.module, line=task.mutant.line, change=task.mutant.change,
                         flaky=list(task.flaky), task=task)
    return results


def confirmed(results: dict[str, dict[str, Any]], jobs: int) -> dict[str, dict[str, Any]]:
    """The results, with every kill confirmed: the tests that killed a mutant run again unmutated, in one
    session; a kill by a test that fails there too (a timing test on a loaded machine) does not count, and
    its mutant runs again without that test (three times at the most)."""
    for _ in range(3):
        killers = sorted({r["killed_by"] for r in results.values()
                          if r["status"] == "killed" and r["killed_by"] and "(does not import)" not in r["killed_by"]})
        if not killers:
            break
        unmutated = run([Task(None, only=tuple(killers))], 1, "constants, the killing tests unmutated")["confirm"]
        flaky = set(unmutated["failed"])
        again = [Task(r["task"].mutant, 0, (*r["task"].flaky, r["killed_by"])) for r in results.values()
                 if r["status"] == "killed" and r["killed_by"] in flaky]
        if not again:
            break
        print(f"[mutation] constants: {', '.join(sorted(flaky))} failed unmutated too: {len(again)} mutants again "
              "without them", flush=True)
        results.update(run(again, jobs, "constants, again without the flaky tests"))
    return results


def main(jobs: int, again: bool = False, names: Sequence[str] = ()) -> None:
    started = time.monotonic()
    for name in PRELOADED:
        __import__(name)
    assert not any(m.split(".")[0] == "functions" for m in sys.modules), "functions must not be imported here"
    mutants = all_mutants()
    previous: dict[str, Any] = {}
    if (again or names) and RESULTS.exists():
        previous = json.loads(RESULTS.read_text())["mutants"]
    if names:
        chosen = [m for m in mutants if m.name in names]
    else:
        chosen = [m for m in mutants if not again or previous.get(m.name, {}).get("status", "survived") == "survived"]
        baseline = run([Task(None)], 1, "constants, unmutated")["unmutated"]
        if baseline["status"] != "survived":
            sys.exit(f"[mutation] constants: the tests fail unmutated ({baseline['killed_by']}); "
                     f"see {OUT / 'constants' / 'unmutated.log'}")
    ran = confirmed(run([Task(m) for m in chosen], jobs, "constants"), jobs)
    for result in ran.values():
        del result["task"], result["failed"]
    found = {**previous, **ran}
    results = {m.name: found[m.name] for m in mutants if m.name in found}
    seconds = time.monotonic() - started
    RESULTS.write_text(json.dumps({"seconds": round(seconds), "mutants": results}, indent=1) + "\n")
    tally = [r["status"] for r in results.values()]
    print(f"[mutation] constants: {len(mutants)} mutants ({len(chosen)} run): {tally.count('killed')} killed, "
          f"{tally.count('timeout')} timed out, {tally.count('survived')} survived in {seconds:.0f} s "
          f"(output: {OUT / 'constants'})", flush=True)


def describe() -> None:
    """`python -m tests.mutation.constants list`: every mutant, one a line."""
    for m in all_mutants():
        print(f"{m.name}  line {m.line}: {m.change}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["list"]:
        describe()
    else:
        main(int(sys.argv[1]), "again" in sys.argv[2:], [a for a in sys.argv[2:] if a != "again"])
