"""What `restart` reads off a failed TrainJob, in CRE's words: the failure's message, deleted or failed."""

from __future__ import annotations

import pytest

from functions.restart.observed import Failure, failed_message


@pytest.mark.parametrize(("failure", "message"), [
    (Failure("tj", False, "exit 137"), "Workload TrainJob/tj failed: exit 137"),
    (Failure("tj", False, ""), "Workload TrainJob/tj has failed"),
    (Failure("tj", True, "whatever"), "Workload TrainJob/tj was deleted"),
], ids=["message", "no-message", "deleted"])
def test_failed_messages(failure: Failure, message: str) -> None:
    assert failed_message(failure) == message
