"""`cre-fn parity FILE`: a recorded stream's `dev.crefn.parity.checked` events as a table.

Per field: the checks, how many agreed, the agreement rate; then the first Jobs whose verdicts differ, with
CRE's value and the functions'. A check is counted once however often it was delivered (`data.check`). The
recording is what `cre-fn record` or `python -m localstack dev` writes (`functions.tools.replay.read_recording`).
`-o json`: one JSON object instead (`checks`, `differing`, `unreadable`, `fields` with each field's counts and
`differ` with every differing Job). Exit status: 0 when there were checks and every one agreed, 1 when one
differed, 2 when the file cannot be read, 3 when it holds no check at all (nothing was compared: a recording of
another stream, or of a parity target that never ran; never a success).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from events.emitted import ParityCheckedData
from events.types import EventType
from functions.parity.decide import FIELDS
from functions.tools.replay import read_recording

SHOWN = 10
"""How many differing Jobs the table lists."""


@dataclass
class Table:
    checks: dict[str, ParityCheckedData] = field(default_factory=dict)
    unreadable: int = 0

    def add(self, records: Iterable[Mapping[str, Any]]) -> Table:
        for record in records:
            if (record.get("attributes") or {}).get("type") != EventType.PARITY_CHECKED.value:
                continue
            try:
                data = ParityCheckedData.model_validate(record.get("data"))
            except ValidationError:
                self.unreadable += 1
                continue
            self.checks.setdefault(data.check, data)
        return self

    def counts(self) -> dict[str, Counter[str]]:
        found: dict[str, Counter[str]] = {}
        for data in self.checks.values():
            for f in data.fields:
                found.setdefault(f.field, Counter())[f.result] += 1
        return found

    def differing(self) -> list[ParityCheckedData]:
        return [d for d in self.checks.values() if d.result == "differ"]

    def render(self, out: TextIO) -> None:
        counts = self.counts()
        print(f"{len(self.checks)} checks of CRE's verdicts, {len(self.differing())} differing", file=out)
        print(f"{'field':<20}{'checks':>8}{'agree':>8}{'differ':>8}{'agreement':>11}", file=out)
        for name in [f for f in FIELDS if f in counts]:
            c = counts[name]
            total = c["agree"] + c["differ"]
            print(f"{name:<20}{total:>8}{c['agree']:>8}{c['differ']:>8}{c['agree'] / total:>11.1%}", file=out)
        if differing := self.differing():
            print(f"\nfirst Jobs that differ (of {len(differing)}):", file=out)
            for data in differing[:SHOWN]:
                for f in (f for f in data.fields if f.result == "differ"):
                    print(f"  {data.job.namespace}/{data.job.name}  CRE {data.verdict}: {f.field}: "
                          f"CRE {f.cre or '(none)'}, functions {f.functions or '(none)'}", file=out)
        if self.unreadable:
            print(f"\n{self.unreadable} parity events could not be read (skipped)", file=out)


    def as_json(self) -> dict[str, Any]:
        return {"checks": len(self.checks), "differing": len(self.differing()), "unreadable": self.unreadable,
                "fields": {name: {"agree": c["agree"], "differ": c["differ"]} for name, c in self.counts().items()},
                "differ": [{"namespace": d.job.namespace, "job": d.job.name, "verdict": d.verdict,
                            "fields": [{"field": f.field, "cre": f.cre, "functions": f.functions}
                                       for f in d.fields if f.result == "differ"]} for d in self.differing()]}


NO_CHECKS = 3
"""Exit status of a recording that holds no check."""


def main(path: str, out: TextIO = sys.stdout, as_json: bool = False) -> int:
    try:
        records = read_recording(Path(path))
    except (OSError, ValueError) as e:
        print(f"cre-fn parity: {e}", file=sys.stderr)
        return 2
    table = Table().add(records)
    if as_json:
        print(json.dumps(table.as_json(), sort_keys=True), file=out)
    else:
        table.render(out)
    if not table.checks:
        print(f"cre-fn parity: {path} holds no {EventType.PARITY_CHECKED.value} event: nothing was compared",
              file=sys.stderr)
        return NO_CHECKS
    return 1 if table.differing() else 0
