"""`python -m tests.mutation.report [constants]`: the score of the last `make mutation` run, from mutmut's
results in `mutants/` and those of the constants' mutants (`mutants/constants.json`, `tests.mutation.constants`):
per module and in all, the mutants killed by a test, those `mypy --strict` refuses (`make check` would stop
them before any test), and the score (both, over the total); the module-level constants of the decisions as a
row of their own, and every part together; then every mutant that survived or that no test reaches, each marked
with its reason when `equivalent.txt` lists it as equivalent. With `constants`, only the constants' results,
per module. Exit status 1 when a score is below its target (the constants': CONSTANTS_TARGET)."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

from tests.support.layout import is_pure

TARGET = 0.90
CONSTANTS_TARGET = 0.95
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
    args = sys.argv[1:]
    only_constants = "constants" in args
    root = Path(next((a for a in args if a != "constants"), "mutants"))
    reasons = equivalents()
    counts: dict[str, Counter[str]] = {}
    left: list[tuple[str, str]] = []
    for meta in [] if only_constants else sorted(root.glob("functions/**/*.py.meta")):
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
    constants, changes = constant_counts(root, left)
    parts = {part: Counter[str]() for part in ("decisions", "reads")}
    print(f"{'module':<48} {'killed':>7} {'mypy':>6} {'checked':>7} {'score':>7}  other")
    for module, tally in counts.items():
        parts["decisions" if is_pure(module) else "reads"].update(tally)
        if tally["total"]:
            print(row(module, tally))
    if only_constants:
        for module, tally in constants.items():
            print(row(f"{module} (constants)", tally))
    every = sum((*parts.values(), *constants.values()), Counter[str]())
    constants_tally = sum(constants.values(), Counter[str]())
    if constants_tally["total"]:
        print(row("constants", constants_tally))
    for part, tally in parts.items():
        if tally["total"] or tally["not checked"]:
            print(row(f"all {part}", tally) + interval(tally))
    if not only_constants:
        print(row("all", every))
    print(f"\n{len(left)} mutants not killed ({sum(1 for n, _ in left if n in reasons)} equivalent):")
    for name, status in left:
        print(f"  {status:<12} {name}" + (f"  ({changes[name]})" if name in changes else "")
              + (f"  -- equivalent: {reasons[name]}" if name in reasons else ""))
    if not only_constants:
        print("  (`.venv-mutation/bin/python -m mutmut show NAME` prints a mutant's diff; a constant's change is shown "
              "beside it)")
    below = [tally for tally in parts.values() if tally["total"] and score(tally) < TARGET]
    if constants_tally["total"] and score(constants_tally) < CONSTANTS_TARGET:
        below.append(constants_tally)
    return 1 if below else 0


def constant_counts(root: Path, left: list[tuple[str, str]]) -> tuple[dict[str, Counter[str]], dict[str, str]]:
    """Per module, the tally of its constants' mutants (`tests.mutation.constants`); each mutant's change.
    Those not killed are added to `left`."""
    path = root / "constants.json"
    counts: dict[str, Counter[str]] = {}
    changes: dict[str, str] = {}
    for name, result in (json.loads(path.read_text())["mutants"] if path.exists() else {}).items():
        tally = counts.setdefault(result["module"], Counter())
        status = result["status"]
        tally["killed" if status in KILLED else status] += 1
        tally["total"] += 1
        changes[name] = f"line {result['line']}: {result['change']}"
        if status not in KILLED:
            left.append((name, status))
    return counts, changes


def score(tally: Counter[str]) -> float:
    return (tally["killed"] + tally["typed"]) / tally["total"] if tally["total"] else 0.0


def interval(tally: Counter[str]) -> str:
    """The 95 % Wilson interval of a sample's score (the reads' mutants are sampled)."""
    n, p, z = tally["total"], score(tally), 1.96
    if not tally["not checked"] or not n:
        return ""
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
        1 + z * z / n)
    return f"  (a sample: 95 % interval {centre - half:.1%} to {centre + half:.1%})"


def row(module: str, tally: Counter[str]) -> str:
    other = ", ".join(f"{n} {k}" for k, n in sorted(tally.items()) if k not in ("killed", "typed", "total"))
    return f"{module:<48} {tally['killed']:>7} {tally['typed']:>6} {tally['total']:>7} {score(tally):>7.1%}  {other}"


if __name__ == "__main__":
    sys.exit(main())
