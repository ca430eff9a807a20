"""`functions.runtime.kubeconfig`: where the gateway connects and as whom. Read here: a kubeconfig's token, token
file, CA (file or data, relative to the kubeconfig), client certificate and key, `insecure-skip-tls-verify`; in a
pod, the ServiceAccount's token read again once a minute. Left to the `kubernetes` package: an exec plugin and
merged files. Each is checked by authenticating to the session's real API server (or, for a client certificate,
which it does not accept, to a TLS server that demands one)."""

from __future__ import annotations

import base64
import json
import re
import ssl
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.runtime.errors import Forbidden, Unavailable
from functions.runtime.gateway import Gateway, Transport
from functions.runtime.kubeconfig import from_kubeconfig, in_cluster
from functions.runtime.resources import Resource
from localstack.cluster.apiserver import LocalCluster
from tests.support.helpers import self_signed
from tests.support.paths import REPO

SECRETS = Resource("", "v1", "secrets", "Secret")

def who(gateway: Gateway) -> str:
    """The user the API server authenticated the gateway's request as: in its refusal of what no ServiceAccount
    may read."""
    with pytest.raises(Forbidden) as refused:
        gateway.get(SECRETS, "kube-system", "none")
    found = re.search(r'User "([^"]+)"', str(refused.value))
    assert found, refused.value
    return found.group(1)


def token_of(cluster: LocalCluster, namespace: str, name: str) -> str:
    doc = yaml.safe_load(cluster.service_account_kubeconfig(namespace, name).read_text())
    return str(doc["users"][0]["user"]["token"])


def kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}]}))
    return path


@pytest.fixture
def connected() -> Iterator[list[Gateway]]:
    made: list[Gateway] = []
    yield made
    for gateway in made:
        gateway.close()


def gateway_of(made: list[Gateway], endpoint: Any) -> Gateway:
    made.append(Gateway(Transport(endpoint), 10.0))
    return made[-1]


def test_a_token_and_a_ca_file_relative_to_the_kubeconfig(cluster: LocalCluster, namespace: str, tmp_path: Path,
                                                          connected: list[Gateway]) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(cluster.ca_file.read_bytes())
    path = kubeconfig(tmp_path / "config", {"server": cluster.url + "/", "certificate-authority": "pki/ca.crt"},
                      {"token": token_of(cluster, namespace, "reader")})
    endpoint = from_kubeconfig(str(path))
    assert endpoint.server == cluster.url and endpoint.tls is not None
    assert endpoint.tls.verify_mode == ssl.CERT_REQUIRED and endpoint.tls.check_hostname
    assert who(gateway_of(connected, endpoint)) == f"system:serviceaccount:{namespace}:reader"


def test_ca_data_and_a_token_file_and_the_kubeconfig_environment_variable(
        cluster: LocalCluster, namespace: str, tmp_path: Path, connected: list[Gateway]) -> None:
    (tmp_path / "token").write_text(token_of(cluster, namespace, "from-file") + "\n")
    ca = base64.b64encode(cluster.ca_file.read_bytes()).decode()
    path = kubeconfig(tmp_path / "config", {"server": cluster.url, "certificate-authority-data": ca},
                      {"tokenFile": "token"})
    endpoint = from_kubeconfig(None, environ={"KUBECONFIG": str(path)})
    assert who(gateway_of(connected, endpoint)) == f"system:serviceaccount:{namespace}:from-file"


def test_insecure_skip_tls_verify_skips_verification_and_a_wrong_ca_refuses(
        cluster: LocalCluster, namespace: str, tmp_path: Path, connected: list[Gateway]) -> None:
    token = {"token": token_of(cluster, namespace, "insecure")}
    skipped = from_kubeconfig(str(kubeconfig(tmp_path / "a", {"server": cluster.url,
                                                              "insecure-skip-tls-verify": True}, token)))
    assert skipped.tls is not None and skipped.tls.verify_mode == ssl.CERT_NONE
    assert who(gateway_of(connected, skipped)) == f"system:serviceaccount:{namespace}:insecure"
    other_ca = tmp_path / "other-ca.crt"
    make_ca(tmp_path, "other-ca")
    refused = from_kubeconfig(str(kubeconfig(tmp_path / "b", {"server": cluster.url,
                                                              "certificate-authority": str(other_ca)}, token)))
    with pytest.raises(Unavailable, match="Kubernetes API unreachable: SSLError"):
        who(gateway_of(connected, refused))


@pytest.mark.parametrize("field", ["certificate-authority", "certificate-authority-data"])
def test_the_kubeconfigs_ca_is_the_only_one_trusted_and_without_one_the_systems_are(
        cluster: LocalCluster, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        connected: list[Gateway], field: str) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cluster.ca_file))  # the system's CAs trust the API server
    token = {"token": token_of(cluster, namespace, "system")}
    other = make_ca(tmp_path, "other-ca")
    ca = str(other) if field == "certificate-authority" else base64.b64encode(other.read_bytes()).decode()
    named = from_kubeconfig(str(kubeconfig(tmp_path / "a", {"server": cluster.url, field: ca}, token)))
    with pytest.raises(Unavailable, match="Kubernetes API unreachable: SSLError"):
        who(gateway_of(connected, named))
    unnamed = from_kubeconfig(str(kubeconfig(tmp_path / "b", {"server": cluster.url}, token)))
    assert who(gateway_of(connected, unnamed)) == f"system:serviceaccount:{namespace}:system"


def test_an_exec_plugin_is_left_to_the_kubernetes_package(cluster: LocalCluster, namespace: str, tmp_path: Path,
                                                          connected: list[Gateway]) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": token_of(cluster, namespace, "plugin")}}
    plugin = tmp_path / "plugin"
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    path = kubeconfig(tmp_path / "config", {"server": cluster.url, "certificate-authority": str(cluster.ca_file)},
                      {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                                "interactiveMode": "Never"}})
    assert who(gateway_of(connected, from_kubeconfig(str(path)))) == f"system:serviceaccount:{namespace}:plugin"


def test_merged_kubeconfig_files_are_left_to_the_kubernetes_package(
        cluster: LocalCluster, namespace: str, tmp_path: Path, connected: list[Gateway]) -> None:
    whole = yaml.safe_load(kubeconfig(tmp_path / "whole", {"server": cluster.url,
                                                          "certificate-authority": str(cluster.ca_file)},
                                      {"token": token_of(cluster, namespace, "merged")}).read_text())
    (tmp_path / "one").write_text(yaml.safe_dump({**whole, "users": []}))
    (tmp_path / "two").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": whole["users"]}))
    endpoint = from_kubeconfig(None, environ={"KUBECONFIG": f"{tmp_path / 'one'}:{tmp_path / 'two'}"})
    assert who(gateway_of(connected, endpoint)) == f"system:serviceaccount:{namespace}:merged"


@pytest.mark.parametrize(("content", "said"), [
    (None, "no Kubernetes configuration: .*/config: No such file or directory"),
    ("{", "no Kubernetes configuration: .*/config: while parsing"),
    ("kind: Config\n", "no Kubernetes configuration: .*/config names no current context"),
    (yaml.safe_dump({"current-context": "here", "contexts": [{"name": "here", "context": {"cluster": "c"}}]}),
     "no Kubernetes configuration: .*/config has no cluster 'c'"),
], ids=["missing", "not-yaml", "no-context", "no-cluster"])
def test_a_kubeconfig_that_names_no_server_is_unavailable(tmp_path: Path, content: str | None, said: str) -> None:
    if content is not None:
        (tmp_path / "config").write_text(content)
    with pytest.raises(Unavailable, match=said):
        from_kubeconfig(str(tmp_path / "config"))


# -- in a pod ----------------------------------------------------------------------------------------

def test_outside_a_pod_there_is_no_in_cluster_endpoint(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    assert in_cluster({}, tmp_path) is None
    assert in_cluster({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path / "x") is None
    (tmp_path / "ca.crt").write_bytes(make_ca(tmp_path, "ca").read_bytes())
    inside = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    assert inside is not None and inside.server == "https://[fd00::1]:443"


def test_in_a_pod_the_gateway_connects_without_pyyaml(cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    """A pod reads no kubeconfig: a fresh interpreter connects as one does and is answered, PyYAML never imported."""
    (tmp_path / "ca.crt").write_bytes(cluster.ca_file.read_bytes())
    (tmp_path / "token").write_text(token_of(cluster, namespace, "pod"))
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    code = "\n".join([
        "import sys", "from pathlib import Path", "from functions.runtime.gateway import Gateway, Transport",
        "from functions.runtime.kubeconfig import in_cluster",
        f"endpoint = in_cluster({{'KUBERNETES_SERVICE_HOST': {host!r}, 'KUBERNETES_SERVICE_PORT': {port!r}}}, "
        f"Path({str(tmp_path)!r}))",
        "print(Gateway(Transport(endpoint), 10.0).request('GET', '/apis')['kind'])",
        "print('yaml' in sys.modules)"])
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["APIGroupList", "False"]


def test_in_a_pod_the_token_is_read_again_each_minute(cluster: LocalCluster, namespace: str, tmp_path: Path,
                                                       connected: list[Gateway]) -> None:
    """The kubelet rewrites a projected token before it expires: the next minute's requests carry the new one, and
    a token file gone for a moment keeps the last one read."""
    (tmp_path / "ca.crt").write_bytes(cluster.ca_file.read_bytes())
    (tmp_path / "token").write_text(token_of(cluster, namespace, "first"))
    now = [1000.0]
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    endpoint = in_cluster({"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}, tmp_path,
                          clock=lambda: now[0])
    gateway = gateway_of(connected, endpoint)
    assert who(gateway) == f"system:serviceaccount:{namespace}:first"
    (tmp_path / "token").write_text(token_of(cluster, namespace, "second"))
    now[0] += 59
    assert who(gateway) == f"system:serviceaccount:{namespace}:first"
    now[0] += 1
    assert who(gateway) == f"system:serviceaccount:{namespace}:second"
    (tmp_path / "token").unlink()
    now[0] += 60
    assert who(gateway) == f"system:serviceaccount:{namespace}:second"


# -- a client certificate -----------------------------------------------------------------------------

def make_ca(folder: Path, name: str, signer: str | None = None) -> Path:
    """`name`.crt and `name`.key: self-signed (`tests.support.helpers.self_signed`), or signed by `signer` (for
    127.0.0.1)."""
    if signer is None:
        return self_signed(folder, name)[0]
    key, crt = folder / f"{name}.key", folder / f"{name}.crt"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key)]
    csr, ext = folder / f"{name}.csr", folder / f"{name}.ext"
    openssl("req", *ec, "-out", str(csr), "-subj", f"/CN={name}")
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(folder / f"{signer}.crt"), "-CAkey",
            str(folder / f"{signer}.key"), "-CAcreateserial", "-out", str(crt), "-days", "1", "-extfile", str(ext))
    return crt


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def test_a_client_certificate_given_as_data_is_presented(tmp_path: Path, connected: list[Gateway]) -> None:
    make_ca(tmp_path, "ca")
    make_ca(tmp_path, "server", signer="ca")
    make_ca(tmp_path, "client", signer="ca")
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            seen.append(dict(x[0] for x in peer["subject"])["commonName"])
            body = json.dumps({"kind": "Namespace", "metadata": {"name": "ml"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    context.load_verify_locations(tmp_path / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED  # no client certificate: no handshake
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        data = {f"client-{k}-data": base64.b64encode((tmp_path / f"client.{ext}").read_bytes()).decode()
                for k, ext in (("certificate", "crt"), ("key", "key"))}
        path = kubeconfig(tmp_path / "config", {"server": f"https://127.0.0.1:{server.server_address[1]}",
                                                "certificate-authority": "ca.crt"}, data)
        gateway = gateway_of(connected, from_kubeconfig(str(path)))
        assert gateway.request("GET", "/api/v1/namespaces/ml")["metadata"] == {"name": "ml"}
        assert seen == ["client"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_named_kubeconfig_wins_over_the_pod_then_the_pod_over_the_home_one(
        cluster: LocalCluster, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        connected: list[Gateway]) -> None:
    """`cre-fn doctor`'s order (docs/operating.md): `--kubeconfig`, else `KUBECONFIG`, else in-cluster, else
    `~/.kube/config`. In a pod whose API server is elsewhere (a refused port), `KUBECONFIG` still decides."""
    import functions.runtime.gateway as gateway_module
    from functions.runtime.kubeconfig import Endpoint

    path = kubeconfig(tmp_path / "config", {"server": cluster.url, "certificate-authority": str(cluster.ca_file)},
                      {"token": token_of(cluster, namespace, "named")})
    elsewhere = Endpoint("https://127.0.0.1:1")
    monkeypatch.setattr(gateway_module, "in_cluster", lambda: elsewhere)
    monkeypatch.setenv("KUBECONFIG", str(path))
    connected.append(Gateway.connect(None))
    assert who(connected[-1]) == f"system:serviceaccount:{namespace}:named"
    monkeypatch.delenv("KUBECONFIG")
    connected.append(Gateway.connect(None))
    assert connected[-1].host == "https://127.0.0.1:1"
