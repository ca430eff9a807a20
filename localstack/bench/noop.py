"""The floor `make bench` measures against: a functions-framework HTTP function that does nothing
but answer 202, served by the same binary and settings as the functions."""

from typing import Any

import functions_framework


@functions_framework.http
def noop(request: Any) -> Any:
    return "", 202
