"""`python -m tests.mutation.generate JOBS`: mutmut's mutants written to `mutants/` (its own first step, with the
`mutmut==3.8.1` this project pins), without running any, so that a seeded sample can be drawn from them
(`tests.mutation.sample`) before `mutmut run` runs only that sample."""

from __future__ import annotations

import sys

from mutmut.__main__ import (
    copy_also_copy_files,
    copy_src_dir,
    create_mutants,
    set_mutant_under_test,
    setup_source_paths,
    store_lines_covered_by_tests,
)


def main(jobs: int) -> None:
    set_mutant_under_test("mutant_generation")
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    store_lines_covered_by_tests()
    stats = create_mutants(jobs)
    print(f"[mutation] mutants generated: {stats.mutated} files mutated, {stats.unmodified} unchanged", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if sys.argv[1:] else 2)
