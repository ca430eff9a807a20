"""The `resync` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-resync`."""

from functions.resync.decide import FUNCTION
from functions.resync.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
