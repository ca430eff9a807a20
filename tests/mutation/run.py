"""`python -m tests.mutation.run JOBS SAMPLE SEED [again] [constants]` (`make mutation`): the module-level
constants of the rules, then mutmut over the rules and the handlers. With `again` (`make mutation
MUTATION_AGAIN=1`), only the mutants the last run left (survived, or reached by no test) run again, with the
tests as they are now. With `constants` (`make mutation MUTATION_ONLY=constants`), only step 1 and its report.

1. Every mutant of the module-level constants of `functions/rules/` (`tests.mutation.constants`: mutmut
   mutates function bodies only), against the unit tests; no API server.
2. One API server for the rest of the run (`tests.mutation.cluster`), which every mutant's test session
   attaches to (`CREFN_TEST_CLUSTER`), with the functions served in the test process (`CREFN_TEST_IN_PROCESS`).
3. Every mutant of `functions/rules/`, against the unit tests that reach it (the rules are pure; their
   real-API tests are left out of a rule mutant's session, see tests/conftest.py).
4. A sample of SAMPLE mutants of `functions/handlers/`, drawn with SEED (`tests.mutation.sample`), each
   against every test that reaches it, real-API ones included: those take seconds each, so all of the
   handlers' mutants would take hours; the sample's score estimates theirs.
5. The report (`tests.mutation.report`); its exit status is the run's.

mutmut's own output goes to mutants/rules.log and mutants/handlers.log, the constants' to mutants/constants/;
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

from tests.mutation.sample import draw, names

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
    with log.open("w") as out, subprocess.Popen(
            [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(jobs), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True) as proc:
        assert proc.stdout is not None
        buffer = ""
        while chunk := proc.stdout.read(256):
            out.write(chunk)
            *lines, buffer = re.split(r"[\r\n]", buffer + chunk)  # the last piece may be a line cut short
            for line in lines:
                if found := PROGRESS.search(line):
                    done, killed, no_tests, timeout, _, survived, _, typed = found.groups()
                    progress[0] = (f"{done} done: {killed} killed, {typed} refused by mypy, {survived} survived, "
                                   f"{no_tests} reached by no test, {timeout} timed out")
    running.clear()
    if proc.returncode != 0:
        print("".join(log.read_text().splitlines(keepends=True)[-40:]))
        sys.exit(f"[mutation] {title}: mutmut failed ({proc.returncode}); its output: {log}")
    print(f"[mutation] {title}: {progress[0]} in {time.monotonic() - started:.0f} s (output: {log})", flush=True)


@contextmanager
def shared_cluster() -> Iterator[dict[str, str]]:
    """The environment of mutmut's runs, with the API server they share running."""
    cluster_dir = Path(tempfile.mkdtemp(prefix="crefn-mutation-"))
    cluster = subprocess.Popen([sys.executable, "-m", "tests.mutation.cluster", str(cluster_dir)])
    try:
        deadline = time.monotonic() + 120
        while not (cluster_dir / "cluster.json").exists():
            if cluster.poll() is not None or time.monotonic() > deadline:
                sys.exit("[mutation] the API server did not start")
            time.sleep(0.5)
        yield {**os.environ, "CREFN_TEST_CLUSTER": str(cluster_dir), "CREFN_TEST_IN_PROCESS": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    finally:
        cluster.send_signal(signal.SIGTERM)
        cluster.wait(timeout=60)


def main() -> int:
    jobs, sample, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    again, only_constants = "again" in sys.argv[4:], "constants" in sys.argv[4:]
    Path("mutants").mkdir(exist_ok=True)
    if subprocess.run([sys.executable, "-m", "tests.mutation.constants", str(jobs), *(["again"] if again else [])]
                      ).returncode:
        sys.exit("[mutation] constants: the run failed")
    if only_constants:
        return subprocess.run([sys.executable, "-m", "tests.mutation.report", "constants"]).returncode
    with shared_cluster() as env:
        if again:
            mutmut(left(), Path("mutants/again.log"), jobs, env, "the mutants left")
        else:
            mutmut(["functions.rules.*"], Path("mutants/rules.log"), jobs, env, "rules")
            chosen = draw("functions.handlers.*", sample, seed)
            mutmut(chosen, Path("mutants/handlers.log"), jobs, env,
                   f"handlers ({len(chosen)} of {len(names('functions.handlers.*'))}, seed {seed})")
    return subprocess.run([sys.executable, "-m", "tests.mutation.report"]).returncode


def left(root: Path = Path("mutants")) -> list[str]:
    """The mutants the last run left: survived, or reached by no test."""
    return sorted(name for meta in root.glob("functions/**/*.py.meta")
                  for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()
                  if status_by_exit_code[code] in ("survived", "no tests"))


if __name__ == "__main__":
    sys.exit(main())
