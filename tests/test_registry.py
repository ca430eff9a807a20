"""`functions.registry`: every function decides under the name it is served as: its Knative Service
`crefn-<name>`, the source `/crefn/<name>` of the events it sends, the `crefn-<name>` that reports its
Kubernetes Events (the name its rules module gives the decisions it makes, which its handler takes over)."""

from __future__ import annotations

import pytest

from functions.registry import HANDLERS, TARGETS


@pytest.mark.parametrize("name", HANDLERS)
def test_every_function_decides_under_the_name_it_is_served_as(name: str) -> None:
    assert TARGETS[name].name == name
