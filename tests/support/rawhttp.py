"""Requests written as bytes to a served process, and that process's peak memory: what a hostile or
careless client does (a body too large, a flood of headers), and what it costs the server."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

from functions.runtime.codec import encode
from localstack.samples import load_sample


def peak_mib(pid: int) -> float:
    """The peak resident memory (VmHWM) of a process and its children: a body read whole would show."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
        todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
    return total / 1024


def raw(port: int, head: bytes, chunks: Iterable[bytes] = (), timeout: float = 30) -> tuple[int, bytes]:
    """Send a request as bytes while reading the answer, as an HTTP client does (the server may answer
    before the body is sent); the status and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        def send() -> None:
            try:
                s.sendall(head)
                for chunk in chunks:
                    s.sendall(chunk)
            except OSError:
                pass  # answered and closed before the whole body was sent

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        answer = http.client.HTTPResponse(s)
        answer.begin()
        return answer.status, answer.read()


def ce_head(length: int | None, extra: str = "", headers: dict[str, str] | None = None) -> bytes:
    """The head of a binary-mode CloudEvent POST (a sample's headers, or `headers`), with a
    `content-length` (or chunked, for None) and `extra` header lines."""
    if headers is None:
        headers, _ = encode(load_sample("trainjob-resource-update-failed"))
    lines = [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"content-length: {length}" if length is not None else "transfer-encoding: chunked")
    return ("POST / HTTP/1.1\r\nhost: x\r\n" + "\r\n".join(lines) + extra + "\r\n\r\n").encode()
