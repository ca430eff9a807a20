"""The `measurements` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-measurements`."""

from functions.measurements.decide import FUNCTION
from functions.measurements.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
