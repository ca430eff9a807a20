"""`localstack.cluster.kubelet.StandInKubelet`: its own answers (pure HTTP over TLS), and pod logs read through the
session's real API server with `Gateway.read_log`, which proxies `pods/log` to it (RBAC included)."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from functions.domain.gotime import RFC3339_NANO, parse
from functions.runtime.errors import Forbidden, PermanentError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import Resource
from localstack.cluster.apiserver import LocalCluster
from localstack.cluster.kubelet import StandInKubelet, tail
from localstack.cluster.pods import create_pod
from localstack.trainer import wait_until

LOG = "".join(f"line {i}\n" for i in range(1, 11))
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")


# -- the stand-in alone ----------------------------------------------------------------------------

TAILS = [
    ("whole log", LOG, None, None, LOG),
    ("last 3 lines", LOG, 3, None, "line 8\nline 9\nline 10\n"),
    ("more lines than the log has", LOG, 50, None, LOG),
    ("no line", LOG, 0, None, ""),
    ("limitBytes keeps the first bytes", LOG, None, 7, "line 1\n"),
    ("tail, then limit", LOG, 2, 4, "line"),
    ("an unterminated last line counts", "a\nb\nc", 1, None, "c"),
]


@pytest.mark.parametrize(("what", "text", "tail_lines", "limit_bytes", "expected"), TAILS, ids=[t[0] for t in TAILS])
def test_tail_applies_tail_lines_then_limit_bytes(what: str, text: str, tail_lines: int | None,
                                                  limit_bytes: int | None, expected: str) -> None:
    assert tail(text, tail_lines, limit_bytes) == expected.encode()


@pytest.fixture
def kubelet() -> Iterator[StandInKubelet]:
    with StandInKubelet() as k:
        k.set_log("ns", "p", "node", LOG)
        yield k


def get(kubelet: StandInKubelet, path: str) -> tuple[int, str, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{kubelet.port}{path}", context=context, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


ANSWERS = [
    ("a log, with the API server's sorted query", "/containerLogs/ns/p/node?limitBytes=100&tailLines=1",
     200, "line 10\n"),
    ("an unknown container", "/containerLogs/ns/p/other", 404, "container ns/p/other has no log on this node\n"),
    ("a previous container", "/containerLogs/ns/p/node?previous=true&tailLines=1",
     404, 'previous terminated container "node" in pod "p" not found\n'),
    ("any other path", "/pods", 404, "404 page not found: /pods\n"),
]


@pytest.mark.parametrize(("what", "path", "status", "body"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_stand_in_answers(kubelet: StandInKubelet, what: str, path: str, status: int, body: str) -> None:
    assert get(kubelet, path) == (status, "text/plain; charset=utf-8", body)


def post(kubelet: StandInKubelet, path: str, body: str) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{kubelet.port}{path}", data=body.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_lines_posted_are_appended_at_the_time_they_begin_with(kubelet: StandInKubelet) -> None:
    """The stand-in's feed: `curl --data-binary @log https://…/containerLogs/NS/POD/CONTAINER` (what a user of
    `cre-fn dev --keep` gives the stand-in pods to log); a line without a leading RFC 3339 time is stamped on
    arrival, so it is served after a `sinceTime` of the past."""
    body = ("2026-01-22T18:30:00.5Z [2026-01-22 18:30:00.500000] iteration 10/ 100 | loss 1\n"
            "2026-01-22T18:31:00+01:00 an hour earlier, by its offset\n"
            "no time here\n")
    assert post(kubelet, "/containerLogs/ml/w-0/node", body) == (200, "3 lines appended to ml/w-0/node\n")
    status, _, served = get(kubelet, "/containerLogs/ml/w-0/node?sinceTime=2026-01-22T18%3A00%3A00Z&timestamps=true")
    assert status == 200
    assert served.splitlines()[0] == "2026-01-22T18:30:00.5Z [2026-01-22 18:30:00.500000] iteration 10/ 100 | loss 1"
    assert len(served.splitlines()) == 2 and served.splitlines()[1].endswith(" no time here")  # 17:31Z is before
    assert get(kubelet, "/containerLogs/ml/w-0/node?sinceTime=2026-01-22T18%3A30%3A01Z")[2] == "no time here\n"
    assert post(kubelet, "/pods/ml", "x\n") == (404, "404 page not found: POST /pods/ml\n")


def test_its_certificate_names_ip_127_0_0_1(kubelet: StandInKubelet, tmp_path: Path) -> None:
    """Verified against itself with hostname checking: the certificate carries the SAN `IP:127.0.0.1`."""
    ca = tmp_path / "kubelet.crt"
    ca.write_text(ssl.get_server_certificate(("127.0.0.1", kubelet.port)))
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", kubelet.port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.version() is not None


def test_stop_frees_the_port() -> None:
    kubelet = StandInKubelet().start()
    port = kubelet.port
    kubelet.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


# -- through the API server ------------------------------------------------------------------------

@pytest.fixture
def logged_pod(cluster: LocalCluster, gateway: Gateway, namespace: str) -> str:
    """Pod `p` on `gpu-node-1` (a Node pointing at the stand-in), its container `node` logging LOG."""
    cluster.node("gpu-node-1")
    create_pod(gateway, namespace, "p", {"app": "x"}, node="gpu-node-1")
    cluster.kubelet.set_log(namespace, "p", "node", LOG)
    return "p"


READS = [
    ("the last lines", 3, 1000, "line 8\nline 9\nline 10\n"),
    ("keep_bytes keeps the last bytes", 3, 10, "9\nline 10\n"),
    ("all lines", 800, 32 * 1024, LOG),
]


@pytest.mark.parametrize(("what", "tail_lines", "keep_bytes", "expected"), READS, ids=[r[0] for r in READS])
def test_read_log_returns_the_tail(gateway: Gateway, namespace: str, logged_pod: str, what: str, tail_lines: int,
                                   keep_bytes: int, expected: str) -> None:
    assert gateway.read_log(namespace, logged_pod, "node", tail_lines=tail_lines, keep_bytes=keep_bytes,
                            timeout_seconds=5) == expected


def test_a_pod_without_a_node_reads_empty(gateway: Gateway, namespace: str) -> None:
    create_pod(gateway, namespace, "pending", {"app": "x"})
    assert gateway.read_log(namespace, "pending", "node", tail_lines=10, keep_bytes=100, timeout_seconds=5) == ""


def test_a_wrong_container_is_a_permanent_error(gateway: Gateway, namespace: str, logged_pod: str) -> None:
    with pytest.raises(PermanentError, match=r"400 BadRequest: container nope is not valid for pod p"):
        gateway.read_log(namespace, logged_pod, "nope", tail_lines=10, keep_bytes=100, timeout_seconds=5)


def grant(gateway: Gateway, namespace: str, account: str, resources: list[str]) -> None:
    gateway.create(ROLES, namespace, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                      "metadata": {"name": account},
                                      "rules": [{"apiGroups": [""], "resources": resources, "verbs": ["get"]}]})
    gateway.create(ROLE_BINDINGS, namespace, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]})


def test_a_service_account_without_pods_log_is_refused(cluster: LocalCluster, gateway: Gateway, namespace: str,
                                                         logged_pod: str) -> None:
    grant(gateway, namespace, "reader", ["pods"])  # pods, but not pods/log
    reader = cluster.service_account_gateway(namespace, "reader")
    try:
        assert reader.get(Resource("", "v1", "pods", "Pod"), namespace, logged_pod) is not None
        with pytest.raises(Forbidden, match=r"403 Forbidden: .*cannot get resource \"pods/log\""):
            reader.read_log(namespace, logged_pod, "node", tail_lines=10, keep_bytes=100, timeout_seconds=5)
    finally:
        reader.close()


def test_a_service_account_with_pods_log_reads(cluster: LocalCluster, gateway: Gateway, namespace: str,
                                               logged_pod: str) -> None:
    grant(gateway, namespace, "reader", ["pods", "pods/log"])
    reader = cluster.service_account_gateway(namespace, "reader")

    def reads() -> bool:  # the authorizer sees a new RoleBinding within moments
        try:
            return reader.read_log(namespace, logged_pod, "node", 1, 100, 5) == "line 10\n"
        except PermanentError:
            return False

    try:
        assert wait_until(reads, timeout=10, interval=0.05)
    finally:
        reader.close()


def at(text: str) -> int:
    return parse(RFC3339_NANO, text)


@pytest.fixture
def timed_pod(cluster: LocalCluster, gateway: Gateway, namespace: str) -> str:
    """Pod `t` on `gpu-node-1`, its container `trainer` having written three lines, a second apart."""
    cluster.node("gpu-node-1")
    create_pod(gateway, namespace, "t", {"app": "x"}, node="gpu-node-1", containers=("trainer",))
    cluster.kubelet.write(namespace, "t", "trainer", [(at("2026-01-22T18:00:05.123456789Z"), "step 1"),
                                                      (at("2026-01-22T18:00:06.5Z"), "step 2\n"),
                                                      (at("2026-01-22T18:00:07Z"), "step 3")])
    return "t"


def test_a_log_read_with_the_kubelets_times(gateway: Gateway, namespace: str, timed_pod: str) -> None:
    assert gateway.read_log_since(namespace, timed_pod, "trainer", "", 1 << 20, 5) == (
        "2026-01-22T18:00:05.123456789Z step 1\n2026-01-22T18:00:06.5Z step 2\n2026-01-22T18:00:07Z step 3\n")


def test_a_log_read_since_a_time_keeps_the_lines_written_then_or_after(gateway: Gateway, namespace: str,
                                                                       timed_pod: str) -> None:
    assert gateway.read_log_since(namespace, timed_pod, "trainer", "2026-01-22T18:00:06Z", 1 << 20, 5) == (
        "2026-01-22T18:00:06.5Z step 2\n2026-01-22T18:00:07Z step 3\n")
    assert gateway.read_log_since(namespace, timed_pod, "trainer", "2026-01-22T18:00:07Z", 1 << 20, 5) == (
        "2026-01-22T18:00:07Z step 3\n")
    assert gateway.read_log_since(namespace, timed_pod, "trainer", "2026-01-22T18:00:08Z", 1 << 20, 5) == ""


def test_a_log_read_keeps_its_head_to_the_byte_limit(gateway: Gateway, namespace: str, timed_pod: str) -> None:
    assert gateway.read_log_since(namespace, timed_pod, "trainer", "", 40, 5) == (
        "2026-01-22T18:00:05.123456789Z step 1\n20")
