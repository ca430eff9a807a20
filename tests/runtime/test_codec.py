"""The codec: a CloudEvent record encoded and decoded again, in binary and structured mode."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from functions.runtime.codec import decode, encode, new_id, to_envelope

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


@pytest.mark.parametrize("seed", range(50))
def test_an_event_id_is_the_version_4_uuid_of_the_random_bits(seed: int) -> None:
    random.seed(seed)
    made = new_id()
    random.seed(seed)
    assert made == str(uuid.UUID(int=random.getrandbits(128), version=4))
    assert uuid.UUID(made).version == 4 and uuid.UUID(made).variant == uuid.RFC_4122
