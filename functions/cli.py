"""`cre-fn`: what works from the wheel and the image: serve a function, render a WorkloadRun, record and replay
events, a recording's parity table, and check a cluster (`cre-fn doctor`). The local dev stack has commands of
its own (`python -m localstack dev|soak|check`, in the source tree). A mistake in the arguments is said in one
line (exit 2)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from functions.registry import RECORD, TARGETS
from functions.runtime.settings import Settings

MAIN = Path(__file__).with_name("main.py")


def cmd_serve(args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", args.target,
            "--host", args.host, "--port", str(args.port)]
    os.execv(sys.executable, argv)
    return 0  # not reached


def cmd_render(args: argparse.Namespace) -> int:
    import yaml

    from functions.domain.runspec import InvalidSpec
    from functions.domain.translation import translate

    try:
        docs = [d for d in yaml.safe_load_all(Path(args.file).read_text()) if d]
    except (OSError, yaml.YAMLError) as e:
        print(f"cre-fn render: {args.file}: {e}", file=sys.stderr)
        return 1
    rendered = []
    for doc in docs:
        if doc.get("kind") != "WorkloadRun":
            print(f"cre-fn render: {args.file}: expected WorkloadRun, got {doc.get('kind')}", file=sys.stderr)
            return 1
        try:
            rendered += translate(doc, args.cre_group).objects
        except InvalidSpec as e:
            print(f"cre-fn render: {doc['metadata'].get('name', '?')}: {e}", file=sys.stderr)
            return 1
    sys.stdout.write(yaml.safe_dump_all(rendered, sort_keys=False, explicit_start=True))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    """Serve the `record` target as the functions are served (functions-framework, one worker: the file
    has one writer), the flags passed as its settings."""
    if args.max_bytes <= 0 or args.keep < 0:
        print("cre-fn record: --max-bytes must be positive and --keep at least 0", file=sys.stderr)
        return 2
    settings = {"CREFN_RECORD_FILE": args.file or "", "CREFN_RECORD_OUT": args.out,
                "CREFN_RECORD_MAX_BYTES": str(args.max_bytes), "CREFN_RECORD_KEEP": str(args.keep)}
    argv = [sys.executable, "-m", "functions_framework", "--source", str(MAIN), "--target", RECORD,
            "--host", args.host, "--port", str(args.port)]
    os.execve(sys.executable, argv, {**os.environ, **settings, "WORKERS": "1"})
    return 0  # not reached


def cmd_replay(args: argparse.Namespace) -> int:
    from functions.tools import replay

    return replay.main(args.file, args.to, args.rate, args.duplicate, args.shuffle_window, args.structured, args.seed,
                       args.fresh_ids, args.token_file, args.retries, not args.no_rotated, args.take)


def cmd_doctor(args: argparse.Namespace) -> int:
    from functions.tools import doctor

    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        print(f"cre-fn doctor: --kubeconfig {args.kubeconfig}: no such file", file=sys.stderr)
        return 2
    return doctor.main(args.kubeconfig, args.namespace, args.cre_group, args.cre_controller, args.output,
                       args.timeout, args.jobs_namespace)


def positive(text: str) -> float:
    """An argument that must be a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line (argparse's own adds the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def cmd_parity(args: argparse.Namespace) -> int:
    from functions.tools import paritytable

    return paritytable.main(args.file, as_json=args.output == "json")


class VersionAction(argparse.Action):
    """`--version`: the installed release (`functions.runtime.version`), looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from functions.runtime.version import version

        print(f"cre-fn {version()}")
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(prog="cre-fn", description=__doc__)
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    serve = sub.add_parser("serve", help="serve one function with functions-framework")
    serve.add_argument("target", choices=sorted(TARGETS))
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=cmd_serve)
    rend = sub.add_parser("render", help="print the objects a WorkloadRun file becomes, as YAML")
    rend.add_argument("file")
    rend.add_argument("--cre-group", default="nvcre.nvidia.com")
    rend.set_defaults(func=cmd_render)
    record = sub.add_parser("record", help="an HTTP sink appending every CloudEvent it receives to JSONL")
    record.add_argument("--port", type=int, default=8080)
    record.add_argument("--host", default="0.0.0.0")
    record.add_argument("--out", default="-", help="JSONL stream to append to (- for stdout, '' for none)")
    record.add_argument("--file", help="JSONL file to append to durably (fsynced before the answer; 503 when it "
                        "cannot be written)")
    record.add_argument("--max-bytes", type=int, default=Settings.model_fields["record_max_bytes"].default,
                        help="the file's cap: it is rotated (to FILE.1, ...) before a line would pass it")
    record.add_argument("--keep", type=int, default=Settings.model_fields["record_keep"].default,
                        help="rotated files kept; the oldest beyond them is dropped, counted and logged")
    record.set_defaults(func=cmd_record)
    rep = sub.add_parser("replay", help="post a recorded JSONL event log to a URL, in order")
    rep.add_argument("file")
    rep.add_argument("--to", required=True, help="where to post (a broker, a function)")
    rep.add_argument("--rate", type=float, default=0, help="events per second (0: as fast as answered)")
    rep.add_argument("--duplicate", action="store_true", help="send every event twice (same id, as a redelivery)")
    rep.add_argument("--shuffle-window", type=int, default=0, help="shuffle within windows of this many events")
    rep.add_argument("--structured", action="store_true", help="structured mode instead of binary")
    rep.add_argument("--seed", type=int, default=0, help="seed of the shuffle")
    rep.add_argument("--fresh-ids", action="store_true", help="give every send a new id (default: the recorded one)")
    rep.add_argument("--token-file", help="send the OIDC token in this file as Authorization: Bearer (read for "
                     "every event; e.g. from `kubectl create token ... --audience ...`)")
    rep.add_argument("--retries", type=int, default=5,
                     help="times an event answered 409, 429 or 503 (or not reached) is sent again, with a backoff")
    rep.add_argument("--no-rotated", action="store_true",
                     help="read FILE alone, not the rotated files beside it (FILE.<n> ... FILE.1 first)")
    rep.add_argument("--take", action="store_true",
                     help="FILE is the dead-letter recorder's: take it and its rotated files aside (FILE.replaying), "
                     "replay them, and delete them only when every event was accepted (else the next run resumes)")
    rep.set_defaults(func=cmd_replay)
    parity = sub.add_parser("parity", help="a recording's dev.crefn.parity.checked events as a table (observe mode)")
    parity.add_argument("file")
    parity.add_argument("-o", "--output", choices=("table", "json"), default="table",
                        help="the table (default) or one JSON object")
    parity.set_defaults(func=cmd_parity)
    doc = sub.add_parser("doctor", help="check a cluster for the functions: CRDs, Broker, Triggers, sources, Services, "
                         "modes, CRE's controller and whether the measurements move; one line per check, exit 0 "
                         "when all pass")
    doc.add_argument("--kubeconfig", help="the cluster to check (default: KUBECONFIG, else in-cluster, else "
                     "~/.kube/config)")
    doc.add_argument("-n", "--namespace", default="crefn-system", help="where the functions are installed")
    doc.add_argument("--cre-group", default="", help="CRE's API group (default: the functions' CREFN_CRE_GROUP)")
    doc.add_argument("--cre-controller", default="app.kubernetes.io/name=cluster-readiness-engine",
                     help="label selector of CRE's controller Deployment (its Helm chart's label by default)")
    doc.add_argument("--jobs-namespace", default=None,
                     help="where to look at managed Jobs' measurements (default: all namespaces)")
    doc.add_argument("-o", "--output", choices=("text", "json"), default="text")
    doc.add_argument("--timeout", type=positive, default=10.0, help="seconds one API call may take")
    doc.set_defaults(func=cmd_doctor)
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every process the command started is stopped by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
