"""Where the gateway connects and as whom (`Endpoint`): in a pod, or from a kubeconfig file.

In a pod (`in_cluster`): `KUBERNETES_SERVICE_HOST` and `_PORT`, the ServiceAccount's CA, and its token read again
from its file once a minute (the kubelet rotates a projected token long before it expires). A kubeconfig file
(`from_kubeconfig`, YAML or JSON; `KUBECONFIG` or `~/.kube/config` when none is named): its current context's
server, CA (file or data, or `insecure-skip-tls-verify`, `tls-server-name`) and user (token, tokenFile, client
certificate and key as files or data). A kubeconfig this module does not read — an exec plugin, an auth provider,
a password, a proxy, several files merged — is loaded by the `kubernetes` package's own loader: the one place that
package is imported, since its package init loads every generated API and model (docs/cost.md#what-a-process-loads).
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from functions.runtime.errors import Unavailable

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify",
                "tls-server-name", "extensions"}
USER_KEYS = {"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
             "client-key-data", "extensions"}


@dataclass
class Endpoint:
    """An API server's address, the TLS to reach it with, and the `Authorization` header to send now."""

    server: str
    tls: ssl.SSLContext | None = None
    server_hostname: str | None = None
    authorization: Callable[[], str | None] = lambda: None
    proxy: str | None = None


@dataclass
class TokenFile:
    """A bearer token read from its file, and read again once `every` seconds have passed."""

    path: Path
    every: float = TOKEN_REREAD_SECONDS
    clock: Callable[[], float] = time.monotonic
    _token: str = ""
    _read_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self) -> str | None:
        with self._lock:
            now = self.clock()
            if self._read_at is None or now - self._read_at >= self.every:
                try:
                    self._token = self.path.read_text().strip()
                except OSError as e:
                    if self._read_at is None:
                        raise Unavailable(f"the token file {self.path} cannot be read: {e.strerror}") from e
                self._read_at = now  # a file gone for a moment keeps the token last read
            return f"Bearer {self._token}" if self._token else None


def in_cluster(environ: Mapping[str, str] = os.environ, account: Path = SERVICE_ACCOUNT,
               clock: Callable[[], float] = time.monotonic) -> Endpoint | None:
    """The pod's own API server and ServiceAccount, or None outside a pod."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port or not (account / "token").is_file():
        return None
    host = f"[{host}]" if ":" in host else host
    return Endpoint(f"https://{host}:{port}", tls=tls_context(ca_file=account / "ca.crt"),
                    authorization=TokenFile(account / "token", clock=clock))


def from_kubeconfig(path: str | None, environ: Mapping[str, str] = os.environ) -> Endpoint:
    """The current context of the kubeconfig `path` (else `KUBECONFIG`, else `~/.kube/config`)."""
    named = path or environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    if os.pathsep in named:
        return with_kubernetes(named)
    import yaml  # a kubeconfig's only: a pod connects without (PyYAML's import is about 90 M instructions)

    try:
        doc = yaml.safe_load(Path(named).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise Unavailable(f"no Kubernetes configuration: {named}: {getattr(e, 'strerror', None) or e}") from e
    cluster, user = current(doc, named)
    if set(cluster) - CLUSTER_KEYS or set(user) - USER_KEYS:
        return with_kubernetes(named)
    here = Path(named).parent
    tls = None
    if str(cluster.get("server", "")).startswith("https:"):
        tls = tls_context(
            ca_file=here / cluster["certificate-authority"] if cluster.get("certificate-authority") else None,
            ca_data=decoded(cluster.get("certificate-authority-data")),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            cert=pair(user, here))
    return Endpoint(str(cluster["server"]).rstrip("/"), tls=tls, server_hostname=cluster.get("tls-server-name"),
                    authorization=bearer(user, here))


def bearer(user: Mapping[str, Any], here: Path) -> Callable[[], str | None]:
    """The user's bearer token, as it is now: given, or read from its file (none with a client certificate)."""
    if user.get("token"):
        header = f"Bearer {user['token']}"
        return lambda: header
    if user.get("tokenFile"):
        return TokenFile(here / user["tokenFile"])
    return lambda: None


def current(doc: Any, named: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster and user of the kubeconfig's current context."""
    def entry(kind: str, name: str) -> dict[str, Any]:
        found = [e.get(kind.rstrip("s")) or {} for e in doc.get(kind) or []
                 if isinstance(e, dict) and e.get("name") == name]
        if not found:
            raise Unavailable(f"no Kubernetes configuration: {named} has no {kind.rstrip('s')} {name!r}")
        return dict(found[0])

    if not isinstance(doc, dict) or not doc.get("current-context"):
        raise Unavailable(f"no Kubernetes configuration: {named} names no current context")
    context = entry("contexts", doc["current-context"])
    cluster, user = entry("clusters", context.get("cluster", "")), entry("users", context.get("user", ""))
    if not cluster.get("server"):
        raise Unavailable(f"no Kubernetes configuration: {named}'s cluster has no server")
    return cluster, user


def decoded(data: str | None) -> bytes | None:
    return base64.b64decode(data) if data else None


def pair(user: Mapping[str, Any], here: Path) -> tuple[bytes, bytes] | None:
    """The user's client certificate and key (PEM), from data or files."""
    def pem(key: str) -> bytes | None:
        return decoded(user.get(f"{key}-data")) or ((here / user[key]).read_bytes() if user.get(key) else None)

    cert, key = pem("client-certificate"), pem("client-key")
    return (cert, key) if cert and key else None


def tls_context(ca_file: Path | None = None, ca_data: bytes | None = None, insecure: bool = False,
                cert: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
    """TLS verifying the server against the CA given and no other, as client-go and the `kubernetes` package do
    (against the system's CAs when none is given), or not at all when `insecure`; presenting the client certificate
    when there is one. The system's CAs are read only when they are used: parsing them is 20-50 ms of a start."""
    if insecure:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=None if ca_file is None else str(ca_file),
                                             cadata=None if ca_data is None else ca_data.decode())
    if cert is not None:  # the ssl module reads a certificate chain only from files: written, read, removed
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "tls.crt").write_bytes(cert[0])
            (Path(tmp) / "tls.key").write_bytes(cert[1])
            context.load_cert_chain(Path(tmp) / "tls.crt", Path(tmp) / "tls.key")
    return context


def with_kubernetes(named: str) -> Endpoint:
    """A kubeconfig read by the `kubernetes` package (exec plugins, auth providers, merged files, proxies)."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=named, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as e:
        raise Unavailable(f"no Kubernetes configuration: {e}") from e

    def authorization() -> str | None:  # the SDK's refresh hook (an exec plugin's token) runs inside
        return cfg.get_api_key_with_prefix("BearerToken", alias="authorization") or (
            f"Basic {base64.b64encode(f'{cfg.username}:{cfg.password}'.encode()).decode()}" if cfg.username else None)

    tls = None
    if cfg.host.startswith("https:"):
        tls = tls_context(ca_file=Path(cfg.ssl_ca_cert) if cfg.ssl_ca_cert else None, insecure=not cfg.verify_ssl,
                          cert=(Path(cfg.cert_file).read_bytes(), Path(cfg.key_file).read_bytes())
                          if cfg.cert_file and cfg.key_file else None)
    return Endpoint(cfg.host.rstrip("/"), tls=tls, server_hostname=cfg.tls_server_name, authorization=authorization,
                    proxy=cfg.proxy)
