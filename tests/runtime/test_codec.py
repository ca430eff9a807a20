"""The codec: a CloudEvent record encoded and decoded again, in binary and structured mode."""

from __future__ import annotations

from typing import Any

import pytest

from functions.runtime.codec import decode, encode, to_envelope

RECORD: dict[str, Any] = {
    "attributes": {"specversion": "1.0", "id": "e1", "source": "/test", "type": "test.event", "raise": "none",
                   "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    "data": {"a": 1},
}


@pytest.mark.parametrize("structured", [False, True], ids=["binary", "structured"])
def test_codec_round_trip(structured: bool) -> None:
    headers, body = encode(RECORD, structured)
    back = decode(headers, body)
    assert back["data"] == {"a": 1}
    assert {k: back["attributes"][k] for k in RECORD["attributes"]} == RECORD["attributes"]
    env = to_envelope(back)
    assert env.extensions["raise"] == "none" and env.traceparent.startswith("00-")
