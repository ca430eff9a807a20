"""The `timeout` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-timeout`."""

from functions.timeout.decide import FUNCTION
from functions.timeout.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
