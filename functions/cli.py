"""`cre-fn`: serve a function, write the event schemas, run the local demo."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from events.schemas import SCHEMA_DIR, stale_schemas, write_schemas
from functions.localstack.serving import MAIN

TARGETS = ("phase", "launch", "status", "restart", "resync")


def cmd_serve(args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", args.target,
            "--host", args.host, "--port", str(args.port)]
    os.execv(sys.executable, argv)
    return 0  # not reached


def cmd_schemas(args: argparse.Namespace) -> int:
    if args.check:
        stale = stale_schemas()
        for name in stale:
            print(f"stale: {SCHEMA_DIR / name} (run `cre-fn schemas`)", file=sys.stderr)
        return 1 if stale else 0
    for path in write_schemas():
        print(path)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from functions.localstack import record

    return record.run(args.port, args.out, args.host)


def cmd_demo(args: argparse.Namespace) -> int:
    from functions.localstack import demo

    return demo.run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cre-fn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve one function with functions-framework")
    serve.add_argument("target", choices=TARGETS)
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=cmd_serve)
    schemas = sub.add_parser("schemas", help="write the emitted events' JSON Schemas into events/schemas/")
    schemas.add_argument("--check", action="store_true", help="fail when the committed schemas are stale")
    schemas.set_defaults(func=cmd_schemas)
    record = sub.add_parser("record", help="an HTTP sink appending every CloudEvent it receives to JSONL")
    record.add_argument("--port", type=int, default=8080)
    record.add_argument("--host", default="0.0.0.0")
    record.add_argument("--out", default="-", help="JSONL file to append to (- for stdout)")
    record.set_defaults(func=cmd_record)
    demo = sub.add_parser("demo", help="the local demo behind `make run`")
    demo.set_defaults(func=cmd_demo)
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every process the command started is stopped by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
