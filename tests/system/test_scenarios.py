"""Job lifecycles (SPEC §5, §6): the scenario library (tests/scenarios/*.yaml) on the real API server,
every function over HTTP as its ServiceAccount, the Triggers and delivery of knative/base, and the dev
stack's Trainer actions. Each scenario runs four ways: every event delivered once (`once`), twice
(`duplicate`), with neighbouring events swapped (`swap`), and driven by resync alone (`resync`: no
ApiServerSource at all, only PingSource ticks to `resync`).
The keys of a scenario file: docs/development.md#scenario-files
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from localstack.trainer import ACTIONS
from tests.support import paths
from tests.support.world import World

SCENARIOS = sorted(paths.SCENARIOS.glob("*.yaml"))
MODES: dict[str, dict[str, bool]] = {"once": {}, "duplicate": {"duplicate": True}, "swap": {"swap": True},
                                     "resync": {"poll": False}}
KEYS = {"job", "evidence", "inject", "before", "trainer", "expect"}
EXPECT = {"condition", "reason", "restartCount", "trainjobs", "deadLetters"}


def load(path: Path) -> dict[str, Any]:
    sc = yaml.safe_load(path.read_text())
    assert set(sc) <= KEYS and {"job", "evidence", "trainer", "expect"} <= set(sc), sorted(sc)
    assert set(sc["job"]) <= {"maxRestarts", "suspend", "nodes"}, sc["job"]
    assert EXPECT <= set(sc["expect"]) <= EXPECT | {"failedNodes"}, sc["expect"]
    assert all(isinstance(a, int) and set(steps) <= set(ACTIONS) for a, steps in sc["trainer"].items()), sc["trainer"]
    return sc


def test_scenario_files_are_well_formed() -> None:
    assert {p.stem for p in SCENARIOS} >= {"happy-path", "failure-restart-success", "restarts-exhausted",
                                            "external-delete", "suspended-then-resumed", "no-checkpoint",
                                            "no-evidence", "malformed-events"}
    for path in SCENARIOS:
        load(path)


def injected(record: dict[str, Any], namespace: str) -> dict[str, Any]:
    attrs = {"specversion": "1.0", "id": str(uuid.uuid4()), "source": "/scenario", "namespace": namespace,
             **record["attributes"]}
    return {"attributes": attrs, "data": record["data"].encode() if isinstance(record["data"], str)
            else record["data"]}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path, mode: str, world: Callable[..., World], namespace: str) -> None:
    sc = load(path)
    w = world(**MODES[mode])
    w.create_job(max_restarts=sc["job"].get("maxRestarts"), suspend=sc["job"].get("suspend", False),
                 nodes=sc["job"].get("nodes", ""))
    if sc["evidence"]:
        w.checkpoint_evidence()
    bad = [injected(record, namespace) for record in sc.get("inject") or []]
    for record in bad:
        w.broker.publish(record)
    w.advance()
    if "before" in sc:
        assert w.final()[:2] == (sc["before"]["condition"], sc["before"]["reason"]), w.dump()
    w.play(sc["trainer"])

    expect = sc["expect"]
    assert w.final() == (expect["condition"], expect["reason"], expect["restartCount"]), w.dump()
    assert w.trainjobs_created() == expect["trainjobs"]
    dead = w.dead_letters
    copies = 2 if mode == "duplicate" else 1
    assert len(dead) == expect["deadLetters"] * copies, [d["attributes"]["knativeerrordata"] for d in dead]
    assert len({d["attributes"]["id"] for d in dead}) == expect["deadLetters"]
    assert {d["attributes"]["id"] for d in dead} <= {r["attributes"]["id"] for r in bad}
    assert all(d["attributes"]["knativeerrorcode"] == "400" for d in dead)
    if "failedNodes" in expect:
        assert [n["name"] for n in w.job()["status"]["failedNodes"]] == expect["failedNodes"]

    # the mode was what it says: each event delivered once or twice to each of its Triggers; resync alone
    # saw no ApiServerSource event
    first = Counter((o.record["attributes"]["id"], o.trigger) for o in w.broker.outcomes if o.attempt == 0)
    assert set(first.values()) == {copies}
    if mode == "resync":
        assert not [o for o in w.broker.outcomes if o.record["attributes"]["type"].startswith("dev.knative.apiserver")
                    and o.record not in bad]
