"""`python -m localstack dev|soak|check`: the commands of the local dev stack, which lives in the source tree
only (not in the wheel or the image). `dev` (`make run`): the stack and its demo, a verdict scenario or a
replay; `soak` (`make soak`): many Jobs under chaos and kills, then invariants; `check FILE`: WorkloadRuns
against the real CRD, offline. A mistake in the arguments is said in one line (exit 2)."""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from events.types import CRE_GROUP_DEFAULT
from functions.cli import Parser
from localstack.processes import interruptible

PROG = "python -m localstack"


def cmd_dev(args: argparse.Namespace) -> int:
    from localstack import dev

    return dev.run(Path(args.out), demo=not args.no_demo, keep=args.keep,
                   replay_file=Path(args.replay) if args.replay else None, ping_interval=args.ping_interval,
                   namespace=args.namespace, scenario=args.scenario, chaos=args.chaos or "")


def cmd_soak(args: argparse.Namespace) -> int:
    from localstack.scenarios import soak

    return soak.run(args.jobs, args.seed, args.chaos, args.kill_every, args.timeout)


def cmd_check(args: argparse.Namespace) -> int:
    from localstack import rendercheck

    return rendercheck.main(args.file, args.cre_group)


def parser() -> Parser:
    top = Parser(prog=PROG, description=__doc__)
    sub = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    dev = sub.add_parser("dev", help="the local stack and its demo (what `make run` runs)")
    dev.add_argument("--keep", action="store_true", help="keep the stack up; print KUBECONFIG= and BROKER=")
    dev.add_argument("--no-demo", action="store_true", help="start the stack without the demo or the Trainer")
    dev.add_argument("--replay", metavar="FILE", help="reproduce a recorded event log in the fresh stack")
    dev.add_argument("--out", default="out/dev", help="directory for the event log, dead letters and logs")
    dev.add_argument("--namespace", help="run the demo, or reproduce the recording, in this namespace")
    dev.add_argument("--ping-interval", type=float, default=10.0, help="seconds between resync ticks")
    dev.add_argument("--scenario", default="demo",
                     help="demo (default), node-failure, stall or thresholds: the verdict to watch; shadow: "
                          "observe mode beside a stand-in for CRE, ending with the parity table")
    dev.add_argument("--chaos", metavar="SPEC",
                     help="the Broker drops, duplicates, holds back and delays deliveries, seeded: "
                          "drop=0.1,dup=0.2,reorder=0.2,delay=0-500ms,seed=7")
    dev.set_defaults(func=cmd_dev)
    soak = sub.add_parser("soak", help="many Jobs through the local stack under chaos, then invariants (make soak)")
    soak.add_argument("--jobs", type=int, default=200, help="how many Jobs (default 200)")
    soak.add_argument("--seed", type=int, default=1, help="seed of the Jobs' outcomes, the chaos and the kills")
    soak.add_argument("--chaos", default="drop=0.05,dup=0.2,reorder=0.2,delay=0-300ms",
                      help="the Broker's chaos (see dev --chaos); its seed is --seed unless given")
    soak.add_argument("--kill-every", type=float, default=4.0, help="seconds between SIGKILLs of a function")
    soak.add_argument("--timeout", type=float, default=900, help="seconds to wait for quiescence")
    soak.set_defaults(func=cmd_soak)
    check = sub.add_parser("check", help="check a WorkloadRun file against the real CRD (schema and CEL rules)")
    check.add_argument("file")
    check.add_argument("--cre-group", default=CRE_GROUP_DEFAULT)
    check.set_defaults(func=cmd_check)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    interruptible()  # Ctrl-C and SIGTERM unwind, so every process the command started is stopped by PID
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1`: where every thread is, on stderr
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
