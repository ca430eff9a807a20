"""The worker process of `functions.runtime.celbudget`: tenant CEL compiled and evaluated by `functions.domain.cel`,
away from the server's threads, so that the server can kill it when an evaluation runs past its budget.

    python -m functions.runtime.celworker

Frames on stdin and stdout, each a 4-byte big-endian length and a pickle (both ends are this package). A
request is (variable, expression, subjects); the answer is one frame per `CelOutcome` as soon as it is
ready, then an empty frame; the first empty frame, before any request, says the worker is ready. It
ends at the end of its input. It imports only the CEL rules, so that it starts in tens of milliseconds.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import BinaryIO

from functions.domain.cel import outcomes

HEADER = struct.Struct("!I")


def serve(requests: BinaryIO, answers: int) -> None:
    write_frame(answers, b"")
    while header := requests.read(HEADER.size):
        variable, expression, subjects = pickle.loads(requests.read(HEADER.unpack(header)[0]))
        for outcome in outcomes(variable, expression, subjects):
            write_frame(answers, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
        write_frame(answers, b"")


def write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the server decides
    answers = os.dup(1)
    os.dup2(2, 1)  # the answers' descriptor is theirs alone: anything printed goes to stderr
    serve(sys.stdin.buffer, answers)
