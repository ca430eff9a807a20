"""`cre-fn record` (`functions.runtime.deadletters`), the Broker's dead-letter sink, served as the functions are
(functions-framework, real sockets): it appends binary and structured CloudEvents to JSONL and
refuses the rest; with `--file` each line is on disk before the 202, a file that cannot be written
answers 503 (the sender retries), and `/metrics` shows the file's size. A body over the limit is 413
unread, the recorder's memory kept; a Pod is kept redacted, in the file and in the stream; the file rotates
at its cap, the oldest file past `--keep` dropped and counted, and the rotated files still replay. The
journal's own behaviour (torn last line, whole lines across threads) is in tests/runtime/test_journal.py."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.client import post, send
from functions.runtime.codec import MAX_BODY_BYTES, decode, encode
from functions.runtime.deadletters import REDACTED_POD, redact
from functions.runtime.journal import Journal
from functions.tools.replay import read_recording
from localstack.manifests import render
from localstack.samples import load_sample
from tests.support.rawhttp import ce_head, peak_mib, raw
from tests.support.recorder import DEAD, record


def test_record_appends_binary_and_structured_events(recorder: tuple[str, Path]) -> None:
    url, out = recorder
    sample = load_sample("trainjob-resource-update-failed")
    assert send(url, sample).status == 202
    assert send(url, sample, structured=True).status == 202
    assert post(url, {"content-type": "text/plain"}, b"hello").status == 400
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["data"] == sample["data"]
        assert {k: v for k, v in line["attributes"].items() if k != "id"} == {
            k: v for k, v in sample["attributes"].items() if k != "id"}


@pytest.mark.process
def test_a_202_means_the_line_is_in_the_file_and_the_log_has_it_too(tmp_path: Path) -> None:
    file = tmp_path / "volume" / "dead-letters.jsonl"
    file.parent.mkdir()
    with record(tmp_path, "--file", str(file), "--out", "-") as served:
        for i in range(3):
            event = {**DEAD, "attributes": {**DEAD["attributes"], "id": f"dl-{i}"}}
            assert send(served.url, event, structured=bool(i % 2)).status == 202
            lines = [json.loads(x) for x in file.read_text().splitlines()]  # right after the 202
            assert [x["attributes"]["id"] for x in lines] == [f"dl-{n}" for n in range(i + 1)]
        assert lines[-1]["attributes"]["knativeerrordata"] == "expected TrainJob, got v1/Pod"
        assert lines[-1]["data"] == DEAD["data"]
    assert [json.loads(x)["attributes"]["id"] for x in served.stdout.read_text().splitlines()] == [
        "dl-0", "dl-1", "dl-2"]


def metrics_of(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url.rstrip("/") + "/metrics", timeout=10) as r:
        return str(r.read().decode())


@pytest.mark.process
def test_a_file_that_cannot_be_written_answers_503_and_the_retry_is_recorded(tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted-yet" / "dead-letters.jsonl"
    with record(tmp_path, "--file", str(missing), "--out", "-") as served:
        answer = send(served.url, DEAD)
        assert answer.status == 503 and "\n" not in answer.text.strip()
        assert f"cannot open {missing}: No such file or directory" in answer.text
        assert served.stdout.read_text() == ""  # not logged as recorded either
        missing.parent.mkdir()  # the volume is there now: the Broker's retry succeeds
        assert send(served.url, DEAD).status == 202
        assert [json.loads(x)["attributes"]["id"] for x in missing.read_text().splitlines()] == [
            DEAD["attributes"]["id"]]
        exposed = metrics_of(served.url)
    assert 'crefn_events_total{answer="503",function="dead-letters",outcome="error",' \
        'type="dev.knative.apiserver.resource.update"} 1.0' in exposed
    assert f'crefn_dead_letters_file_bytes{{path="{missing}"}} {float(missing.stat().st_size)}' in exposed


@pytest.mark.process
def test_a_full_disk_answers_503_and_leaves_no_partial_line(tmp_path: Path) -> None:
    with record(tmp_path, "--file", "/dev/full", "--out", "") as served:  # every write: ENOSPC
        answer = send(served.url, DEAD)
    assert answer.status == 503 and "cannot write /dev/full: No space left on device" in answer.text


BIG = 50 * 1024 * 1024
MIB = b"x" * (1024 * 1024)


@pytest.mark.process
def test_a_body_over_the_limit_is_413_unread_and_the_recorder_keeps_its_memory(tmp_path: Path) -> None:
    """The functions' limits: 50 MB announced or chunked is refused with its one line before it is read,
    the served process (gunicorn's arbiter and worker) grows by far less than that, a flood of headers
    is 431, and the next dead letter is recorded."""
    file = tmp_path / "dead-letters.jsonl"
    with record(tmp_path, "--file", str(file), "--out", "-") as served:
        assert send(served.url, DEAD).status == 202  # the first request imports the server: not measured
        before = peak_mib(served.pid)
        assert raw(served.port, ce_head(BIG), (MIB for _ in range(50))) == (
            413, f"request body of {BIG} bytes is over the limit of {MAX_BODY_BYTES} bytes\n".encode())
        chunks = (b"%x\r\n%s\r\n" % (len(MIB), MIB) for _ in range(50))
        assert raw(served.port, ce_head(None), chunks) == (
            413, f"request body is over the limit of {MAX_BODY_BYTES} bytes\n".encode())
        assert peak_mib(served.pid) - before < 20
        flood = "".join(f"\r\nx-flood-{i}: {i}" for i in range(10_000))
        assert raw(served.port, ce_head(2, flood), [b"{}"])[0] == 431  # gunicorn's, as for every function
        assert send(served.url, DEAD).status == 202
        exposed = metrics_of(served.url)
    assert len(file.read_text().splitlines()) == 2
    assert 'crefn_events_total{answer="413",function="dead-letters",outcome="refused",type="none"} 2.0' in exposed
    assert 'crefn_events_total{answer="202",function="dead-letters",outcome="ok",' \
        'type="dev.knative.apiserver.resource.update"} 2.0' in exposed


IDENTITY = {
    "name": "llm-workload-node-0-0-x7k2p", "namespace": "team-a", "uid": "5f1c2d0e-8a8b-4c1e-9d3f-0c9e2a1b7f10",
    "resourceVersion": "48213", "creationTimestamp": "2026-11-30T11:58:02Z",
    "labels": {"nvcre.nvidia.com/job": "llm", "crefn.dev/attempt": "0", "crefn.dev/managed": "true",
               "jobset.sigs.k8s.io/replicatedjob-name": "node"},
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "llm-workload-node-0",
                         "uid": "0b6f7c55-1f0e-4b7a-8d54-7f3f3c1a9e21", "controller": True,
                         "blockOwnerDeletion": True}],
}
"""A workload pod's metadata that a recorded Pod keeps, all of it."""
CONDITIONS = [{"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": "2026-11-30T12:01:40Z"}]
OOM_KILLED = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-30T11:58:05Z",
                             "finishedAt": "2026-11-30T12:01:39Z", "containerID": "containerd://d00d"}}
POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        **IDENTITY,
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"env":"WANDB_API_KEY=hunter2"}'},
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                           "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "nodeName": "gpu-node-7", "restartPolicy": "Never", "serviceAccountName": "default",
        "containers": [{"name": "node", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                        "command": ["torchrun", "train.py"],
                        "env": [{"name": "WANDB_API_KEY", "value": "hunter2"},
                                {"name": "PET_NNODES", "value": "2"}],
                        "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": []}}],
    },
    "status": {
        "phase": "Failed", "hostIP": "10.0.0.7", "podIP": "10.244.3.12", "startTime": "2026-11-30T11:58:04Z",
        "conditions": CONDITIONS,
        "containerStatuses": [{
            "name": "node", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "imageID": "sha256:abc",
            "containerID": "containerd://d00d", "ready": False, "restartCount": 0, "started": False,
            "state": OOM_KILLED, "lastState": {}}],
    },
}
"""A workload pod as the `crefn-pods` ApiServerSource sends it, with an env value no record may keep."""
KEPT_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": IDENTITY, "spec": {"nodeName": "gpu-node-7"},
    "status": {"phase": "Failed", "startTime": "2026-11-30T11:58:04Z", "conditions": CONDITIONS,
               "containerStatuses": [{"name": "node", "ready": False, "restartCount": 0, "state": OOM_KILLED,
                                      "lastState": {}}]},
}
POD_EVENT = {"attributes": {
    "specversion": "1.0", "id": "9b1c4e2a-pod", "type": "dev.knative.apiserver.resource.update",
    "time": "2026-11-30T12:01:40.123456Z",
    "source": "https://10.96.0.1:443", "subject": "/api/v1/namespaces/team-a/pods/llm-workload-node-0-0-x7k2p",
    "datacontenttype": "application/json", "apiversion": "v1", "kind": "Pod", "name": "llm-workload-node-0-0-x7k2p",
    "namespace": "team-a", "knativeerrorcode": "500", "knativeerrordest": "http://crefn-phase.crefn-system.svc/",
    "knativeerrordata": "internal error"}, "data": POD}
POD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "llm-workload-node-0-0-x7k2p", "namespace": "team-a"}


@pytest.mark.parametrize(("data", "kept", "redacted"), [
    (POD, KEPT_POD, True),
    (POD_REF, POD_REF, False),
    ({**POD, "apiVersion": "example.com/v1"}, {**POD, "apiVersion": "example.com/v1"}, False),
    (load_sample("trainjob-resource-update-failed")["data"], load_sample("trainjob-resource-update-failed")["data"],
     False),
    ("not an object", "not an object", False),
], ids=["pod", "pod-reference", "another-groups-pod", "trainjob", "not-an-object"])
def test_only_a_whole_pod_is_redacted(data: Any, kept: Any, redacted: bool) -> None:
    """A Pod keeps its identity, labels, owners, node and status; a reference (Reference mode), another
    group's kind of the same name and every other object are kept whole."""
    record = {"attributes": POD_EVENT["attributes"], "data": data}
    expected = {**record, "data": kept, "redacted": REDACTED_POD} if redacted else record
    assert redact(record) == expected


@pytest.mark.process
def test_a_pod_is_redacted_in_the_file_and_in_the_stream(tmp_path: Path) -> None:
    file = tmp_path / "dead-letters.jsonl"
    with record(tmp_path, "--file", str(file), "--out", "-") as served:
        assert send(served.url, POD_EVENT).status == 202
        assert send(served.url, POD_EVENT, structured=True).status == 202
    expected = {"attributes": POD_EVENT["attributes"], "data": KEPT_POD, "redacted": REDACTED_POD}
    for kept in (file.read_text(), served.stdout.read_text()):
        assert [json.loads(line) for line in kept.splitlines()] == [expected, expected]
        assert "hunter2" not in kept and "managedFields" not in kept and "torchrun" not in kept


def line_bytes(event: dict[str, Any]) -> int:
    """The bytes of the line an event sent in binary mode becomes (the codec both ends use)."""
    return len(json.dumps(decode(*encode(event)), separators=(",", ":")).encode()) + 1


def dead(i: int) -> dict[str, Any]:
    return {**DEAD, "attributes": {**DEAD["attributes"], "id": f"dl-{i}"}}


def ids(path: Path) -> list[str]:
    return [json.loads(x)["attributes"]["id"] for x in path.read_text().splitlines()]


@pytest.mark.process
def test_the_file_rotates_at_its_cap_and_the_oldest_past_keep_is_dropped_and_counted(tmp_path: Path) -> None:
    """Two lines fit under the cap: the third rotates the file to `.1`, the fifth drops that `.1` (with
    --keep 1) and says so, counted. No file ever passes the cap; the stream has every dead letter; the
    rotated file and the current one, oldest first, replay in order. A record longer than the cap
    alone is refused with its one line (413), kept nowhere."""
    file, rotated = tmp_path / "dead-letters.jsonl", tmp_path / "dead-letters.jsonl.1"
    size = line_bytes(dead(0))
    cap = 2 * size + size // 2
    with record(tmp_path, "--file", str(file), "--out", "-", "--max-bytes", str(cap), "--keep", "1") as served:
        for i in range(7):
            assert send(served.url, dead(i)).status == 202
            assert file.stat().st_size <= cap and (not rotated.exists() or rotated.stat().st_size <= cap)
        huge = {**DEAD, "data": {"padding": "x" * cap}}
        refused = send(served.url, huge)
        exposed = metrics_of(served.url)
    assert ids(rotated) == ["dl-4", "dl-5"] and ids(file) == ["dl-6"]
    assert not (tmp_path / "dead-letters.jsonl.2").exists()
    assert ids(served.stdout) == [f"dl-{i}" for i in range(7)]
    assert f'crefn_dead_letters_dropped_total{{path="{file}"}} 4.0' in exposed
    assert f'crefn_dead_letters_dropped_bytes_total{{path="{file}"}} {float(4 * size)}' in exposed
    assert f'crefn_dead_letters_file_bytes{{path="{file}"}} {float(size)}' in exposed
    dropped = (f"{file} reached its cap of {cap} bytes: dropped {rotated}, the oldest past the 1 "
               f"rotated files kept, with its 2 lines ({2 * size} bytes)")
    logged = [json.loads(line) for line in served.stderr.read_text().splitlines()]
    assert [line["message"] for line in logged if line["severity"] == "WARNING" and "status" not in line] == [
        dropped, dropped]
    assert refused.status == 413
    assert refused.text == f"a record of {line_bytes(huge)} bytes is over the cap of {file} ({cap} bytes)"
    joined = tmp_path / "dead.jsonl"
    joined.write_bytes(rotated.read_bytes() + file.read_bytes())
    assert [r["attributes"]["id"] for r in read_recording(joined)] == ["dl-4", "dl-5", "dl-6"]


def test_with_keep_0_a_full_file_is_dropped_whole_and_reported(tmp_path: Path) -> None:
    reported: list[tuple[int, int]] = []
    warned: list[str] = []
    journal = Journal(tmp_path / "j.jsonl", warn=warned.append, max_bytes=100, keep=0,
                      dropped=lambda lines, size: reported.append((lines, size)))
    for i in range(4):
        journal.append({"attributes": {"id": str(i)}, "data": "x" * 10})  # 46 bytes a line: two fit
    assert [json.loads(x)["attributes"]["id"] for x in journal.path.read_text().splitlines()] == ["2", "3"]
    assert reported == [(2, 92)] and sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"]
    assert warned == [f"{journal.path} reached its cap of 100 bytes: dropped {journal.path}, the oldest past the 0 "
                      "rotated files kept, with its 2 lines (92 bytes)"]


@pytest.mark.process
def test_data_that_is_not_json_is_kept_as_a_cloudevent_with_data_base64_and_replays(tmp_path: Path) -> None:
    file = tmp_path / "dead-letters.jsonl"
    body = b"\xff\x00 not JSON"
    headers = {f"ce-{k}": v for k, v in DEAD["attributes"].items() if k != "datacontenttype"}
    with record(tmp_path, "--file", str(file), "--out", "") as served:
        assert post(served.url, {**headers, "content-type": "application/octet-stream"}, body).status == 202
    (line,) = [json.loads(x) for x in file.read_text().splitlines()]
    assert line == {**DEAD["attributes"], "datacontenttype": "application/octet-stream",
                    "data_base64": base64.b64encode(body).decode()}
    (replayed,) = read_recording(file)
    assert replayed["data"] == body and replayed["attributes"]["id"] == DEAD["attributes"]["id"]


def test_the_deployed_recorder_keeps_its_files_within_its_claim() -> None:
    """crefn-dead-letters as shipped: its cap and rotated files, all full, fit in the claim it writes."""
    named = {(d["kind"], d["metadata"]["name"]): d for d in render("base")}
    args = named["Deployment", "crefn-dead-letters"]["spec"]["template"]["spec"]["containers"][0]["args"]
    claim = named["PersistentVolumeClaim", "crefn-dead-letters"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    max_bytes, keep = int(args[args.index("--max-bytes") + 1]), int(args[args.index("--keep") + 1])
    assert (max_bytes, keep) == (128 * 1024 * 1024, 4)
    assert (keep + 1) * max_bytes <= 1024**3 * 0.7  # room for the filesystem's own and a line past a file's start
