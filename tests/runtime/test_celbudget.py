"""Tenant CEL in worker processes under a time budget (`functions.runtime.celbudget`): the outcomes are the
rules' own, an expression past its budget is interrupted at about the budget, while it runs the other
expressions are answered, and a worker that ends is replaced. Real worker processes, no stand-ins."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.domain.cel import CelOutcome, Variable
from functions.runtime.celbudget import CelBudget

ZEROS = "[" + ",".join(["0"] * 90) + "]"
SLOW = f"{ZEROS}.all(y, [{ZEROS}].all(x, {ZEROS}.all(i, {ZEROS}.all(j, size({' + '.join(['x'] * 16)}) > 0))))"
"""8100 iterations, each concatenating a list 16 times: about 10 s in-process, no input needed."""
SLACK = 2.0
"""How much past its budget an interrupted evaluation may end on a loaded 2-core machine (the kill, the answer)."""
CORDONED = "node.spec.unschedulable == true"
MISSING_KEY = "node.metadata.labels['gpu'] == 'bad'"


def running_workers() -> set[int]:
    """The pids of this process's worker processes (zombies, whose command line reads empty, left out).

    Found by their parent process id, not by the spawning thread's children list: a worker started by a
    thread that has ended is moved to another thread of this process, and a list read meanwhile misses it."""
    found: set[int] = set()
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a process that ended meanwhile
            status = dict(line.split(":\t", 1) for line in (proc / "status").read_text().splitlines()
                          if ":\t" in line)
            if (status.get("PPid", "").strip() == me
                    and b"functions.runtime.celworker" in (proc / "cmdline").read_bytes()):
                found.add(int(proc.name))
    return found


@pytest.fixture
def earlier() -> set[int]:
    """The workers other tests' evaluators left running in this process."""
    return running_workers()


def workers(earlier: set[int]) -> set[int]:
    return running_workers() - earlier


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Iterator[CelBudget]:
    """A budget of 5 s (nothing here comes near it, however loaded the machine), or the test's own
    (`@pytest.mark.parametrize("budget", [seconds], indirect=True)`)."""
    made = CelBudget(timedelta(seconds=getattr(request, "param", 5.0)))
    yield made
    made.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[CelBudget]:
    made = CelBudget(timedelta(seconds=1))
    yield made
    made.close()


@pytest.mark.parametrize(("variable", "expression", "subjects", "expected"), [
    ("node", CORDONED, [{}, {"spec": {"unschedulable": True}}], (CelOutcome(False), CelOutcome(True))),
    ("node", MISSING_KEY, [{}], (CelOutcome(failure="evaluate", error='Key not found in map : "gpu"'),)),
    ("node", "node.spec.unschedulable", [{}], (CelOutcome(failure="compile",
                                                          error="CEL expression must return bool, got dyn"),)),
    ("node", CORDONED, [], ()),
    ("node", "node.spec.(", [], (CelOutcome(failure="compile", error="ERROR: <input>:1:11: Syntax error: no viable "
                                            "alternative at input '.(' | node.spec.( | ..........^"),)),
    ("value", "value >= 900", [950.0], (CelOutcome(True),)),
    ("value", "value >= 900", [899.5], (CelOutcome(False),)),
    ("value", "value + 1.0", [1.0], (CelOutcome(failure="compile", error="expression must return bool, got double"),)),
    ("value", "value >= 1.0" + " " * 2036, [1.0], (CelOutcome(True),)),
    ("value", "value >= 1.0" + " " * 2037, [1.0], (CelOutcome(failure="length",
                                                             error="should be at most 2048 chars long"),)),
    ("node", CORDONED + " " * 2018, [{}], (CelOutcome(failure="length", error="should be at most 2048 chars long"),)),
], ids=["node-values", "node-fails-on-an-input", "node-not-bool", "node-checked-only", "node-syntax",
        "threshold-met", "threshold-missed", "threshold-not-bool", "2048-characters", "2049-characters",
        "node-2049-characters"])
def test_the_outcomes_are_the_rules(shared: CelBudget, variable: Variable, expression: str, subjects: list[Any],
                                    expected: tuple[CelOutcome, ...]) -> None:
    assert shared.outcomes(variable, expression, subjects) == expected


@pytest.mark.parametrize("budget", [0.5], indirect=True)
def test_past_its_budget_an_expression_is_interrupted_and_the_worker_replaced(budget: CelBudget,
                                                                             earlier: set[int]) -> None:
    budget.outcomes("value", "value > 0.0", [1.0])  # a worker is running
    (before,) = workers(earlier)
    started = time.monotonic()
    assert budget.outcomes("value", SLOW, [1.0]) == (
        CelOutcome(failure="interrupted", error="operation interrupted: took longer than 500ms"),)
    took = time.monotonic() - started
    assert 0.5 <= took < 0.5 + SLACK  # its budget, and the time to kill the worker on a loaded machine
    assert before not in running_workers()  # killed, and reaped
    assert budget.outcomes("value", "value > 0.0", [1.0]) == (CelOutcome(True),)


def test_the_outcomes_before_the_interruption_are_kept() -> None:
    # a budget of 2 s, so that the first Node's outcome is in before it runs out even on a loaded machine
    budget = CelBudget(timedelta(seconds=2))
    nodes = [{"spec": {"unschedulable": True}}, {"metadata": {"annotations": {"a": "x" * 600_000}}}, {}]
    a = "node.metadata.annotations[?'a'].orValue('')"
    slow = f"{ZEROS}.all(i, {ZEROS}.all(j, size({a} + {a} + {a}) >= 0)) && {CORDONED}"
    try:
        outcomes = budget.outcomes("node", slow, nodes)
    finally:
        budget.close()
    assert outcomes == (CelOutcome(True),
                        CelOutcome(failure="interrupted", error="operation interrupted: took longer than 2s"))


def test_while_one_runs_out_its_budget_the_others_are_answered() -> None:
    budget = CelBudget(timedelta(seconds=3))
    try:
        budget.outcomes("value", "value > 0.0", [1.0])
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            slow = pool.submit(budget.outcomes, "value", SLOW, [1.0])
            time.sleep(0.1)
            answered = []
            for value in (1.0, -1.0, 2.0):
                asked = time.monotonic()
                answered.append((budget.outcomes("value", "value > 0.0", [value]), time.monotonic() - asked))
            quick_done = time.monotonic() - started
            assert slow.result()[0].failure == "interrupted"
            slow_done = time.monotonic() - started
    finally:
        budget.close()
    assert [outcome for outcome, _ in answered] == [(CelOutcome(True),), (CelOutcome(False),), (CelOutcome(True),)]
    # the others are answered while the slow one still runs (the first starts a second worker), and the slow
    # one costs its budget
    assert quick_done < 3.0 <= slow_done < 3.0 + SLACK


def test_a_worker_that_ended_is_replaced(budget: CelBudget, earlier: set[int]) -> None:
    budget.outcomes("node", CORDONED, [{}])
    (worker,) = workers(earlier)
    os.kill(worker, signal.SIGKILL)
    while worker in running_workers():
        time.sleep(0.01)  # a zombie until it is reaped
    assert budget.outcomes("node", CORDONED, [{"spec": {"unschedulable": True}}]) == (CelOutcome(True),)
    assert len(workers(earlier) - {worker}) == 1


def test_workers_are_few_and_shared_by_the_threads(budget: CelBudget, earlier: set[int]) -> None:
    def ask(i: int) -> tuple[CelOutcome, ...]:
        return budget.outcomes("value", "value > 10.0", [float(i)])

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, range(40)))
    assert got == [(CelOutcome(i > 10),) for i in range(40)]
    assert len(workers(earlier)) == 2
