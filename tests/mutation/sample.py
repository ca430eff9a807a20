"""`python -m tests.mutation.sample PATTERN N SEED`: N mutant names matching PATTERN (fnmatch), drawn at random
with SEED from the mutants `mutmut run` generated in `mutants/`, one per line. `make mutation` runs every
mutant of the decisions and such a sample of the reads' (whose tests need the API server and take seconds
each): the sample's score estimates theirs."""

from __future__ import annotations

import fnmatch
import json
import random
import sys
from pathlib import Path


def names(pattern: str, root: Path = Path("mutants")) -> list[str]:
    return sorted(name for meta in root.glob("functions/**/*.py.meta")
                  for name in json.loads(meta.read_text())["exit_code_by_key"] if fnmatch.fnmatch(name, pattern))


def draw(pattern: str, count: int, seed: int) -> list[str]:
    return draw_from(names(pattern), count, seed)


def draw_from(every: list[str], count: int, seed: int) -> list[str]:
    """`count` of `every`, drawn with `seed`, sorted; all of them when there are no more."""
    return sorted(random.Random(seed).sample(every, min(count, len(every))))


def main() -> None:
    print("\n".join(draw(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))


if __name__ == "__main__":
    main()
