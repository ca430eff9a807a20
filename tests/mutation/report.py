"""`python -m tests.mutation.report`: the score of the last `make mutation` run, from mutmut's results in
`mutants/`: per module and in all, the mutants killed by a test, those `mypy --strict` refuses (`make check`
would stop them before any test), and the score (both, over the total); then every mutant that survived
or that no test reaches, each marked with its reason when `equivalent.txt` lists it as equivalent. Exit
status 1 when the score is below TARGET."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

TARGET = 0.90
KILLED = ("killed", "timeout")
TYPED = "caught by type check"
EQUIVALENT = Path(__file__).with_name("equivalent.txt")


def equivalents() -> dict[str, str]:
    """mutant name → why it cannot be told apart from the original (`name  reason` lines, # comments)."""
    reasons = {}
    for line in EQUIVALENT.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            reasons[name] = reason.strip()
    return reasons


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "mutants")
    reasons = equivalents()
    counts: dict[str, Counter[str]] = {}
    left: list[tuple[str, str]] = []
    for meta in sorted(root.glob("functions/**/*.py.meta")):
        module = ".".join(meta.relative_to(root).with_suffix("").with_suffix("").parts)
        results = json.loads(meta.read_text())["exit_code_by_key"]
        if not results:
            continue
        tally = counts.setdefault(module, Counter())
        for name, code in results.items():
            status = status_by_exit_code[code]
            if status == "not checked":
                tally["not checked"] += 1
                continue
            tally["killed" if status in KILLED else "typed" if status == TYPED else status] += 1
            tally["total"] += 1
            if status not in KILLED and status != TYPED:
                left.append((name, status))
    parts = {part: Counter[str]() for part in ("rules", "handlers")}
    print(f"{'module':<36} {'killed':>7} {'mypy':>6} {'checked':>7} {'score':>7}  other")
    for module, tally in counts.items():
        parts[module.split(".")[1]].update(tally)
        if tally["total"]:
            print(row(module, tally))
    for part, tally in parts.items():
        print(row(f"all {part}", tally) + interval(tally))
    print(f"\n{len(left)} mutants not killed ({sum(1 for n, _ in left if n in reasons)} equivalent):")
    for name, status in left:
        print(f"  {status:<12} {name}" + (f"  -- equivalent: {reasons[name]}" if name in reasons else ""))
    print("  (`.venv/bin/mutmut show NAME` prints a mutant's diff)")
    return 0 if all(score(tally) >= TARGET for tally in parts.values() if tally["total"]) else 1


def score(tally: Counter[str]) -> float:
    return (tally["killed"] + tally["typed"]) / tally["total"] if tally["total"] else 0.0


def interval(tally: Counter[str]) -> str:
    """The 95 % Wilson interval of a sample's score (the handlers' mutants are sampled)."""
    n, p, z = tally["total"], score(tally), 1.96
    if not tally["not checked"] or not n:
        return ""
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
        1 + z * z / n)
    return f"  (a sample: 95 % interval {centre - half:.1%} to {centre + half:.1%})"


def row(module: str, tally: Counter[str]) -> str:
    other = ", ".join(f"{n} {k}" for k, n in sorted(tally.items()) if k not in ("killed", "typed", "total"))
    return f"{module:<36} {tally['killed']:>7} {tally['typed']:>6} {tally['total']:>7} {score(tally):>7.1%}  {other}"


if __name__ == "__main__":
    sys.exit(main())
