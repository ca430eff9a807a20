"""NCCL test logs as CRE's bandwidth parser reads them (`pkg/nccl`): the profile's `bandwidthResult` pattern (named
groups `size`, `algBW`, `busBW`, all three required) and `networkTransport` (`transport`), each line first cut of
the kubelet's timestamp prefix; a row whose numbers do not parse is skipped; the transports distinct and sorted.
The rows aggregated per message size as CRE's controller does (`mergeAggregate`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from functions.domain.goodput import go_f2, status_number
from functions.domain.logprofile import parse_float, parse_int
from functions.runtime.patterns import BadPattern, Pattern, compile_go


class ParserError(ValueError):
    """A LogProfile the bandwidth parser cannot use, in CRE's words."""


@dataclass(frozen=True)
class Row:
    """One result line of the out-of-place half: message size (bytes), algorithm and bus bandwidth (GB/s)."""

    size: int
    alg_bw: float
    bus_bw: float


@dataclass(frozen=True)
class BandwidthParser:
    """A LogProfile's two bandwidth patterns, compiled, and where they read: the replicatedJob's pod (`node` when
    the profile names none: CRE's fallback) and its container ("": the pod's only one)."""

    result: Pattern
    transport: Pattern | None
    replicated_job: str = "node"
    container: str = ""


def bandwidth_parser(raw: Mapping[str, Any]) -> BandwidthParser:
    """The parser of a LogProfile (as read); ParserError with CRE's texts (`NewParser`)."""
    name = raw["metadata"]["name"]
    patterns = (raw.get("spec") or {}).get("patterns") or {}
    result = (patterns.get("bandwidthResult") or {}).get("regex")
    if not result:
        raise ParserError(f"LogProfile {name} has no bandwidthResult pattern")
    try:
        compiled = compile_go(str(result))
    except BadPattern as e:
        raise ParserError(f"compiling bandwidthResult regex: {e}") from None
    if not {"size", "algBW", "busBW"} <= compiled.names:
        raise ParserError("bandwidthResult regex must have named groups: size, algBW, busBW")
    transport = None
    if text := (patterns.get("networkTransport") or {}).get("regex"):
        try:
            transport = compile_go(str(text))
        except BadPattern as e:
            raise ParserError(f"compiling networkTransport regex: {e}") from None
        if "transport" not in transport.names:
            raise ParserError("networkTransport regex must have named group: transport")
    spec = raw.get("spec") or {}
    return BandwidthParser(compiled, transport, str((spec.get("workerStrategy") or {}).get("replicatedJobName") or
                                                    "node"), str(spec.get("containerName") or ""))


def strip_kubelet_time(line: str) -> str:
    """CRE's `stripK8sTimestamp`: a line that starts as a timestamp (`line[4] == '-'`, `line[10] == 'T'`, longer
    than 20) loses everything up to its first space."""
    if len(line) > 20 and line[4] == "-" and line[10] == "T":
        _, space, rest = line.partition(" ")
        return rest if space else line
    return line


def rows(parser: BandwidthParser, lines: Iterable[str]) -> list[Row]:
    found = []
    for line in lines:
        captured = parser.result.search(strip_kubelet_time(line))
        if captured is None or not {"size", "algBW", "busBW"} <= captured.keys():
            continue
        size, alg, bus = parse_int(captured["size"]), parse_float(captured["algBW"]), parse_float(captured["busBW"])
        if size is not None and alg is not None and bus is not None:
            found.append(Row(size, alg, bus))
    return found


def transports(parser: BandwidthParser, lines: Iterable[str]) -> list[str]:
    """The distinct network names the log says NCCL used, sorted (empty: none said, or no pattern)."""
    if parser.transport is None:
        return []
    names = set()
    for line in lines:
        captured = parser.transport.search(strip_kubelet_time(line))
        if captured is not None and (name := captured.get("transport", "").strip()):
            names.add(name)
    return sorted(names)


def aggregate(found: Sequence[Row], results: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The rows merged into `results` (a BandwidthMeasurement's `status.results`): sums per message size in the
    order sizes first appear; a new size's averages of its rows, an existing one's `(old * n + new sum) / (n + m)`
    on the written two-decimal figures; `samples` the rows counted. Each average printed `%.2f`."""
    merged = [dict(r) for r in results]
    index = {int(r["sizeBytes"]): i for i, r in enumerate(merged)}
    sums: dict[int, list[float]] = {}
    for row in found:
        total = sums.setdefault(row.size, [0.0, 0.0, 0.0])
        total[0] += row.alg_bw
        total[1] += row.bus_bw
        total[2] += 1
    for size, (alg, bus, n) in sums.items():
        if size in index:
            old = merged[index[size]]
            count = int(old["samples"])
            merged[index[size]] = {**old, "algBW": go_f2((status_number(old.get("algBW")) * count + alg) / (count + n)),
                                   "busBW": go_f2((status_number(old.get("busBW")) * count + bus) / (count + n)),
                                   "samples": count + int(n)}
        else:
            index[size] = len(merged)
            merged.append({"sizeBytes": size, "algBW": go_f2(alg / n), "busBW": go_f2(bus / n), "samples": int(n)})
    return merged
