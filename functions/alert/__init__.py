"""The `alert` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-alert`."""

from functions.alert.decide import FUNCTION
from functions.alert.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
