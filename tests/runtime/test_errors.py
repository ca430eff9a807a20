"""The error boundaries, with no API server (they run in `make test-fast`): what each Kubernetes API
answer becomes (the gateway's `error_of`) and which HTTP answer each error kind is (the server's
`ANSWERS`), one row per rule, end to end to SPEC §4.3's answer; then the same through a real `Gateway`
for what gets no API answer at all (a refused connection, a timeout) and for a proxy in front of a
failing API server, and through a function served by functions-framework."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from events.envelope import InvalidEvent
from functions.runtime import errors
from functions.runtime.client import send
from functions.runtime.errors import error_of
from functions.runtime.gateway import Gateway
from functions.runtime.resources import TRAINJOBS
from functions.runtime.server import answer_for
from localstack.serving import ServedFunction
from tests.support.helpers import FailingApiServer, kubeconfig_for_server, silent_port, unreachable_kubeconfig
from tests.support.world import phase_record

RBAC_TEXT = ('jobs.nvcre.nvidia.com "j" is forbidden: User "system:serviceaccount:crefn:crefn-restart" cannot get '
             'resource "jobs" in API group "nvcre.nvidia.com" in the namespace "ml"')
API_ANSWERS = [
    # (id, HTTP status, Status reason, Status message, error kind, the function's answer)
    ("404-not-found", 404, "NotFound", 'trainjobs.trainer.kubeflow.org "x" not found', "NotFound", 202),
    ("409-already-exists", 409, "AlreadyExists", 'trainjobs "x" already exists', "AlreadyExists", 409),
    ("409-stale-resource-version", 409, "Conflict",
     "the object has been modified; please apply your changes to the latest version and try again", "Conflict", 409),
    ("409-uid-precondition", 409, "Conflict",
     "Precondition failed: UID in precondition: a, UID in object meta: b", "Conflict", 409),
    ("410-continue-expired", 410, "Expired", "The provided continue parameter is too old to display a consistent "
     "list result. You can start a new list without the continue parameter.", "TemporaryError", 503),
    ("400-bad-request", 400, "BadRequest", "the body of the request was in an unknown format", "PermanentError", 400),
    ("422-schema", 422, "Invalid", 'Job "j" is invalid: spec.checkpoint.pvcName: Required value',
     "PermanentError", 400),
    ("403-rbac-denial", 403, "Forbidden", RBAC_TEXT, "Forbidden", 503),
    ("403-admission-webhook", 403, "Forbidden", 'admission webhook "v.example.com" denied the request: no',
     "PermanentError", 400),
    ("403-quota", 403, "Forbidden",
     'trainjobs "t" is forbidden: exceeded quota: gpu, requested: 8, used: 8, limited: 8', "PermanentError", 400),
    ("429-throttled", 429, "TooManyRequests", "too many requests, please try again later", "Throttled", 429),
    ("500-internal", 500, "InternalError", "etcdserver: request timed out", "Unavailable", 503),
    ("502-bad-gateway", 502, "", "upstream connect error", "Unavailable", 503),
    ("503-unavailable", 503, "ServiceUnavailable", "the server is currently unable to handle the request",
     "Unavailable", 503),
    ("504-timeout", 504, "Timeout", "the server was unable to return a response in the time allotted",
     "Unavailable", 503),
    ("no-status", 0, "", "", "Unavailable", 503),
]


@pytest.mark.parametrize(("status", "reason", "message", "kind", "answer"), [row[1:] for row in API_ANSWERS],
                         ids=[row[0] for row in API_ANSWERS])
def test_every_api_answer_becomes_its_error_kind_and_answer(status: int, reason: str, message: str, kind: str,
                                                           answer: int) -> None:
    body = json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()  # a Status, as sent
    error = error_of(status, reason, body, "GET", "/apis/x")
    assert type(error).__name__ == kind
    assert answer_for(error) == answer
    assert str(error) == f"GET /apis/x: {status} {reason}: {message}".rstrip(": ")
    assert error.detail == message


@pytest.mark.parametrize(("body", "detail", "text"), [
    (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>",
     "PATCH /apis/x: 503 Service Unavailable: <html>502 Bad Gateway</html>"),
    (b"line one\nline two", "line one\nline two", "PATCH /apis/x: 503 Service Unavailable: line one line two"),
    (json.dumps({"message": "x" * 1000}).encode(), "x" * 1000,
     "PATCH /apis/x: 503 Service Unavailable: " + "x" * 299 + "…"),
    (None, "", "PATCH /apis/x: 503 Service Unavailable"),
], ids=["not-json", "two-lines-made-one", "trimmed-to-300", "no-body"])
def test_a_body_becomes_one_trimmed_line_and_the_detail_keeps_it_whole(body: bytes | None, detail: str,
                                                                       text: str) -> None:
    """The answer and the logs quote one line of at most 300 characters; `detail`, which an Event's note
    quotes (capped there at 1024 bytes, as CRE does), is the API's message as it came."""
    error = error_of(503, "Service Unavailable", body, "PATCH", "/apis/x")
    assert isinstance(error, errors.Unavailable) and error.detail == detail and str(error) == text


ERROR_ANSWERS = [
    (errors.TooLarge, 413), (errors.Stalled, 408), (InvalidEvent, 400), (errors.PermanentError, 400),
    (errors.NotFound, 202),
    (errors.AlreadyExists, 409), (errors.Unrecorded, 409), (errors.Conflict, 409), (errors.Throttled, 429),
    (errors.Forbidden, 503), (errors.NotYet, 503), (errors.Unavailable, 503), (errors.TemporaryError, 503),
    (errors.CrefnError, None), (KeyError, None),
]


@pytest.mark.parametrize(("cls", "answer"), ERROR_ANSWERS, ids=[c.__name__ for c, _ in ERROR_ANSWERS])
def test_every_error_kind_has_one_answer(cls: type[Exception], answer: int | None) -> None:
    """None: a bug, answered 500 (the base class alone is never raised)."""
    assert answer_for(cls("x")) == answer


def test_the_answer_table_names_every_error_kind() -> None:
    kinds = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.CrefnError)}
    assert kinds <= {cls for cls, _ in ERROR_ANSWERS}


def gateway_to(server: str, tmp_path: Path, timeout: float = 10.0) -> Gateway:
    return Gateway.connect(str(kubeconfig_for_server(tmp_path / "kubeconfig", server)), timeout)


def test_a_refused_connection_is_unavailable(tmp_path: Path) -> None:
    gw = Gateway.connect(str(unreachable_kubeconfig(tmp_path / "kubeconfig")))
    with closing(gw), pytest.raises(errors.Unavailable, match="Kubernetes API unreachable") as raised:
        gw.get(TRAINJOBS, "ml", "x")
    assert answer_for(raised.value) == 503


@pytest.mark.parametrize(("namespace", "name", "missing"), [("ml", "", "name"), (None, "x", "namespace"),
                                                           ("", "x", "namespace")],
                         ids=["no-name", "no-namespace", "empty-namespace"])
def test_a_read_without_its_name_is_refused_never_a_list(tmp_path: Path, namespace: str | None, name: str,
                                                         missing: str) -> None:
    """An event naming no object must not turn a GET into a LIST (which the function may not even be
    allowed: a 403, retried for ever): a permanent error, before any request."""
    gw = Gateway.connect(str(unreachable_kubeconfig(tmp_path / "kubeconfig")))
    with closing(gw), pytest.raises(errors.PermanentError, match=f"without its {missing}") as raised:
        gw.get(TRAINJOBS, namespace, name)
    assert answer_for(raised.value) == 400


def test_an_api_server_that_never_answers_is_unavailable_within_the_timeout(tmp_path: Path) -> None:
    gw = gateway_to(f"https://127.0.0.1:{silent_port()}", tmp_path, timeout=0.5)
    with closing(gw), pytest.raises(errors.Unavailable, match="Kubernetes API unreachable") as raised:
        gw.list_all(TRAINJOBS, "ml")
    assert answer_for(raised.value) == 503


def test_a_closed_gateway_refuses_every_call_and_connects_nowhere(tmp_path: Path) -> None:
    """A thread still winding down when its owner closed the gateway gets an error, not a new connection that
    nothing would ever close."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        gw = gateway_to(f"https://127.0.0.1:{listener.getsockname()[1]}", tmp_path, timeout=0.5)
        gw.close()
        refused = "not called (GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs): this gateway is closed"
        with pytest.raises(errors.Unavailable, match=re.escape(refused)) as raised:
            gw.list_all(TRAINJOBS, "ml")
        assert answer_for(raised.value) == 503
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()


@pytest.mark.parametrize(("status", "kind"), [
    (500, errors.Unavailable), (502, errors.Unavailable), (503, errors.Unavailable), (504, errors.Unavailable),
    (429, errors.Throttled), (410, errors.TemporaryError), (422, errors.PermanentError),
], ids=["500", "502", "503", "504", "429", "410", "422"])
def test_a_failing_api_server_behind_a_proxy_through_the_gateway(tmp_path: Path, status: int,
                                                                  kind: type[errors.CrefnError]) -> None:
    server = FailingApiServer(status)
    try:
        gw = gateway_to(server.url, tmp_path)
        with closing(gw), pytest.raises(kind) as raised:
            gw.patch(TRAINJOBS, "ml", "x", {"metadata": {"labels": {"a": "b"}}}, resource_version="1")
        assert type(raised.value) is kind and f"{status} " in str(raised.value)
    finally:
        server.close()


@pytest.mark.parametrize(("status", "body", "broken_off", "said"), [
    (200, b'{"kind": "TrainJob", "metadata": {"na', True,
     "Kubernetes API answer to GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/x broke off: "
     "ProtocolError"),
    (200, b"<html>an error page of a proxy</html>", False,
     "Kubernetes API answered GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/x with what is "
     "not JSON"),
    (502, b"<html>Bad Gateway", True,
     "GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/x: 502 Bad Gateway"),
    (200, b"null", False,
     "Kubernetes API answered GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/x with what is "
     "not a JSON object"),
], ids=["broken-off", "not-json", "error-broken-off", "not-an-object"])
def test_an_answer_that_breaks_off_or_is_not_json_is_unavailable(tmp_path: Path, status: int, body: bytes,
                                                                 broken_off: bool, said: str) -> None:
    """An API server (or the proxy before it) going away mid-answer, or answering a page: a 503 to retry,
    never a crash (500)."""
    server = FailingApiServer(status, body=body, broken_off=broken_off)
    try:
        gw = gateway_to(server.url, tmp_path, timeout=5)
        with closing(gw), pytest.raises(errors.Unavailable) as raised:
            gw.get(TRAINJOBS, "ml", "x")
        assert str(raised.value) == said and answer_for(raised.value) == 503
    finally:
        server.close()


@pytest.mark.parametrize("status", [500, 503], ids=["500", "503"])
def test_a_function_whose_api_server_fails_answers_503_never_400(serve: Callable[..., ServedFunction],
                                                                 tmp_path: Path, status: int) -> None:
    """A 5xx from the API server is retried by Knative (503), never dead-lettered (400)."""
    server = FailingApiServer(status)
    try:
        kubeconfig = kubeconfig_for_server(tmp_path / "kubeconfig", server.url)
        url = serve("restart", CREFN_KUBECONFIG=str(kubeconfig), CREFN_LOG_LEVEL="ERROR").url
        answer = send(url, phase_record("ml", "llm", "Failed"))
        assert answer.status == 503 and f"{status} " in answer.text, answer.text
    finally:
        server.close()
