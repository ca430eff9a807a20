"""The `restart` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-restart`."""

from functions.restart.decide import FUNCTION
from functions.restart.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
