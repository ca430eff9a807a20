"""The local stack's stop: a slow one says how long it took and which steps took the time."""

from __future__ import annotations

import re

from localstack.stack import Stopping


def test_a_slow_stop_names_its_slow_steps_and_a_quick_one_says_nothing() -> None:
    now = [100.0]
    said: list[str] = []

    def step(seconds: float) -> None:
        now[0] += seconds

    with Stopping(clock=lambda: now[0]) as stack:
        stack.push(lambda *_: stack.report(said.append))
        stack.callback(step, 0.1)   # quick: not named
        stack.callback(step, 2.5)   # runs first (last in, first out)
        stack.begin()
        step(0.6)
        stack.note("every process", stack.began)
    (line,) = said
    assert re.fullmatch(r"!! the stop took 3\.2s \(CPU \d+\.\d\ds; every process 0\.6s; step 2\.5s\)", line), line

    said.clear()
    with Stopping(clock=lambda: now[0]) as stack:
        stack.push(lambda *_: stack.report(said.append))
        stack.callback(step, 2.9)
        stack.begin()
    assert said == []


def test_a_stop_that_never_began_says_nothing() -> None:
    said: list[str] = []
    with Stopping(clock=lambda: 1e6) as stack:
        stack.push(lambda *_: stack.report(said.append))
    assert said == []
