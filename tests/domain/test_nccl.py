"""CRE's NCCL parser's cases (`pkg/nccl`): rows of the out-of-place half through the shipped `nccl-bandwidth`
profile, kubelet prefixes of any zone, transports distinct and sorted, the parser's refusals in CRE's words, and
the controller's aggregation per message size."""

from __future__ import annotations

from typing import Any

import pytest

from functions.domain.nccl import ParserError, Row, aggregate, bandwidth_parser, rows, strip_kubelet_time, transports
from tests.support.logprofiles import nccl_bandwidth, profile


def test_rows_from_nodes_of_any_zone() -> None:
    lines = ["2026-08-06T09:30:31.128034512-07:00   1073741824     268435456     float     sum      -1  1558.51  688.95"
             "    0.00      0  1557.77  689.28    0.00      0",
             "2026-08-06T22:00:31.5+05:30      8388608       2097152     float     sum      -1   3848.5    2.18    2.18"
             "      0   3821.6    2.20    2.20      0",
             "2026-08-06T16:30:31Z #  Avg bus bandwidth    : 0.7266",
             "           8             2     float     sum      -1    58.31    0.00    0.00       0    58.40    0.00"
             "    0.00       0"]
    assert rows(bandwidth_parser(nccl_bandwidth()), lines) == [
        Row(1073741824, 688.95, 0.0), Row(8388608, 2.18, 2.18), Row(8, 0.0, 0.0)]


@pytest.mark.parametrize(("lines", "found"), [
    (["2026-09-30T10:01:00.1Z host:1:1 [0] NCCL INFO Using network IB"], ["IB"]),
    (["NCCL INFO Using network Socket"], ["Socket"]),
    (["host:1:1 [0] NCCL INFO Using network IB  "], ["IB"]),
    (["host:1:1 [0] NCCL INFO Using network  "], []),
    (["host:1:1 [0] NCCL INFO Bootstrap : Using eth0"], []),
    (["NCCL INFO Using network Socket", "NCCL INFO Using network IB", "NCCL INFO Using network Socket"],
     ["IB", "Socket"]),
    (["NCCL INFO Using network AWS Libfabric"], ["AWS Libfabric"]),
], ids=["prefixed", "plain", "trailing-spaces", "blank", "bootstrap", "distinct-ib-and-socket",
        "plugin-name-with-space"])
def test_transports(lines: list[str], found: list[str]) -> None:
    assert transports(bandwidth_parser(nccl_bandwidth()), lines) == found


def test_no_transport_pattern_no_transports() -> None:
    spec = nccl_bandwidth()
    del spec["spec"]["patterns"]["networkTransport"]
    assert transports(bandwidth_parser(spec), ["NCCL INFO Using network IB"]) == []


def test_the_kubelet_prefix_is_cut_at_the_first_space() -> None:
    assert strip_kubelet_time("2026-08-06T09:30:31.128034512-07:00 rest of it") == "rest of it"
    assert strip_kubelet_time("2026-08-06 not a timestamp") == "2026-08-06 not a timestamp"
    assert strip_kubelet_time("short 2026") == "short 2026"


@pytest.mark.parametrize(("patterns", "said"), [
    ({}, "LogProfile nccl has no bandwidthResult pattern"),
    ({"bandwidthResult": {"regex": r"(?P<size>\d+) (?P<algBW>[\d.]+)"}},
     "bandwidthResult regex must have named groups: size, algBW, busBW"),
    ({"bandwidthResult": {"regex": r"(?P<size>\d+) (?P<algBW>[\d.]+) (?P<busBW>[\d.]+)"},
      "networkTransport": {"regex": r"Using network (.+)"}},
     "networkTransport regex must have named group: transport"),
], ids=["no-result", "groups", "transport-group"])
def test_a_profile_the_parser_refuses(patterns: dict[str, Any], said: str) -> None:
    with pytest.raises(ParserError) as refused:
        bandwidth_parser(profile("nccl", {"timestamp": {"layout": "2006"}, "patterns": patterns}))
    assert str(refused.value) == said


def test_a_regex_re2_refuses() -> None:
    with pytest.raises(ParserError) as refused:
        bandwidth_parser(profile("nccl", {"timestamp": {"layout": "2006"},
                                          "patterns": {"bandwidthResult": {"regex": r"(?P<size>\d+)\1"}}}))
    assert str(refused.value).startswith("compiling bandwidthResult regex: error parsing regexp: ")
    with pytest.raises(ParserError) as refused:
        bandwidth_parser(profile("nccl", {"timestamp": {"layout": "2006"}, "patterns": {
            "bandwidthResult": {"regex": r"(?P<size>\d+) (?P<algBW>[\d.]+) (?P<busBW>[\d.]+)"},
            "networkTransport": {"regex": r"Using network (?P<transport>.+)\1"}}}))
    assert str(refused.value).startswith("compiling networkTransport regex: error parsing regexp: ")


def test_aggregation_per_size_in_order_of_first_appearance() -> None:
    first = aggregate([Row(8, 0.0, 0.0), Row(1024, 1.5, 1.25), Row(8, 0.01, 0.02), Row(1024, 2.5, 1.75)])
    assert first == [{"sizeBytes": 8, "algBW": "0.01", "busBW": "0.01", "samples": 2},
                     {"sizeBytes": 1024, "algBW": "2.00", "busBW": "1.50", "samples": 2}]
    merged = aggregate([Row(1024, 3.0, 2.0), Row(4096, 9.99, 9.98)], first)
    assert merged == [{"sizeBytes": 8, "algBW": "0.01", "busBW": "0.01", "samples": 2},
                      {"sizeBytes": 1024, "algBW": "2.33", "busBW": "1.67", "samples": 3},
                      {"sizeBytes": 4096, "algBW": "9.99", "busBW": "9.98", "samples": 1}]


def test_where_the_parser_reads_the_profiles_replicated_job_and_container_else_node() -> None:
    shipped = bandwidth_parser(nccl_bandwidth())
    assert (shipped.replicated_job, shipped.container) == ("launcher", "")
    spec = nccl_bandwidth()
    del spec["spec"]["workerStrategy"]
    spec["spec"]["containerName"] = "nccl"
    assert (bandwidth_parser(spec).replicated_job, bandwidth_parser(spec).container) == ("node", "nccl")


def test_a_transport_group_that_took_no_part_names_none() -> None:
    parser = bandwidth_parser(profile("nccl", {"timestamp": {"layout": "2006"}, "patterns": {
        "bandwidthResult": {"regex": r"(?P<size>\d+) (?P<algBW>[\d.]+) (?P<busBW>[\d.]+)"},
        "networkTransport": {"regex": r"Using network(?: (?P<transport>\S+))?"}}}))
    assert transports(parser, ["NCCL INFO Using network", "NCCL INFO Using network IB"]) == ["IB"]


@pytest.mark.parametrize(("line", "cut"), [
    ("2026-01-22T18:00:05 x", "x"),  # 21 characters: a prefix
    ("2026-01-22T18:00:0 x", "2026-01-22T18:00:0 x"),  # 20: too short for one
    (" 026-01-22T18:00:05.1 x", "026-01-22T18:00:05.1 x"),  # cut at the first space, even the first character
    ("2026-01-22T18:00:05.123Z", "2026-01-22T18:00:05.123Z"),  # no space: kept whole
])
def test_cre_s_strip_k8s_timestamp(line: str, cut: str) -> None:
    assert strip_kubelet_time(line) == cut
