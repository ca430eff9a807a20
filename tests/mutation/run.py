"""`python -m tests.mutation.run JOBS SAMPLE SEED DECISIONS [again] [constants|mutmut]` (`make mutation`): the
module-level constants of the decisions, then mutmut over the decisions and the reads. The decisions are the
pure modules (`functions/domain/` and every module of a function folder but its `read`, `tests.support.layout`);
the reads are each function's `read`. With `again` (`make mutation MUTATION_AGAIN=1`), only the mutants the last
run left (survived, or reached by no test) run again, with the tests as they are now. With `constants` (`make
mutation MUTATION_ONLY=constants`), only step 1 and its report; with `mutmut` (`MUTATION_ONLY=mutmut`), all but 1.

1. Every mutant of the module-level constants of the decisions (`tests.mutation.constants`: mutmut mutates
   function bodies only), against the unit tests; no API server.
2. One API server for the rest of the run (`tests.mutation.cluster`), which every mutant's test session
   attaches to (`CREFN_TEST_CLUSTER`), with the functions served in the test process (`CREFN_TEST_IN_PROCESS`).
3. mutmut's mutants generated (`tests.mutation.generate`), then a sample of DECISIONS mutants of the decisions
   drawn with SEED (0: every one; about 10,000, hours on 2 cores), each against the unit tests that reach it
   (the decisions are pure; their real-API tests are left out of a decision mutant's session, tests/conftest.py).
4. A sample of SAMPLE mutants of the reads, drawn with SEED (`tests.mutation.sample`), each against every
   test that reaches it, real-API ones included: those take seconds each, so all of the reads' mutants would
   take hours; the sample's score estimates theirs.
5. The report (`tests.mutation.report`); its exit status is the run's.

mutmut's own output goes to mutants/decisions.log and mutants/reads.log, the constants' to mutants/constants/;
a progress line is printed every 30 s."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mutmut.stats import status_by_exit_code

from localstack.processes import spawn, stop_process
from tests.mutation.sample import draw, draw_from, names
from tests.support.layout import is_pure, pure_modules

READS = "functions.*.read.*"
"""Every mutant of a function's read (mutmut names a mutant after its module)."""

PROGRESS = re.compile(r"(\d+/\d+)\s+🎉 (\d+) 🫥 (\d+)\s+⏰ (\d+)\s+🤔 (\d+)\s+🙁 (\d+)\s+🔇 (\d+)\s+🧙 (\d+)")


def mutmut(args: list[str], log: Path, jobs: int, env: dict[str, str], title: str) -> None:
    """Run `mutmut run` to its end, its output to `log`, a progress line every 30 s; exit 1 if it fails."""
    started = time.monotonic()
    progress = ["preparing"]
    running = threading.Event()
    running.set()

    def tick() -> None:
        due = 30.0
        while running.is_set():
            time.sleep(1)
            if (elapsed := time.monotonic() - started) >= due:
                due += 30
                print(f"[mutation] {title}: {progress[0]} ({elapsed:.0f} s)", flush=True)

    threading.Thread(target=tick, daemon=True).start()
    proc = spawn([sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *args],
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)  # its group dies with this process
    try:
        with log.open("w") as out:
            assert proc.stdout is not None
            buffer = ""
            while chunk := proc.stdout.read1(256).decode(errors="replace"):
                out.write(chunk)
                *lines, buffer = re.split(r"[\r\n]", buffer + chunk)  # the last piece may be a line cut short
                for line in lines:
                    if found := PROGRESS.search(line):
                        done, killed, no_tests, timeout, _, survived, _, typed = found.groups()
                        progress[0] = (f"{done} done: {killed} killed, {typed} refused by mypy, {survived} "
                                       f"survived, {no_tests} reached by no test, {timeout} timed out")
        proc.wait()
    finally:
        stop_process(proc)  # stopped with its workers when this run is (Ctrl-C, SIGTERM); else already ended
    running.clear()
    if proc.returncode != 0:
        print("".join(log.read_text().splitlines(keepends=True)[-40:]))
        sys.exit(f"[mutation] {title}: mutmut failed ({proc.returncode}); its output: {log}")
    print(f"[mutation] {title}: {progress[0]} in {time.monotonic() - started:.0f} s (output: {log})", flush=True)


@contextmanager
def shared_cluster() -> Iterator[dict[str, str]]:
    """The environment of mutmut's runs, with the API server they share running."""
    cluster_dir = Path(tempfile.mkdtemp(prefix="crefn-mutation-"))
    cluster = spawn([sys.executable, "-m", "tests.mutation.cluster", str(cluster_dir)])  # dies with this process
    try:
        deadline = time.monotonic() + 120
        while not (cluster_dir / "cluster.json").exists():
            if cluster.poll() is not None or time.monotonic() > deadline:
                sys.exit("[mutation] the API server did not start")
            time.sleep(0.5)
        yield {**os.environ, "CREFN_TEST_CLUSTER": str(cluster_dir), "CREFN_TEST_IN_PROCESS": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    finally:
        stop_process(cluster, timeout=60)


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: the API server is stopped, mutmut too
    jobs, sample, seed, decisions = (int(a) for a in sys.argv[1:5])
    again, only_constants, only_mutmut = ("again" in sys.argv[5:], "constants" in sys.argv[5:],
                                          "mutmut" in sys.argv[5:])
    Path("mutants").mkdir(exist_ok=True)
    if not only_mutmut and subprocess.run(
            [sys.executable, "-m", "tests.mutation.constants", str(jobs), *(["again"] if again else [])]).returncode:
        sys.exit("[mutation] constants: the run failed")
    if only_constants:
        return subprocess.run([sys.executable, "-m", "tests.mutation.report", "constants"]).returncode
    with shared_cluster() as env:
        if again:
            mutmut(left(), Path("mutants/again.log"), jobs, env, "the mutants left")
        else:
            if subprocess.run([sys.executable, "-m", "tests.mutation.generate", str(jobs)], env=env).returncode:
                sys.exit("[mutation] mutmut could not generate the mutants")
            every = [name for name in names("functions.*") if is_pure(name)]
            chosen = draw_from(every, decisions, seed) if decisions > 0 else every
            mutmut(chosen if chosen != every else [f"{m}.*" for m in pure_modules()], Path("mutants/decisions.log"),
                   jobs, env, f"decisions ({len(chosen)} of {len(every)}, seed {seed})")
            chosen = draw(READS, sample, seed)
            mutmut(chosen, Path("mutants/reads.log"), jobs, env,
                   f"reads ({len(chosen)} of {len(names(READS))}, seed {seed})")
    return subprocess.run([sys.executable, "-m", "tests.mutation.report"]).returncode


def left(root: Path = Path("mutants")) -> list[str]:
    """The mutants the last run left: survived, or reached by no test."""
    return sorted(name for meta in root.glob("functions/**/*.py.meta")
                  for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()
                  if status_by_exit_code[code] in ("survived", "no tests"))


if __name__ == "__main__":
    sys.exit(main())
