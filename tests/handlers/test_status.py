"""The `status` function (SPEC §5) over HTTP on the real API server, as its ServiceAccount: a Job gone is
202, an invalid phase event 400. Its conditions, pure: tests/rules/test_status.py."""

from __future__ import annotations

from collections.abc import Callable

from functions.client import send
from tests.support.world import phase_record


def test_object_gone_is_202(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    answer = send(functions()["status"], phase_record(namespace, "never-was", "Running"))
    assert answer.status == 202, answer.text


def test_bad_events_are_400(functions: Callable[..., dict[str, str]], namespace: str) -> None:
    record = phase_record(namespace, "llm", "Running")
    record["data"]["phase"] = "Exploded"
    answer = send(functions()["status"], record)
    assert answer.status == 400 and "invalid dev.crefn.workload.phase data: phase" in answer.text
