"""The `status` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-status`."""

from functions.status.decide import FUNCTION
from functions.status.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
