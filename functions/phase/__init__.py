"""The `phase` function: `read` (what the event names, read fresh) and `decide` (pure), served by
`functions.main` as the Knative Service `crefn-phase`."""

from functions.phase.decide import FUNCTION
from functions.phase.read import ACCEPTS, handle

__all__ = ["ACCEPTS", "FUNCTION", "handle"]
